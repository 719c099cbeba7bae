/**
 * The reading side of the event log (`EventLog`): the per-instance reader
 * that streams committed events on `committed`, and replay by id.
 *
 * **Rules**
 *
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
 * - Writers notify on `channel` at commit; `follow` starts the reader, which
 *   ends with the scope.
 *
 * @internal
 */
import { Effect, PubSub, Queue, Schedule, type Scope, Semaphore, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { LoggedEvent } from "./Domain.ts"
import type { StorageError } from "./Errors.ts"
import { storageError, toNumber } from "./internal/sql.ts"
import { Notifications } from "./Notifications.ts"

/** The channel every flush notifies at commit. */
export const channel = "janus_events"
const READ_BATCH = 1_000

export interface EventLogReader {
  /** Events committed by any instance, in id order, from the moment this reader was made. */
  readonly committed: Stream.Stream<LoggedEvent>
  /** Up to `limit` events with an id above `id`, in id order. */
  readonly after: (id: number, limit: number) => Effect.Effect<ReadonlyArray<LoggedEvent>, SqlError>
  /** The highest committed id, 0 when the log is empty. */
  readonly latestId: Effect.Effect<number, SqlError>
  /**
   * This instance's own batch, just committed with seqs `written`, published without reading it back:
   * first the events of other instances below its first seq not seen yet (the lock ordered their commits
   * before ours), then the batch.
   */
  readonly publishOwn: (written: ReadonlyArray<LoggedEvent>) => Effect.Effect<void, SqlError>
  /** Starts reading what other instances commit (LISTEN, and a re-read every 5 seconds), until the scope closes. */
  readonly follow: Effect.Effect<void, never, Scope.Scope>
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

/** A reader starting at the log's end. */
export const make: Effect.Effect<EventLogReader, StorageError, SqlClient.SqlClient | Notifications> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    const notifications = yield* Notifications

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

    const listening = Effect.scoped(Effect.gen(function*() {
      const queue = yield* notifications.listen(channel)
      yield* catchUp
      while (true) {
        yield* Queue.take(queue)
        yield* catchUp
      }
    }))
    const follow = Effect.gen(function*() {
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
    })

    return { committed: Stream.fromPubSub(hub), after, latestId, publishOwn, follow } satisfies EventLogReader
  }
)
