/**
 * One subscriber: a bounded queue, the slow-subscriber policy, and the one
 * fiber (the writer) that drains the queue.
 *
 * **Details**
 *
 * ADR-0197 rules enforced here:
 *
 * - Signals are coalesced; a replaced signal counts `dropped{reason=coalesced}`.
 * - "When a frame does not fit, the queue is emptied and one resync takes its
 *   place" (`dropped{reason=overflow}` for every data frame emptied, and the
 *   one that did not fit).
 * - "Three overflows within 60 seconds, or a single write blocked for more
 *   than 30 seconds (timestamped by the writer, checked when the next frame is
 *   queued, which the heartbeat guarantees), empty the queue, queue reconnect
 *   and the end of the stream, and take the subscriber out of the hub. A
 *   writer that is blocked in a write is interrupted." The blocked case counts
 *   `dropped{reason=blocked}`.
 * - During a `Last-Event-ID` replay, live frames wait in the same bounded
 *   queue (the hold buffer); an overflow there drops them
 *   (`dropped{reason=replay}`) and a resync is released after the replay. It
 *   does not count towards the three overflows: the client did nothing wrong.
 * - "The writer thread always ends": a finalizer (`Effect.onExit`) completes
 *   the stream whether the writer reached the end marker, a write failed, it
 *   was interrupted or it timed out. {@link Subscriber.stop} before
 *   {@link Subscriber.start} means {@link Subscriber.start} never forks it.
 *
 * {@link Subscriber.offer} and {@link Subscriber.tick} are synchronous and
 * never wait: a publisher cannot be held up by a slow subscriber. The writer
 * is the only fiber that waits, and it waits alone.
 *
 * **Gotchas**
 *
 * - The writer runs in the context given in {@link Options.context} (the
 *   hub's), so its clock, logger and metric registry are the hub's, not
 *   those of whoever subscribed.
 * - A blocked write is seen only when something is offered or the hub ticks;
 *   standalone subscribers need {@link Subscriber.tick} called periodically.
 *
 * @since 0.1.0
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Schema from "effect/Schema"
import * as Filter from "./Filter.ts"
import * as Frame from "./Frame.ts"
import {
  BLOCKED_WRITE_LIMIT_MILLIS,
  OVERFLOW_LIMIT,
  OVERFLOW_WINDOW_MILLIS,
  WRITE_BATCH_BYTES,
  WRITE_BATCH_FRAMES
} from "./Limits.ts"
import type * as Metrics from "./Metrics.ts"
import * as Replay from "./Replay.ts"
import type { ReplaySource } from "./ReplaySource.ts"
import { SubscriberQueue } from "./SubscriberQueue.ts"

/** A write to the subscriber's client failed; the writer ends. */
export class SubscriberWriteError extends Schema.TaggedError<SubscriberWriteError>()("SubscriberWriteError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/** How a writer ended. */
export type ExitReason =
  /** It wrote everything up to the end marker. */
  | "end"
  /** A write failed. */
  | "write-failed"
  /** It was interrupted: stopped, or blocked in a write. */
  | "interrupted"
  /** The subscription's `timeout` elapsed. */
  | "timeout"
  /** The subscriber was stopped before its writer started; none was. */
  | "not-started"

/**
 * - `idle`: created, writer not started.
 * - `running`: writer started; frames are accepted.
 * - `draining`: dropped; reconnect and end are queued, nothing else is accepted.
 * - `stopped`: the writer has ended (or never will start).
 */
export type State = "idle" | "running" | "draining" | "stopped"

/** The write of one batch to the client. It completes when the client's socket has taken the batch. */
export type Write = (batch: NonEmptyReadonlyArray<Frame.Frame>) => Effect.Effect<void, SubscriberWriteError>

/** Everything a subscriber needs; the hub builds these. */
export interface Options {
  readonly id: number
  readonly filter: Filter.Filter
  readonly write: Write
  /** Replay the events after this id before going live. */
  readonly replay?: { readonly lastEventId: number; readonly log: ReplaySource["Service"] } | undefined
  /** End the writer after this long, like an emitter timeout. No limit by default. */
  readonly timeout?: Duration.Input | undefined
  /** Services for the writer fiber: its Clock, logger, metric registry. */
  readonly context: Context.Context<never>
  readonly metrics: Metrics.Recorder
  /** Where the writer fiber is kept, so that none outlives its owner. */
  readonly fibers: FiberSet.FiberSet<ExitReason, never>
  /** Take the subscriber out of the hub (on a drop, or when its writer ends). */
  readonly onRemove?: ((subscriber: Subscriber) => void) | undefined
  /** The writer ended: complete the stream, forget the subscriber. */
  readonly onExit?: ((subscriber: Subscriber, reason: ExitReason) => void) | undefined
  /** Interrupt whoever is blocked in the socket write (see `Handoff.abort`). */
  readonly abort?: (() => void) | undefined
}

/** A snapshot of one subscriber, for operations and tests. */
export interface Stats {
  readonly id: number
  readonly state: State
  readonly holding: boolean
  readonly queuedFrames: number
  readonly queuedBytes: number
  readonly inflightFrames: number
  readonly inflightBytes: number
  /** When the write in progress started (the clock's millis), if one is. */
  readonly writeStartedAt: number | undefined
}

/** One subscriber of the hub. Build with {@link make}. */
export class Subscriber {
  readonly id: number
  readonly filter: Filter.Filter
  readonly #options: Options
  readonly #clock: Clock.Clock
  readonly #queue = new SubscriberQueue()
  readonly #exit = Deferred.makeUnsafe<ExitReason>()
  readonly #overflows: Array<number> = []
  #state: State = "idle"
  #holding: boolean
  #fiber: Fiber.Fiber<ExitReason> | undefined = undefined
  #writeStartedAt: number | undefined = undefined
  #wake: (() => void) | undefined = undefined

  constructor(options: Options) {
    this.id = options.id
    this.filter = options.filter
    this.#options = options
    this.#clock = Context.get(options.context, Clock.Clock)
    // Live frames are held from the moment the subscriber exists, before the log is read.
    this.#holding = options.replay !== undefined
  }

  get state(): State {
    return this.#state
  }

  /** Resolves, once the writer fiber has ended, with how it ended (`"not-started"` if it never started). */
  get await(): Effect.Effect<ExitReason> {
    return Effect.flatMap(Deferred.await(this.#exit), (reason) => {
      const fiber = this.#fiber
      return fiber === undefined ? Effect.succeed(reason) : Effect.as(Fiber.await(fiber), reason)
    })
  }

  stats(): Stats {
    return {
      id: this.id,
      state: this.#state,
      holding: this.#holding,
      queuedFrames: this.#queue.frames,
      queuedBytes: this.#queue.bytes,
      inflightFrames: this.#queue.inflightFrames,
      inflightBytes: this.#queue.inflightBytes,
      writeStartedAt: this.#writeStartedAt
    }
  }

  /**
   * Forks the writer, unless the subscriber was stopped (or dropped) first.
   * Returns whether a writer was started.
   */
  start(): boolean {
    if (this.#state !== "idle") return false
    this.#state = "running"
    const fiber = Effect.runForkWith(this.#options.context)(this.#writer)
    this.#fiber = fiber
    FiberSet.addUnsafe(this.#options.fibers, fiber)
    return true
  }

  /** Stops the subscriber: interrupts its writer and waits for it to end, or makes sure one never starts. */
  get stop(): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.#state === "idle") {
        this.#finish("not-started")
        return Effect.void
      }
      return this.#fiber === undefined ? Effect.void : Fiber.interrupt(this.#fiber)
    })
  }

  /** Queues a data frame, applying the coalescing, overflow and blocked-write rules. Never waits. */
  offer(frame: Frame.Data, now: number): void {
    if (this.#state !== "running" && this.#state !== "idle") return
    if (this.#isBlocked(now)) {
      this.#drop("blocked", 1)
      return
    }
    const result = this.#queue.offer(frame)
    if (result === "queued") {
      this.#notify()
    } else if (result === "coalesced") {
      this.#options.metrics.dropped("coalesced", 1)
    } else {
      this.#overflow(now)
    }
  }

  /**
   * Queues one resync (a control frame: always admitted, and not queued twice in a row): events were lost
   * before they reached the hub (a gap marker). During a replay it waits in the hold buffer and follows the
   * replay. Applies the blocked-write rule; never waits.
   */
  resync(now: number): void {
    if (this.#state !== "running" && this.#state !== "idle") return
    if (this.#isBlocked(now)) {
      this.#drop("blocked", 0)
      return
    }
    if (this.#queue.last?._tag !== "Resync") this.#queue.push(Frame.resync)
    this.#notify()
  }

  /** The heartbeat: runs the blocked-write check, and queues a heartbeat comment if nothing is queued. */
  tick(now: number): void {
    if (this.#state === "stopped" || this.#state === "idle") return
    if (this.#isBlocked(now)) {
      if (this.#state === "draining") this.#interruptBlocked()
      else this.#drop("blocked", 0)
      return
    }
    if (this.#state === "running" && !this.#holding && this.#queue.isEmpty) {
      this.#queue.push(Frame.heartbeat)
      this.#notify()
    }
  }

  #isBlocked(now: number): boolean {
    return this.#writeStartedAt !== undefined && now - this.#writeStartedAt > BLOCKED_WRITE_LIMIT_MILLIS
  }

  #overflow(now: number): void {
    const dropped = this.#queue.clear() + 1
    if (this.#holding) {
      this.#options.metrics.dropped("replay", dropped)
      this.#queue.push(Frame.resync)
      return
    }
    this.#options.metrics.dropped("overflow", dropped)
    const overflows = this.#overflows
    overflows.push(now)
    if (overflows.length > OVERFLOW_LIMIT) overflows.shift()
    if (overflows.length === OVERFLOW_LIMIT && now - overflows[0]! <= OVERFLOW_WINDOW_MILLIS) {
      this.#drop(undefined, 0)
      return
    }
    this.#queue.push(Frame.resync)
    this.#notify()
  }

  /** Empties the queue, queues reconnect and end, leaves the hub; a blocked writer is interrupted. */
  #drop(reason: "blocked" | undefined, incoming: number): void {
    const dropped = this.#queue.clear() + incoming
    if (reason !== undefined) this.#options.metrics.dropped(reason, dropped)
    this.#queue.push(Frame.reconnect)
    this.#queue.push(Frame.end)
    const wasIdle = this.#state === "idle"
    this.#state = "draining"
    this.#options.onRemove?.(this)
    if (wasIdle) {
      // No writer to deliver the reconnect: none will start either.
      this.#finish("not-started")
    } else if (reason === "blocked") {
      this.#interruptBlocked()
    } else {
      this.#notify()
    }
  }

  // Scheduled, not inline: interrupting runs the writer's finalizer, which is not the publisher's work.
  #interruptBlocked(): void {
    const fiber = this.#fiber
    if (fiber !== undefined) fiber.currentDispatcher.scheduleTask(() => fiber.interruptUnsafe(), 0)
    this.#options.abort?.()
  }

  #notify(): void {
    const wake = this.#wake
    if (wake !== undefined) {
      this.#wake = undefined
      wake()
    }
  }

  /** Runs in the writer's finalizer, or instead of a writer: the subscriber is done. Idempotent. */
  #finish(reason: ExitReason): void {
    if (this.#state === "stopped") return
    this.#state = "stopped"
    this.#queue.clear()
    this.#queue.completeWrite()
    this.#writeStartedAt = undefined
    this.#wake = undefined
    this.#options.onRemove?.(this)
    this.#options.onExit?.(this, reason)
    Deferred.doneUnsafe(this.#exit, Exit.succeed(reason))
  }

  // The writer is woken on its own scheduler turn: resuming inline would run the
  // writer (and its socket write) inside `publish`, which must stay cheap.
  readonly #waitForFrames: Effect.Effect<void> = Effect.withFiber((writer) =>
    Effect.callback<void>((resume) => {
      this.#wake = () => writer.currentDispatcher.scheduleTask(() => resume(Effect.void), 0)
      return Effect.sync(() => {
        this.#wake = undefined
      })
    })
  )

  readonly #take: Effect.Effect<Array<Frame.Frame>> = Effect.suspend(() => {
    const batch = this.#queue.take(WRITE_BATCH_FRAMES, WRITE_BATCH_BYTES)
    return batch === undefined ? Effect.flatMap(this.#waitForFrames, () => this.#take) : Effect.succeed(batch)
  })

  /** One write, timestamped when it starts (the blocked-write rule reads the timestamp). */
  #write(batch: NonEmptyReadonlyArray<Frame.Frame>): Effect.Effect<void, SubscriberWriteError> {
    return Effect.suspend(() => {
      this.#writeStartedAt = this.#clock.currentTimeMillisUnsafe()
      return this.#options.write(batch)
    }).pipe(Effect.map(() => {
      this.#writeStartedAt = undefined
      this.#queue.completeWrite()
    }))
  }

  readonly #replay: Effect.Effect<void, SubscriberWriteError> = Effect.suspend(() => {
    const replay = this.#options.replay
    if (replay === undefined) return Effect.void
    const filter = this.filter
    return Replay.fetch(replay.log, replay.lastEventId, (topic) => Filter.matches(filter, topic)).pipe(
      Effect.flatMap((outcome) =>
        Effect.gen({ self: this }, function*() {
          if (outcome._tag === "Replay") {
            for (const batch of Replay.batches(outcome.events)) {
              this.#queue.reserve(batch)
              yield* this.#write(batch)
            }
          }
          Replay.release(this.#queue, outcome)
          this.#holding = false
        })
      )
    )
  })

  readonly #loop: Effect.Effect<ExitReason, SubscriberWriteError> = Effect.gen({ self: this }, function*() {
    yield* this.#replay
    while (true) {
      const batch = yield* this.#take
      const ended = batch.at(-1)?._tag === "End"
      if (ended) batch.pop()
      if (batch.length > 0) {
        yield* this.#write(batch as unknown as NonEmptyReadonlyArray<Frame.Frame>)
      } else {
        this.#queue.completeWrite()
      }
      if (ended) return "end" as const
    }
  })

  get #writer(): Effect.Effect<ExitReason> {
    const timeout = this.#options.timeout
    const bounded: Effect.Effect<ExitReason, SubscriberWriteError> = timeout === undefined
      ? this.#loop
      : Effect.timeoutOrElse(this.#loop, {
        duration: timeout,
        orElse: () => Effect.succeed<ExitReason>("timeout")
      })
    return bounded.pipe(
      Effect.catchCause((cause): Effect.Effect<ExitReason> =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : Effect.logDebug("event-stream write failed", cause).pipe(Effect.as<ExitReason>("write-failed"))
      ),
      // The finally of ADR-0197: whatever ends the writer completes the stream.
      Effect.onExit((exit) => Effect.sync(() => this.#finish(Exit.isSuccess(exit) ? exit.value : "interrupted")))
    )
  }
}

/** Builds a subscriber (not started: the hub routes it first, then calls `start`). */
export const make = (options: Options): Subscriber => new Subscriber(options)
