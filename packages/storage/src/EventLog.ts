/**
 * The ordered event log (`broker_event`): the writer that batches events,
 * the per-instance reader that streams committed ones, and replay by id.
 *
 * **Rules**
 *
 * - `append` only buffers in memory (it never waits for the database); a
 *   fiber flushes the buffer once a second, and once more when the scope
 *   closes.
 * - A flush is ONE transaction that first takes
 *   `pg_advisory_xact_lock(LOCK_KEY)`, then inserts the batch, then sends
 *   `NOTIFY janus_events`. The lock serializes flushes of every instance, so
 *   `seq` values are assigned in commit order: once a reader has seen id N,
 *   no id below N can still commit. A failed flush puts its batch back in
 *   front of the buffer and is retried on the next tick, so nothing is lost
 *   (a flush whose COMMIT outcome is unknown may be written twice).
 * - Each instance LISTENs on `janus_events` and reads rows after the last
 *   seq it has seen, in seq order, publishing them on `committed`; it also
 *   re-reads every 5 seconds and after re-listening, in case a notification
 *   was lost. It starts at the log's end: `committed` carries new events.
 * - Its own flushed batch is published from memory (the seqs come back from
 *   `INSERT ... RETURNING`), after reading the other instances' events below
 *   the batch's first seq: the lock ordered their commits before it, so the
 *   order on `committed` is still seq order, and the flush does not read back
 *   what it just wrote. `data` is the JSON text that was written, parsed
 *   (object keys may come in another order than in jsonb).
 * - `after(id, limit)` and `latestId` serve Last-Event-ID replay. Ids are
 *   `seq` converted to numbers (safe up to 2^53).
 * - Rows are `{ topic, about: text[], data: jsonb | null }`; a change signal
 *   is an event without data.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, PubSub, Queue, Schedule, Semaphore, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { LoggedEvent } from "./Domain.ts"
import { StorageError } from "./Errors.ts"
import { storageError, toNumber } from "./internal/sql.ts"
import { Notifications } from "./Notifications.ts"

export const channel = "janus_events"
/** The advisory lock every flush takes ("janus" in ASCII). */
export const LOCK_KEY = 0x6a616e7573
const INSERT_CHUNK = 1_000
const READ_BATCH = 1_000

export interface AppendEvent {
  readonly topic: string
  readonly about?: ReadonlyArray<string> | undefined
  /** Any JSON value; omit (or null) for a change signal. */
  readonly data?: unknown
}

