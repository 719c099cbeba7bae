/**
 * Over a real socket: NodeHttpServer on 127.0.0.1, a client that reads and a
 * raw client that stops reading. The hub runs on a TestClock of its own (the
 * server and the clients on real time), so the 30 s blocked-write limit is
 * crossed by adjusting that clock, never by changing the constants.
 */
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { assert, it } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Metric } from "effect"
import { Sse } from "effect/encoding"
import { HttpServer, HttpServerRequest } from "effect/http"
import { TestClock } from "effect/testing"
import { createServer, get, type IncomingMessage, type ServerResponse } from "node:http"
import * as Net from "node:net"
import * as Filter from "../src/Filter.ts"
import * as Frame from "../src/Frame.ts"
import * as Hub from "../src/Hub.ts"
import * as ReplaySource from "../src/ReplaySource.ts"
import * as Wire from "../src/Wire.ts"
import { ADR_MAX_BYTES, dropped } from "./helpers.ts"

const EVENT_BYTES = 16 * 1024
const ROUND = 32 // 512 KiB per round: never overflows a client that keeps reading
const NODE_HIGH_WATER_MARK = 16 * 1024
// What the server may hold beyond the 1 MiB bound: Node's socket buffer high-water mark, plus slack
// for the last chunk handed to it (already counted in the bound) and framing.
const SMALL_FIXED_OVERHEAD = NODE_HIGH_WATER_MARK + 64 * 1024

/** Waits in real time (the server and clients run on it) until `predicate` holds. */
const until = (what: string, predicate: () => boolean, timeoutMs = 15_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!predicate()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("2 millis")
    }
  })

