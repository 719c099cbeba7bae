/**
 * The hot-path steps the gateway owns around the egress client: shedding at
 * the concurrency cap, the response cache, cancellation and progress.
 */
import { assert, describe, layer } from "@effect/vitest"
import { AuditLog, Endpoints, EventLog } from "@janus/storage"
import { Duration, Effect, Option } from "effect"
import { ToolCatalog } from "../src/mcp/index.ts"
import { responseCacheKey } from "../src/tools/RestCatalog.ts"
import { post } from "./mcp/http-client.ts"
import * as Downstream from "./support/Downstream.ts"
import { gateway } from "./support/PetsGateway.ts"
import { mcpUrl, v1, v2 } from "./support/SdkClients.ts"

const settle = (p: Promise<unknown>) => p.then(() => "ok", (e: Error) => e.message)

describe("shedding at MCP_MAX_CONCURRENT_CALLS", () => {
  layer(gateway({ MCP_MAX_CONCURRENT_CALLS: 2 }), { timeout: 60_000, excludeTestServices: true })("", (it) => {
    it.effect("admits exactly the cap and refuses the excess at once with reason shed", () =>
      Effect.scoped(Effect.gen(function*() {
        const client = yield* v2
        const downstream = yield* Downstream.Downstream
        const call = (ms: number) => settle(client.callTool({ name: "slow", arguments: { ms } }))
        const admitted = [call(2_000), call(2_000)]
        // the excess arrives while the downstream holds both permitted calls, whatever the machine's load
        for (let i = 0; i < 500 && (downstream.hits.get("GET /slow") ?? 0) < 2; i++) yield* Effect.sleep("20 millis")
        const excess = yield* Effect.promise(() => Promise.all([call(1), call(1), call(1)]))
        const outcomes = [...yield* Effect.promise(() => Promise.all(admitted)), ...excess]
        assert.strictEqual(outcomes.filter((o) => o === "ok").length, 2)
        const shed = outcomes.filter((o) => o !== "ok")
        assert.strictEqual(shed.length, 3)
        for (const message of shed) assert.include(message, "refused (shed)")
        assert.strictEqual(downstream.hits.get("GET /slow"), 2)
        // the permits come back: a call after the burst is admitted
        assert.strictEqual(
          yield* Effect.promise(() => settle(client.callTool({ name: "slow", arguments: { ms: 1 } }))),
          "ok"
        )
      })))

    it.effect("each tools/call of a JSON-RPC batch (2025-03-26) takes its own permit: the cap sheds the rest", () =>
      Effect.gen(function*() {
        const url = (yield* mcpUrl).href
        const downstream = yield* Downstream.Downstream
        const before = downstream.hits.get("GET /slow") ?? 0
        const initialized = yield* post(url, {
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "batcher", version: "1" } }
        })
        const session = { "mcp-session-id": initialized.headers.get("mcp-session-id")! }
        const batch = Array.from({ length: 5 }, (_, i) => ({
          jsonrpc: "2.0",
          id: i + 1,
          method: "tools/call",
          params: { name: "slow", arguments: { ms: 2_000 } }
        }))
        const reply = yield* post(url, batch, session)
        const answers = reply.body as ReadonlyArray<{ result?: unknown; error?: { data?: { reason?: string } } }>
        assert.strictEqual(answers.filter((a) => a.result !== undefined).length, 2)
        assert.strictEqual(answers.filter((a) => a.error?.data?.reason === "shed").length, 3)
        assert.strictEqual((downstream.hits.get("GET /slow") ?? 0) - before, 2)
      }))
  })
})

