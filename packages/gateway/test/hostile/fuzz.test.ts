/**
 * Hostile requests to every MCP method and every admin resource, through one
 * gateway with authentication on (a client token for `/mcp`, an admin token
 * for `/api/v1`), a real loopback REST downstream and a real upstream MCP
 * server (official SDK v1, sessions; its tools, resources, templates,
 * prompts and completions federated).
 *
 * The requests (fast-check, fixed seed, bounded runs; `support/Hostile.ts`
 * carries NUL, lone surrogates, 1e400 and 100 KB values as written):
 * - 2026-07-28: tools/call, tools/list, resources/list|read|templates/list,
 *   prompts/list|get, completion/complete, server/discover, and methods the
 *   wire does not serve (ping, logging/setLevel, resources/subscribe,
 *   tasks/*, notifications/*, unknown ones), with hostile names, URIs,
 *   arguments, ids, unknown fields, wrong types and deep nesting;
 * - 2025-era sessions: the same plus initialize, ping, logging/setLevel,
 *   resources/subscribe|unsubscribe and notifications, one at a time and in
 *   2025-03-26 batches;
 * - tool arguments of the form `aaaa…!` (30 to 100,000 characters) against
 *   a REST endpoint and an upstream tool whose input schema has the pattern
 *   `^(a+)+$` (catastrophic backtracking on a backtracking engine);
 * - every admin resource (connections, their `test`, endpoints, virtual
 *   servers, client and admin tokens, secrets, OpenAPI import, config
 *   export|schema|apply, settings, upstreams, audit and its verification,
 *   the event stream) with GET/POST/PUT/PATCH/DELETE, hostile bodies with
 *   unknown fields, hostile ids and query strings.
 *
 * Asserted:
 * - no response is a 5xx, nor a JSON-RPC internal error;
 * - every MCP attempt that reached the gateway with valid credentials
 *   leaves exactly one audit row per method. An attempt is a tools/call,
 *   resources/read, prompts/get, completion/complete (and, on the 2025 wire,
 *   resources/subscribe|unsubscribe) in a well-formed envelope (a JSON-RPC
 *   request with a valid id, params of the protocol's shape: a string name
 *   or URI), whatever the name, URI or arguments; everything else is not;
 * - `/metrics` stays under `METRICS_MAX_BYTES` and `METRICS_MAX_SERIES`, and
 *   grows by at most `METRICS_MAX_NEW_SERIES` series over the run (client
 *   strings never become labels); the heap grows by less than
 *   `HEAP_MAX_GROWTH`;
 * - the Studio event stream opened before the run is still open after it
 *   and receives a fresh change signal;
 * - `GET /api/v1/audit/verify` still verifies the chain.
 * - every admin write leaves exactly one `admin` audit row, refused or made
 *   (`adminRowsOf`).
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, AuditLog, ClientTokens, Connections, Endpoints } from "@janus/storage"
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import fc from "fast-check"
import { z } from "zod"
import * as GatewayTesting from "../../src/testing.ts"
import { makeServer } from "../federation/conformance-server.ts"
import { serveMcp, v1Sessions } from "../federation/upstreams.ts"
import * as Downstream from "../support/Downstream.ts"
import {
  assertNoServerError,
  check,
  headerValueOf,
  hostileJson,
  hostileNumber,
  hostileString,
  type Json,
  percentEncode,
  RawNumber,
  send,
  toJson,
  type Wire
} from "../support/Hostile.ts"
import { adminRequest } from "../support/HostileAdmin.ts"

const SEED = Number(process.env.HOSTILE_FUZZ_SEED ?? 20_261_207)
const RUNS = { stateless: 110, sessions: 90, admin: 100 } as const
const PROPERTY_TIMEOUT = 120_000

/** `/metrics` bounds: its size, its series, and the series the run may add (catalog names, methods, outcomes). */
const METRICS_MAX_BYTES = 2 * 1024 * 1024
const METRICS_MAX_SERIES = 20_000
const METRICS_MAX_NEW_SERIES = 2_000
/** Heap growth over the run (gateway, upstreams and the test in one process). */
const HEAP_MAX_GROWTH = 256 * 1024 * 1024

const BACKTRACKING = "^(a+)+$"
const KB100 = 100 * 1024

// -----------------------------------------------------------------------------
// The gateway under test
// -----------------------------------------------------------------------------

interface FixtureShape {
  readonly adminToken: string
  readonly clientToken: string
  readonly playground: Readonly<Record<string, string>>
  /** Tools that answer at once (no sampling, elicitation or long waits), by role. */
  readonly tools: { readonly rest: ReadonlyArray<string>; readonly upstream: ReadonlyArray<string> }
  readonly matchTools: ReadonlyArray<string>
  readonly prompts: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly petsConnection: string
  readonly stream: StreamWatch
}

class Fixture extends Context.Service<Fixture, FixtureShape>()("test/hostile/fuzz/Fixture") {}

