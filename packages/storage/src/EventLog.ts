/**
 * The ordered event log (`broker_event`): the writer that batches events,
 * the per-instance reader that streams committed ones, and replay by id.
 *
 * **Rules**
 *
 * - `append` only buffers in memory (it never waits for the database and
 *   never fails); a fiber flushes the buffer once a second, and once more
 *   when the scope closes.
 * - The buffer is bounded: at most `maxBuffered` (`MAX_BUFFERED`, 100,000,
 *   the audit log's bound) events wait, plus the batch being written (at
 *   most `FLUSH_BATCH`). Calls are never blocked by their records (SPEC) and
 *   memory must stay bounded while the database is away, so when the buffer
 *   is full the OLDEST event is dropped to make room (the newest are what
 *   Studio shows) — never silently: each is counted in
 *   `janus.event_log.dropped`, a warning with the count is logged at most
 *   once per `warnInterval` (10 s), and the next flush writes a gap marker
 *   (below) so that every subscriber resyncs.
 * - A flush is ONE transaction per batch of at most `FLUSH_BATCH` events that
 *   first takes `pg_advisory_xact_lock(LOCK_KEY)`, then inserts the batch,
 *   then sends `NOTIFY janus_events`. The lock serializes flushes of every
 *   instance, so `seq` values are assigned in commit order: once a reader has
 *   seen id N, no id below N can still commit. A batch that fails because
 *   the database failed goes back in front of the buffer and is retried on
 *   the next tick, so nothing is lost while the buffer holds (a flush whose
 *   COMMIT outcome is unknown may be written twice).
 * - No record can block a flush. Values are written as `Storable` makes them
 *   (U+0000 and lone surrogates become U+FFFD in the topic, `about` and
 *   `data`). Should Postgres still refuse some event (a data error: see
 *   `internal/Refusals.ts`), the batch is written again finding the refused
 *   events by halves: they are dropped, counted in `janus.event_log.dropped`,
 *   reported in one log line, and a gap marker follows the batch. `data`
 *   that has no JSON text (a cycle, a bigint) is dropped the same way.
 * - A gap marker is an event on `GAP_TOPIC` (`"janus.gap"`, data
 *   `{ "dropped": n }`) written where events were lost. The hub and the
 *   `Last-Event-ID` replay turn it into a resync for every subscriber,
 *   whatever its topics, on every instance.
 * - `buffered` (and the `EventLogObserver`'s `buffered`) counts every event
 *   appended and not yet committed, the batch being written included; the
 *   observer also hears each committed batch's size, lag (oldest append to
 *   commit) and duration. The gateway records them as metrics.
 * - `committed` carries the events committed by any instance in seq order,
 *   from this instance's start (`EventLogReader`: the LISTEN reader, and this
 *   instance's own batches published from memory). `after(id, limit)` and
 *   `latestId` serve Last-Event-ID replay. Ids are `seq` converted to
 *   numbers (safe up to 2^53).
 * - Rows are `{ topic, about: text[], data: jsonb | null }`; a change signal
 *   is an event without data.
 * - A flush that fails is logged once, then at most once per `warnInterval`
 *   while it keeps failing, and once when it recovers; at scope close the
 *   events the final flush cannot write are counted as dropped and reported
 *   in one line.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Exit, Layer, Metric, Semaphore, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { LoggedEvent } from "./Domain.ts"
import { StorageError } from "./Errors.ts"
import * as EventLogReader from "./EventLogReader.ts"
import { channel } from "./EventLogReader.ts"
import * as DropReport from "./internal/DropReport.ts"
import { describeRefusals, isolate, isRefusal, type Refused } from "./internal/Refusals.ts"
import { Ring } from "./internal/Ring.ts"
import { storageError, toNumber } from "./internal/sql.ts"
import type { Notifications } from "./Notifications.ts"
import { storableJsonText, storableText } from "./Storable.ts"

/** The advisory lock every flush takes ("janus" in ASCII). */
export const LOCK_KEY = 0x6a616e7573
/** Events waiting for the database at most (the audit log's bound): beyond, the oldest are dropped. */
export const MAX_BUFFERED = 100_000
/** Events written per transaction at most, so a backlog is written (and held in flight) in bounded parts. */
export const FLUSH_BATCH = 10_000
/** The topic of a gap marker: events were lost before it; subscribers resync (see the rules). */
export const GAP_TOPIC = "janus.gap"
const INSERT_CHUNK = 1_000

