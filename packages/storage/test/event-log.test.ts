/**
 * The event log's writer on PGlite (in memory) and real Postgres: values
 * made storable, a record Postgres refuses isolated and dropped alone, the
 * bounded buffer (oldest dropped, counted, a gap marker written), the
 * truthful `buffered` count and observer, and the final flush at scope close.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Metric } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { LOCK_KEY } from "../src/EventLog.ts"
import {
  EventLog,
  eventLogDropped,
  EventLogObserver,
  type EventLogObserverShape,
  type EventLogOptions,
  GAP_TOPIC,
  Notifications
} from "../src/index.ts"
import { requirePostgres } from "../src/testing.ts"
import { backends, captureLogs, expectFailure, tableAway as tableAwayOf, unique } from "./helpers.ts"

const postgres = await requirePostgres()

type Services = SqlClient.SqlClient | Notifications | EventLog

/** A fresh event log (its own buffer and flusher) on the suite's database, for the current scope. */
const freshLog = (
  options: EventLogOptions,
  extra: Layer.Layer<never> = Layer.empty
) =>
  Effect.map(
    Layer.build(Layer.fresh(EventLog.layerWith(options)).pipe(Layer.provide(extra))),
    (context) => Context.get(context, EventLog)
  )

/** The rows of `broker_event` after seq `since`, in order. */
const rowsSince = (since: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ seq: number | bigint; topic: string; about: Array<string>; data: unknown }>`
      SELECT seq, topic, about, data FROM broker_event WHERE seq > ${since} ORDER BY seq`
    return rows.map((r) => ({
      topic: r.topic,
      about: r.about,
      data: typeof r.data === "string" ? JSON.parse(r.data) : r.data
    }))
  }).pipe(Effect.orDie)

const lastSeq = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: number | bigint }>`SELECT coalesce(max(seq), 0) AS id FROM broker_event`
  return Number(rows[0]!.id)
}).pipe(Effect.orDie)

/** Makes `broker_event` unwritable (renamed away) until the returned effect (or the scope's end) restores it. */
const tableAway = tableAwayOf("broker_event")

/** Makes Postgres refuse events on topic `poison` (a CHECK constraint: SQLSTATE 23514), for the scope. */
const refusePoison = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* Effect.acquireRelease(
    sql`ALTER TABLE broker_event ADD CONSTRAINT no_poison CHECK (topic <> 'poison') NOT VALID`,
    () => Effect.orDie(sql`ALTER TABLE broker_event DROP CONSTRAINT IF EXISTS no_poison`)
  )
}).pipe(Effect.orDie)

const droppedCount = Effect.map(Metric.value(eventLogDropped), (state) => Number(state.count))

