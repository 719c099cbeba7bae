/**
 * The subscriber hub: topics, publish, subscribe, heartbeat.
 *
 * **Details**
 *
 * ADR-0018/0197: every subscriber has its own bounded queue and its own
 * writer, "so a client that stops reading delays nobody". {@link Hub}'s
 * `publish` is synchronous and does O(subscribers of the topic) constant-time
 * steps: no fiber switch, no allocation per subscriber, no serialisation when
 * nobody listens. It is safe on the tools/call hot path.
 *
 * ADR-0197 rules enforced here:
 *
 * - "take the subscriber out of the hub": a dropped subscriber is unrouted at
 *   once (no frame reaches it any more) and the `studio.sse.subscribers`
 *   gauge follows.
 * - "checked when the next frame is queued, which the heartbeat guarantees":
 *   one fiber ticks every subscriber each `HEARTBEAT_INTERVAL`, which queues a
 *   heartbeat comment on idle ones and runs the blocked-write check on all,
 *   including the dropped ones still writing their reconnect.
 * - "The writer thread always ends": writers live in a `FiberSet` owned by
 *   the hub's layer; a subscription's scope stops its writer, and closing the
 *   layer interrupts whatever is left ({@link Hub} `writers` counts them).
 * - A published gap marker (`ReplaySource.GAP_TOPIC`: the writer lost events) is
 *   not delivered as data: every subscriber, whatever its filter, gets one
 *   resync instead.
 *
 * **Gotchas**
 *
 * - Time is the hub's: the `Clock` of the context the layer is built in
 *   stamps writes, spaces heartbeats and times out subscriptions, whoever
 *   subscribes. Tests build the layer under a `TestClock`.
 * - `publish` takes events and signals; control frames are the policy's.
 *   Frames published must carry the event log's ids (`broker_event.seq`) for
 *   the replay seam to hold.
 *
 * @since 0.1.0
 */
import * as Channel from "effect/Channel"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Filter from "./Filter.ts"
import type * as Frame from "./Frame.ts"
import { Handoff } from "./Handoff.ts"
import { HEARTBEAT_INTERVAL } from "./Limits.ts"
import * as Metrics from "./Metrics.ts"
import { GAP_TOPIC, ReplaySource } from "./ReplaySource.ts"
import * as Subscriber from "./Subscriber.ts"

/** Options of {@link Hub} `subscribe`. */
export interface SubscribeOptions {
  /** End the stream after this long (the client reconnects with Last-Event-ID). No limit by default. */
  readonly timeout?: Duration.Input | undefined
  /**
   * When a write is blocked past the limit, also interrupt the fiber that
   * pulled the blocked batch (the server's response fiber), so that the
   * server destroys the socket. `Wire` sets it; leave it off when the stream
   * is pulled by a fiber that does other work.
   */
  readonly interruptBlockedConsumer?: boolean | undefined
}

/** Options of {@link Hub} `attach`: a subscriber with its own write. */
export interface AttachOptions {
  readonly write: Subscriber.Write
  /** Replay the events after this id first. */
  readonly lastEventId?: number | undefined
  readonly timeout?: Duration.Input | undefined
  /** Called once when the writer has ended (or will never start). */
  readonly onExit?: ((reason: Subscriber.ExitReason) => void) | undefined
  /** Interrupt whoever is blocked in the write when the blocked-write rule drops the subscriber. */
  readonly abort?: (() => void) | undefined
}

