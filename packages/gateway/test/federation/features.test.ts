/**
 * Federated resources, prompts and completion under the rules of tools
 * (issue #17), behind one gateway with authentication on: three upstreams
 * built with the official SDK v1 (`conformance-server.ts`, texts tagged
 * [A], [B], [G]); `alpha` and `beta` both with tool prefix `""`, so in the
 * virtual server `both` (`alpha/*`, `beta/*`) they expose the same resource
 * URIs and the same prompt names.
 *
 * Expected:
 * - both are reachable: the URI as given reads alpha's (the connection name
 *   sorting first keeps it), `janus://beta/<uri>` beta's; the shared prompt
 *   names are served as `alpha/<name>` and `beta/<name>`; `completion/complete`
 *   follows the prompt; `/api/v1/upstreams` reports the collisions;
 * - a client token limited to `both` sees no gamma prompt or resource;
 * - resources/read, prompts/get and completion/complete are audited with
 *   their method and appear on the `calls` event stream, unknown targets
 *   too (`invalid`; a batch of unknown prompts is rate limited like known
 *   ones); the concurrency cap
 *   (1) sheds a second read while a slow one runs; the per-identity limit
 *   (burst 30) refuses the excess of a batch of 50 reads;
 * - pages of 2 (`pageSize`) of prompts/list cover every prompt of the three
 *   upstreams once, in order;
 * - hostile `uri` / `name` values (NUL, lone surrogates, numbers, objects,
 *   64 KiB, empty) are JSON-RPC errors, never a 5xx nor an internal error
 *   (-32603), even where the upstream answers with one;
 * - a 2025 client (SDK v1) subscribed to `test://watched-resource` gets
 *   `notifications/resources/updated` on its session when the upstream says
 *   the resource changed, and none after unsubscribing;
 * - the response cache honours a 2026-07-28 upstream's `ttlMs` / `cacheScope`
 *   (an SDK v2 server `delta` whose resources count their reads): a
 *   `private` result is reused for the same caller only, a `public` one for
 *   every caller of the view.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, AuditLog, ClientTokens, Connections, EventLog, VirtualServers } from "@janus/storage"
import { toNodeHandler } from "@modelcontextprotocol/node"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { createMcpHandler, McpServer as McpServerV2 } from "@modelcontextprotocol/server"
import { Context, Effect, Fiber, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"
import { post } from "../mcp/http-client.ts"
import * as ConformanceUpstream from "./conformance-upstream.ts"
import { waitUntil } from "./support.ts"
import { serveMcp } from "./upstreams.ts"

class Upstreams extends Context.Service<Upstreams, {
  readonly alpha: ConformanceUpstream.ConformanceUpstream
  readonly beta: ConformanceUpstream.ConformanceUpstream
  readonly gamma: ConformanceUpstream.ConformanceUpstream
  readonly delta: ConformanceUpstream.ConformanceUpstream
}>()("test/federation/FeatureUpstreams") {}

/** A 2026-07-28 upstream whose resources say how many times they were read, with cache hints. */
const startCaching = async () => {
  let reads = 0
  const factory = () => {
    const server = new McpServerV2({ name: "caching", version: "1.0.0" }, { capabilities: { resources: {} } })
    for (const scope of ["private", "public"] as const) {
      server.registerResource(scope, `cache://${scope}`, {
        mimeType: "text/plain",
        cacheHint: { ttlMs: 60_000, cacheScope: scope }
      }, async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: `read ${++reads}` }] }))
    }
    return server
  }
  const node = toNodeHandler(createMcpHandler(factory, { legacy: "reject" }))
  return serveMcp((req, res) => node(req as never, res))
}

const started = (tag: string) =>
  Effect.acquireRelease(Effect.promise(() => ConformanceUpstream.start(tag)), (u) => Effect.promise(() => u.stop()))