export class EventLog extends Context.Service<EventLog, {
  /** Buffers an event for the next flush (at most a second away). */
  readonly append: (event: AppendEvent) => Effect.Effect<void>
  /** Flushes the buffer now (the periodic flush does this every second). */
  readonly flush: Effect.Effect<void, StorageError>
  /** Events committed by any instance, in id order, from the moment this instance started. */
  readonly committed: Stream.Stream<LoggedEvent>
  /** Up to `limit` events with an id above `id`, in id order. */
  readonly after: (id: number, limit: number) => Effect.Effect<ReadonlyArray<LoggedEvent>, StorageError>
  /** The highest committed id, 0 when the log is empty. */
  readonly latestId: Effect.Effect<number, StorageError>
}>()("@janus/storage/EventLog") {
  static readonly layer: Layer.Layer<EventLog, StorageError, SqlClient.SqlClient | Notifications> = Layer.effect(
    EventLog,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const notifications = yield* Notifications

      // --- reader state ---------------------------------------------------------
      const after = (id: number, limit: number): Effect.Effect<ReadonlyArray<LoggedEvent>, SqlError> =>
        Effect.map(
          sql<EventRow>`SELECT seq, topic, about, data FROM broker_event WHERE seq > ${id} ORDER BY seq LIMIT ${limit}`,
          (rows) => rows.map(fromRow)
        )
      const latestId = Effect.map(
        sql<{ id: number | bigint }>`SELECT coalesce(max(seq), 0) AS id FROM broker_event`,
        (rows) => toNumber(rows[0]?.id ?? 0)
      )

      const hub = yield* PubSub.unbounded<LoggedEvent>()
      let lastSeen = yield* latestId.pipe(storageError("eventLog.latestId"))
      const reading = yield* Semaphore.make(1)
      const catchUp = reading.withPermit(Effect.gen(function*() {
        while (true) {
          const events = yield* after(lastSeen, READ_BATCH)
          for (const event of events) {
            lastSeen = event.id
            yield* PubSub.publish(hub, event)
          }
          if (events.length < READ_BATCH) return
        }
      }))

      /**
       * This instance's own batch, just committed with seqs `written`, published without reading it back:
       * first the events of other instances below its first seq not seen yet (the lock ordered their commits
       * before ours), then the batch.
       */
      const publishOwn = (written: ReadonlyArray<LoggedEvent>) =>
        reading.withPermit(Effect.gen(function*() {
          const first = written[0]!.id
          while (lastSeen < first - 1) {
            const events = yield* Effect.map(
              sql<EventRow>`
                SELECT seq, topic, about, data FROM broker_event
                WHERE seq > ${lastSeen} AND seq < ${first} ORDER BY seq LIMIT ${READ_BATCH}`,
              (rows) => rows.map(fromRow)
            )
            for (const event of events) {
              lastSeen = event.id
              yield* PubSub.publish(hub, event)
            }
            if (events.length < READ_BATCH) break
          }
          for (const event of written) {
            if (event.id <= lastSeen) continue
            lastSeen = event.id
            yield* PubSub.publish(hub, event)
          }
        }))

      // --- writer -------------------------------------------------------------
      const buffer: Array<AppendEvent> = []
      const flushing = yield* Semaphore.make(1)

      const write = (batch: ReadonlyArray<AppendEvent>) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`
          const written: Array<LoggedEvent> = []
          for (let i = 0; i < batch.length; i += INSERT_CHUNK) {
            const chunk = batch.slice(i, i + INSERT_CHUNK)
            const rows = chunk.map((event) => ({
              topic: event.topic,
              about: [...(event.about ?? [])],
              data: event.data === undefined || event.data === null ? null : JSON.stringify(event.data)
            }))
            const seqs = yield* sql<{ seq: number | bigint }>`
              INSERT INTO broker_event ${sql.insert(rows as [typeof rows[number]])} RETURNING seq`
            // identity values are drawn row by row in VALUES order: the k-th smallest seq is the k-th row
            const ids = seqs.map((r) => toNumber(r.seq)).sort((x, y) => x - y)
            for (let j = 0; j < rows.length; j++) {
              const row = rows[j]!
              written.push({
                id: ids[j]!,
                topic: row.topic,
                about: row.about,
                // as the reader would see it: the JSON text parsed (jsonb keeps the same values)
                data: row.data === null ? null : JSON.parse(row.data)
              })
            }
          }
          yield* sql`SELECT pg_notify(${channel}, '')`
          return written
        }))

      const flush = flushing.withPermit(Effect.suspend(() => {
        if (buffer.length === 0) return Effect.void
        const batch = buffer.splice(0, buffer.length)
        return write(batch).pipe(
          Effect.onError(() => Effect.sync(() => buffer.unshift(...batch))),
          // committed: a failure to publish is the reader's to repair (it re-reads every 5 seconds)
          Effect.flatMap((written) =>
            written.length === 0 ? Effect.void : publishOwn(written).pipe(
              Effect.catch((error) => Effect.logWarning("event log: publishing a flushed batch failed", error))
            )
          )
        )
      })).pipe(storageError("eventLog.flush"))

      yield* flush.pipe(
        Effect.catch((error) => Effect.logWarning("event log flush failed; will retry", error)),
        Effect.repeat(Schedule.spaced("1 second")),
        Effect.forkScoped
      )
      yield* Effect.addFinalizer(() =>
        flush.pipe(
          Effect.retry({ times: 3, schedule: Schedule.spaced("200 millis") }),
          Effect.catch((error) => Effect.logError("event log: final flush failed; buffered events lost", error))
        )
      )

      // --- reader -------------------------------------------------------------
      const listening = Effect.scoped(Effect.gen(function*() {
        const queue = yield* notifications.listen(channel)
        yield* catchUp
        while (true) {
          yield* Queue.take(queue)
          yield* catchUp
        }
      }))
      yield* listening.pipe(
        Effect.tapError((error) => Effect.logWarning("event log reader lost its LISTEN connection", error)),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped
      )
      yield* catchUp.pipe(
        Effect.catch((error) => Effect.logWarning("event log reader failed to read", error)),
        Effect.repeat(Schedule.spaced("5 seconds")),
        Effect.forkScoped
      )

      return EventLog.of({
        append: (event) => Effect.sync(() => void buffer.push(event)),
        flush,
        committed: Stream.fromPubSub(hub),
        after: (id, limit) => after(id, limit).pipe(storageError("eventLog.after")),
        latestId: latestId.pipe(storageError("eventLog.latestId"))
      })
    })
  )
}

interface EventRow {
  readonly seq: number | bigint
  readonly topic: string
  readonly about: ReadonlyArray<string>
  readonly data: unknown
}

const fromRow = (row: EventRow): LoggedEvent => ({
  id: toNumber(row.seq),
  topic: row.topic,
  about: row.about,
  data: row.data ?? null
})

export type { StorageError }
