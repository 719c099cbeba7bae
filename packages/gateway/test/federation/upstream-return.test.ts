/**
 * Killing an upstream mid-run, seen by real clients of a whole gateway: the
 * 2025 session's GET stream gets `notifications/tools/list_changed`,
 * `tools/list` keeps answering without the dead upstream's tools (the other
 * upstream's stay and answer), and when it returns its tools come back with
 * another list-changed; `GET /api/v1/upstreams` shows each state. Upstreams: the official SDK v1 (Streamable HTTP) and
 * v2 (2026-07-28) servers of `./upstreams.ts`.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, Connections } from "@janus/storage"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"
import { connectCounting, waitUntil } from "./support.ts"
import * as Upstreams from "./upstreams.ts"

class Servers extends Context.Service<Servers, {
  readonly v1: Upstreams.V1Upstream
  readonly v2: Upstreams.V2Upstream
}>()("test/federation/ReturnServers") {}

const ServersLive = Layer.effect(
  Servers,
  Effect.gen(function*() {
    return {
      v1: yield* Upstreams.scoped(() => Upstreams.v1StreamableHttp()),
      v2: yield* Upstreams.scoped(() => Upstreams.v2Modern())
    }
  })
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const servers = yield* Servers
  const connections = yield* Connections
  for (const [name, url] of [["v1", servers.v1.url], ["v2", servers.v2.url]] as const) {
    yield* connections.create({ kind: "mcp", name, url, egressAllowList: ["127.0.0.1"], timeoutMs: 10_000 })
  }
}))

const TestLayer = Seed.pipe(Layer.provideMerge(GatewayTesting.layer()), Layer.provideMerge(ServersLive))

const connect = connectCounting("return-test")

/** `GET /api/v1/upstreams` (what Studio shows): connection name -> state. */
const upstreamStates = Effect.gen(function*() {
  const token = Redacted.value((yield* (yield* AdminTokens).create({ name: `studio-${Math.random()}` })).plaintext)
  const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/api/v1/upstreams", base)))
  return yield* Effect.promise(async () => {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    const body = await response.json() as { items: Array<{ connection: string; state: string; lastError: unknown }> }
    return Object.fromEntries(body.items.map((i) => [i.connection, i.state]))
  })
}).pipe(Effect.orDie)

layer(TestLayer, { timeout: 90_000, excludeTestServices: true })("an upstream dies and returns", (it) => {
  it.effect("tools/list answers without its tools, clients get list-changed both ways", () =>
    Effect.scoped(Effect.gen(function*() {
      const servers = yield* Servers
      const { changed, client } = yield* connect
      const names = Effect.promise(() => client.listTools()).pipe(Effect.map((r) => r.tools.map((t) => t.name)))
      yield* waitUntil(Effect.map(names, (n) => n.includes("v1/echo") && n.includes("v2/echo")), "both upstreams")
      // the session's GET stream is open once the SDK has had a moment; from then on changes are pushed
      yield* Effect.sleep("500 millis")
      const before = changed.count

      yield* Effect.promise(() => servers.v1.stop())
      yield* waitUntil(Effect.map(names, (n) => !n.some((name) => name.startsWith("v1/"))), "v1's tools to go")
      assert.include(yield* names, "v2/echo")
      const echoed = yield* Effect.promise(() => client.callTool({ name: "v2/echo", arguments: { text: "still" } }))
      assert.deepStrictEqual(echoed.content, [{ type: "text", text: "still" }])
      yield* waitUntil(Effect.sync(() => changed.count > before), "list_changed when v1 went away")
      const whenDown = changed.count
      assert.deepStrictEqual(yield* upstreamStates, { v1: "unhealthy", v2: "healthy" })

      yield* Effect.promise(() => servers.v1.start())
      yield* waitUntil(Effect.map(names, (n) => n.includes("v1/echo")), "v1's tools to return")
      yield* waitUntil(Effect.sync(() => changed.count > whenDown), "list_changed when v1 came back")
      const back = yield* Effect.promise(() => client.callTool({ name: "v1/echo", arguments: { text: "back" } }))
      assert.deepStrictEqual(back.content, [{ type: "text", text: "back" }])
      assert.deepStrictEqual(yield* upstreamStates, { v1: "healthy", v2: "healthy" })
    })))
})
