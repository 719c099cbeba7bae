/**
 * The ordered event log a `Last-Event-ID` replay reads from.
 *
 * **Details**
 *
 * This package owns the interface; `@janus/storage` implements it over the
 * `broker_event` table (`id` is `broker_event.seq`, a `data: null` row is a
 * change signal). ADR-0197 makes commit order equal `seq` order across
 * replicas, which is what lets a replay from an id be exact: no row with a
 * lower id can commit after a higher one was delivered.
 *
 * `after(id, limit)` returns the committed rows with `id > id`, ascending, at
 * most `limit` of them. The replay asks for `REPLAY_CAP + 1` rows to learn
 * whether the gap is larger than the cap.
 *
 * A row on {@link GAP_TOPIC} is a gap marker: the writer lost events before
 * it (its bounded buffer overflowed, or the database refused them), so no
 * subscriber can have them. It is never delivered as data: publishing it
 * queues one resync for every subscriber whatever its topics (`Hub`), and a
 * replay across it is answered by one resync (`Replay`).
 *
 * {@link layerMemory} is an in-memory log for tests and for a single process
 * without storage; it also provides {@link MemoryReplaySource}, whose `append`
 * assigns ids the way `seq` does.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/** The topic of a gap marker (see above); `@janus/storage`'s writer uses the same name. */
export const GAP_TOPIC = "janus.gap"

/** One committed row of the log. `data: null` makes it a change signal. */
export interface LoggedEvent {
  readonly id: number
  readonly topic: string
  readonly about: ReadonlyArray<string>
  readonly data: unknown | null
}

/** The log could not be read; the replay falls back to one resync. */
export class ReplaySourceError extends Schema.TaggedError<ReplaySourceError>()("ReplaySourceError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/** Read access to the ordered event log (`broker_event`). */
export class ReplaySource extends Context.Service<ReplaySource, {
  readonly after: (id: number, limit: number) => Effect.Effect<ReadonlyArray<LoggedEvent>, ReplaySourceError>
}>()("@janus/sse/ReplaySource") {}

/** Write access to the in-memory log of {@link layerMemory}. */
export class MemoryReplaySource extends Context.Service<MemoryReplaySource, {
  /** Appends a row with the next id (ids start at 1) and returns it. */
  readonly append: (event: Omit<LoggedEvent, "id">) => LoggedEvent
  /** Every row appended so far. */
  readonly events: () => ReadonlyArray<LoggedEvent>
}>()("@janus/sse/MemoryReplaySource") {}

/** Builds an in-memory log and its writer. */
export const makeMemory = (): {
  readonly log: ReplaySource["Service"]
  readonly writer: MemoryReplaySource["Service"]
} => {
  const rows: Array<LoggedEvent> = []
  const writer = MemoryReplaySource.of({
    append: (event) => {
      const row: LoggedEvent = { id: rows.length + 1, topic: event.topic, about: event.about, data: event.data }
      rows.push(row)
      return row
    },
    events: () => rows
  })
  const log = ReplaySource.of({
    after: (id, limit) =>
      Effect.sync(() => {
        // ids are 1..n and dense, so the first row after `id` is at index `id`.
        const start = Math.max(0, Math.floor(id))
        return rows.slice(start, start + Math.max(0, limit))
      })
  })
  return { log, writer }
}

/** An in-memory {@link ReplaySource}, with {@link MemoryReplaySource} to append to it. */
export const layerMemory: Layer.Layer<ReplaySource | MemoryReplaySource> = Layer.effectContext(
  Effect.sync(() => {
    const { log, writer } = makeMemory()
    return Context.make(ReplaySource, log).pipe(Context.add(MemoryReplaySource, writer))
  })
)

/** An {@link ReplaySource} that always fails, for testing the replay's fallback. */
export const layerFailing: Layer.Layer<ReplaySource> = Layer.succeed(
  ReplaySource,
  ReplaySource.of({ after: () => Effect.fail(new ReplaySourceError({ message: "the event log is unavailable" })) })
)
