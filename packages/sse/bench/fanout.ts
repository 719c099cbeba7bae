/**
 * Fan-out benchmark of the hub: `node packages/sse/bench/fanout.ts`.
 *
 * Measures, in one process, bounded well under 60 s:
 *
 * 1. Throughput and latency to 1,000 subscribers, each a stream consumed by
 *    its own fiber (the same handoff the HTTP response uses, minus the socket):
 *    frames published per second, frames delivered per second, delivery
 *    latency p50/p99 (publish to the consumer seeing the frame), and the cost
 *    of one `publish` on the publisher's side (with 1,000 subscribers, and
 *    with none for the topic).
 * 2. Memory per stalled subscriber: N subscribers whose client never reads,
 *    each holding a full queue (the 1 MiB / 1,000 frames bound), as heap +
 *    array-buffer and RSS deltas, for frames shared by all (the real case:
 *    one publish reaches everyone) and for frames of their own (the worst
 *    case); and the real memory of one queued small frame, to check
 *    `FRAME_OVERHEAD_BYTES`.
 *
 * Prints one JSON object on its last line: `{ title, results, notes }`.
 */
import { Context, Effect, Fiber, Layer, Metric, type Scope, Stream } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as Filter from "../src/Filter.ts"
import * as Frame from "../src/Frame.ts"
import * as Hub from "../src/Hub.ts"
import { FRAME_OVERHEAD_BYTES, MAX_QUEUED_BYTES, MAX_QUEUED_FRAMES } from "../src/Limits.ts"
import * as Metrics from "../src/Metrics.ts"
import * as ReplaySource from "../src/ReplaySource.ts"

const SUBSCRIBERS = 1_000
const FRAMES = 5_000
const BURST = 25 // well below the queue bound: a consumer that keeps up never overflows
const STALLED = 200
const STALLED_OWN = 50
const STALLED_SMALL = 100
const DEADLINE = Date.now() + 55_000

const gc: () => void = (globalThis as { gc?: () => void }).gc ?? (() => {
  setFlagsFromString("--expose-gc")
  return runInNewContext("gc") as () => void
})()

const memory = () => {
  gc()
  gc()
  const m = process.memoryUsage()
  return { heap: m.heapUsed + m.arrayBuffers, rss: m.rss }
}

const quantile = (sorted: Float64Array, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits
const checkDeadline = () => {
  if (Date.now() > DEADLINE) throw new Error("benchmark exceeded its time budget")
}

const assertNoOverflow = (state: { readonly count: number }) => {
  if (state.count > 0) throw new Error("a stalled queue overflowed: the memory figures would be meaningless")
}

const makeHub = Effect.gen(function*() {
  const context = yield* Layer.build(Hub.Hub.layer.pipe(Layer.provide(ReplaySource.layerMemory)))
  return Context.get(context, Hub.Hub)
})

const fanout = Effect.gen(function*() {
  const hub = yield* makeHub
  const latencies = new Float64Array(SUBSCRIBERS * FRAMES)
  let samples = 0
  const received = new Int32Array(SUBSCRIBERS)
  const consumers = []
  for (let i = 0; i < SUBSCRIBERS; i++) {
    consumers.push(
      yield* hub.subscribe(Filter.topics(["bench"])).pipe(
        Stream.runForEachArray((batch) =>
          Effect.sync(() => {
            const now = performance.now()
            for (const frame of batch) {
              if (frame._tag !== "Event") continue
              latencies[samples++] = now - (frame.data as { t: number }).t
              received[i]!++
            }
          })
        ),
        Effect.forkChild
      )
    )
  }
  while ((yield* hub.subscribers) < SUBSCRIBERS) yield* Effect.yieldNow

  const allReceived = (n: number) => received.every((r) => r >= n)
  let publishNanos = 0n
  const started = performance.now()
  for (let sent = 0; sent < FRAMES;) {
    checkDeadline()
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < BURST; i++) {
      sent++
      hub.publishUnsafe(Frame.event({ id: sent, topic: "bench", data: { t: performance.now(), n: sent } }))
    }
    publishNanos += process.hrtime.bigint() - t0
    while (!allReceived(sent)) yield* Effect.yieldNow
  }
  const elapsed = (performance.now() - started) / 1000

  // Publishing to a topic nobody subscribes to: the cost on the tools/call path when Studio is closed.
  const idleT0 = process.hrtime.bigint()
  for (let i = 0; i < 100_000; i++) hub.publishUnsafe(Frame.event({ id: i, topic: "nobody", data: { i } }))
  const idleNanos = Number(process.hrtime.bigint() - idleT0) / 100_000

  for (const consumer of consumers) yield* Fiber.interrupt(consumer)
  const sorted = latencies.subarray(0, samples).sort()
  const droppedOverflow = (yield* Metric.value(Metrics.droppedFor("overflow"))).count
  return {
    subscribers: SUBSCRIBERS,
    frames: FRAMES,
    framesPublishedPerSec: Math.round(FRAMES / elapsed),
    framesDeliveredPerSec: Math.round((FRAMES * SUBSCRIBERS) / elapsed),
    deliveryP50Ms: round(quantile(sorted, 0.5)),
    deliveryP99Ms: round(quantile(sorted, 0.99)),
    deliveryMaxMs: round(sorted[sorted.length - 1]!),
    publishMicrosWith1000Subscribers: round(Number(publishNanos) / FRAMES / 1000),
    publishNanosWithNoSubscriber: round(idleNanos, 0),
    droppedInFanout: droppedOverflow
  }
})

