/**
 * The hub's metrics, through effect `Metric`.
 *
 * **Details**
 *
 * - `studio.sse.dropped` (counter, attribute `reason`): ADR-0197 "Every dropped
 *   frame is counted in studio.sse.dropped, tagged reason (coalesced,
 *   overflow, replay, blocked)". Only events and signals count; control frames
 *   (resync, reconnect, heartbeat, end) are the policy's own and are not data.
 * - `studio.sse.subscribers` (gauge): subscribers currently in the hub.
 *
 * **Gotchas**
 *
 * Publishing is synchronous, so the hub records through a {@link Recorder}
 * bound to the context its layer was built in (`updateUnsafe`), not through
 * `Metric.update`. Provide `Metric.MetricRegistry` around the hub's layer to
 * isolate its series (tests do).
 *
 * @since 0.1.0
 */
import type * as Context from "effect/Context"
import * as Metric from "effect/Metric"

/** Why a frame was dropped. */
export type DropReason = "coalesced" | "overflow" | "replay" | "blocked"

/** Every dropped event or signal, by reason. */
export const dropped: Metric.Counter<number> = Metric.counter("studio.sse.dropped", {
  description: "Event-stream frames dropped for slow subscribers (ADR-0197), by reason",
  incremental: true
})

/** Subscribers currently in the hub. */
export const subscribers: Metric.Gauge<number> = Metric.gauge("studio.sse.subscribers", {
  description: "Event-stream subscribers currently in the hub"
})

/** `studio.sse.dropped{reason}` for one reason. */
export const droppedFor = (reason: DropReason): Metric.Counter<number> => Metric.withAttributes(dropped, { reason })

/** Synchronous recording, bound to a context. */
export interface Recorder {
  readonly dropped: (reason: DropReason, count: number) => void
  readonly subscribers: (count: number) => void
}

/** A recorder that writes to the metric registry of `context`. */
export const makeRecorder = (context: Context.Context<never>): Recorder => {
  const byReason: Record<DropReason, Metric.Counter<number>> = {
    coalesced: droppedFor("coalesced"),
    overflow: droppedFor("overflow"),
    replay: droppedFor("replay"),
    blocked: droppedFor("blocked")
  }
  return {
    dropped: (reason, count) => {
      if (count > 0) byReason[reason].updateUnsafe(count, context)
    },
    subscribers: (count) => subscribers.updateUnsafe(count, context)
  }
}
