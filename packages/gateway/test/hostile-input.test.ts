/**
 * Hostile input, property-based (fast-check), through one whole gateway:
 * `/mcp` on both wires (2026-07-28 stateless; 2025-era sessions, batches
 * included) and every `/api/v1` resource (create and update bodies, list and
 * audit queries, path and header positions), with NUL, lone surrogates,
 * U+2028, emoji and oversized numbers (1e400, -1e400, 2^64, long digit
 * strings) in every string and number position, header values included
 * (`Mcp-Name`, `Mcp-Method`, `Mcp-Param-*`, `Mcp-Session-Id`,
 * `MCP-Protocol-Version`, `If-Match`, `Last-Event-ID`; see `support/Hostile.ts`).
 *
 * Asserted (GUIDE "Hostile input is part of every feature"):
 * - no response is a 5xx, and no JSON-RPC answer is an internal error (-32603);
 * - every tools/call attempt is audited: the audit log holds exactly one row
 *   per attempt. An attempt is a tools/call request in a well-formed envelope
 *   (a supported revision, a live session, `Mcp-Method`/`Mcp-Name`/
 *   `Mcp-Param-*` mirroring the body, a string tool name, an object of
 *   arguments, a string or finite-number id), whatever its name, arguments and
 *   `_meta` hold. The generators build attempts so; every other request (a
 *   broken envelope) is generated apart and must not be audited as a call;
 * - no circuit breaker is opened by client input: `/metrics` shows every
 *   breaker closed, and a well-formed call still reaches the downstream;
 * - after the run, `GET /api/v1/events` still delivers a change signal and a
 *   `calls` event.
 *
 * Runs are bounded (`RUNS`); the seed is fixed (`SEED`; fast-check prints it
 * with the shrunk counterexample; `HOSTILE_FUZZ_SEED` runs another,
 * `HOSTILE_FUZZ_ALL=1` lists every failing value instead of the first).
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, AuditLog, Connections, Endpoints } from "@janus/storage"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import fc from "fast-check"
import * as GatewayTesting from "../src/testing.ts"
import * as Downstream from "./support/Downstream.ts"
import {
  assertNoServerError,
  check,
  freeText,
  headerValueOf,
  hostileHeader,
  hostileJson,
  hostileNat,
  hostileNumber,
  hostileString,
  type Json,
  mutated,
  percentEncode,
  RawNumber,
  send,
  toJson,
  type Wire
} from "./support/Hostile.ts"

const SEED = Number(process.env.HOSTILE_FUZZ_SEED ?? 152_026)
const RUNS = { stateless: 150, sessions: 100, admin: 250 } as const
/** A property's run is bounded by `RUNS`; this only caps its wall time on a loaded machine. */
const PROPERTY_TIMEOUT = 180_000

// -----------------------------------------------------------------------------
// The gateway under test: the pets downstream and its tools, a playground for the admin API
// -----------------------------------------------------------------------------

/** The tools that reach the downstream. */
const TOOLS = ["get_pet", "create_pet", "any_pet", "region_pet"] as const

interface FixtureShape {
  readonly adminToken: string
  /** What the admin fuzz may change (never the pets connection the calls use). */
  readonly playground: Readonly<Record<string, string>>
}

class Fixture extends Context.Service<Fixture, FixtureShape>()("test/hostile-input/Fixture") {}