/** The SDK v1 upstream: the conformance features plus `match`, whose `text` must match {@link BACKTRACKING}. */
const startUpstream = async () => {
  const { handle, sessions } = v1Sessions(() => {
    const server: McpServerV1 = makeServer(" [U]")
    server.registerTool("match", {
      description: "Echoes a text of a's",
      inputSchema: { text: z.string().regex(new RegExp(BACKTRACKING)) }
    }, async ({ text }) => ({ content: [{ type: "text", text: `${text.length} a's` }] }))
    return server
  })
  return serveMcp(handle, () => sessions.clear())
}

/** The Studio event stream, read from the start of the run to its end. */
interface StreamWatch {
  readonly status: number
  /** Frames (`event:` lines) seen so far. */
  readonly frames: () => number
  /** The text after `from` characters of everything read. */
  readonly since: (from: number) => string
  readonly length: () => number
  readonly ended: () => boolean
  readonly close: () => void
}

const watch = async (url: URL, adminToken: string): Promise<StreamWatch> => {
  const controller = new AbortController()
  const response = await fetch(url, { headers: { authorization: `Bearer ${adminToken}` }, signal: controller.signal })
  let text = ""
  let frames = 0
  let ended = false
  let dropped = 0
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        frames += value.split("\nevent:").length - 1 + (value.startsWith("event:") ? 1 : 0)
        // keep the recent text only: the run writes many `calls` frames
        text += value
        if (text.length > 400_000) {
          dropped += text.length - 200_000
          text = text.slice(-200_000)
        }
      }
    } catch {
      // aborted by `close`
    } finally {
      ended = true
    }
  })()
  return {
    status: response.status,
    frames: () => frames,
    length: () => dropped + text.length,
    since: (from) => text.slice(Math.max(0, from - dropped)),
    ended: () => ended,
    close: () => controller.abort()
  }
}

const baseUrl = HttpServer.addressFormattedWith((url) => Effect.succeed(new URL(url)))

const post = (base: URL, token: string, path: string, body: unknown) =>
  Effect.promise(() =>
    fetch(new URL(path, base), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then((r) => r.json() as Promise<any>)
  )

/** A 2026-07-28 JSON-RPC request with the client token, headers mirroring it. */
const statelessWire = (
  token: string,
  method: string,
  params: Json | undefined,
  id: Json | undefined,
  name?: string
): Wire => ({
  method: "POST",
  path: "/mcp",
  headers: [
    ["content-type", "application/json"],
    ["accept", "application/json, text/event-stream"],
    ["authorization", `Bearer ${token}`],
    ["mcp-protocol-version", "2026-07-28"],
    ["mcp-method", method],
    ...(name === undefined ? [] : [["mcp-name", headerValueOf(name)] as const])
  ],
  body: toJson({
    jsonrpc: "2.0",
    ...(id === undefined ? {} : { id }),
    method,
    ...(params === undefined ? {} : { params })
  } as Json),
  statusOnly: method === "subscriptions/listen"
})

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "hostile-fuzz", version: "1" }
}