it.live(
  "a client that stops reading holds at most 1 MiB plus a small fixed overhead, others keep receiving, and it is dropped once its write is blocked 30 s",
  () =>
    Effect.gen(function*() {
      const hubClock = yield* TestClock.make()
      const registry = new Map()
      const layerHub = Hub.Hub.layer.pipe(
        Layer.provideMerge(ReplaySource.layerMemory),
        Layer.provide(Layer.succeed(Clock.Clock, hubClock)),
        Layer.provide(Layer.succeed(Metric.MetricRegistry, registry))
      )
      const context = yield* Layer.build(layerHub)
      const hub = Context.get(context, Hub.Hub)

      // The route the gateway mounts at GET /api/v1/events, plus a hook to see each Node response.
      const responses = new Map<string, ServerResponse>()
      yield* HttpServer.serveEffect()(
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const who = new URL(request.url, "http://x").searchParams.get("who") ?? "?"
          responses.set(who, NodeHttpServerRequest.toServerResponse(request) as ServerResponse)
          const lastEventId = yield* Wire.lastEventIdOf(request)
          return yield* Wire.eventsResponse(Filter.all, lastEventId)
        }).pipe(Effect.provide(context), Effect.orDie)
      )
      const server = yield* HttpServer.HttpServer
      const port = (server.address as { port: number }).port

      // The reader: an HTTP client that reads everything and parses the SSE it gets.
      const readerIds: Array<number> = []
      let readerResyncs = 0
      const parser = Sse.makeParser((event) => {
        if (event._tag !== "Event") return
        if (event.event === "event") readerIds.push(Number(event.id))
        if (event.event === "resync") readerResyncs++
      })
      let readerResponse: IncomingMessage | undefined
      const readerRequest = get({ host: "127.0.0.1", port, path: "/events?who=reader" }, (res) => {
        readerResponse = res
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => parser.feed(chunk))
      })
      readerRequest.on("error", () => {})

      // The stalled client: sends its request, then never reads a byte.
      const stalled = Net.connect(port, "127.0.0.1")
      stalled.on("error", () => {})
      stalled.pause()
      stalled.write("GET /events?who=stalled HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")

      yield* until("two subscribers", () => Effect.runSync(hub.subscribers) === 2)
      yield* until("the reader's response", () => readerResponse !== undefined)
      assert.strictEqual(readerResponse!.headers["content-type"], "text/event-stream")
      assert.strictEqual(readerResponse!.headers["x-accel-buffering"], "no")
      assert.strictEqual(readerResponse!.headers["cache-control"], "no-cache")

      const statsOf = (held: (s: { inflightFrames: number }) => boolean) => Effect.runSync(hub.stats).find(held)
      const stalledResponse = () => responses.get("stalled")!
      const payload = "x".repeat(EVENT_BYTES)
      let id = 0
      let maxHeld = 0
      let maxServerHeld = 0
      let rounds = 0
      // Publish until the stalled client's queue has overflowed once: its bound was reached.
      while (Effect.runSync(dropped("overflow").pipe(Effect.provideService(Metric.MetricRegistry, registry))) === 0) {
        if (++rounds > 400) assert.fail("the stalled subscriber never filled its queue")
        for (let i = 0; i < ROUND; i++) {
          hub.publishUnsafe(Frame.event({ id: ++id, topic: "load", data: payload }))
          for (const s of Effect.runSync(hub.stats)) maxHeld = Math.max(maxHeld, s.queuedBytes + s.inflightBytes)
        }
        if (maxHeld > ADR_MAX_BYTES) assert.fail(`a subscriber held ${maxHeld} bytes, over the 1 MiB bound`)
        const target = id
        yield* until("the reader to catch up", () => readerIds.length === target)
        const blocked = statsOf((s) => s.inflightFrames > 0)
        if (blocked !== undefined) {
          maxServerHeld = Math.max(maxServerHeld, blocked.queuedBytes + stalledResponse().writableLength)
        }
      }
      // The reader got every event, in order, with no resync: the stalled client delayed nobody.
      assert.deepStrictEqual(readerIds, Array.from({ length: id }, (_, i) => i + 1))
      assert.strictEqual(readerResyncs, 0)
      // What the server held for the stalled client never exceeded the bound (plus Node's own buffer).
      assert.isAtMost(maxHeld, ADR_MAX_BYTES)
      assert.isAtLeast(maxHeld, ADR_MAX_BYTES - (EVENT_BYTES + 256)) // it was filled to the bound
      assert.isAtMost(maxServerHeld, ADR_MAX_BYTES + SMALL_FIXED_OVERHEAD)
      const stuck = statsOf((s) => s.inflightFrames > 0)!
      assert.strictEqual(stuck.writeStartedAt, 0) // its write has been blocked since t=0 of the hub's clock
      assert.strictEqual(Effect.runSync(hub.subscribers), 2)

      // The reader is idle; 30 s pass on the hub's clock (two heartbeats): not yet more than 30 s.
      yield* until("the reader to be idle", () =>
        Effect.runSync(hub.stats).some((s) => s.inflightFrames === 0 && s.queuedFrames === 0))
      yield* hubClock.adjust("30 seconds")
      assert.strictEqual(Effect.runSync(hub.subscribers), 2)
      yield* hubClock.adjust("1 second")
      hub.publishUnsafe(Frame.event({ id: ++id, topic: "load", data: "after" }))

      // Dropped: out of the hub, writer interrupted, the response fiber blocked on `drain` interrupted,
      // and NodeHttpServer destroyed the response, releasing the socket and its buffer.
      assert.strictEqual(Effect.runSync(hub.subscribers), 1)
      assert.isAtLeast(
        Effect.runSync(dropped("blocked").pipe(Effect.provideService(Metric.MetricRegistry, registry))),
        1
      )
      yield* until("the stalled response to be destroyed", () =>
        stalledResponse().destroyed)
      yield* until("one writer left", () => Effect.runSync(hub.writers) === 1)

      // The reader keeps receiving.
      hub.publishUnsafe(Frame.event({ id: ++id, topic: "load", data: "still here" }))
      yield* until("the reader to get the last events", () => readerIds.at(-1) === id)

      // The stalled client, reading at last, finds the stream cut (no clean end: it was aborted).
      let stalledClosed = false
      stalled.on("close", () => {
        stalledClosed = true
      })
      stalled.resume()
      yield* until("the stalled client to see its connection closed", () => stalledClosed)

      readerRequest.destroy()
      yield* until("no writer left", () => Effect.runSync(hub.writers) === 0)
      assert.strictEqual(Effect.runSync(hub.subscribers), 0)
    }).pipe(
      Effect.provide(
        NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1", gracefulShutdownTimeout: "1 second" })
      )
    ),
  { timeout: 60_000 }
)
