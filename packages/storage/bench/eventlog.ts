/**
 * The event log on real Postgres: `node packages/storage/bench/eventlog.ts`.
 *
 * A temporary database is created (`janus_test_<random>`, like
 * `@janus/storage/testing`, on `JANUS_TEST_DATABASE_URL`, default
 * postgres://postgres@127.0.0.1:5432/postgres) and dropped at the end. Three
 * instances of the Postgres storage run in this process, each with its own
 * pool (4 connections), LISTEN connection and `EventLog` writer, so every
 * flush takes the shared advisory lock against the other two.
 *
 * 1. **Sustained at the production cadence**: the three instances append
 *    6,000 events/s in total and rely on the writer's own 1-second flush; every
 *    event must be committed, and append-to-visible latency (seen on a fourth
 *    instance's `committed` stream) is reported as p50/p99.
 * 2. **Flush throughput**: each instance appends `batch` events then flushes,
 *    in a loop, for a fixed time; events/s committed across the three (checked
 *    against the log's ids), for batches of 1 (a flush per event: the lock's
 *    worst case), 100 and 1,000.
 * 3. **Replay**: time for `EventLog.after` to return the 10,000 events after
 *    an id, in one call and in pages of 1,000 (what a reader catching up does).
 *
 * Prints `{ title, results, notes }` on its last line. Without Postgres it
 * prints a result saying so (and fails when `CI` is set).
 */
import { Context, Effect, Fiber, Layer, Stream } from "effect"
import { loadavg } from "node:os"
import { EventLog } from "../src/EventLog.ts"
import { layerPostgresOn, layerTestDatabase, postgresAdminUrl, requirePostgres } from "../src/testing.ts"

const FLUSH_SECONDS = Number(process.env.BENCH_EVENTLOG_SECONDS ?? 3)
const SUSTAINED_RATE = Number(process.env.BENCH_EVENTLOG_RATE ?? 6_000)
const SUSTAINED_SECONDS = 5
const REPLAY = 10_000
const INSTANCES = 3
const title = "event log on Postgres: three instances under the advisory lock, replay"

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

if (!(await requirePostgres())) {
  console.log(JSON.stringify({
    title,
    results: { skipped: `Postgres not reachable at ${new URL(postgresAdminUrl()).host} (JANUS_TEST_DATABASE_URL)` }
  }))
  process.exit(0)
}

type Log = EventLog["Service"]

/** Phase 2: every instance appends `batch` events and flushes, in a loop, for FLUSH_SECONDS. */
const flushThroughput = (logs: ReadonlyArray<Log>, batch: number) =>
  Effect.gen(function*() {
    const before = yield* logs[0]!.latestId
    const deadline = performance.now() + FLUSH_SECONDS * 1000
    const started = performance.now()
    const appended = yield* Effect.forEach(logs, (log, instance) =>
      Effect.gen(function*() {
        let n = 0
        while (performance.now() < deadline) {
          for (let i = 0; i < batch; i++) {
            yield* log.append({ topic: "bench.flush", about: [`instance:${instance}`], data: { instance, n: n++ } })
          }
          yield* log.flush
        }
        return n
      }), { concurrency: "unbounded" })
    const elapsed = (performance.now() - started) / 1000
    const total = appended.reduce((a, b) => a + b, 0)
    const committed = (yield* logs[0]!.latestId) - before
    return { batch, total, committed, perSecond: Math.round(committed / elapsed) }
  })

/** Phase 1: SUSTAINED_RATE events/s in total for SUSTAINED_SECONDS, flushed only by the writers' 1 s tick. */
const sustained = (logs: ReadonlyArray<Log>, reader: Log) =>
  Effect.gen(function*() {
    const total = SUSTAINED_RATE * SUSTAINED_SECONDS
    const latencies: Array<number> = []
    let seen = 0
    const watching = yield* reader.committed.pipe(
      Stream.filter((event) => event.topic === "bench.sustained"),
      Stream.take(total),
      Stream.runForEach((event) =>
        Effect.sync(() => {
          seen++
          latencies.push(Date.now() - (event.data as { t: number }).t)
        })
      ),
      Effect.forkChild
    )
    yield* Effect.sleep("200 millis") // the reader's stream is subscribed
    const perInstancePerTick = SUSTAINED_RATE / logs.length / 100 // ticks of 10 ms
    yield* Effect.forEach(logs, (log, instance) =>
      Effect.gen(function*() {
        const started = Date.now()
        let sent = 0
        while (sent < total / logs.length) {
          const due = Math.min(total / logs.length, Math.floor(((Date.now() - started) / 10 + 1) * perInstancePerTick))
          while (sent < due) {
            yield* log.append({ topic: "bench.sustained", about: [`instance:${instance}`], data: { t: Date.now() } })
            sent++
          }
          yield* Effect.sleep("10 millis")
        }
      }), { concurrency: "unbounded", discard: true })
    const appendsDone = Date.now()
    yield* Fiber.join(watching).pipe(Effect.timeoutOption("10 seconds"))
    const drainMs = Date.now() - appendsDone
    yield* Fiber.interrupt(watching)
    const sorted = latencies.sort((a, b) => a - b)
    return {
      total,
      seen,
      drainMs,
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      max: sorted.at(-1) ?? 0
    }
  })