const seed = Effect.gen(function*() {
  const downstream = yield* Downstream.Downstream
  const pets = yield* Downstream.petsTools({}, [
    {
      name: "get_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path", tag: "query" },
      inputSchema: { type: "object", properties: { id: { type: "string" }, tag: { type: "string" } }, required: ["id"] }
    },
    {
      name: "create_pet",
      method: "POST",
      pathTemplate: "/pets",
      arguments: { name: "body", meta: "body" },
      inputSchema: { type: "object", properties: { name: { type: "string" }, meta: {} } }
    },
    Downstream.anyPet,
    {
      name: "match_a",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path" },
      inputSchema: {
        type: "object",
        properties: { id: { type: "string", pattern: BACKTRACKING } },
        required: ["id"]
      }
    }
  ])
  void downstream
  const upstream = yield* Effect.acquireRelease(Effect.promise(startUpstream), (u) => Effect.promise(() => u.stop()))
  const connections = yield* Connections
  yield* connections.create({
    kind: "mcp",
    name: "up",
    url: upstream.url,
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 5_000
  })
  const admins = yield* AdminTokens
  const admin = Redacted.value((yield* admins.create({ name: "hostile-fuzz" })).plaintext)
  const spare = yield* admins.create({ name: "playground" })
  const client = Redacted.value((yield* (yield* ClientTokens).create({ name: "hostile-fuzz-client" })).plaintext)
  const playgroundConnection = yield* connections.create({
    kind: "rest",
    name: "playground",
    baseUrl: "https://api.example.com"
  })
  const endpoint = yield* (yield* Endpoints).create({
    connectionId: playgroundConnection.id,
    name: "playground_tool",
    method: "GET",
    pathTemplate: "/things/{id}",
    arguments: { id: "path" },
    inputSchema: { type: "object", properties: { id: { type: "string" } } }
  })
  const base = yield* baseUrl
  const server = yield* post(base, admin, "/api/v1/virtual-servers", {
    name: "playground-vs",
    tools: ["playground_tool"]
  })
  const playgroundToken = yield* post(base, admin, "/api/v1/client-tokens", { name: "playground-token" })

  // the federated names, once the upstream is listed
  const list = (method: string, field: string, key: string) =>
    Effect.promise(async () => {
      const response = await send(base, statelessWire(client, method, { _meta: META }, 1))
      const items = (JSON.parse(response.text).result?.[field] ?? []) as Array<Record<string, string>>
      return items.map((item) => item[key]!)
    })
  let tools: ReadonlyArray<string> = []
  for (let i = 0; i < 200 && !tools.some((t) => t.endsWith("match")); i++) {
    tools = yield* list("tools/list", "tools", "name")
    if (!tools.some((t) => t.endsWith("match"))) yield* Effect.sleep("50 millis")
  }
  const upstreamTool = (bare: string) => {
    const found = tools.find((t) => t !== bare && t.endsWith(bare))
    assert.isString(found, `the upstream's ${bare} is listed: ${tools.join(", ")}`)
    return found!
  }
  const prompts = yield* list("prompts/list", "prompts", "name")
  const resources = yield* list("resources/list", "resources", "uri")
  assert.isNotEmpty(prompts)
  assert.isNotEmpty(resources)

  const stream = yield* Effect.acquireRelease(
    Effect.promise(() => watch(new URL("/api/v1/events", base), admin)),
    (s) => Effect.sync(s.close)
  )
  assert.strictEqual(stream.status, 200)

  return Fixture.of({
    adminToken: admin,
    clientToken: client,
    playground: {
      connections: playgroundConnection.id,
      endpoints: endpoint.id,
      "virtual-servers": server.id,
      "client-tokens": playgroundToken.id,
      "admin-tokens": spare.token.id,
      secrets: "playground-secret"
    },
    tools: {
      rest: ["get_pet", "create_pet", "any_pet", "match_a"],
      upstream: [upstreamTool("test_simple_text"), upstreamTool("test_error_handling"), upstreamTool("match")]
    },
    matchTools: ["match_a", upstreamTool("match")],
    // the slow resource stays out of the run: it takes 1.5 s
    prompts,
    resources: resources.filter((uri) => !uri.includes("slow")),
    petsConnection: pets.id,
    stream
  })
})

const TestLayer = Layer.effect(Fixture, seed).pipe(
  Layer.provideMerge(GatewayTesting.layer({
    config: {
      JANUS_ALLOW_ANONYMOUS: false,
      // the run is one client: limits would turn attempts into admission refusals (audited apart)
      RATE_LIMIT_IP: 1_000_000,
      RATE_LIMIT_IP_BURST: 1_000_000,
      RATE_LIMIT_IDENTITY: 1_000_000,
      RATE_LIMIT_IDENTITY_BURST: 1_000_000
    }
  })),
  Layer.provideMerge(Downstream.layer)
)

// -----------------------------------------------------------------------------
// Hostile values
// -----------------------------------------------------------------------------

/** A hostile string, or one of 100 KB. */
const bigOrHostile: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.constantFrom("\u0000", "\ud800", "a").map((c) => c.repeat(KB100)) }
)

/** `aaaa…!`: no match for `^(a+)+$`, exponential on a backtracking engine; sometimes a match. */
const backtracking: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(30, 40, 5_000, KB100).map((n) => "a".repeat(n) + "!"),
  fc.constantFrom(30, KB100).map((n) => "a".repeat(n))
)

/** Nesting the gateway accepts (an attempt), or far deeper than its limit (refused before parsing). */
const nested = (depth: number): Json => {
  // written as text past what a recursive writer (toJson) can walk
  if (depth > 100) return new RawNumber(`${"[{\"d\":".repeat(depth / 2)}"deep"${"}]".repeat(depth / 2)}`)
  let value: Json = "deep"
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { d: value }
  return value
}

const unknownFields = fc.dictionary(hostileString.filter((k) => k !== "_meta"), hostileJson, { maxKeys: 3 })

/** A valid JSON-RPC id: finite numbers and strings (huge ones too). */
const validId: fc.Arbitrary<Json> = fc.oneof(
  fc.nat(1_000_000),
  bigOrHostile,
  fc.constantFrom("18446744073709551616", "1".repeat(40)).map((t) => new RawNumber(t))
)

/** A value of any type (wrong where a string, object or id is expected). */
const wrongType: fc.Arbitrary<Json> = fc.oneof(
  hostileNumber,
  fc.constantFrom<Json>(null, true, [], [1, "x"]),
  fc.dictionary(hostileString, hostileJson, { maxKeys: 2 })
)

// -----------------------------------------------------------------------------
// MCP requests: what each method is sent, and whether it is an attempt
// -----------------------------------------------------------------------------

/** One JSON-RPC message and, when it is an attempt, the method it is audited under. */
interface Message {
  readonly method: string
  readonly params: Json | undefined
  /** `undefined`: a notification. */
  readonly id: Json | undefined
  /** The `Mcp-Name` it needs on 2026-07-28. */
  readonly name?: string | undefined
  readonly audited?: string | undefined
  /** Nested past the gateway's limit: the whole body is refused. */
  readonly deep?: boolean | undefined
}

