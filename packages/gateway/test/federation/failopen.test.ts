/**
 * Fail open: an upstream that accepts connections but never answers, and one
 * the egress policy refuses, never hold up tools/list nor another upstream's
 * calls; their state and reason are visible in UpstreamHealth.
 */
import { assert, layer } from "@effect/vitest"
import { Connections } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Effect, Layer, Option } from "effect"
import { createServer, type Server, type Socket } from "node:net"
import type { AddressInfo } from "node:net"
import { EgressPolicy } from "../../src/egress/EgressPolicy.ts"
import { FederatedCatalog, UpstreamHealth } from "../../src/federation/FederatedCatalog.ts"
import { anonymous } from "../../src/mcp/Caller.ts"
import { fast, waitUntil } from "./support.ts"
import * as Upstreams from "./upstreams.ts"

class Servers extends Context.Service<Servers, {
  readonly v2: Upstreams.V2Upstream
  readonly silentUrl: string
}>()("test/federation/FailOpenServers") {}

/** Accepts TCP connections and never writes a byte. */
const silent = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ server: Server; sockets: Set<Socket> }>((resolve) => {
      const sockets = new Set<Socket>()
      const server = createServer((socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
      })
      server.listen(0, "127.0.0.1", () => resolve({ server, sockets }))
    })
  ),
  ({ server, sockets }) =>
    Effect.promise(() =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
    )
).pipe(Effect.map(({ server }) => server))

const ServersLive = Layer.effect(
  Servers,
  Effect.gen(function*() {
    const server = yield* silent
    return {
      v2: yield* Upstreams.scoped(() => Upstreams.v2Modern()),
      silentUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
    }
  })
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const connections = yield* Connections
  const servers = yield* Servers
  const allow = ["127.0.0.1"]
  yield* connections.create({ kind: "mcp", name: "good", url: servers.v2.url, egressAllowList: allow })
  yield* connections.create({ kind: "mcp", name: "silent", url: servers.silentUrl, egressAllowList: allow })
  // no allow-list: loopback is refused by the egress policy
  yield* connections.create({ kind: "mcp", name: "refused", url: servers.v2.url })
}))

const TestLayer = FederatedCatalog.layer({ ...fast, listTimeout: "1 second", firstListWait: "2 seconds" }).pipe(
  Layer.provideMerge(Seed),
  Layer.provideMerge(ServersLive),
  Layer.provideMerge(EgressPolicy.layerDefault),
  Layer.provideMerge(StorageTesting.layerMemory())
)

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("fail open", (it) => {
  it.effect("tools/list answers in bounded time with the healthy upstream's tools only", () =>
    Effect.gen(function*() {
      const catalog = yield* FederatedCatalog
      const started = Date.now()
      const names = (yield* catalog.list(anonymous)).map((t) => t.name)
      assert.isBelow(Date.now() - started, 2_900)
      assert.include(names, "good/echo")
      assert.isFalse(names.some((n) => n.startsWith("silent/") || n.startsWith("refused/")))

      const health = yield* UpstreamHealth
      yield* waitUntil(
        Effect.map(health.list, (all) => all.filter((s) => s.state === "unhealthy").length === 2),
        "two unhealthy upstreams"
      )
      const silentStatus = Option.getOrThrow(yield* health.get("silent"))
      assert.match(silentStatus.lastError!, /within|in time/)
      const refused = Option.getOrThrow(yield* health.get("refused"))
      assert.include(refused.lastError, "loopback")
      assert.strictEqual(Option.getOrThrow(yield* health.get("good")).state, "healthy")

      // calls to the healthy upstream are unaffected
      const outcome = yield* catalog.call(anonymous, {
        name: "good/echo",
        arguments: { text: "fine" },
        signal: new AbortController().signal,
        progress: Option.none()
      })
      assert.deepStrictEqual((outcome as { content: unknown }).content, [{ type: "text", text: "fine" }])
    }))
})
