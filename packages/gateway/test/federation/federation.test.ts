/**
 * Federation against real upstream MCP servers written with the official
 * SDKs on 127.0.0.1 (v1 Streamable HTTP, v1 HTTP+SSE, v2 2026-07-28), with
 * the egress allow-list permitting loopback: listing, calls, progress,
 * cancellation, log and elicitation relay, `input_required`, list-changed,
 * session re-establishment, and an upstream dying and coming back.
 */
import { assert, layer } from "@effect/vitest"
import { Connections } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Effect, Exit, Fiber, Layer, Option, Ref, Stream } from "effect"
import { EgressPolicy } from "../../src/egress/EgressPolicy.ts"
import { FederatedCatalog, UpstreamHealth } from "../../src/federation/FederatedCatalog.ts"
import { anonymous } from "../../src/mcp/Caller.ts"
import { RelayRefused, UpstreamRelay } from "../../src/mcp/Relay.ts"
import type { CallToolResult, InputRequiredResult, ToolCallRequest } from "../../src/mcp/ToolCatalog.ts"
import { fast, waitUntil } from "./support.ts"
import * as Upstreams from "./upstreams.ts"

class Servers extends Context.Service<Servers, {
  readonly v1http: Upstreams.V1Upstream
  readonly v1sse: Upstreams.Upstream
  readonly v2: Upstreams.V2Upstream
}>()("test/federation/Servers") {}

const ServersLive = Layer.effect(
  Servers,
  Effect.gen(function*() {
    return {
      v1http: yield* Upstreams.scoped(() => Upstreams.v1StreamableHttp()),
      v1sse: yield* Upstreams.scoped(Upstreams.v1Sse),
      v2: yield* Upstreams.scoped(() => Upstreams.v2Modern())
    }
  })
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const connections = yield* Connections
  const servers = yield* Servers
  const mcp = (name: string, url: string, transport: "streamable-http" | "sse") =>
    connections.create({ kind: "mcp", name, url, transport, egressAllowList: ["127.0.0.1"], timeoutMs: 10_000 })
  yield* mcp("v1http", servers.v1http.url, "streamable-http")
  yield* mcp("v1sse", servers.v1sse.url, "sse")
  yield* mcp("v2", servers.v2.url, "streamable-http")
}))

const TestLayer = FederatedCatalog.layer(fast).pipe(
  Layer.provideMerge(Seed),
  Layer.provideMerge(ServersLive),
  Layer.provideMerge(EgressPolicy.layerDefault),
  Layer.provideMerge(StorageTesting.layerMemory())
)

const tools = Effect.gen(function*() {
  return yield* (yield* FederatedCatalog).list(anonymous)
})
const names = Effect.map(tools, (all) => all.map((t) => t.name))

const request = (
  name: string,
  args: Record<string, unknown>,
  extra: Partial<ToolCallRequest> = {}
): ToolCallRequest => ({
  name,
  arguments: args,
  signal: new AbortController().signal,
  progress: Option.none(),
  ...extra
})

const call = (name: string, args: Record<string, unknown>, extra: Partial<ToolCallRequest> = {}) =>
  Effect.gen(function*() {
    return yield* (yield* FederatedCatalog).call(anonymous, request(name, args, extra))
  })