const UpstreamsLive = Layer.effect(
  Upstreams,
  Effect.gen(function*() {
    return {
      alpha: yield* started(" [A]"),
      beta: yield* started(" [B]"),
      gamma: yield* started(" [G]"),
      delta: yield* Effect.acquireRelease(Effect.promise(startCaching), (u) => Effect.promise(() => u.stop()))
    }
  })
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const upstreams = yield* Upstreams
  const connections = yield* Connections
  for (const name of ["alpha", "beta", "gamma", "delta"] as const) {
    yield* connections.create({
      kind: "mcp",
      name,
      url: upstreams[name].url,
      egressAllowList: ["127.0.0.1"],
      timeoutMs: 10_000,
      ...(name === "gamma" ? {} : { toolPrefix: "" })
    })
  }
  yield* (yield* VirtualServers).create({ name: "both", tools: ["alpha/*", "beta/*"] })
}))

const TestLayer = Seed.pipe(
  Layer.provideMerge(GatewayTesting.layer({
    config: {
      JANUS_ALLOW_ANONYMOUS: false,
      RATE_LIMIT_IDENTITY: 1,
      RATE_LIMIT_IDENTITY_BURST: 30,
      MCP_MAX_CONCURRENT_CALLS: 1
    },
    mcp: { pageSize: 2 }
  })),
  Layer.provideMerge(UpstreamsLive)
)

const urlOf = (path: string) => HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base).href))

/** A fresh client token (its own per-identity bucket), optionally limited to virtual servers. */
const token = (name: string, allowedVirtualServers: ReadonlyArray<string> | null = null) =>
  Effect.gen(function*() {
    const created = yield* (yield* ClientTokens).create({
      name: `${name}-${Math.random().toString(36).slice(2, 8)}`,
      allowedVirtualServers: allowedVirtualServers === null ? null : [...allowedVirtualServers]
    })
    return { authorization: `Bearer ${Redacted.value(created.plaintext)}`, id: created.token.id }
  }).pipe(Effect.orDie)

interface Rpc {
  readonly status: number
  readonly result?: any
  readonly error?: { readonly code: number; readonly message: string; readonly data?: any }
}

/** A 2025 session on `path` for `authorization`: one JSON-RPC request at a time (or a batch, 2025-03-26). */
const session = (path: string, authorization: string, version = "2025-11-25") =>
  Effect.gen(function*() {
    const url = yield* urlOf(path)
    const auth = { authorization }
    const init = yield* post(url, {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "features-test", version: "1" } }
    }, auth)
    assert.strictEqual(init.status, 200, init.text)
    const headers = { ...auth, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": version }
    let id = 1
    const rpc = (method: string, params: Record<string, unknown> = {}) =>
      Effect.map(post(url, { jsonrpc: "2.0", id: id++, method, params }, headers), (reply): Rpc => {
        const body = reply.body ?? JSON.parse(reply.events.at(-1)?.data ?? "{}")
        return { status: reply.status, result: body?.result, error: body?.error }
      })
    const batch = (messages: ReadonlyArray<{ method: string; params: Record<string, unknown> }>) =>
      Effect.map(
        post(url, messages.map((m) => ({ jsonrpc: "2.0", id: id++, ...m })), headers),
        (reply) => reply.body as ReadonlyArray<Rpc>
      )
    return { rpc, batch, capabilities: init.body.result.capabilities }
  })

const texts = (result: any): string => JSON.stringify(result)