const AUDITED_STATELESS = ["tools/call", "resources/read", "prompts/get", "completion/complete"] as const
const AUDITED_SESSION = [...AUDITED_STATELESS, "resources/subscribe", "resources/unsubscribe"] as const

/**
 * Attempts with hostile contents: names and URIs (listed ones, hostile ones,
 * 100 KB ones), arguments (hostile JSON, `aaaa…!`, nesting within the
 * limit) and unknown fields. `mirrored`: the name travels in `Mcp-Name` too,
 * so it is well-formed and short enough for a header.
 */
const attempt = (fixture: FixtureShape, methods: ReadonlyArray<string>, mirrored: boolean): fc.Arbitrary<Message> => {
  const text = mirrored ? hostileString.map((s) => s.toWellFormed()) : bigOrHostile
  const pick = (known: ReadonlyArray<string>) =>
    fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...known) }, { weight: 2, arbitrary: text })
  const args = fc.oneof(
    fc.dictionary(hostileString, hostileJson, { maxKeys: 3 }),
    fc.record({ id: fc.oneof(bigOrHostile, hostileJson), text: bigOrHostile, tag: hostileJson }, {
      requiredKeys: []
    }),
    fc.constantFrom(5, 25).map((depth) => ({ id: "x", meta: nested(depth) }))
  )
  return fc.record({
    method: fc.constantFrom(...methods),
    id: validId,
    extra: unknownFields,
    tool: pick([...fixture.tools.rest, ...fixture.tools.upstream]),
    prompt: pick(fixture.prompts),
    uri: pick(fixture.resources),
    args,
    match: fc.record({ tool: fc.constantFrom(...fixture.matchTools), value: backtracking }),
    useMatch: fc.boolean(),
    promptArgs: fc.dictionary(hostileString, bigOrHostile, { maxKeys: 2 }),
    ref: fc.constantFrom("ref/prompt", "ref/resource"),
    argument: fc.record({ name: bigOrHostile, value: bigOrHostile })
  }).map((r): Message => {
    const meta = mirrored ? { _meta: META } : {}
    switch (r.method) {
      case "tools/call": {
        const [name, args] = r.useMatch
          ? [r.match.tool, { [r.match.tool === "match_a" ? "id" : "text"]: r.match.value }]
          : [r.tool, r.args]
        return {
          method: r.method,
          id: r.id,
          name,
          params: { ...r.extra, name, arguments: args as Json, ...meta },
          audited: r.method
        }
      }
      case "prompts/get":
        return {
          method: r.method,
          id: r.id,
          name: r.prompt,
          params: { ...r.extra, name: r.prompt, arguments: r.promptArgs, ...meta },
          audited: r.method
        }
      case "completion/complete":
        return {
          method: r.method,
          id: r.id,
          params: {
            ...r.extra,
            ref: r.ref === "ref/prompt" ? { type: r.ref, name: r.prompt } : { type: r.ref, uri: r.uri },
            argument: r.argument,
            ...meta
          },
          audited: r.method
        }
      default:
        return {
          method: r.method,
          id: r.id,
          name: r.method === "resources/read" ? r.uri : undefined,
          params: { ...r.extra, uri: r.uri, ...meta },
          audited: r.method
        }
    }
  })
}