/** Events dropped: the buffer was full, Postgres refused them, or the final flush at shutdown failed. */
export const eventLogDropped = Metric.counter("janus.event_log.dropped", {
  description: "Events dropped because the in-memory buffer was full, Postgres refused them, or the final flush " +
    "at shutdown failed (subscribers are told to resync)",
  incremental: true
})

export interface AppendEvent {
  readonly topic: string
  readonly about?: ReadonlyArray<string> | undefined
  /** Any JSON value; omit (or null) for a change signal. */
  readonly data?: unknown
}

/** What the writer tells about itself; the gateway records it as metrics. Called synchronously. */
export interface EventLogObserverShape {
  /** Events appended and not yet committed, after every append and every flush attempt. */
  readonly buffered: (count: number) => void
  /** One committed batch: its events, its oldest event's age at commit and the transaction's duration. */
  readonly flushed: (size: number, lagMillis: number, durationMillis: number) => void
}

/** The observer of every `EventLog` built where it is provided; by default nobody listens. */
export const EventLogObserver = Context.Reference<EventLogObserverShape>("@janus/storage/EventLogObserver", {
  defaultValue: () => ({ buffered: () => {}, flushed: () => {} })
})

export interface EventLogOptions {
  /** Flush period (default 1 second). */
  readonly flushInterval?: Duration.Input | undefined
  /** Events kept waiting at most; beyond, the oldest are dropped and counted (default `MAX_BUFFERED`). */
  readonly maxBuffered?: number | undefined
  /** At most one "dropped" or "flush failed" warning per this period (default 10 seconds). */
  readonly warnInterval?: Duration.Input | undefined
}

export class EventLog extends Context.Service<EventLog, {
  /** Buffers an event for the next flush (at most a second away); never fails, never waits. */
  readonly append: (event: AppendEvent) => Effect.Effect<void>
  /** Flushes the buffer now (the periodic flush does this every second). */
  readonly flush: Effect.Effect<void, StorageError>
  /** Events appended and not yet committed. */
  readonly buffered: Effect.Effect<number>
  /** Events committed by any instance, in id order, from the moment this instance started. */
  readonly committed: Stream.Stream<LoggedEvent>
  /** Up to `limit` events with an id above `id`, in id order. */
  readonly after: (id: number, limit: number) => Effect.Effect<ReadonlyArray<LoggedEvent>, StorageError>
  /** The highest committed id, 0 when the log is empty. */
  readonly latestId: Effect.Effect<number, StorageError>
}>()("@janus/storage/EventLog") {
  /** The event log with the given limits. */
  static readonly layerWith = (
    options: EventLogOptions = {}
  ): Layer.Layer<EventLog, StorageError, SqlClient.SqlClient | Notifications> =>
    Layer.effect(EventLog, Effect.suspend(() => make(options)))

  /** The event log with the default limits (1 s, `MAX_BUFFERED`). */
  static readonly layer: Layer.Layer<EventLog, StorageError, SqlClient.SqlClient | Notifications> = EventLog
    .layerWith()
}

/** An appended event and when (the layer's clock, in millis). */
interface Pending {
  readonly topic: string
  readonly about: ReadonlyArray<string>
  readonly data: unknown
  readonly at: number
}

/** A row as inserted: everything storable, `data` as JSON text. */
type InsertRow = {
  readonly topic: string
  readonly about: Array<string>
  readonly data: string | null
}

const gapRow = (lost: number): InsertRow => ({ topic: GAP_TOPIC, about: [], data: JSON.stringify({ dropped: lost }) })