describe("audit", () => {
  layer(gateway({ MCP_MAX_CONCURRENT_CALLS: 1 }), { timeout: 60_000, excludeTestServices: true })("", (it) => {
    it.effect("writes exactly one audit record and one calls event per attempt, whatever its outcome", () =>
      Effect.scoped(Effect.gen(function*() {
        const client = yield* v2
        const audit = yield* AuditLog
        const events = yield* EventLog
        const before = yield* events.latestId
        const downstream = yield* Downstream.Downstream
        const call = (name: string, args: Record<string, unknown>) => settle(client.callTool({ name, arguments: args }))
        const first = call("slow", { ms: 2_000 })
        // the next two arrive while the first holds the only permit (the downstream has it), whatever the load
        for (let i = 0; i < 500 && downstream.hits.get("GET /slow") === undefined; i++) {
          yield* Effect.sleep("20 millis")
        }
        const outcomes = yield* Effect.promise(() =>
          Promise.all([first, call("slow", { ms: 1 }), call("get_pet", { id: "5" })])
        )
        assert.deepStrictEqual(outcomes.map((o) => o === "ok" ? "ok" : "refused"), ["ok", "refused", "refused"])
        assert.include(yield* Effect.promise(() => call("nope", {})), "Unknown tool")
        assert.strictEqual(yield* Effect.promise(() => call("get_pet", { id: "6" })), "ok")
        yield* audit.flush
        yield* events.flush
        const records = (yield* audit.query({ kind: "call", limit: 100 })).items
        assert.strictEqual(records.length, 5)
        const byOutcome = (o: string) => records.filter((r) => r.outcome === o).length
        // the unknown tool is the caller's mistake: invalid, not an error of the gateway or downstream
        assert.deepStrictEqual([byOutcome("ok"), byOutcome("shed"), byOutcome("invalid")], [2, 2, 1])
        const shedRecord = records.find((r) => r.outcome === "shed")!
        assert.strictEqual(shedRecord.identity, "anonymous")
        const okPet = records.find((r) => r.tool === "get_pet" && r.outcome === "ok")!
        assert.strictEqual(okPet.connection, "pets")
        assert.strictEqual(okPet.status, 200)
        assert.isAbove(okPet.bytesIn, 0, "the arguments' size")
        assert.isAbove(okPet.bytesOut, 0, "the answer's size")
        assert.isNotNull(okPet.requestId)
        assert.match(okPet.traceId ?? "", /^[0-9a-f]{32}$/)
        const callEvents = (yield* events.after(before, 100)).filter((e) => e.topic === "calls")
        assert.strictEqual(callEvents.length, 5)
      })))
  })
})

