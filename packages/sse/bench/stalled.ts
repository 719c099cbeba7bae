/**
 * Resident memory with 1,000 stalled subscribers: `node packages/sse/bench/stalled.ts`.
 *
 * `fanout.ts` measures the cost of ONE stalled subscriber (from 50 to 200 of
 * them); this measures the whole process with 1,000, each holding a full
 * queue (the 1 MiB / 1,000 frames bound, filled without overflowing), in a
 * fresh process per case so that nothing else has grown the heap first:
 *
 * - `own`: every subscriber's queue holds frames of its own (1 KiB of data
 *   each, a topic per subscriber): the worst case, 1,000 x 1 MiB held;
 * - `shared`: one topic, every frame reaches all 1,000 (the real case of one
 *   publish fanned out): frames are stored once.
 *
 * A stalled subscriber is one whose client never reads: its stream is never
 * pulled, so its writer's first write never completes (as in `fanout.ts`).
 * Reported per case: RSS before (hub built, nothing subscribed) and after,
 * heap + array buffers after gc, and the bytes the hub accounts per queue.
 *
 * Usage: node packages/sse/bench/stalled.ts [own|shared]   (no argument: both, each in its own process)
 */
import { Context, Effect, Layer, Metric, Stream } from "effect"
import { spawnSync } from "node:child_process"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as Filter from "../src/Filter.ts"
import * as Frame from "../src/Frame.ts"
import * as Hub from "../src/Hub.ts"
import { MAX_QUEUED_BYTES, MAX_QUEUED_FRAMES } from "../src/Limits.ts"
import * as Metrics from "../src/Metrics.ts"
import * as ReplaySource from "../src/ReplaySource.ts"

const SUBSCRIBERS = Number(process.env.BENCH_STALLED ?? 1_000)
const MiB = 2 ** 20

interface CaseResult {
  readonly mode: "own" | "shared"
  readonly rssBefore: number
  readonly rssAfter: number
  readonly heapAfter: number
  readonly accountedPerSubscriber: number
  readonly framesPerQueue: number
  readonly overflowed: number
  readonly seconds: number
}

const runCase = async (mode: "own" | "shared"): Promise<CaseResult> => {
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
  const started = performance.now()
  return Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(Hub.Hub.layer.pipe(Layer.provide(ReplaySource.layerMemory)))
      const hub = Context.get(context, Hub.Hub)
      const before = memory()
      const topic = (i: number) => mode === "own" ? `own-${i}` : "shared"
      for (let i = 0; i < SUBSCRIBERS; i++) yield* Stream.toPull(hub.subscribe(Filter.topics([topic(i)])))
      const data = "x".repeat(1024)
      const size = Frame.event({ id: 10_000_000, topic: "own-999", data }).size
      // ids grow while filling, so leave one frame of slack under the bound
      const fill = Math.min(MAX_QUEUED_FRAMES, Math.floor(MAX_QUEUED_BYTES / size)) - 1
      let id = 0
      for (let f = 0; f < fill; f++) {
        if (mode === "own") {
          for (let i = 0; i < SUBSCRIBERS; i++) hub.publishUnsafe(Frame.event({ id: ++id, topic: topic(i), data }))
        } else {
          hub.publishUnsafe(Frame.event({ id: ++id, topic: "shared", data }))
        }
        // the writers take their first batch, then stall on a write that never completes
        if (f === 0) { for (let i = 0; i < 10; i++) yield* Effect.yieldNow }
      }
      const stats = yield* hub.stats
      const held = stats.reduce((sum, s) => sum + s.queuedBytes + s.inflightBytes, 0) / Math.max(1, stats.length)
      const after = memory()
      const overflowed = (yield* Metric.value(Metrics.droppedFor("overflow"))).count
      return {
        mode,
        rssBefore: before.rss,
        rssAfter: after.rss,
        heapAfter: after.heap,
        accountedPerSubscriber: Math.round(held),
        framesPerQueue: fill,
        overflowed,
        seconds: Math.round((performance.now() - started) / 100) / 10
      }
    })).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))
  )
}

const mode = process.argv[2]
if (mode === "own" || mode === "shared") {
  console.log(JSON.stringify(await runCase(mode)))
} else {
  const cases: Array<CaseResult> = []
  for (const m of ["own", "shared"] as const) {
    const run = spawnSync(process.execPath, ["--expose-gc", import.meta.filename, m], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      timeout: 120_000
    })
    const last = run.stdout.trim().split("\n").pop() ?? ""
    if (run.status !== 0) throw new Error(`stalled.ts ${m} failed (exit ${run.status}, ${run.signal}): ${last}`)
    cases.push(JSON.parse(last) as CaseResult)
  }
  const mib = (n: number) => Math.round((10 * n) / MiB) / 10
  const results: Record<string, number | string> = { "stalled subscribers": SUBSCRIBERS }
  for (const c of cases) {
    const label = c.mode === "own" ? "own frames (worst)" : "shared frames"
    results[`${label}: RSS before; after, MiB`] = `${mib(c.rssBefore)}; ${mib(c.rssAfter)}`
    results[`${label}: RSS per stalled subscriber, KiB`] = Math.round((c.rssAfter - c.rssBefore) / SUBSCRIBERS / 1024)
    results[`${label}: heap + array buffers after gc, MiB`] = mib(c.heapAfter)
    results[`${label}: accounted per queue, KiB`] = Math.round(c.accountedPerSubscriber / 1024)
  }
  const problems = cases.filter((c) => c.overflowed > 0).map((c) =>
    `PROBLEM: ${c.mode}: ${c.overflowed} frames dropped for overflow: the queues were not held full`
  )
  console.log(JSON.stringify({
    title: `sse: resident memory with ${SUBSCRIBERS.toLocaleString("en-US")} stalled subscribers`,
    results,
    notes: [
      `each case in a fresh process (node --expose-gc); every queue filled to its bound with ${
        cases[0]?.framesPerQueue
      } frames of 1 KiB data; a stalled subscriber's stream is never pulled`,
      `targets: a stalled subscriber costs at most 1.1 MiB; ${SUBSCRIBERS} stalled keep the process under 1.5 GiB ` +
      `resident (the worst case, own frames, is the one to hold to it)`,
      `time: ${cases.map((c) => `${c.mode} ${c.seconds} s`).join(", ")}`,
      ...problems
    ]
  }))
}