/** The event-stream hub of ADR-0197. */
export class Hub extends Context.Service<Hub, {
  /** Delivers an event or signal to every subscriber of its topic. Synchronous; never waits. */
  readonly publish: (frame: Frame.Data) => Effect.Effect<void>
  /** `publish` outside an Effect (e.g. from a LISTEN callback). */
  readonly publishUnsafe: (frame: Frame.Data) => void
  /**
   * The frames for `filter`, live, after a replay of the events after
   * `lastEventId` when given. Subscribes when run; unsubscribes when the
   * stream's scope closes. Emits data and control frames (never `End`: the
   * stream completes instead).
   */
  readonly subscribe: (
    filter: Filter.Filter,
    lastEventId?: number | undefined,
    options?: SubscribeOptions | undefined
  ) => Stream.Stream<Frame.Frame>
  /** A subscriber whose writes go to `options.write`, for as long as the scope is open. */
  readonly attach: (
    filter: Filter.Filter,
    options: AttachOptions
  ) => Effect.Effect<Subscriber.Subscriber, never, Scope.Scope>
  /** Subscribers in the hub (the `studio.sse.subscribers` gauge). */
  readonly subscribers: Effect.Effect<number>
  /** Writer fibers still running. */
  readonly writers: Effect.Effect<number>
  /** A snapshot of every subscriber whose writer has not ended. */
  readonly stats: Effect.Effect<ReadonlyArray<Subscriber.Stats>>
}>()("@janus/sse/Hub") {
  /** The hub, reading replays from the {@link ReplaySource}. */
  static readonly layer: Layer.Layer<Hub, never, ReplaySource> = Layer.effect(
    Hub,
    Effect.gen(function*() {
      const log = yield* ReplaySource
      const context = yield* Effect.context<never>()
      const clock = Context.get(context, Clock.Clock)
      const metrics = Metrics.makeRecorder(context)
      const fibers = yield* FiberSet.make<Subscriber.ExitReason, never>()

      const byTopic = new Map<string, Set<Subscriber.Subscriber>>()
      const everyTopic = new Set<Subscriber.Subscriber>()
      const routed = new Set<Subscriber.Subscriber>()
      // Subscribers whose writer has not ended: the heartbeat ticks them, dropped ones included.
      const live = new Set<Subscriber.Subscriber>()
      let nextId = 1
      metrics.subscribers(0)

      const route = (subscriber: Subscriber.Subscriber): void => {
        const filter = subscriber.filter
        if (filter._tag === "All") {
          everyTopic.add(subscriber)
        } else {
          for (const topic of filter.topics) {
            let set = byTopic.get(topic)
            if (set === undefined) byTopic.set(topic, set = new Set())
            set.add(subscriber)
          }
        }
        routed.add(subscriber)
        metrics.subscribers(routed.size)
      }

      const unroute = (subscriber: Subscriber.Subscriber): void => {
        if (!routed.delete(subscriber)) return
        const filter = subscriber.filter
        if (filter._tag === "All") {
          everyTopic.delete(subscriber)
        } else {
          for (const topic of filter.topics) {
            const set = byTopic.get(topic)
            if (set !== undefined && set.delete(subscriber) && set.size === 0) byTopic.delete(topic)
          }
        }
        metrics.subscribers(routed.size)
      }

      const publishUnsafe = (frame: Frame.Data): void => {
        if (frame.topic === GAP_TOPIC) {
          // events were lost before this point: every subscriber resyncs, whatever its topics
          const now = clock.currentTimeMillisUnsafe()
          for (const subscriber of routed) subscriber.resync(now)
          return
        }
        const set = byTopic.get(frame.topic)
        if (set === undefined && everyTopic.size === 0) return
        const now = clock.currentTimeMillisUnsafe()
        if (set !== undefined) { for (const subscriber of set) subscriber.offer(frame, now) }
        for (const subscriber of everyTopic) subscriber.offer(frame, now)
      }

      const attach = (filter: Filter.Filter, options: AttachOptions) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const subscriber = Subscriber.make({
              id: nextId++,
              filter,
              write: options.write,
              replay: options.lastEventId === undefined ? undefined : { lastEventId: options.lastEventId, log },
              timeout: options.timeout,
              context,
              metrics,
              fibers,
              onRemove: unroute,
              onExit: (self, reason) => {
                live.delete(self)
                options.onExit?.(reason)
              },
              abort: options.abort
            })
            // Routed before the writer reads the log: the replay seam needs every later frame held.
            route(subscriber)
            live.add(subscriber)
            subscriber.start()
            return subscriber
          }),
          (subscriber) => subscriber.stop
        )

      const subscribe = (
        filter: Filter.Filter,
        lastEventId?: number | undefined,
        options?: SubscribeOptions | undefined
      ): Stream.Stream<Frame.Frame> =>
        Stream.fromChannel(Channel.fromTransform((_, scope) =>
          Effect.gen(function*() {
            const handoff = new Handoff()
            yield* attach(filter, {
              write: handoff.write,
              lastEventId,
              timeout: options?.timeout,
              onExit: handoff.end,
              abort: options?.interruptBlockedConsumer === true ? handoff.abort : undefined
            }).pipe(Scope.provide(scope))
            return handoff.pull
          })
        ))

      yield* Effect.sleep(HEARTBEAT_INTERVAL).pipe(
        Effect.andThen(Effect.sync(() => {
          const now = clock.currentTimeMillisUnsafe()
          for (const subscriber of live) subscriber.tick(now)
        })),
        Effect.forever,
        Effect.forkScoped
      )

      return Hub.of({
        publish: (frame) => Effect.sync(() => publishUnsafe(frame)),
        publishUnsafe,
        subscribe,
        attach,
        subscribers: Effect.sync(() => routed.size),
        writers: FiberSet.size(fibers),
        stats: Effect.sync(() => Array.from(live, (subscriber) => subscriber.stats()))
      })
    })
  )
}