const text = (outcome: unknown) => ((outcome as CallToolResult).content[0] as { text: string }).text

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })("federated upstream MCP servers", (it) => {
  it.effect("lists every upstream's tools, namespaced and sorted, and reports each upstream healthy", () =>
    Effect.gen(function*() {
      const listed = yield* names
      for (const conn of ["v1http", "v1sse", "v2"]) {
        assert.include(listed, `${conn}/echo`)
        assert.include(listed, `${conn}/slow`)
      }
      assert.include(listed, "v2/deploy")
      assert.deepStrictEqual(listed, [...listed].sort())
      const echo = (yield* tools).find((t) => t.name === "v2/echo")!
      assert.strictEqual(echo.description, "Echoes its text")
      assert.deepStrictEqual((echo._meta as Record<string, unknown>)["janus/upstream"], {
        connection: "v2",
        tool: "echo"
      })
      const statuses = yield* (yield* UpstreamHealth).list
      assert.deepStrictEqual(statuses.map((s) => [s.connection, s.state]), [
        ["v1http", "healthy"],
        ["v1sse", "healthy"],
        ["v2", "healthy"]
      ])
      const byName = Object.fromEntries(statuses.map((s) => [s.connection, s]))
      assert.strictEqual(byName.v2!.protocolVersion, "2026-07-28")
      assert.match(byName.v1http!.protocolVersion!, /^2025-/)
      assert.match(byName.v1sse!.protocolVersion!, /^202[45]-/)
      assert.isAbove(byName.v2!.toolCount, 3)
    }))

  it.effect("calls a tool on each transport", () =>
    Effect.gen(function*() {
      for (const conn of ["v1http", "v1sse", "v2"]) {
        const outcome = yield* call(`${conn}/echo`, { text: `hello ${conn}` })
        assert.strictEqual(text(outcome), `hello ${conn}`)
      }
      // x-mcp-header arguments are mirrored into Mcp-Param-* for the 2026-07-28 upstream
      assert.strictEqual(text(yield* call("v2/region_echo", { region: "eu-west1" })), "region eu-west1")
      const missing = yield* Effect.exit(call("v2/nope", {}))
      assert.isTrue(Exit.isFailure(missing))
    }))

  it.effect("passes progress through from 2025 sessions, HTTP+SSE and 2026-07-28", () =>
    Effect.gen(function*() {
      for (const conn of ["v1http", "v1sse", "v2"]) {
        const seen = yield* Ref.make<ReadonlyArray<number>>([])
        const outcome = yield* call(`${conn}/slow`, { steps: 3, delayMs: 20 }, {
          progress: Option.some((p) => Ref.update(seen, (all) => [...all, p]))
        })
        assert.strictEqual(text(outcome), "done after 3")
        assert.deepStrictEqual(yield* Ref.get(seen), [1, 2, 3], conn)
      }
    }))

  it.effect("cancelling a call aborts it upstream", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      for (
        const [conn, upstream] of [["v1http", servers.v1http], ["v1sse", servers.v1sse], ["v2", servers.v2]] as const
      ) {
        const before = upstream.observed.cancelled
        const abort = new AbortController()
        const started = yield* Ref.make(false)
        const fiber = yield* call(`${conn}/slow`, { steps: 100, delayMs: 50 }, {
          signal: abort.signal,
          progress: Option.some(() => Ref.set(started, true))
        }).pipe(Effect.forkChild)
        yield* waitUntil(Ref.get(started), `${conn} progress`)
        abort.abort()
        const exit = yield* Fiber.await(fiber)
        assert.isTrue(Exit.isFailure(exit), conn)
        yield* waitUntil(Effect.sync(() => upstream.observed.cancelled > before), `${conn} to see the cancellation`)
      }
    }))

  it.effect("passes an input_required result through and forwards the client's answer", () =>
    Effect.gen(function*() {
      const first = (yield* call("v2/deploy", { env: "prod" })) as InputRequiredResult
      assert.strictEqual(first.resultType, "input_required")
      const ask = first.inputRequests?.confirm
      assert.strictEqual(ask?.method, "elicitation/create")
      assert.include(String(ask?.params?.message), "Deploy to prod")
      const second = yield* call("v2/deploy", { env: "prod" }, {
        inputResponses: { confirm: { action: "accept", content: { confirm: true } } },
        ...(first.requestState === undefined ? {} : { requestState: first.requestState })
      })
      assert.strictEqual(text(second), "deployed to prod")
      assert.isUndefined((second as { resultType?: unknown }).resultType)
    }))

  it.effect("relays log messages and 2025 elicitation requests to the calling client", () =>
    Effect.gen(function*() {
      const logs = yield* Ref.make<ReadonlyArray<unknown>>([])
      const relayed = yield* call("v1http/chatty", { text: "hi" }).pipe(
        Effect.provideService(UpstreamRelay, { log: (params) => Ref.update(logs, (all) => [...all, params.data]) })
      )
      assert.strictEqual(text(relayed), "hi")
      assert.deepStrictEqual(yield* Ref.get(logs), ["about to say hi"])

      const asked = yield* call("v1http/ask", {}).pipe(
        Effect.provideService(UpstreamRelay, {
          clientCapabilities: { elicitation: {} },
          request: (method, params) =>
            method === "elicitation/create" && String(params?.message).includes("colour")
              ? Effect.succeed({ action: "accept", content: { colour: "blue" } })
              : Effect.fail(new RelayRefused({ code: -32601, message: "no" }))
        })
      )
      assert.strictEqual(text(asked), "colour blue")
      // a client that cannot answer: the upstream gets a decline
      assert.strictEqual(text(yield* call("v1http/ask", {})), "no answer (decline)")
    }))

  it.effect("an upstream's list-changed refreshes its tools and fires changes", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      const catalog = yield* FederatedCatalog
      const fired = yield* Ref.make(0)
      yield* catalog.changes.pipe(Stream.runForEach(() => Ref.update(fired, (n) => n + 1)), Effect.forkScoped)
      yield* Effect.sleep("50 millis")
      servers.v1http.addTool("late_v1")
      yield* waitUntil(Effect.map(names, (n) => n.includes("v1http/late_v1")), "v1http/late_v1")
      servers.v2.addTool("late_v2")
      yield* waitUntil(Effect.map(names, (n) => n.includes("v2/late_v2")), "v2/late_v2")
      assert.isAtLeast(yield* Ref.get(fired), 2)
      assert.strictEqual(text(yield* call("v2/late_v2", {})), "late_v2")
    }))

  it.effect("re-establishes a 2025 session that answers 404", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      servers.v1http.forgetSessions()
      assert.strictEqual(text(yield* call("v1http/echo", { text: "again" })), "again")
    }))

  it.effect("a dead upstream's tools disappear without breaking the others, and come back with it", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      const catalog = yield* FederatedCatalog
      const health = yield* UpstreamHealth
      const fired = yield* Ref.make(0)
      yield* catalog.changes.pipe(Stream.runForEach(() => Ref.update(fired, (n) => n + 1)), Effect.forkScoped)
      yield* Effect.sleep("50 millis")

      yield* Effect.promise(() => servers.v1http.stop())
      yield* waitUntil(Effect.map(names, (n) => !n.some((name) => name.startsWith("v1http/"))), "v1http tools to go")
      const during = yield* names
      assert.include(during, "v2/echo")
      assert.include(during, "v1sse/echo")
      assert.strictEqual(text(yield* call("v2/echo", { text: "still here" })), "still here")
      const refused = yield* Effect.flip(call("v1http/echo", { text: "x" }))
      assert.strictEqual(refused._tag, "ToolCallRefused")
      assert.strictEqual(refused._tag === "ToolCallRefused" ? refused.reason : "", "unavailable")
      const status = Option.getOrThrow(yield* health.get("v1http"))
      assert.strictEqual(status.state, "unhealthy")
      assert.isString(status.lastError)
      const firedWhenDown = yield* Ref.get(fired)
      assert.isAtLeast(firedWhenDown, 1)

      yield* Effect.promise(() => servers.v1http.start())
      yield* waitUntil(Effect.map(names, (n) => n.includes("v1http/echo")), "v1http tools to return")
      assert.isAbove(yield* Ref.get(fired), firedWhenDown)
      assert.strictEqual(text(yield* call("v1http/echo", { text: "back" })), "back")
      assert.strictEqual(Option.getOrThrow(yield* health.get("v1http")).state, "healthy")
    }))
})