const seed = Effect.gen(function*() {
  // two failures open the circuit: were client input counted, the run would open it at once
  yield* Downstream.petsTools({ breaker: { consecutiveFailures: 2, openMs: 600_000 } }, [
    {
      name: "get_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path", tag: "query", "x-note": "header" },
      inputSchema: {
        type: "object",
        properties: { id: { type: "string" }, tag: { type: "string" }, "x-note": { type: "string" } },
        required: ["id"]
      }
    },
    {
      name: "create_pet",
      method: "POST",
      pathTemplate: "/pets",
      arguments: { name: "body", meta: "body" },
      inputSchema: { type: "object", properties: { name: { type: "string" }, meta: {} } }
    },
    {
      name: "any_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path", q: "query", "x-note": "header" },
      inputSchema: { type: "object", properties: { id: {}, q: {}, "x-note": {} } }
    },
    // on 2026-07-28 the `Mcp-Param-Region` header mirrors `region`
    {
      name: "region_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path", region: "query" },
      inputSchema: {
        type: "object",
        properties: { id: { type: "string" }, region: { type: "string", "x-mcp-header": "Region" } },
        required: ["id", "region"]
      }
    }
  ])
  const endpoints = yield* Endpoints

  const admins = yield* AdminTokens
  const admin = yield* admins.create({ name: "hostile-input" })
  const spare = yield* admins.create({ name: "playground" })
  const connection = yield* (yield* Connections).create({
    kind: "rest",
    name: "playground",
    baseUrl: "https://api.example.com"
  })
  const endpoint = yield* endpoints.create({
    connectionId: connection.id,
    name: "playground_tool",
    method: "GET",
    pathTemplate: "/things/{id}",
    arguments: { id: "path" },
    inputSchema: { type: "object", properties: { id: { type: "string" } } }
  })
  const base = yield* baseUrl
  const post = (path: string, body: unknown) =>
    Effect.promise(() =>
      fetch(new URL(path, base), {
        method: "POST",
        headers: { authorization: `Bearer ${Redacted.value(admin.plaintext)}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then((r) => r.json() as Promise<{ readonly id: string }>)
    )
  const server = yield* post("/api/v1/virtual-servers", { name: "playground-vs", tools: ["playground_tool"] })
  const token = yield* post("/api/v1/client-tokens", { name: "playground-token" })
  return Fixture.of({
    adminToken: Redacted.value(admin.plaintext),
    playground: {
      connections: connection.id,
      endpoints: endpoint.id,
      "virtual-servers": server.id,
      "client-tokens": token.id,
      "admin-tokens": spare.token.id,
      secrets: "playground-secret"
    }
  })
})

const baseUrl = HttpServer.addressFormattedWith((url) => Effect.succeed(new URL(url)))

const TestLayer = Layer.effect(Fixture, seed).pipe(
  Layer.provideMerge(GatewayTesting.layer()),
  Layer.provideMerge(Downstream.layer)
)

/** tools/call attempts sent (see the module doc), counted when sent, whatever the answer. */
let attempts = 0

const JSON_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["content-type", "application/json"],
  ["accept", "application/json, text/event-stream"]
]

// -----------------------------------------------------------------------------
// /mcp
// -----------------------------------------------------------------------------

/** A request id: hostile strings and finite numbers (2^64 too) are ids; a non-finite number is not. */
const validId: fc.Arbitrary<Json> = fc.oneof(
  fc.nat(1_000_000),
  hostileString,
  fc.constantFrom("18446744073709551616", "1".repeat(40), "-18446744073709551616").map((t) => new RawNumber(t))
)

interface Call {
  readonly name: string
  readonly arguments: { readonly [key: string]: Json }
  /** The `Mcp-Param-Region` value (2026-07-28), for the tool that declares it. */
  readonly region?: string | undefined
  readonly id: Json
  readonly meta: { readonly [key: string]: Json }
}

/**
 * Well-formed tools/call requests with hostile names, arguments and `_meta`.
 * On 2026-07-28 `Mcp-Name` and `Mcp-Param-*` must mirror the name and the
 * region, and no header can carry a lone surrogate, so there those are
 * well-formed Unicode (a lone surrogate elsewhere is fine).
 */
const call = (stateless: boolean): fc.Arbitrary<Call> => {
  const mirrored = stateless ? hostileString.map((s) => s.toWellFormed()) : hostileString
  return fc.record({
    name: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...TOOLS) }, { weight: 2, arbitrary: mirrored }),
    id: validId,
    meta: fc.dictionary(
      hostileString.filter((key) => !key.startsWith("io.modelcontextprotocol/") && key !== "progressToken"),
      hostileJson,
      { maxKeys: 2 }
    ),
    declared: fc.record({
      id: fc.oneof(hostileString, hostileJson),
      tag: hostileJson,
      "x-note": fc.oneof(hostileString, hostileJson),
      q: hostileJson,
      name: hostileJson,
      meta: hostileJson
    }, { requiredKeys: [] }),
    region: mirrored,
    extra: fc.dictionary(hostileString, hostileJson, { maxKeys: 3 })
  }).map(({ declared, extra, id, meta, name, region }) => ({
    name,
    id,
    meta,
    arguments: name === "region_pet" ? { ...extra, ...declared, region } : { ...extra, ...declared },
    region: name === "region_pet" ? region : undefined
  }))
}

const statelessMeta = (extra: { readonly [key: string]: Json }, clientInfo: Json = { name: "fuzz", version: "1" }) => ({
  ...extra,
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": clientInfo
})

const statelessCall = (c: Call): Wire => ({
  method: "POST",
  path: "/mcp",
  headers: [
    ...JSON_HEADERS,
    ["mcp-protocol-version", "2026-07-28"],
    ["mcp-method", "tools/call"],
    ["mcp-name", headerValueOf(c.name)],
    ...(c.region === undefined ? [] : [["mcp-param-region", headerValueOf(c.region)] as const])
  ],
  body: toJson({
    jsonrpc: "2.0",
    id: c.id,
    method: "tools/call",
    params: { name: c.name, arguments: c.arguments, _meta: statelessMeta(c.meta) }
  })
})

const isObject = (json: Json): json is { readonly [key: string]: Json } =>
  typeof json === "object" && json !== null && !Array.isArray(json) && !(json instanceof RawNumber)

/** Broken envelopes on the 2026-07-28 wire: never attempts. */
const statelessBroken: fc.Arbitrary<Wire> = fc.oneof(
  // a tools/call whose Mcp-Name, Mcp-Method or Mcp-Param-Region does not mirror it (raw hostile bytes too)
  fc.record({ c: call(true), value: hostileHeader, which: fc.constantFrom("name", "method", "param") }).map(
    ({ c, value, which }): Wire => {
      const mirror = (header: string, mirrored: string, broken: string) =>
        [header, which === header.slice(4) ? broken : mirrored] as const
      return {
        ...statelessCall(c),
        headers: [
          ...JSON_HEADERS,
          ["mcp-protocol-version", "2026-07-28"],
          mirror("mcp-method", "tools/call", value === "tools/call" ? "tools/list" : value),
          // no Region header to break: the name is broken instead
          which === "param" && c.region === undefined
            ? ["mcp-name", headerValueOf(`${c.name}x`)]
            : mirror("mcp-name", headerValueOf(c.name), value === c.name ? `${value}x` : value),
          ...(c.region === undefined ? [] : [mirror("mcp-param", headerValueOf(c.region), value)]).map((
            [, v]
          ) => ["mcp-param-region", v] as const)
        ]
      }
    }
  ),
  // an id that is no JSON-RPC id: not a finite number
  fc.record({ c: call(true), id: hostileNumber.filter((n) => !n.finite) }).map(({ c, id }) =>
    statelessCall({ ...c, id })
  ),
  // other methods, versions and names in headers, with hostile params
  fc.record({
    method: fc.oneof(
      fc.constantFrom("tools/list", "server/discover", "resources/read", "prompts/get", "ping", "subscriptions/listen"),
      hostileString
    ),
    params: fc.dictionary(hostileString, hostileJson, { maxKeys: 3 }),
    version: fc.oneof(fc.constant("2026-07-28"), hostileHeader),
    name: fc.option(hostileHeader, { nil: undefined }),
    id: fc.oneof(validId, hostileNumber)
  }).map(({ id, method, name, params, version }): Wire => ({
    method: "POST",
    path: "/mcp",
    headers: [
      ...JSON_HEADERS,
      ["mcp-protocol-version", version],
      ["mcp-method", method],
      ...(name === undefined ? [] : [["mcp-name", name] as const])
    ],
    body: toJson({ jsonrpc: "2.0", id, method, params: { ...params, _meta: statelessMeta({}) } })
  })),
  // a tools/call whose params, arguments or _meta do not have the shape the protocol fixes
  fc.record({ c: call(true), params: hostileJson, clientInfo: hostileJson, args: hostileJson }).map(
    ({ args, c, clientInfo, params }): Wire => ({
      ...statelessCall(c),
      body: toJson({
        jsonrpc: "2.0",
        id: c.id,
        method: "tools/call",
        params: isObject(params)
          ? {
            ...(params as { readonly [key: string]: Json }),
            name: c.name,
            arguments: isObject(args) ? new RawNumber("1e400") : args,
            _meta: statelessMeta(c.meta, clientInfo)
          }
          : params
      })
    })
  ),
  // raw hostile bytes in the request target and in another header
  fc.record({ target: hostileString, value: hostileHeader }).map(({ target, value }): Wire => ({
    method: "POST",
    path: `/mcp?${target}`,
    headers: [...JSON_HEADERS, ["mcp-protocol-version", "2026-07-28"], ["mcp-method", "ping"], ["x-fuzz", value]],
    body: toJson({ jsonrpc: "2.0", id: 1, method: "ping", params: { _meta: statelessMeta({}) } })
  }))
)

const initialize = (version: Json, clientInfo: Json, capabilities: Json = {}): Wire => ({
  method: "POST",
  path: "/mcp",
  headers: JSON_HEADERS,
  body: toJson({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: version, capabilities, clientInfo }
  })
})

interface Session {
  readonly version: string
  readonly id: string
}

const openSession = async (base: URL, version: string): Promise<Session> => {
  const response = await fetch(new URL("/mcp", base), {
    method: "POST",
    headers: Object.fromEntries(JSON_HEADERS),
    body: initialize(version, { name: "fuzz", version: "1" }).body!
  })
  await response.text()
  const id = response.headers.get("mcp-session-id")
  assert.isString(id, `initialize ${version} answered ${response.status} without a session`)
  const initialized = await fetch(new URL("/mcp", base), {
    method: "POST",
    headers: { ...Object.fromEntries(JSON_HEADERS), "mcp-session-id": id!, "mcp-protocol-version": version },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
  })
  await initialized.text()
  return { version, id: id! }
}

const onSession = (session: Session, body: string): Wire => ({
  method: "POST",
  path: "/mcp",
  headers: [...JSON_HEADERS, ["mcp-session-id", session.id], ["mcp-protocol-version", session.version]],
  body
})

const sessionMessage = (c: Call): Json => ({
  jsonrpc: "2.0",
  id: c.id,
  method: "tools/call",
  params: { name: c.name, arguments: c.arguments, _meta: c.meta }
})

/** What one 2025-era run sends, and how many tools/call attempts are among it. */
interface SessionRun {
  readonly wire: Wire
  readonly attempts: number
}

const sessionRuns = (sessions: ReadonlyArray<Session>): fc.Arbitrary<SessionRun> => {
  const batchable = sessions.find((s) => s.version === "2025-03-26")!
  const otherMessage = fc.oneof(
    fc.record({ id: validId, method: fc.constantFrom("tools/list", "ping") }).map(({ id, method }) =>
      ({ jsonrpc: "2.0", id, method }) as Json
    ),
    hostileJson,
    // a tools/call whose id is no id
    fc.record({ c: call(false), id: hostileNumber.filter((n) => !n.finite) }).map(({ c, id }) =>
      ({ ...(sessionMessage(c) as object), id }) as Json
    )
  )
  return fc.oneof(
    // initialize with hostile clientInfo, capabilities and versions
    fc.record({
      version: fc.oneof(fc.constantFrom("2025-11-25", "2025-06-18", "2025-03-26"), hostileString, hostileNumber),
      clientInfo: fc.oneof(
        fc.record({ name: hostileString, version: hostileString, title: hostileString }, { requiredKeys: [] }),
        hostileJson
      ),
      capabilities: hostileJson
    }).map(({ capabilities, clientInfo, version }) => ({
      wire: initialize(version, clientInfo, capabilities),
      attempts: 0
    })),
    // one hostile call on a session
    fc.record({ session: fc.constantFrom(...sessions), c: call(false) }).map(({ c, session }) => ({
      wire: onSession(session, toJson(sessionMessage(c))),
      attempts: 1
    })),
    // a batch (2025-03-26): calls among other and broken messages
    fc.array(
      fc.oneof(
        call(false).map((c) => ({ message: sessionMessage(c), attempt: true })),
        otherMessage.map((message) => ({ message, attempt: false }))
      ),
      { minLength: 1, maxLength: 5 }
    ).map((items) => ({
      wire: onSession(batchable, toJson(items.map((i) => i.message))),
      attempts: items.filter((i) => i.attempt).length
    })),
    // hostile session ids and versions: no session, no attempt
    fc.record({ id: hostileHeader, version: hostileHeader, c: call(false) }).map(({ c, id, version }) => ({
      wire: onSession({ id, version }, toJson(sessionMessage(c))),
      attempts: 0
    })),
    // the GET stream and DELETE with hostile session ids and Last-Event-ID (never deleting a live session:
    // the calls on it are attempts)
    fc.record({
      method: fc.constantFrom("GET", "DELETE"),
      live: fc.constantFrom(...sessions.map((s) => s.id)),
      hostile: hostileHeader,
      useLive: fc.boolean(),
      last: fc.option(hostileHeader, { nil: undefined })
    }).map(({ hostile, last, live, method, useLive }) => ({
      id: method === "GET" && useLive ? live : hostile,
      last,
      method
    })).map((
      { id, last, method }
    ) => ({
      wire: {
        method,
        path: "/mcp",
        headers: [
          ["accept", "text/event-stream"],
          ["mcp-session-id", id],
          ["mcp-protocol-version", "2025-11-25"],
          ...(last === undefined ? [] : [["last-event-id", last] as const])
        ],
        statusOnly: true
      } satisfies Wire,
      attempts: 0
    }))
  )
}

// -----------------------------------------------------------------------------
// /api/v1
// -----------------------------------------------------------------------------

const resourceName = fc.stringMatching(/^[a-z][a-z0-9_.-]{0,12}$/)
const toolName = fc.stringMatching(/^[a-z][a-z0-9_]{0,12}$/)

/** Valid bodies with hostile free text (0 to 2 members then replaced by hostile values). */
const bodies = (playground: FixtureShape["playground"]): Record<string, fc.Arbitrary<Json>> => ({
  connections: mutated(fc.record({
    kind: fc.constant("rest"),
    name: resourceName,
    description: freeText,
    baseUrl: fc.constantFrom("https://api.example.com/v1", "https://api.example.com"),
    auth: fc.oneof(
      fc.constant({ scheme: "none" }),
      fc.record({ scheme: fc.constant("header"), header: fc.constant("X-Api-Key"), secret: fc.constant("s1") }),
      fc.record({ scheme: fc.constant("basic"), username: freeText, secret: fc.constant("s1") })
    ),
    timeoutMs: hostileNat(60_000),
    retry: fc.record({ maxAttempts: hostileNat(5), initialDelayMs: hostileNat(1_000), maxDelayMs: hostileNat(5_000) }),
    breaker: fc.record({ consecutiveFailures: hostileNat(100), openMs: hostileNat(60_000) }),
    egressAllowList: fc.array(fc.oneof(fc.constantFrom("10.0.0.0/8", ".example.com"), freeText), {
      maxLength: 2
    })
  })),
  endpoints: mutated(fc.record({
    connectionId: fc.constant(playground.connections!),
    name: toolName,
    description: freeText,
    method: fc.constantFrom("GET", "POST", "DELETE"),
    pathTemplate: fc.constant("/things/{id}"),
    arguments: fc.record({ id: fc.constant("path"), q: fc.constantFrom("query", "header", "body") }),
    inputSchema: fc.record({
      type: fc.constant("object"),
      description: freeText,
      properties: fc.record({
        id: fc.record({ type: fc.constant("string"), description: freeText, maxLength: hostileNat(100) }),
        q: hostileJson
      }),
      required: fc.constant(["id"])
    }),
    idempotent: fc.boolean()
  })),
  "virtual-servers": mutated(fc.record({
    name: resourceName,
    description: freeText,
    tools: fc.array(fc.oneof(fc.constant("playground_tool"), freeText), { maxLength: 3 })
  })),
  "client-tokens": mutated(fc.record({
    name: freeText,
    allowedTools: fc.array(fc.oneof(fc.constant("playground_tool"), freeText), { maxLength: 2 }),
    allowedVirtualServers: fc.constant(["playground-vs"]),
    expiresAt: fc.constantFrom("2099-01-01T00:00:00Z", "-271821-04-20T00:00:00Z", "+275760-09-13T00:00:00Z")
  })),
  "admin-tokens": mutated(fc.record({ name: freeText })),
  secrets: mutated(fc.record({ value: freeText })),
  "openapi/import": mutated(fc.record({
    source: fc.record({ title: freeText, operationId: freeText, path: freeText }).map((doc) => ({
      text: JSON.stringify({
        openapi: "3.0.3",
        info: { title: doc.title, version: "1" },
        servers: [{ url: "https://api.example.com" }],
        paths: { [`/p/${doc.path}`]: { get: { operationId: doc.operationId, description: doc.title } } }
      })
    })),
    connection: fc.record({ name: resourceName, description: freeText, timeoutMs: hostileNat(60_000) }),
    options: fc.record({ namePrefix: freeText, tags: fc.array(freeText, { maxLength: 2 }) }, {
      requiredKeys: []
    })
  }))
})

/** A path segment: an existing id, or hostile text as percent-encoded bytes (lone surrogates stay invalid UTF-8). */
const segment = (existing: string) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(existing) },
    { weight: 3, arbitrary: hostileString.map(percentEncode) },
    { weight: 1, arbitrary: hostileNumber.map((n) => percentEncode(n.token)) }
  )

const query = (names: ReadonlyArray<string>) =>
  fc.array(
    fc.tuple(
      fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: hostileString }),
      fc.oneof(hostileString, hostileNumber.map((n) => n.token), fc.constantFrom("-271821-04-20T00:00:00Z", "ok"))
    ),
    { maxLength: 4 }
  ).map((pairs) =>
    pairs.length === 0 ? "" : "?" + pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join("&")
  )

const adminRequest = (fixture: FixtureShape): fc.Arbitrary<Wire> => {
  const { playground } = fixture
  const byCollection = bodies(playground)
  const auth = [["authorization", `Bearer ${fixture.adminToken}`]] as const
  const json = [...auth, ["content-type", "application/json"]] as const
  const ifMatch = fc.option(fc.oneof(hostileHeader, hostileNat(5).map((n) => `"${n.token}"`)), { nil: undefined })
  const precondition = (value: string | undefined) => value === undefined ? [] : [["if-match", value] as const]
  const collection = fc.constantFrom(...Object.keys(playground))
  const writable = fc.constantFrom("connections", "endpoints", "virtual-servers")
  return fc.oneof(
    // create
    collection.chain((c) =>
      byCollection[c]!.map((body): Wire => ({
        method: c === "secrets" ? "PUT" : "POST",
        path: c === "secrets" ? `/api/v1/secrets/${playground.secrets}` : `/api/v1/${c}`,
        headers: json,
        body: toJson(body)
      }))
    ),
    // update a playground resource (or a hostile id) with hostile bodies and preconditions
    fc.record({ c: writable, method: fc.constantFrom("PUT", "PATCH"), ifMatch }).chain(({ c, ifMatch, method }) =>
      fc.record({ id: segment(playground[c]!), body: byCollection[c]! }).map(({ body, id }): Wire => ({
        method,
        path: `/api/v1/${c}/${id}`,
        headers: [
          ...auth,
          ["content-type", method === "PATCH" ? "application/merge-patch+json" : "application/json"],
          ...precondition(ifMatch)
        ],
        body: toJson(body)
      }))
    ),
    // reads, deletes and revocations at hostile paths
    fc.record({
      c: collection,
      method: fc.constantFrom("GET", "DELETE", "POST"),
      ifMatch,
      q: query(["limit", "cursor", "version"])
    }).chain(({ c, ifMatch, method, q }) =>
      segment(playground[c]!).map((id): Wire => ({
        method,
        path: method === "POST" ? `/api/v1/${c}/${id}/revoke` : `/api/v1/${c}/${id}${q}`,
        headers: [...auth, ...precondition(ifMatch)]
      }))
    ),
    // lists
    fc.record({ c: collection, q: query(["limit", "cursor", "connectionId"]) }).map(({ c, q }): Wire => ({
      method: "GET",
      path: `/api/v1/${c}${q}`,
      headers: auth
    })),
    // the audit query
    query(["from", "to", "tool", "outcome", "identity", "connection", "limit", "cursor"]).map((q): Wire => ({
      method: "GET",
      path: `/api/v1/audit${q}`,
      headers: auth
    })),
    // OpenAPI import (a preview, or applied)
    fc.record({ body: byCollection["openapi/import"]!, dryRun: fc.boolean() }).map(({ body, dryRun }): Wire => ({
      method: "POST",
      path: `/api/v1/openapi/import${dryRun ? "?dryRun=true" : ""}`,
      headers: json,
      body: toJson(body)
    })),
    // the events stream with hostile topics and Last-Event-ID
    fc.record({ topics: hostileString, last: fc.option(hostileHeader, { nil: undefined }) }).map(
      ({ last, topics }): Wire => ({
        method: "GET",
        path: `/api/v1/events?topics=${percentEncode(topics)}`,
        headers: [...auth, ...(last === undefined ? [] : [["last-event-id", last] as const])],
        statusOnly: true
      })
    )
  )
}

// -----------------------------------------------------------------------------
// The run: one gateway, the properties in order, then what must still hold
// -----------------------------------------------------------------------------

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })("hostile input", (it) => {
  it.effect(
    "/mcp 2026-07-28: hostile names, arguments, ids, _meta and headers never get a server error",
    () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const request = fc.oneof(
          { weight: 3, arbitrary: call(true).map((c) => ({ attempt: true, wire: statelessCall(c) })) },
          { weight: 2, arbitrary: statelessBroken.map((wire) => ({ attempt: false, wire })) }
        )
        yield* Effect.promise(() =>
          check(request, { numRuns: RUNS.stateless, seed: SEED }, async ({ attempt, wire }) => {
            if (attempt) attempts++
            assertNoServerError(await send(base, wire))
          })
        )
      }),
    PROPERTY_TIMEOUT
  )

  it.effect(
    "/mcp 2025 sessions and batches: hostile clientInfo, calls and messages never get a server error",
    () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const sessions = yield* Effect.promise(() =>
          Promise.all([openSession(base, "2025-11-25"), openSession(base, "2025-03-26")])
        )
        yield* Effect.promise(() =>
          check(sessionRuns(sessions), { numRuns: RUNS.sessions, seed: SEED }, async (run) => {
            attempts += run.attempts
            assertNoServerError(await send(base, run.wire))
          })
        )
      }),
    PROPERTY_TIMEOUT
  )

  it.effect("/api/v1: hostile bodies, queries, paths and headers never get a 5xx", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const fixture = yield* Fixture
      yield* Effect.promise(() =>
        check(adminRequest(fixture), { numRuns: RUNS.admin, seed: SEED }, async (wire) => {
          assertNoServerError(await send(base, wire))
        })
      )
    }), PROPERTY_TIMEOUT)

  it.effect("after the run: every tools/call attempt is audited, exactly once", () =>
    Effect.gen(function*() {
      yield* (yield* AuditLog).flush
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM audit_records`
      assert.isAbove(attempts, 0)
      assert.strictEqual(rows[0]!.n, attempts, "audit records vs tools/call attempts")
    }))

  it.effect("after the run: no circuit breaker is open, and a well-formed call reaches the downstream", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const downstream = yield* Downstream.Downstream
      const metrics = yield* Effect.promise(() => fetch(new URL("/metrics", base)).then((r) => r.text()))
      for (const line of metrics.split("\n").filter((l) => l.startsWith("janus_breaker_state{"))) {
        assert.match(line, /\s0$/, `a breaker is not closed: ${line}`)
      }
      attempts++
      const answer = yield* Effect.promise(() =>
        send(base, statelessCall({ name: "get_pet", arguments: { id: "after-the-run" }, id: 1, meta: {} }))
      )
      assert.strictEqual(answer.status, 200, answer.text)
      assert.notInclude(answer.text, "breaker")
      assert.strictEqual(downstream.hits.get("GET /pets/after-the-run"), 1)
    }))

  it.effect("after the run: the event stream still delivers a change signal and a calls event", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const { adminToken } = yield* Fixture
      const received = yield* Effect.promise(async () => {
        const controller = new AbortController()
        const timer = setTimeout(() => controller.abort(), 15_000)
        const seen = { signal: false, calls: false }
        try {
          const response = await fetch(new URL("/api/v1/events?topics=connection,calls", base), {
            headers: { authorization: `Bearer ${adminToken}` },
            signal: controller.signal
          })
          assert.strictEqual(response.status, 200)
          const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
          // the stream is open: now a write and a call
          const written = fetch(new URL("/api/v1/connections", base), {
            method: "POST",
            headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
            body: JSON.stringify({ kind: "rest", name: "after-the-run", baseUrl: "https://api.example.com" })
          }).then((r) => r.status)
          attempts++
          const called = send(base, statelessCall({ name: "get_pet", arguments: { id: "watched" }, id: 2, meta: {} }))
          let buffer = ""
          while (!(seen.signal && seen.calls)) {
            const { done, value } = await reader.read()
            if (done) break
            buffer += value
            seen.signal ||= /event: signal\ndata: \{"topic":"connection"/.test(buffer)
            seen.calls ||= /event: event\ndata: \{"topic":"calls"/.test(buffer)
          }
          assert.strictEqual(await written, 201)
          assert.strictEqual((await called).status, 200)
        } catch (error) {
          // the timer ended the wait: `seen` says what arrived
          if (!controller.signal.aborted) throw error
        } finally {
          clearTimeout(timer)
          controller.abort()
        }
        return seen
      })
      assert.deepStrictEqual(received, { signal: true, calls: true })
    }))
})