/** Phase 3: the 10,000 events after an id, at once and in pages of 1,000; median of 5 each. */
const replay = (log: Log) =>
  Effect.gen(function*() {
    const latest = yield* log.latestId
    const from = Math.max(0, latest - REPLAY)
    const once: Array<number> = []
    const paged: Array<number> = []
    let rows = 0
    for (let run = 0; run < 6; run++) {
      const t0 = performance.now()
      const events = yield* log.after(from, REPLAY)
      const t1 = performance.now()
      let cursor = from
      let pagedRows = 0
      while (pagedRows < REPLAY) {
        const page = yield* log.after(cursor, 1_000)
        if (page.length === 0) break
        pagedRows += page.length
        cursor = page[page.length - 1]!.id
      }
      const t2 = performance.now()
      rows = events.length
      if (run === 0) continue // warm-up
      once.push(t1 - t0)
      paged.push(t2 - t1)
    }
    return { rows, onceMs: median(once), pagedMs: median(paged) }
  })

const program = Effect.gen(function*() {
  const database = yield* Layer.build(layerTestDatabase)
  const logs: Array<Log> = []
  for (let i = 0; i < INSTANCES; i++) {
    // one at a time: the first runs the migrations
    const context = yield* Layer.build(
      layerPostgresOn({ maxConnections: 4, applicationName: `janus-bench-${i}` }).pipe(
        Layer.provide(Layer.succeedContext(database))
      )
    )
    logs.push(Context.get(context, EventLog))
  }
  // 4 connections: two are held by the LISTENers (change feed, event log)
  const reader = yield* Layer.build(
    layerPostgresOn({ maxConnections: 4, applicationName: "janus-bench-reader" }).pipe(
      Layer.provide(Layer.succeedContext(database))
    )
  )
  // Sustained first, on an empty log: the flush loops leave every instance's reader catching up for a while.
  const steady = yield* sustained(logs, Context.get(reader, EventLog))
  const flushes = []
  for (const batch of [1, 100, 1_000]) flushes.push(yield* flushThroughput(logs, batch))
  const replayed = yield* replay(logs[0]!)
  return { flushes, steady, replayed }
})

const loadAtStart = loadavg()[0]!.toFixed(2)
const started = performance.now()
const { flushes, replayed, steady } = await Effect.runPromise(Effect.scoped(program))
const results: Record<string, number | string> = {}
for (const f of flushes) {
  results[`flush loop, batches of ${f.batch}: events/s (3 instances)`] = f.perSecond
}
results[`sustained ${SUSTAINED_RATE.toLocaleString("en-US")} events/s for ${SUSTAINED_SECONDS} s: committed`] = `${
  steady.seen.toLocaleString("en-US")
} of ${steady.total.toLocaleString("en-US")}`
results["sustained: append to visible on another instance p50; p99; max ms"] =
  `${steady.p50}; ${steady.p99}; ${steady.max}`
results[`replay ${REPLAY.toLocaleString("en-US")} events, one after() call, ms`] = round(replayed.onceMs)
results[`replay ${REPLAY.toLocaleString("en-US")} events, pages of 1,000, ms`] = round(replayed.pagedMs)
const problems = flushes.filter((f) => f.committed !== f.total).map((f) =>
  `PROBLEM: batches of ${f.batch}: appended ${f.total}, committed ${f.committed}`
)
if (steady.seen !== steady.total) problems.push(`PROBLEM: sustained: ${steady.seen} of ${steady.total} seen`)
if (replayed.rows !== REPLAY) problems.push(`PROBLEM: replay returned ${replayed.rows} rows, expected ${REPLAY}`)
console.log(JSON.stringify({
  title,
  results,
  notes: [
    `three storage instances in one process, 4 pooled connections each, one temp database; every flush is one ` +
    `transaction: pg_advisory_xact_lock, INSERT of the batch, pg_notify`,
    `flush loop: ${FLUSH_SECONDS} s per batch size, each instance appending then flushing as fast as it can; ` +
    `sustained: appends every 10 ms, flushed by each writer's own 1 s tick; latency is append to the event ` +
    `arriving on a fourth instance's committed stream (LISTEN/NOTIFY, then a read by seq)`,
    `all instances share this process' CPU, so the flush loops measure Postgres and this process together; ` +
    `load average (1 min) at start ${loadAtStart}, at end ${loadavg()[0]!.toFixed(2)}; ` +
    `${round((performance.now() - started) / 1000)} s in all`,
    ...problems
  ]
}))