/** Methods with hostile params that are no attempt: lists, discovery, notifications, tasks, unknown methods. */
const other = (mirrored: boolean, session: boolean): fc.Arbitrary<Message> => {
  const meta = mirrored ? { _meta: META } : {}
  const methods = [
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "server/discover",
    "ping",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "Tools/Call",
    "tools/call/",
    ...(session ? [] : ["resources/subscribe", "resources/unsubscribe"])
  ]
  const notifications = [
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/message",
    "notifications/tasks/status",
    "notifications/whatever"
  ]
  return fc.oneof(
    // a method with hostile params: cursors, levels, task ids, unknown fields
    fc.record({
      method: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...methods) }, { weight: 1, arbitrary: bigOrHostile }),
      id: validId,
      params: fc.record({
        cursor: fc.oneof(bigOrHostile, wrongType),
        level: fc.oneof(fc.constantFrom("debug", "emergency"), bigOrHostile, wrongType),
        taskId: fc.oneof(bigOrHostile, wrongType),
        extra: unknownFields
      }, { requiredKeys: [] })
    }).map(({ id, method, params }): Message => {
      const { extra, ...fields } = params
      return { method, id, params: { ...extra, ...fields, ...meta } as Json }
    }),
    // a notification with hostile params (cancelling hostile request ids, progress of hostile tokens)
    fc.record({
      method: fc.constantFrom(...notifications),
      params: fc.record({ requestId: validId, progressToken: validId, progress: hostileNumber, reason: bigOrHostile }, {
        requiredKeys: []
      })
    }).map(({ method, params }): Message => ({ method, id: undefined, params: { ...params, ...meta } as Json })),
    // an audited method whose params have the wrong shape: no attempt
    fc.record({
      method: fc.constantFrom(...AUDITED_STATELESS),
      id: validId,
      bad: wrongType,
      shape: fc.constantFrom("name", "uri", "params", "ref", "arguments", "value")
    }).map(({ bad, id, method, shape }): Message => {
      const params: Json = shape === "params" ? bad : method === "completion/complete"
        ? shape === "value" || shape === "arguments"
          ? {
            ref: { type: "ref/prompt", name: "up/test_prompt_with_arguments" },
            argument: { name: "arg1", value: bad },
            ...meta
          }
          : {
            ref: shape === "ref" ? bad : { type: "ref/prompt", name: bad },
            argument: { name: "a", value: "" },
            ...meta
          }
        : method === "tools/call" && shape === "arguments"
        ? { name: "get_pet", arguments: new RawNumber("1e400"), ...meta }
        : method === "prompts/get" && (shape === "arguments" || shape === "value")
        ? { name: "up/test_prompt_with_arguments", arguments: { arg1: bad }, ...meta }
        : { name: bad, uri: bad, ...meta }
      const named = (params as { readonly name?: unknown } | null)?.name
      return { method, id, params, name: typeof named === "string" ? named : undefined }
    }),
    // an attempt-shaped request whose id is no id (not finite, an object): no attempt
    fc.record({ id: fc.oneof(hostileNumber.filter((n) => !n.finite), fc.constant<Json>({ a: 1 })) }).map(
      ({ id }): Message => ({ method: "tools/call", id, name: "get_pet", params: { name: "get_pet", ...meta } })
    ),
    // arguments nested far past the limit: refused before parsing
    fc.constantFrom(200, 5_000).map((depth): Message => ({
      method: "tools/call",
      id: 1,
      name: "any_pet",
      params: { name: "any_pet", arguments: { id: "x", q: nested(depth) }, ...meta },
      deep: true
    }))
  )
}

// -----------------------------------------------------------------------------
// Sessions (2025 era)
// -----------------------------------------------------------------------------

interface Session {
  readonly version: string
  readonly id: string
}

const JSON_HEADERS = [["content-type", "application/json"], ["accept", "application/json, text/event-stream"]] as const

const openSession = async (base: URL, token: string, version: string): Promise<Session> => {
  const headers = { ...Object.fromEntries(JSON_HEADERS), authorization: `Bearer ${token}` }
  const response = await fetch(new URL("/mcp", base), {
    method: "POST",
    headers,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "hostile-fuzz", version: "1" } }
    })
  })
  await response.text()
  const id = response.headers.get("mcp-session-id")
  assert.isString(id, `initialize ${version} answered ${response.status} without a session`)
  const initialized = await fetch(new URL("/mcp", base), {
    method: "POST",
    headers: { ...headers, "mcp-session-id": id!, "mcp-protocol-version": version },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
  })
  await initialized.text()
  return { version, id: id! }
}

const onSession = (token: string, session: Session, body: string): Wire => ({
  method: "POST",
  path: "/mcp",
  headers: [
    ...JSON_HEADERS,
    ["authorization", `Bearer ${token}`],
    ["mcp-session-id", session.id],
    ["mcp-protocol-version", session.version]
  ],
  body
})

const envelope = (m: Message, id?: string): Json =>
  ({
    jsonrpc: "2.0",
    ...(m.id === undefined ? {} : { id: id ?? m.id }),
    method: m.method,
    ...(m.params === undefined ? {} : { params: m.params })
  }) as Json

/** What one request sends, and the audited methods among it. */
interface Run {
  readonly wire: Wire
  readonly audited: ReadonlyArray<string>
}

const auditedOf = (m: Message): ReadonlyArray<string> => m.audited === undefined ? [] : [m.audited]

/** The MCP body limit (1 MiB): a larger request is refused (413) before any message is read. */
const MAX_BODY_BYTES = 1024 * 1024

const withinLimit = (wire: Wire, audited: ReadonlyArray<string>): ReadonlyArray<string> =>
  Buffer.byteLength(wire.body ?? "") > MAX_BODY_BYTES ? [] : audited

const statelessRuns = (fixture: FixtureShape): fc.Arbitrary<Run> =>
  fc.oneof(
    { weight: 3, arbitrary: attempt(fixture, AUDITED_STATELESS, true) },
    { weight: 2, arbitrary: other(true, false) }
  ).map((m) => {
    const wire = statelessWire(fixture.clientToken, m.method, m.params, m.id, m.name)
    return { wire, audited: withinLimit(wire, auditedOf(m)) }
  })