describe("response cache", () => {
  layer(gateway({ RESPONSE_CACHE_TTL: Duration.minutes(1) }), { timeout: 60_000, excludeTestServices: true })(
    "",
    (it) => {
      it.effect("serves a repeated idempotent GET from cache, misses on other arguments, never caches POST", () =>
        Effect.scoped(Effect.gen(function*() {
          const client = yield* v2
          const downstream = yield* Downstream.Downstream
          const call = (name: string, args: Record<string, unknown>) =>
            Effect.promise(() => client.callTool({ name, arguments: args }))
          const first = yield* call("get_pet", { id: "1" })
          const second = yield* call("get_pet", { id: "1" })
          assert.deepStrictEqual(second.structuredContent, first.structuredContent)
          assert.strictEqual(downstream.hits.get("GET /pets/1"), 1)
          yield* call("get_pet", { id: "2" })
          assert.strictEqual(downstream.hits.get("GET /pets/2"), 1)
          yield* call("create_pet", { id: "3" })
          yield* call("create_pet", { id: "3" })
          assert.strictEqual(downstream.hits.get("POST /pets"), 2)
        })))

      it.effect("is scoped by caller: one caller never gets a response fetched for another", () =>
        Effect.gen(function*() {
          const catalog = yield* ToolCatalog.ToolCatalog
          const downstream = yield* Downstream.Downstream
          const call = (id: string) =>
            catalog.call({ id, scopes: [] }, {
              name: "get_pet",
              arguments: { id: "42" },
              signal: new AbortController().signal,
              progress: Option.none()
            })
          yield* call("alice")
          yield* call("bob")
          assert.strictEqual(downstream.hits.get("GET /pets/42"), 2)
          yield* call("alice")
          yield* call("bob")
          assert.strictEqual(downstream.hits.get("GET /pets/42"), 2)
        }))

      it.effect("is keyed by the header arguments: another tenant header is another downstream request", () =>
        Effect.gen(function*() {
          const catalog = yield* ToolCatalog.ToolCatalog
          const downstream = yield* Downstream.Downstream
          const endpoints = yield* Endpoints
          const getPet = (yield* endpoints.list()).find((e) => e.name === "get_pet")!
          yield* endpoints.create({
            connectionId: getPet.connectionId,
            name: "tenant_pet",
            method: "GET",
            pathTemplate: "/pets/{id}",
            arguments: { id: "path", "x-tenant": "header" },
            inputSchema: { type: "object", properties: { id: { type: "string" }, "x-tenant": { type: "string" } } }
          })
          const call = (tenant: string) =>
            catalog.call({ id: "carol", scopes: [] }, {
              name: "tenant_pet",
              arguments: { id: "77", "x-tenant": tenant },
              signal: new AbortController().signal,
              progress: Option.none()
            })
          yield* call("tenant-a")
          assert.strictEqual(downstream.lastHeaders["x-tenant"], "tenant-a")
          yield* call("tenant-b")
          assert.strictEqual(downstream.hits.get("GET /pets/77"), 2, "tenant-b's call went downstream")
          assert.strictEqual(downstream.lastHeaders["x-tenant"], "tenant-b")
          // each tenant's answer is still cached for that tenant
          yield* call("tenant-a")
          yield* call("tenant-b")
          assert.strictEqual(downstream.hits.get("GET /pets/77"), 2)
        }))

      it.effect("keeps header values out of the key in clear", () =>
        Effect.sync(() => {
          const key = responseCacheKey("carol", "conn-1", {
            method: "GET",
            path: "/pets/1",
            query: [["q", "x"]],
            headers: { "x-api-key": "s3cret-value", accept: "application/json" },
            body: undefined
          })
          assert.notInclude(key, "s3cret-value")
          assert.include(key, "carol")
          assert.include(key, "/pets/1?q=x")
          const other = responseCacheKey("carol", "conn-1", {
            method: "GET",
            path: "/pets/1",
            query: [["q", "x"]],
            headers: { "x-api-key": "other-value", accept: "application/json" },
            body: undefined
          })
          assert.notStrictEqual(key, other)
        }))

      it.effect("a configuration write purges the cache at once", () =>
        Effect.scoped(Effect.gen(function*() {
          const client = yield* v2
          const downstream = yield* Downstream.Downstream
          yield* Effect.promise(() => client.callTool({ name: "get_pet", arguments: { id: "9" } }))
          const endpoints = yield* Endpoints
          const endpoint = (yield* endpoints.list()).find((e) => e.name === "get_pet")!
          yield* endpoints.update(endpoint.id, endpoint.version, {
            connectionId: endpoint.connectionId,
            name: endpoint.name,
            description: "changed",
            method: endpoint.method,
            pathTemplate: endpoint.pathTemplate,
            arguments: endpoint.arguments,
            inputSchema: endpoint.inputSchema
          })
          yield* Effect.promise(() => client.callTool({ name: "get_pet", arguments: { id: "9" } }))
          assert.strictEqual(downstream.hits.get("GET /pets/9"), 2)
        })))
    }
  )
})

describe("cancellation and progress", () => {
  layer(gateway({}), { timeout: 60_000, excludeTestServices: true })("", (it) => {
    it.effect("notifications/cancelled aborts the downstream request", () =>
      Effect.scoped(Effect.gen(function*() {
        const client = yield* v1
        const downstream = yield* Downstream.Downstream
        const controller = new AbortController()
        const before = downstream.hits.get("GET /slow") ?? 0
        const pending = settle(
          client.callTool({ name: "slow", arguments: { ms: 20_000 } }, undefined, { signal: controller.signal })
        )
        // cancel once the downstream holds the request (not after a fixed delay: a loaded machine is slower)
        for (let i = 0; i < 500 && (downstream.hits.get("GET /slow") ?? 0) === before; i++) {
          yield* Effect.sleep("20 millis")
        }
        assert.strictEqual(downstream.hits.get("GET /slow"), before + 1)
        controller.abort("user gave up")
        yield* Effect.promise(() => pending)
        // well before the downstream's 20 s answer
        for (let i = 0; i < 500 && downstream.aborted === 0; i++) yield* Effect.sleep("20 millis")
        assert.strictEqual(downstream.aborted, 1)
      })))

    it.effect("a long call reports progress when the client asked for it", () =>
      Effect.scoped(Effect.gen(function*() {
        const client = yield* v1
        const progress: Array<number> = []
        const result = yield* Effect.promise(() =>
          client.callTool({ name: "slow", arguments: { ms: 2_300 } }, undefined, {
            onprogress: (p) => progress.push(p.progress),
            timeout: 10_000
          })
        )
        assert.deepStrictEqual(result.structuredContent, { slow: true })
        assert.deepStrictEqual(progress, [1, 2])
      })))
  })
})