/** Frames of `size` that fill a queue to its bound without overflowing it (ids grow, so a little slack). */
const fillCount = (size: number) => Math.min(MAX_QUEUED_FRAMES, Math.floor(MAX_QUEUED_BYTES / size)) - 1

/** N subscribers whose client never reads: the writer's first write never completes. */
const stall = (hub: Hub.Hub["Service"], n: number, topic: (i: number) => string) =>
  Effect.gen(function*() {
    for (let i = 0; i < n; i++) yield* Stream.toPull(hub.subscribe(Filter.topics([topic(i)])))
  })

const stalledShared = Effect.gen(function*() {
  const hub = yield* makeHub
  const before = memory()
  yield* stall(hub, STALLED, () => "load")
  const data = "x".repeat(1024)
  const fill = fillCount(Frame.event({ id: 1_000_000, topic: "load", data }).size)
  for (let id = 1; id <= fill; id++) {
    hub.publishUnsafe(Frame.event({ id, topic: "load", data }))
    if (id === 1) { for (let i = 0; i < 10; i++) yield* Effect.yieldNow // writers take their first batch
     }
  }
  const stats = yield* hub.stats
  const held = stats.reduce((sum, s) => sum + s.queuedBytes + s.inflightBytes, 0) / stats.length
  const after = memory()
  assertNoOverflow(yield* Metric.value(Metrics.droppedFor("overflow")))
  return {
    stalledSubscribers: STALLED,
    accountedBytesPerStalled: Math.round(held),
    heapPerStalledSharedFrames: Math.round((after.heap - before.heap) / STALLED),
    rssPerStalledSharedFrames: Math.round((after.rss - before.rss) / STALLED)
  }
})

const stalledOwn = Effect.gen(function*() {
  const hub = yield* makeHub
  const before = memory()
  yield* stall(hub, STALLED_OWN, (i) => `own-${i}`)
  const data = "y".repeat(1024)
  const fill = fillCount(Frame.event({ id: 1_000_000, topic: "own-00", data }).size)
  let id = 0
  for (let f = 0; f < fill; f++) {
    for (let i = 0; i < STALLED_OWN; i++) hub.publishUnsafe(Frame.event({ id: ++id, topic: `own-${i}`, data }))
    if (f === 0) { for (let i = 0; i < 10; i++) yield* Effect.yieldNow }
  }
  const stats = yield* hub.stats
  const held = stats.reduce((sum, s) => sum + s.queuedBytes + s.inflightBytes, 0) / stats.length
  const after = memory()
  assertNoOverflow(yield* Metric.value(Metrics.droppedFor("overflow")))
  return {
    stalledOwnFrames: STALLED_OWN,
    accountedBytesPerStalledOwn: Math.round(held),
    heapPerStalledOwnFrames: Math.round((after.heap - before.heap) / STALLED_OWN),
    rssPerStalledOwnFrames: Math.round((after.rss - before.rss) / STALLED_OWN)
  }
})

// 1,000 small signals per stalled subscriber, each its own: what a queued frame really costs.
const smallFrames = Effect.gen(function*() {
  const hub = yield* makeHub
  yield* stall(hub, STALLED_SMALL, (i) => `small-${i}`)
  const before = memory()
  let id = 0
  let textBytes = 0
  for (let f = 0; f < MAX_QUEUED_FRAMES - 1; f++) {
    for (let i = 0; i < STALLED_SMALL; i++) {
      const frame = Frame.signal({ id: ++id, topic: `small-${i}`, about: [`r${id}`] })
      textBytes += frame.bytes.length
      hub.publishUnsafe(frame)
    }
  }
  const after = memory()
  const frames = id
  assertNoOverflow(yield* Metric.value(Metrics.droppedFor("overflow")))
  return {
    smallFrameTextBytes: round(textBytes / frames, 1),
    heapPerFrame: round((after.heap - before.heap) / frames - textBytes / frames, 1),
    frameOverheadBytes: FRAME_OVERHEAD_BYTES
  }
})

const program = Effect.gen(function*() {
  const run = <A, E>(scenario: Effect.Effect<A, E, Scope.Scope>) => {
    checkDeadline()
    return Effect.scoped(scenario).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))
  }
  const a = yield* run(fanout)
  const b = yield* run(stalledShared)
  const c = yield* run(stalledOwn)
  const d = yield* run(smallFrames)
  return { ...a, ...b, ...c, ...d }
})

const results = await Effect.runPromise(program)
console.log(JSON.stringify({
  title: "sse fan-out: 1,000 subscribers, stalled-subscriber memory",
  results,
  notes: [
    `node ${process.version}; consumers are in-process streams (the HTTP response's handoff, no socket)`,
    `fan-out: ${FRAMES} events in bursts of ${BURST}, each burst awaited by all ${SUBSCRIBERS} subscribers; latency is publish to consumer, so it includes the burst's own fan-out`,
    "heap = heapUsed + arrayBuffers after gc; shared frames are stored once whatever the number of subscribers",
    "heapPerFrame: measured memory of one queued small signal beyond its SSE text (compare frameOverheadBytes)"
  ]
}))