const make = Effect.fnUntraced(function*(options: EventLogOptions) {
  const sql = yield* SqlClient.SqlClient
  const observer = yield* EventLogObserver
  const clock = yield* Clock.Clock
  const flushInterval = Duration.fromInputUnsafe(options.flushInterval ?? "1 second")
  const maxBuffered = Math.max(1, options.maxBuffered ?? MAX_BUFFERED)
  const warnEveryMs = Duration.toMillis(Duration.fromInputUnsafe(options.warnInterval ?? "10 seconds"))

  const reader = yield* EventLogReader.make
  // --- writer -------------------------------------------------------------
  const buffer = new Ring<Pending>(maxBuffered)
  const flushing = yield* Semaphore.make(1)
  /** Events of the batch being written. */
  let inFlight = 0
  /** Events lost (dropped from a full buffer) since the last gap marker was committed. */
  let gap = 0
  const report = () => observer.buffered(buffer.size + inFlight)

  const drops = DropReport.make({
    metric: eventLogDropped,
    metricName: "janus.event_log.dropped",
    writer: "event log",
    noun: "events",
    warnEveryMs,
    message: (n) =>
      `event log: buffer full (${maxBuffered} events waiting for the database); dropped the ${n} oldest ` +
      `(counted in janus.event_log.dropped); subscribers are told to resync`
  })

  const append = (event: AppendEvent): Effect.Effect<void> =>
    Effect.suspend(() => {
      const full = buffer.push({
        topic: event.topic,
        about: event.about ?? [],
        data: event.data ?? null,
        at: clock.currentTimeMillisUnsafe()
      })
      report()
      if (!full) return Effect.void
      gap++
      return drops.note(1)
    })

  const insertRows = (rows: ReadonlyArray<InsertRow>) =>
    Effect.gen(function*() {
      const written: Array<LoggedEvent> = []
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        const chunk = rows.slice(i, i + INSERT_CHUNK)
        const seqs = yield* sql<{ seq: number | bigint }>`
          INSERT INTO broker_event ${sql.insert(chunk as [InsertRow])} RETURNING seq`
        // identity values are drawn row by row in VALUES order: the k-th smallest seq is the k-th row
        const ids = seqs.map((r) => toNumber(r.seq)).sort((x, y) => x - y)
        for (let j = 0; j < chunk.length; j++) {
          const row = chunk[j]!
          // as the reader would see it: the JSON text parsed (jsonb keeps the same values)
          written.push({
            id: ids[j]!,
            topic: row.topic,
            about: row.about,
            data: row.data === null ? null : JSON.parse(row.data)
          })
        }
      }
      return written
    })

  /**
   * One transaction: the lock, the rows, a gap marker when events were lost in it (`lost` already, plus
   * the ones Postgres refuses), the NOTIFY. With `isolating`, refused rows are found and left out.
   */
  const write = (rows: ReadonlyArray<InsertRow>, lost: number, isolating: boolean) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`
      const outcome = isolating
        ? yield* isolate(sql, rows, insertRows)
        : { written: yield* insertRows(rows), refused: [] as ReadonlyArray<Refused<InsertRow>> }
      const missing = lost + outcome.refused.length
      const marker = missing > 0 ? yield* insertRows([gapRow(missing)]) : []
      yield* sql`SELECT pg_notify(${channel}, '')`
      return { written: [...outcome.written, ...marker], refused: outcome.refused }
    }))

  /**
   * Writes `batch` (taken from the front of the buffer). When the database fails, or the flush is
   * interrupted (the scope closes), the batch goes back in front for the next flush.
   */
  const writeBatch = (batch: ReadonlyArray<Pending>) =>
    Effect.suspend(() => {
      const began = clock.currentTimeMillisUnsafe()
      const lostBefore = gap
      const rows: Array<InsertRow> = lostBefore > 0 ? [gapRow(lostBefore)] : []
      let unwritable = 0
      for (const event of batch) {
        const data = event.data === null ? null : storableJsonText(event.data)
        if (data === undefined) unwritable++
        else rows.push({ topic: storableText(event.topic), about: event.about.map(storableText), data })
      }
      inFlight = batch.length
      return write(rows, unwritable, false).pipe(
        Effect.catchIf(isRefusal, () => write(rows, unwritable, true)),
        Effect.onExit((exit) =>
          Effect.suspend(() => {
            inFlight = 0
            if (Exit.isSuccess(exit)) {
              gap -= lostBefore
              report()
              return Effect.void
            }
            const lost = buffer.unshiftAll(batch)
            gap += lost
            report()
            return lost > 0 ? drops.note(lost) : Effect.void
          })
        ),
        Effect.flatMap(({ refused, written }) => {
          const now = clock.currentTimeMillisUnsafe()
          observer.flushed(written.length, batch.length > 0 ? now - batch[0]!.at : 0, now - began)
          const lost = refused.length + unwritable
          const told = lost === 0 ? Effect.void : Effect.andThen(
            Metric.update(eventLogDropped, lost),
            Effect.logWarning(
              `event log: ${lost} of ${batch.length} events could not be stored (` +
                (refused.length > 0 ? `Postgres refused ${refused.length}: ${describeRefusals(refused)}` : "") +
                (refused.length > 0 && unwritable > 0 ? "; " : "") +
                (unwritable > 0 ? `${unwritable} had data with no JSON form` : "") +
                `); wrote the others, dropped those (counted in janus.event_log.dropped); subscribers are told ` +
                `to resync`
            )
          )
          // committed: a failure to publish is the reader's to repair (it re-reads every 5 seconds)
          const publish = written.length === 0 ? Effect.void : reader.publishOwn(written).pipe(
            Effect.catch((error) => Effect.logWarning(`event log: publishing a flushed batch failed: ${error.message}`))
          )
          return Effect.andThen(told, publish)
        })
      )
    })

  const flush: Effect.Effect<void, StorageError> = flushing.withPermit(Effect.suspend(() => {
    let remaining = buffer.size
    const next: Effect.Effect<void, SqlError> = Effect.suspend(() => {
      if (remaining <= 0 && gap === 0) return Effect.void
      const batch = buffer.take(Math.min(Math.max(remaining, 0), FLUSH_BATCH))
      remaining -= batch.length
      return Effect.andThen(writeBatch(batch), next)
    })
    return next
  })).pipe(storageError("eventLog.flush"))

  // Final flush when the scope closes (registered first, so it runs after the flusher is interrupted).
  yield* Effect.addFinalizer(() =>
    drops.finalFlush(flush, () => {
      const lost = buffer.take(buffer.size).length
      report()
      return lost
    })
  )

  yield* Effect.gen(function*() {
    let failures = 0
    let lastWarnAt = Number.NEGATIVE_INFINITY
    while (true) {
      yield* Effect.sleep(flushInterval)
      yield* drops.report()
      const result = yield* Effect.result(flush)
      if (result._tag === "Failure") {
        failures++
        const now = clock.currentTimeMillisUnsafe()
        if (failures === 1 || now - lastWarnAt >= warnEveryMs) {
          lastWarnAt = now
          yield* Effect.logWarning(
            `event log: flush failed (attempt ${failures}): ${result.failure.message}; ` +
              `${buffer.size} events kept, retried every ${Duration.format(flushInterval)}`
          )
        }
      } else if (failures > 0) {
        yield* Effect.logInfo(`event log: flush recovered after ${failures} failed attempts`)
        failures = 0
      }
    }
  }).pipe(Effect.forkScoped)

  // the reader starts after the writer, so at scope close it stops before the final flush
  yield* reader.follow

  report()
  return EventLog.of({
    append,
    flush,
    buffered: Effect.sync(() => buffer.size + inFlight),
    committed: reader.committed,
    after: (id, limit) => reader.after(id, limit).pipe(storageError("eventLog.after")),
    latestId: reader.latestId.pipe(storageError("eventLog.latestId"))
  })
})

export type { StorageError }
