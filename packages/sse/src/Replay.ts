/**
 * `Last-Event-ID` replay: what a reconnecting subscriber missed, from the
 * event log.
 *
 * **Details**
 *
 * ADR-0197 rules enforced here and in `Subscriber`:
 *
 * - "The client reconnects at once and sends its last event id, so it receives
 *   the replay it missed, or a resync when the gap is larger than the replay
 *   cap": {@link fetch} asks the log for `REPLAY_CAP + 1` rows after the id;
 *   more than `REPLAY_CAP` is `TooFar`, answered by one resync.
 * - The seam between replay and live has no duplicate and no gap. The
 *   subscriber is in the hub (its live frames held) before the log is read,
 *   so every event is in the log read, in the hold buffer, or both; at release
 *   {@link release} drops the held frames whose id is at most the last id
 *   the log returned. Commit order equals id order (ADR-0197's advisory
 *   lock), so nothing below that id can still arrive.
 * - "When the replay hold buffer overflows, the held frames are dropped and
 *   resync is queued when the replay is released" (`Subscriber` does the
 *   dropping; the resync is released with the held frames).
 *
 * **Gotchas**
 *
 * - The last id is that of the last row read, whatever its topic: rows the
 *   subscriber's filter rejects still advance the seam.
 * - A log that fails is not a stream error: the replay degrades to a resync
 *   (the client refetches) and the failure is logged.
 * - A gap marker among the rows read (`ReplaySource.GAP_TOPIC`, whatever the
 *   filter) means events were lost that no replay can give: `Gap`, answered
 *   by one resync.
 * - Up to `REPLAY_CAP + 1` rows are held during one replay (transient, per
 *   reconnecting client); they are turned into frames batch by batch.
 *
 * @since 0.1.0
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Effect from "effect/Effect"
import * as Frame from "./Frame.ts"
import { REPLAY_CAP, WRITE_BATCH_BYTES, WRITE_BATCH_FRAMES } from "./Limits.ts"
import { GAP_TOPIC, type LoggedEvent, type ReplaySource } from "./ReplaySource.ts"
import type { SubscriberQueue } from "./SubscriberQueue.ts"

/** What a replay found. */
export type Outcome =
  /** Every event after the id, filtered; `lastId` is the last id read (unfiltered). */
  | { readonly _tag: "Replay"; readonly events: ReadonlyArray<LoggedEvent>; readonly lastId: number }
  /** More than `REPLAY_CAP` events were missed: one resync instead. */
  | { readonly _tag: "TooFar" }
  /** The log could not be read: one resync instead. */
  | { readonly _tag: "Unavailable" }
  /** Events were lost after the id (a gap marker was read): one resync instead. */
  | { readonly _tag: "Gap" }

/** Reads the events after `lastEventId` that `matches` accepts, or says why they cannot be replayed. */
export const fetch = (
  log: ReplaySource["Service"],
  lastEventId: number,
  matches: (topic: string) => boolean
): Effect.Effect<Outcome> =>
  // Ids are non-negative integers; anything else cannot be replayed from, so the client resyncs.
  !Number.isSafeInteger(lastEventId) || lastEventId < 0
    ? Effect.succeed<Outcome>({ _tag: "TooFar" })
    : fetchFromLog(log, lastEventId, matches)

const fetchFromLog = (
  log: ReplaySource["Service"],
  lastEventId: number,
  matches: (topic: string) => boolean
): Effect.Effect<Outcome> =>
  log.after(lastEventId, REPLAY_CAP + 1).pipe(
    Effect.map((rows): Outcome => {
      if (rows.length > REPLAY_CAP) return { _tag: "TooFar" }
      if (rows.some((row) => row.topic === GAP_TOPIC)) return { _tag: "Gap" }
      const last = rows.at(-1)
      return {
        _tag: "Replay",
        events: rows.filter((row) => matches(row.topic)),
        lastId: last === undefined ? lastEventId : Math.max(lastEventId, last.id)
      }
    }),
    Effect.catch((error) =>
      Effect.logWarning("event log unavailable, replay replaced by a resync", error).pipe(
        Effect.as<Outcome>({ _tag: "Unavailable" })
      )
    )
  )

/** The replayed events as frames, in write batches (bounded like the writer's batches). */
export function* batches(events: ReadonlyArray<LoggedEvent>): Generator<NonEmptyReadonlyArray<Frame.Data>> {
  let batch: Array<Frame.Data> = []
  let bytes = 0
  for (const row of events) {
    const frame = Frame.fromLogged(row)
    if (batch.length > 0 && (batch.length >= WRITE_BATCH_FRAMES || bytes + frame.size > WRITE_BATCH_BYTES)) {
      yield batch as unknown as NonEmptyReadonlyArray<Frame.Data>
      batch = []
      bytes = 0
    }
    batch.push(frame)
    bytes += frame.size
  }
  if (batch.length > 0) yield batch as unknown as NonEmptyReadonlyArray<Frame.Data>
}

/**
 * Releases the hold buffer: drops the held frames the replay already sent,
 * or puts one resync first when there was no replay.
 */
export const release = (held: SubscriberQueue, outcome: Outcome): void => {
  if (outcome._tag === "Replay") {
    held.retainAfter(outcome.lastId)
  } else if (held.first?._tag !== "Resync") {
    held.prepend(Frame.resync)
  }
}