const sessionRuns = (fixture: FixtureShape, sessions: ReadonlyArray<Session>): fc.Arbitrary<Run> => {
  const batchable = sessions.find((s) => s.version === "2025-03-26")!
  const message = fc.oneof(
    { weight: 3, arbitrary: attempt(fixture, AUDITED_SESSION, false) },
    { weight: 2, arbitrary: other(false, true) }
  )
  return fc.oneof(
    // one message on a live session
    fc.record({ session: fc.constantFrom(...sessions), m: message }).map(({ m, session }) => {
      const wire = onSession(fixture.clientToken, session, toJson(envelope(m)))
      return { wire, audited: withinLimit(wire, auditedOf(m)) }
    }),
    // a batch (2025-03-26), ids distinct
    fc.array(message, { minLength: 1, maxLength: 4 }).map((ms) => {
      // attempts get distinct ids; the others keep theirs (an id that is no id stays one)
      const messages = ms.map((m, i) => m.audited === undefined ? envelope(m) : envelope(m, `batch-${i}`))
      const wire = onSession(fixture.clientToken, batchable, toJson(messages))
      // a message nested past the limit refuses the whole body
      return { wire, audited: ms.some((m) => m.deep === true) ? [] : withinLimit(wire, ms.flatMap(auditedOf)) }
    }),
    // initialize with hostile versions, capabilities and client info (a new session: no attempt)
    fc.record({
      version: fc.oneof(fc.constantFrom("2025-11-25", "2025-03-26"), bigOrHostile, wrongType),
      capabilities: fc.oneof(hostileJson, fc.constant<Json>({ roots: { listChanged: true }, x: nested(20) })),
      clientInfo: fc.oneof(fc.record({ name: bigOrHostile, version: bigOrHostile }), wrongType),
      extra: unknownFields
    }).map(({ capabilities, clientInfo, extra, version }): Run => ({
      wire: {
        method: "POST",
        path: "/mcp",
        headers: [...JSON_HEADERS, ["authorization", `Bearer ${fixture.clientToken}`] as const],
        body: toJson({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: { ...extra, protocolVersion: version, capabilities, clientInfo }
        })
      },
      audited: []
    })),
    // hostile session ids (no session: no attempt)
    fc.record({ id: hostileString, m: attempt(fixture, AUDITED_SESSION, false) }).map(({ id, m }) => ({
      wire: onSession(
        fixture.clientToken,
        { id: id.length === 0 ? "x" : id, version: "2025-11-25" },
        toJson(envelope(m))
      ),
      audited: []
    }))
  )
}

// -----------------------------------------------------------------------------
// Admin requests: HostileAdmin's, and the resources it does not cover
// -----------------------------------------------------------------------------

const query = (names: ReadonlyArray<string>) =>
  fc.array(
    fc.tuple(
      fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: hostileString }),
      fc.oneof(bigOrHostile, hostileNumber.map((n) => n.token), fc.constantFrom("true", "yaml", "2030-02-30"))
    ),
    { maxLength: 3 }
  ).map((pairs) =>
    pairs.length === 0 ? "" : "?" + pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join("&")
  )

/** A configuration document with hostile names and values, for names the fixture does not use (`fz-…`). */
const document: fc.Arbitrary<Json> = fc.record({
  apiVersion: fc.oneof(fc.constant("janus/v1"), hostileString),
  kind: fc.oneof(fc.constant("Configuration"), hostileString),
  connections: fc.array(
    fc.record({
      name: hostileString.map((s) => `fz-${s}`),
      kind: fc.constantFrom<Json>("rest", "mcp", 1),
      baseUrl: fc.oneof(fc.constant("https://api.example.com"), bigOrHostile),
      description: bigOrHostile,
      extra: hostileJson
    }),
    { maxLength: 2 }
  ),
  endpoints: fc.array(
    fc.record({
      name: hostileString.map((s) => `fz_${s}`),
      connection: hostileString,
      method: fc.constantFrom<Json>("GET", "TRACE", null),
      pathTemplate: fc.oneof(fc.constant("/x/{id}"), bigOrHostile),
      inputSchema: fc.oneof(
        fc.constant<Json>({ type: "object", properties: { id: { type: "string", pattern: BACKTRACKING } } }),
        fc.constant<Json>({ type: "object", properties: { id: { type: "string", pattern: "(" } } }),
        hostileJson
      )
    }),
    { maxLength: 2 }
  ),
  unknown: hostileJson
}, { requiredKeys: ["apiVersion", "kind"] })

interface AdminRun {
  readonly wire: Wire
}