for (const backend of backends<Services>(postgres)) {
  describe.skipIf(!backend.run)(`event log writer: ${backend.name}`, () => {
    layer(backend.layer(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
      it.effect("U+0000 and lone surrogates in topic, about and data are stored as U+FFFD", () =>
        Effect.scoped(Effect.gen(function*() {
          const log = yield* freshLog({ flushInterval: "1 hour" })
          const since = yield* lastSeq
          yield* log.append({
            topic: "calls\u0000",
            about: ["a\u0000b", "\ud800"],
            data: { tool: "x\u0000", ["k\udc00"]: ["\ud83d\ude00", "lone \ud83d"], n: 1e400 }
          })
          yield* log.append({ topic: "signal", about: ["\u0000"] })
          yield* log.flush
          assert.deepStrictEqual(yield* rowsSince(since), [
            {
              topic: "calls\ufffd",
              about: ["a\ufffdb", "\ufffd"],
              data: { tool: "x\ufffd", ["k\ufffd"]: ["\ud83d\ude00", "lone \ufffd"], n: null }
            },
            { topic: "signal", about: ["\ufffd"], data: null }
          ])
        })))

      it.effect("an event Postgres refuses is dropped alone: the others are written in order, then a gap marker", () =>
        Effect.scoped(Effect.gen(function*() {
          const { lines, logger } = captureLogs()
          const log = yield* freshLog({ flushInterval: "1 hour" }, logger)
          yield* refusePoison
          const since = yield* lastSeq
          const before = yield* droppedCount
          const cyclic: Record<string, unknown> = {}
          cyclic.self = cyclic
          for (const topic of ["a", "poison", "b"]) yield* log.append({ topic, data: { topic } })
          yield* log.append({ topic: "no-json", data: { big: 10n } })
          yield* log.append({ topic: "no-json", data: cyclic })
          for (let i = 0; i < 40; i++) yield* log.append({ topic: i === 17 ? "poison" : "bulk", data: { i } })
          yield* log.flush.pipe(Effect.provide(logger))
          const rows = yield* rowsSince(since)
          assert.deepStrictEqual(
            rows.map((r) => r.topic === "bulk" ? `bulk${(r.data as { i: number }).i}` : r.topic),
            ["a", "b", ...Array.from({ length: 40 }, (_, i) => `bulk${i}`).filter((b) => b !== "bulk17"), GAP_TOPIC]
          )
          assert.deepStrictEqual(rows.at(-1)!.data, { dropped: 4 })
          assert.strictEqual((yield* droppedCount) - before, 4, "janus.event_log.dropped counts each")
          const reports = lines.filter((l) => l.includes("could not be stored"))
          assert.strictEqual(reports.length, 1, lines.join("\n"))
          assert.include(reports[0]!, "Postgres refused 2")
          assert.include(reports[0]!, "SQLSTATE 23514")
          assert.include(reports[0]!, "2 had data with no JSON form")
          assert.strictEqual(yield* log.buffered, 0)
          // the next flush is not held up by anything
          yield* log.append({ topic: "later" })
          yield* log.flush
          assert.deepStrictEqual((yield* rowsSince(since)).at(-1), { topic: "later", about: [], data: null })
        })))

      it.effect(
        "the buffer holds 100,000 events by default; past the bound the oldest are dropped, counted and " +
          "followed by a gap marker",
        () =>
          Effect.scoped(Effect.gen(function*() {
            const { lines, logger } = captureLogs()
            const buffered: Array<number> = []
            const flushed: Array<number> = []
            const observer: EventLogObserverShape = {
              buffered: (n) => void buffered.push(n),
              flushed: (size) => void flushed.push(size)
            }
            const observed = Layer.succeed(EventLogObserver, observer)
            const small = yield* freshLog(
              { flushInterval: "1 hour", maxBuffered: 10, warnInterval: "1 hour" },
              Layer.merge(logger, observed)
            )
            const restore = yield* tableAway
            const before = yield* droppedCount
            yield* Effect.gen(function*() {
              for (let i = 0; i < 25; i++) yield* small.append({ topic: "bound", data: { i } })
            }).pipe(Effect.provide(logger))
            assert.strictEqual((yield* droppedCount) - before, 15)
            assert.strictEqual(yield* small.buffered, 10)
            assert.strictEqual(buffered.at(-1), 10)
            assert.strictEqual(lines.filter((l) => l.includes("dropped the")).length, 1, lines.join("\n"))
            // a failed flush keeps the 10 and says so
            yield* expectFailure(small.flush, "StorageError")
            assert.strictEqual(yield* small.buffered, 10)
            assert.strictEqual(buffered.at(-1), 10)
            assert.deepStrictEqual(flushed, [])
            yield* restore
            const since = yield* lastSeq
            yield* small.flush
            const rows = yield* rowsSince(since)
            assert.deepStrictEqual(rows[0], { topic: GAP_TOPIC, about: [], data: { dropped: 15 } }, "the gap first")
            assert.deepStrictEqual(
              rows.slice(1).map((r) => (r.data as { i: number }).i),
              Array.from({ length: 10 }, (_, i) => 15 + i),
              "then the newest 10, in order"
            )
            assert.strictEqual(yield* small.buffered, 0)
            assert.strictEqual(buffered.at(-1), 0)
            assert.deepStrictEqual(flushed, [11])

            // The default bound is 100,000: the 100,001st append drops one.
            const big = yield* freshLog({ flushInterval: "1 hour", warnInterval: "1 hour" }, logger)
            const restoreAgain = yield* tableAway
            const beforeBig = yield* droppedCount
            for (let i = 0; i < 100_000; i++) yield* big.append({ topic: "many" })
            assert.strictEqual((yield* droppedCount) - beforeBig, 0)
            yield* big.append({ topic: "many" })
            assert.strictEqual((yield* droppedCount) - beforeBig, 1)
            assert.strictEqual(yield* big.buffered, 100_000)
            yield* restoreAgain
          }))
      )

      it.effect("a flush interrupted while it waits for the lock puts its batch back; the next writes it once", () =>
        Effect.scoped(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const log = yield* freshLog({ flushInterval: "1 hour" })
          const since = yield* lastSeq
          for (let i = 0; i < 3; i++) yield* log.append({ topic: "interrupted", data: { i } })
          // another writer holds the flush lock (on PGlite, its transaction holds the only session)
          const locked = yield* Deferred.make<void>()
          const holder = yield* Effect.forkChild(
            sql.withTransaction(
              sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`.pipe(
                Effect.andThen(Deferred.succeed(locked, undefined)),
                Effect.andThen(Effect.never)
              )
            )
          )
          yield* Deferred.await(locked)
          const flushing = yield* Effect.forkChild(log.flush)
          yield* Effect.sleep("300 millis")
          assert.strictEqual(yield* log.buffered, 3, "in flight, still counted")
          yield* Fiber.interrupt(flushing)
          assert.strictEqual(yield* log.buffered, 3, "back in the buffer")
          yield* Fiber.interrupt(holder)
          yield* log.flush
          assert.deepStrictEqual((yield* rowsSince(since)).map((r) => (r.data as { i: number }).i), [0, 1, 2])
        })))

      it.effect("at scope close, events the final flush cannot write are counted and reported in one line", () =>
        Effect.gen(function*() {
          const { lines, logger } = captureLogs()
          const before = yield* droppedCount
          const who = unique("final")
          yield* Effect.scoped(Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            // finalizers run last first: the log's final flush runs while the table is still away
            yield* Effect.addFinalizer(() =>
              Effect.orDie(sql`ALTER TABLE IF EXISTS broker_event_away RENAME TO broker_event`)
            )
            const log = yield* freshLog({ flushInterval: "1 hour" }, logger)
            yield* Effect.orDie(sql`ALTER TABLE broker_event RENAME TO broker_event_away`)
            for (let i = 0; i < 3; i++) yield* log.append({ topic: who })
          }))
          assert.strictEqual((yield* droppedCount) - before, 3)
          const final = lines.filter((l) => l.includes("final flush"))
          assert.strictEqual(final.length, 1, lines.join("\n"))
          assert.match(final[0]!, /^Error event log: final flush failed \(.+\); 3 buffered events lost/)
          assert.notInclude(final[0]!, "\n", "one line, no stack")
        }))
    })
  })
}
