/**
 * Shared test wiring: a hub over an in-memory event log, metric helpers and
 * small frame builders.
 */
import { Effect, Layer, Metric } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import type * as Cause from "effect/Cause"
import * as Frame from "../src/Frame.ts"
import * as Hub from "../src/Hub.ts"
import * as Metrics from "../src/Metrics.ts"
import * as ReplaySource from "../src/ReplaySource.ts"

/**
 * The bounds of ADR-0197 ("Each subscriber's outbound queue holds at most
 * 1,000 frames and 1 MiB ... The same bound applies to the replay hold
 * buffer"), written here as numbers rather than read from `Limits.ts`: a test
 * of a bound must fail when the constant it guards drifts from the ADR.
 */
export const ADR_MAX_FRAMES = 1_000
export const ADR_MAX_BYTES = 1024 * 1024

/** The replay cap (SPEC "Replay"): a gap of up to 10,000 events is replayed, a larger one gets one resync. */
export const REPLAY_CAP_EVENTS = 10_000

/** The hub over an in-memory log; the log's writer is exposed too. */
export const layerHub = Hub.Hub.layer.pipe(Layer.provideMerge(ReplaySource.layerMemory))

/**
 * Runs `effect` with a hub (built under the test's TestClock) and a metric
 * registry of its own, so metric values start at zero.
 */
export const withHub = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  layer: Layer.Layer<Hub.Hub | ReplaySource.ReplaySource | ReplaySource.MemoryReplaySource> = layerHub
) =>
  effect.pipe(
    Effect.provide(layer),
    Effect.provideService(Metric.MetricRegistry, new Map())
  )

/** `studio.sse.dropped{reason}` in the current registry. */
export const dropped = (reason: Metrics.DropReason) =>
  Effect.map(Metric.value(Metrics.droppedFor(reason)), (state) => state.count)

/** `studio.sse.subscribers` in the current registry. */
export const subscribersGauge = Effect.map(Metric.value(Metrics.subscribers), (state) => state.value)

/** Yields until `predicate` holds (other fibers run meanwhile); fails after `max` turns. */
export const eventually = (predicate: () => boolean, max = 10_000): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let i = 0; i < max; i++) {
      if (predicate()) return
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error("condition not reached"))
  })

export const ev = (id: number, topic = "t", data: unknown = { n: id }) => Frame.event({ id, topic, data })
export const sig = (id: number, about: ReadonlyArray<string>, topic = "t") => Frame.signal({ id, topic, about })

/** Describes frames compactly for assertions: `e1`, `s2[a]`, `resync`, ... */
export const describe = (frame: Frame.Frame): string => {
  switch (frame._tag) {
    case "Event":
      return `e${frame.id}`
    case "Signal":
      return `s${frame.id}[${frame.about.join(",")}]`
    default:
      return frame._tag.toLowerCase()
  }
}

/** Waits until `n` subscribers are in the hub (forked readers subscribe on their first turns). */
export const subscribed = (hub: Hub.Hub["Service"], n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10_000; i++) {
      if ((yield* hub.subscribers) === n) return
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error(`never reached ${n} subscribers`))
  })

/** What `Stream.toPull` of a subscription gives. */
export type Pull = Effect.Effect<NonEmptyReadonlyArray<Frame.Frame>, Cause.Done>

/** Pulls until `n` frames (heartbeats aside) have arrived; returns them described. */
export const take = (pull: Pull, n: number) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    while (out.length < n) {
      for (const frame of yield* pull) if (frame._tag !== "Heartbeat") out.push(describe(frame))
    }
    return out
  })