const extraAdmin = (fixture: FixtureShape): fc.Arbitrary<Wire> => {
  const auth = [["authorization", `Bearer ${fixture.adminToken}`]] as const
  const hostileId = fc.oneof(
    fc.constant(fixture.petsConnection),
    hostileString.map(percentEncode),
    fc.constant("a".repeat(KB100 / 10))
  )
  const method = fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE")
  const body = fc.oneof(
    hostileJson.map(toJson),
    fc.constantFrom("", "{", "\u0000", "[]", "{\"a\":" + "[".repeat(300) + "]".repeat(300) + "}")
  )
  return fc.oneof(
    // configuration apply, a preview (or refused for its flag): never an apply that could touch the fixture
    fc.record({
      doc: document,
      type: fc.constantFrom("application/json", "application/yaml", "text/plain"),
      flags: fc.constantFrom(
        "?dryRun=true",
        "?dryRun=true&prune=true",
        "?dryRun=maybe",
        "?dryRun=%00",
        "?dryRun=true&dryRun=false"
      )
    }).map(({ doc, flags, type }): Wire => ({
      method: "POST",
      path: `/api/v1/config/apply${flags}`,
      headers: [...auth, ["content-type", type]],
      body: toJson(doc)
    })),
    // read-only resources with hostile queries
    fc.record({
      path: fc.constantFrom("/config/export", "/config/schema", "/config", "/upstreams", "/audit/verify", "/audit"),
      q: query(["format", "since", "limit", "cursor", "outcome", "tool"])
    }).map(({ path, q }): Wire => ({ method: "GET", path: `/api/v1${path}${q}`, headers: auth })),
    // a connection's test, at hostile ids
    hostileId.map((id): Wire => ({ method: "POST", path: `/api/v1/connections/${id}/test`, headers: auth })),
    // every method on every route, hostile bodies (405s, 404s, 400s)
    fc.record({
      method,
      path: fc.constantFrom(
        "/config/apply",
        "/config/export",
        "/audit",
        "/audit/verify",
        "/upstreams",
        "/events",
        "/secrets",
        "/connections",
        "/nonexistent",
        "/connections/x/test/more"
      ),
      body,
      type: fc.constantFrom("application/json", "application/merge-patch+json", "text/plain")
    }).map(({ body, method, path, type }): Wire => ({
      method,
      path: `/api/v1${path}`,
      headers: [...auth, ["content-type", type]],
      body: method === "GET" ? undefined : body,
      statusOnly: path === "/events"
    })),
    // unknown fields on creates
    fc.record({
      c: fc.constantFrom("connections", "virtual-servers", "client-tokens"),
      extra: fc.dictionary(hostileString, hostileJson, { minKeys: 1, maxKeys: 3 })
    }).map(({ c, extra }): Wire => ({
      method: "POST",
      path: `/api/v1/${c}`,
      headers: [...auth, ["content-type", "application/json"]],
      body: toJson({
        ...extra,
        name: `fz-${c}`,
        ...(c === "connections" ? { kind: "rest", baseUrl: "https://api.example.com" } : {})
      })
    }))
  )
}

const adminRuns = (fixture: FixtureShape): fc.Arbitrary<AdminRun> =>
  fc.oneof(
    { weight: 3, arbitrary: adminRequest(fixture) },
    { weight: 2, arbitrary: extraAdmin(fixture) }
  ).map((wire) => ({ wire }))

/** Admin rows the admin property's requests must leave, those answered 201 (a creation), and the rows before it. */
const adminWrites = { expected: 0, created: 0, rowsBefore: 0 }

/** Refusals before the admin API knows an actor: `auth` rows or no row (framing), never an `admin` row. */
const BEFORE_ACTOR: ReadonlySet<number> = new Set([401, 403, 414, 415, 429, 431])

/**
 * The `admin` rows `wire`, answered with `status`, must leave: one for every
 * write method under `/api/v1` that the admin API refused (the caller known:
 * not a refusal of authentication or framing, see `BEFORE_ACTOR`), one for
 * every change made, none for a read, a preview (`dryRun=true`) that
 * succeeded, or a connection test.
 */
const adminRowsOf = (wire: Wire, status: number): number => {
  if (!["POST", "PUT", "PATCH", "DELETE"].includes(wire.method.toUpperCase())) return 0
  if (!wire.path.startsWith("/api/v1/") || wire.path.startsWith("/api/v1/events")) return 0
  if (status >= 400) return BEFORE_ACTOR.has(status) ? 0 : 1
  return /[?&]dryRun=true(&|$)/.test(wire.path) || /\/test(\?|$)/.test(wire.path) ? 0 : 1
}

// -----------------------------------------------------------------------------
// The run
// -----------------------------------------------------------------------------