const ready = (authorization: string) =>
  Effect.gen(function*() {
    const s = yield* session("/servers/both/mcp", authorization)
    // alpha's and beta's prompts (the first page of the virtual server, in name order)
    yield* waitUntil(
      Effect.map(s.rpc("prompts/list"), (r) => JSON.stringify(r.result ?? {}).includes("alpha/test_prompt_with")),
      "federated prompts"
    )
  })

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })("federated resources and prompts", (it) => {
  it.effect("same URI and prompt name from two upstreams in one virtual server: both reachable, collision reported", () =>
    Effect.gen(function*() {
      const { authorization } = yield* token("collide")
      yield* ready(authorization)
      const s = yield* session("/servers/both/mcp", authorization)
      assert.deepStrictEqual(s.capabilities.completions, {})
      assert.strictEqual(s.capabilities.resources.subscribe, true)
      const all = (method: string, field: string, key: string) =>
        Effect.gen(function*() {
          const out: Array<string> = []
          let cursor: string | undefined
          do {
            const page = yield* s.rpc(method, cursor === undefined ? {} : { cursor })
            out.push(...page.result[field].map((item: Record<string, string>) => item[key]))
            cursor = page.result.nextCursor
          } while (cursor !== undefined)
          return out
        })
      const prompts = yield* all("prompts/list", "prompts", "name")
      assert.includeMembers(prompts, ["alpha/test_simple_prompt", "beta/test_simple_prompt"])
      assert.notInclude(prompts, "test_simple_prompt")
      const resources = yield* all("resources/list", "resources", "uri")
      assert.includeMembers(resources, ["test://static-text", "janus://beta/test://static-text"])
      assert.includeMembers(yield* all("resources/templates/list", "resourceTemplates", "uriTemplate"), [
        "test://template/{id}/data",
        "janus://beta/test://template/{id}/data"
      ])

      const read = (uri: string) => Effect.map(s.rpc("resources/read", { uri }), (r) => texts(r.result))
      assert.include(yield* read("test://static-text"), "[A]")
      assert.include(yield* read("janus://beta/test://static-text"), "[B]")
      assert.include(yield* read("janus://alpha/test://static-text"), "[A]")
      // templates: the URI as given goes to the first; qualified to the named one
      assert.include(yield* read("test://template/7/data"), "[A]")
      assert.include(yield* read("janus://beta/test://template/7/data"), "[B]")
      const get = (name: string) => Effect.map(s.rpc("prompts/get", { name }), (r) => texts(r.result))
      assert.include(yield* get("alpha/test_simple_prompt"), "[A]")
      assert.include(yield* get("beta/test_simple_prompt"), "[B]")
      const completed = yield* s.rpc("completion/complete", {
        ref: { type: "ref/prompt", name: "beta/test_prompt_with_arguments" },
        argument: { name: "arg1", value: "pa" }
      })
      assert.deepStrictEqual(completed.result.completion.values, ["paris", "park", "party"])
      // an unlisted URI no template matches is asked of the upstreams in turn: the last one's answer is relayed
      const unknown = yield* s.rpc("resources/read", { uri: "nothing://here" })
      assert.include([-32002, -32602], unknown.error?.code)
      assert.include(unknown.error?.message, "nothing://here")

      const admin = Redacted.value((yield* (yield* AdminTokens).create({ name: `studio-${Math.random()}` })).plaintext)
      const url = yield* urlOf("/api/v1/upstreams")
      const body = yield* Effect.promise(() =>
        fetch(url, { headers: { authorization: `Bearer ${admin}` } }).then((r) => r.json() as Promise<any>)
      )
      const alpha = body.items.find((i: { connection: string }) => i.connection === "alpha")
      assert.isAbove(alpha.promptCount, 0)
      assert.isAbove(alpha.resourceCount, 0)
      const collision = (kind: string, name: string) =>
        alpha.collisions.find((c: any) => c.kind === kind && c.name === name && c.view === "both")
      assert.deepStrictEqual(collision("resource", "test://static-text")?.connections, ["alpha", "beta"])
      assert.deepStrictEqual(collision("resourceTemplate", "test://template/{id}/data")?.connections, ["alpha", "beta"])
      assert.deepStrictEqual(collision("prompt", "test_simple_prompt")?.connections, ["alpha", "beta"])
      const gamma = body.items.find((i: { connection: string }) => i.connection === "gamma")
      // gamma shares the URIs with alpha and beta on /mcp (prompts there differ by prefix), not in `both`
      assert.isAbove(gamma.collisions.length, 0)
      assert.isTrue(gamma.collisions.every((c: any) => c.view === "/mcp" && c.kind !== "prompt"))
    }))

  it.effect("a client token limited to a virtual server sees only what it serves", () =>
    Effect.gen(function*() {
      const limited = yield* token("limited", ["both"])
      const s = yield* session("/mcp", limited.authorization)
      const prompts = texts((yield* s.rpc("prompts/list")).result)
      assert.notInclude(prompts, "gamma/")
      // outside its view, the name is refused by the token's scope like a tool outside it (and audited denied)
      const refused = yield* s.rpc("prompts/get", { name: "gamma/test_simple_prompt" })
      assert.strictEqual(refused.error?.data?.reason, "denied", texts(refused))
      assert.notInclude(texts(refused), "[G]")
      const read = yield* s.rpc("resources/read", { uri: "janus://gamma/test://static-text" })
      assert.isDefined(read.error)
      assert.notInclude(texts(read), "[G]")
    }))

  it.effect("resources/read, prompts/get and completion/complete are audited with their method and on calls", () =>
    Effect.gen(function*() {
      const caller = yield* token("audited")
      const base = new URL(yield* urlOf("/"))
      const events = yield* EventLog
      const before = yield* events.latestId
      const s = yield* session("/mcp", caller.authorization)
      assert.include(texts((yield* s.rpc("resources/read", { uri: "janus://gamma/test://static-text" })).result), "[G]")
      assert.include(texts((yield* s.rpc("prompts/get", { name: "gamma/test_simple_prompt" })).result), "[G]")
      yield* s.rpc("completion/complete", {
        ref: { type: "ref/prompt", name: "gamma/test_prompt_with_arguments" },
        argument: { name: "arg1", value: "te" }
      })
      // unknown targets are attempts too (the caller's mistake: invalid), under the name the client gave
      assert.strictEqual((yield* s.rpc("prompts/get", { name: "gamma/no_such_prompt" })).error?.code, -32602)
      const unknownRef = yield* s.rpc("completion/complete", {
        ref: { type: "ref/prompt", name: "no_such_prompt\u0000" },
        argument: { name: "arg1", value: "te" }
      })
      assert.strictEqual(unknownRef.error?.code, -32602)
      // params of the wrong shape are no attempt
      assert.strictEqual((yield* s.rpc("prompts/get", { name: 42 })).error?.code, -32602)
      const audit = yield* AuditLog
      yield* audit.flush
      yield* events.flush
      const records = (yield* audit.query({ limit: 100, identity: `token:${caller.id}` })).items
      const summary = records.map((r) => `${r.method} ${r.tool} ${r.connection} ${r.outcome}`).sort()
      assert.deepStrictEqual(summary, [
        "completion/complete gamma/test_prompt_with_arguments gamma ok",
        // a NUL cannot be stored: it is recorded as U+FFFD
        "completion/complete no_such_prompt\ufffd null invalid",
        "prompts/get gamma/no_such_prompt null invalid",
        "prompts/get gamma/test_simple_prompt gamma ok",
        "resources/read gamma/test://static-text gamma ok"
      ])
      // the metric says what the audit row says
      const metrics = yield* Effect.promise(() => fetch(new URL("/metrics", base)).then((r) => r.text()))
      assert.match(
        metrics,
        /mcp_server_operation_duration_seconds_count\{mcp_method_name="prompts\/get",gen_ai_tool_name="other",error_type="invalid"\} \d+\n/
      )
      const read = records.find((r) => r.method === "resources/read")!
      assert.isAbove(read.bytesIn, 0)
      // in: the params sent; out: the answer, with the resource's contents (the larger of the two)
      assert.isAbove(read.bytesOut, read.bytesIn)
      const calls = (yield* events.after(before, 1_000)).filter((e) =>
        e.topic === "calls" && (e.data as any).identity === `token:${caller.id}`
      )
      assert.deepStrictEqual(
        calls.map((e) => (e.data as any).method).sort(),
        ["completion/complete", "completion/complete", "prompts/get", "prompts/get", "resources/read"]
      )
    }))

  it.effect("a batch of unknown prompts costs its limiter tokens: the excess is rate limited and audited so", () =>
    Effect.gen(function*() {
      const prober = yield* token("prober")
      const b = yield* session("/mcp", prober.authorization, "2025-03-26")
      const answers = yield* b.batch(
        Array.from({ length: 50 }, (_, i) => ({ method: "prompts/get", params: { name: `no_such_prompt_${i}` } }))
      )
      assert.strictEqual(answers.length, 50)
      const refused = answers.filter((a) => a.error?.data?.reason === "rate_limited")
      assert.isAbove(refused.length, 15)
      const audit = yield* AuditLog
      yield* audit.flush
      const records = (yield* audit.query({ limit: 100, identity: `token:${prober.id}` })).items
      assert.strictEqual(records.length, 50)
      assert.strictEqual(records.filter((r) => r.outcome === "rate_limited").length, refused.length)
      assert.strictEqual(records.filter((r) => r.outcome === "invalid").length, 50 - refused.length)
    }))

  it.effect("the concurrency cap and the per-identity limit apply to reads", () =>
    Effect.gen(function*() {
      const caller = yield* token("capped")
      const s = yield* session("/mcp", caller.authorization)
      const slow = yield* Effect.forkChild(s.rpc("resources/read", { uri: "janus://gamma/test://slow" }))
      yield* Effect.sleep("600 millis")
      const excess = yield* s.rpc("resources/read", { uri: "janus://gamma/test://static-text" })
      assert.strictEqual(excess.error?.data?.reason, "shed", texts(excess))
      assert.include(texts((yield* Fiber.join(slow)).result ?? {}), "slow [G]")

      const limited = yield* token("limited-batch")
      const b = yield* session("/mcp", limited.authorization, "2025-03-26")
      const answers = yield* b.batch(
        Array.from({ length: 50 }, () => ({ method: "prompts/get", params: { name: "gamma/test_simple_prompt" } }))
      )
      assert.strictEqual(answers.length, 50)
      const refused = answers.filter((a) => a.error?.data?.reason === "rate_limited")
      assert.isAbove(refused.length, 15)
      assert.isAbove(answers.filter((a) => a.result !== undefined).length, 0)
      const audit = yield* AuditLog
      yield* audit.flush
      const rateLimited = (yield* audit.query({ limit: 100, identity: `token:${limited.id}`, outcome: "rate_limited" }))
        .items
      assert.strictEqual(rateLimited.length, refused.length)
      assert.isTrue(rateLimited.every((r) => r.method === "prompts/get"))
    }))

  it.effect("pages of prompts/list across three upstreams cover every prompt once, in order", () =>
    Effect.gen(function*() {
      const s = yield* session("/mcp", (yield* token("pager")).authorization)
      const names: Array<string> = []
      let cursor: string | undefined
      for (let page = 0; page < 100; page++) {
        const reply = yield* s.rpc("prompts/list", cursor === undefined ? {} : { cursor })
        assert.isAtMost(reply.result.prompts.length, 2)
        names.push(...reply.result.prompts.map((p: { name: string }) => p.name))
        cursor = reply.result.nextCursor
        if (cursor === undefined) break
      }
      assert.strictEqual(names.length, 12)
      assert.deepStrictEqual(names, [...new Set(names)].sort())
      const bad = yield* s.rpc("prompts/list", { cursor: "not-a-cursor" })
      assert.strictEqual(bad.error?.code, -32602)
    }))

  it.effect("hostile uri and name values are JSON-RPC errors, never a 5xx", () =>
    Effect.gen(function*() {
      const s = yield* session("/mcp", (yield* token("hostile")).authorization)
      const values: ReadonlyArray<unknown> = [
        "a\u0000b",
        "\ud800",
        "test://\udc00x",
        "janus://\u0000/x",
        "janus://gamma/\ud800",
        12,
        1e308,
        { uri: "x" },
        null,
        "x".repeat(65_536),
        // no URI: an SDK upstream asked for it answers with an internal error
        ""
      ]
      for (const value of values) {
        for (
          const [method, params] of [
            ["resources/read", { uri: value }],
            ["resources/subscribe", { uri: value }],
            ["prompts/get", { name: value }],
            ["prompts/get", { name: "gamma/test_prompt_with_arguments", arguments: { arg1: value, arg2: "x" } }],
            ["completion/complete", { ref: { type: "ref/prompt", name: value }, argument: { name: "arg1", value } }],
            ["completion/complete", {
              ref: { type: "ref/resource", uri: value },
              argument: { name: "id", value: "1" }
            }],
            ["completion/complete", {
              ref: { type: "ref/prompt", name: "gamma/test_prompt_with_arguments" },
              argument: { name: "arg1", value }
            }]
          ] as const
        ) {
          const reply = yield* s.rpc(method, params)
          assert.isBelow(reply.status, 500, `${method} ${JSON.stringify(params).slice(0, 80)}: ${reply.status}`)
          assert.isTrue(reply.error !== undefined || reply.result !== undefined, `${method}: no JSON-RPC answer`)
          // the client's mistake, or the upstream's failure: never an internal error of the gateway
          assert.notStrictEqual(
            reply.error?.code,
            -32603,
            `${method} ${JSON.stringify(params).slice(0, 80)}: ${reply.error?.message}`
          )
        }
      }
      // values the protocol makes strings are checked before an upstream sees them: Invalid Params naming them
      // (a fresh token: the loop above spent this one's burst)
      const typed = yield* session("/mcp", (yield* token("typed")).authorization)
      const notText = yield* typed.rpc("completion/complete", {
        ref: { type: "ref/prompt", name: "gamma/test_prompt_with_arguments" },
        argument: { name: "arg1", value: null }
      })
      assert.strictEqual(notText.error?.code, -32602, texts(notText))
      assert.include(notText.error?.message, "params.argument is")
      const promptNotText = yield* typed.rpc("prompts/get", {
        name: "gamma/test_prompt_with_arguments",
        arguments: { arg1: 12, arg2: "x" }
      })
      assert.strictEqual(promptNotText.error?.code, -32602, texts(promptNotText))
      assert.include(promptNotText.error?.message, `params.arguments["arg1"] is the number 12`)
    }))

  it.effect("the response cache honours ttlMs and cacheScope, per caller", () =>
    Effect.gen(function*() {
      const first = yield* session("/mcp", (yield* token("cache-a")).authorization)
      const second = yield* session("/mcp", (yield* token("cache-b")).authorization)
      const read = (s: typeof first, uri: string) =>
        Effect.map(s.rpc("resources/read", { uri }), (r) => r.result?.contents?.[0]?.text as string | undefined)
      yield* waitUntil(Effect.map(read(first, "cache://private"), (text) => text !== undefined), "delta's resources")
      // private: the same caller gets its cached answer, another caller a fresh one
      const mine = yield* read(first, "cache://private")
      assert.strictEqual(yield* read(first, "cache://private"), mine)
      const theirs = yield* read(second, "cache://private")
      assert.notStrictEqual(theirs, mine)
      assert.strictEqual(yield* read(second, "cache://private"), theirs)
      // public: one answer for every caller of the view
      const shared = yield* read(first, "cache://public")
      assert.strictEqual(yield* read(second, "cache://public"), shared)
    }))

  it.effect("a subscribed 2025 client hears of a resource's update on its session, and not after unsubscribing", () =>
    Effect.scoped(Effect.gen(function*() {
      const { authorization } = yield* token("subscriber")
      const url = new URL(yield* urlOf("/mcp"))
      const updates: Array<string> = []
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new ClientV1({ name: "subscriber", version: "1" })
          client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
            updates.push(n.params.uri)
          })
          await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization } } }))
          return client
        }),
        (client) => Effect.promise(() => client.close())
      )
      yield* Effect.promise(() => client.subscribeResource({ uri: "test://watched-resource" }))
      yield* Effect.promise(() => client.listTools())
      // the session's GET stream (where updates arrive) is open once the client has made its requests
      yield* Effect.sleep("500 millis")
      // `touch_watched` of alpha (prefix "", first by name) makes alpha announce the update
      yield* Effect.promise(() => client.callTool({ name: "touch_watched", arguments: {} }))
      yield* waitUntil(Effect.sync(() => updates.includes("test://watched-resource")), "resources/updated", 10)
      yield* Effect.promise(() => client.unsubscribeResource({ uri: "test://watched-resource" }))
      const heard = updates.length
      yield* Effect.promise(() => client.callTool({ name: "touch_watched", arguments: {} }))
      yield* Effect.sleep("1 second")
      assert.strictEqual(updates.length, heard)
    })))
})