/** The admin audit rows so far (the audit log flushed first). */
const adminRows = Effect.gen(function*() {
  yield* (yield* AuditLog).flush
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM audit_records WHERE kind = 'admin'`
  return rows[0]!.n
})

/** Audited methods sent, by method. */
const attempts = new Map<string, number>()
const count = (methods: ReadonlyArray<string>) => {
  for (const m of methods) attempts.set(m, (attempts.get(m) ?? 0) + 1)
}

const metrics = (base: URL) =>
  Effect.promise(async () => {
    const text = await fetch(new URL("/metrics", base)).then((r) => r.text())
    const series = text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).length
    return { bytes: Buffer.byteLength(text), series }
  })

let before = { bytes: 0, series: 0, heap: 0 }

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })(
  "hostile requests to every method and resource",
  (it) => {
    it.effect("before the run: /metrics and the heap are measured", () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const m = yield* metrics(base)
        before = { ...m, heap: process.memoryUsage().heapUsed }
      }))

    it.effect("/mcp 2026-07-28: every method, hostile params, never a server error", () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const fixture = yield* Fixture
        yield* Effect.promise(() =>
          check(statelessRuns(fixture), { numRuns: RUNS.stateless, seed: SEED }, async (run) => {
            count(run.audited)
            assertNoServerError(await send(base, run.wire))
          })
        )
      }), PROPERTY_TIMEOUT)

    it.effect(
      "/mcp 2025 sessions and batches: every method, hostile params, never a server error",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const fixture = yield* Fixture
          const sessions = yield* Effect.promise(() =>
            Promise.all([
              openSession(base, fixture.clientToken, "2025-11-25"),
              openSession(base, fixture.clientToken, "2025-03-26")
            ])
          )
          yield* Effect.promise(() =>
            check(sessionRuns(fixture, sessions), { numRuns: RUNS.sessions, seed: SEED }, async (run) => {
              count(run.audited)
              assertNoServerError(await send(base, run.wire))
            })
          )
        }),
      PROPERTY_TIMEOUT
    )

    it.effect(
      "/api/v1: every resource and method, hostile bodies, ids and queries, never a 5xx",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const fixture = yield* Fixture
          adminWrites.rowsBefore = yield* adminRows
          yield* Effect.promise(() =>
            check(adminRuns(fixture), { numRuns: RUNS.admin, seed: SEED }, async ({ wire }) => {
              const answer = await send(base, wire)
              assertNoServerError(answer)
              adminWrites.expected += adminRowsOf(wire, answer.status)
              if (answer.status === 201) adminWrites.created++
            })
          )
          // still serving, and still writing
          const write: Wire = {
            method: "POST",
            path: "/api/v1/connections",
            headers: [["authorization", `Bearer ${fixture.adminToken}`], ["content-type", "application/json"]],
            body: JSON.stringify({ kind: "rest", name: "fz-after-admin", baseUrl: "https://api.example.com" })
          }
          const created = yield* Effect.promise(() => send(base, write))
          assert.strictEqual(created.status, 201, created.text)
          adminWrites.expected++
          adminWrites.created++
          const health = yield* Effect.promise(() => fetch(new URL("/healthz", base)))
          assert.strictEqual(health.status, 200)
        }),
      PROPERTY_TIMEOUT
    )

    it.effect("after the run: every MCP attempt is audited exactly once, by method", () =>
      Effect.gen(function*() {
        yield* (yield* AuditLog).flush
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ readonly method: string; readonly n: number }>`
        SELECT method, count(*)::int AS n FROM audit_records WHERE kind = 'call' GROUP BY method`
        const audited = Object.fromEntries(rows.map((r) => [r.method, r.n]))
        const sent = Object.fromEntries([...attempts].sort())
        for (const method of AUDITED_STATELESS) {
          assert.isAbove(sent[method] ?? 0, 0, `${method} attempted`)
        }
        assert.deepStrictEqual(
          Object.fromEntries(Object.entries(audited).sort()),
          sent,
          "audit rows by method vs attempts"
        )
      }))

    it.effect("after the run: admin writes are audited", () =>
      Effect.gen(function*() {
        assert.isAbove(adminWrites.created, 0)
        assert.strictEqual(
          (yield* adminRows) - adminWrites.rowsBefore,
          adminWrites.expected,
          "admin audit rows vs admin writes refused or made"
        )
      }))

    it.effect("after the run: /metrics and the heap stay bounded", () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const after = yield* metrics(base)
        assert.isBelow(after.bytes, METRICS_MAX_BYTES, "bytes of /metrics")
        assert.isBelow(after.series, METRICS_MAX_SERIES, "series of /metrics")
        assert.isBelow(after.series - before.series, METRICS_MAX_NEW_SERIES, "series the run added")
        const heap = process.memoryUsage().heapUsed
        assert.isBelow(heap - before.heap, HEAP_MAX_GROWTH, "heap growth")
      }))

    it.effect("after the run: the event stream opened before it is alive and gets a fresh change signal", () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const { adminToken, stream } = yield* Fixture
        assert.isFalse(stream.ended(), "the stream ended during the run")
        assert.isAbove(stream.frames(), 0, "frames during the run")
        const from = stream.length()
        const created = yield* post(base, adminToken, "/api/v1/connections", {
          kind: "rest",
          name: "after-the-fuzz",
          baseUrl: "https://api.example.com"
        })
        assert.isString(created.id)
        let seen = false
        for (let i = 0; i < 200 && !seen; i++) {
          seen = /event: signal\ndata: \{"topic":"connection"/.test(stream.since(from))
          if (!seen) {
            yield* Effect.sleep("50 millis")
          }
        }
        assert.isTrue(seen, `no change signal after the run: ${stream.since(from).slice(0, 500)}`)
        assert.isFalse(stream.ended())
      }))

    it.effect("after the run: the audit chain verifies", () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const { adminToken } = yield* Fixture
        const report = yield* Effect.promise(() =>
          fetch(new URL("/api/v1/audit/verify", base), { headers: { authorization: `Bearer ${adminToken}` } }).then((
            r
          ) => r.json() as Promise<{ readonly ok: boolean; readonly problems: ReadonlyArray<unknown> }>)
        )
        assert.deepStrictEqual(report.problems, [])
        assert.isTrue(report.ok)
      }))
  }
)
