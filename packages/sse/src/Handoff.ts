/**
 * The writer's "write" when the subscriber is a `Stream`: a rendezvous with
 * whoever pulls the stream, so that a write lasts exactly as long as the
 * socket takes it.
 *
 * **Details**
 *
 * `write(batch)` offers the batch to the consumer and completes only when the
 * consumer pulls again. `@effect/platform-node`'s `NodeHttpServer` runs a
 * `Stream` response body as
 *
 * ```ts
 * Stream.runForEachArray((chunk) => nodeResponse.write(chunk) ? Effect.void : awaitDrain)
 * ```
 *
 * so it pulls the next chunk only after `ServerResponse.write` accepted the
 * previous one below its high-water mark (16 KiB), or after `drain`. The
 * pulled batch is therefore written to the socket when the writer's write
 * completes, and a client that stops reading keeps the write open: that is
 * the blocked write of ADR-0197, timestamped by the writer and detected by the
 * hub (see `Subscriber`). Nothing in between buffers: there is no queue in this
 * module, one batch at most.
 *
 * ADR-0197 "A writer that is blocked in a write is interrupted": on a real
 * socket the fiber blocked is the consumer (the server's response fiber,
 * parked on `drain`), so {@link Handoff.abort} interrupts the fiber that
 * holds an unacknowledged batch. `NodeHttpServer` then destroys the response
 * (headers were sent), which closes the socket and frees its buffer.
 *
 * **Gotchas**
 *
 * - Do not put a buffering stage (compression, `Stream.buffer`) between the
 *   subscription stream and the socket: it would acknowledge writes the
 *   socket has not taken, and hide the blocked write.
 * - A consumer that pulls the stream from its own fiber and stops for more
 *   than the blocked-write limit is interrupted the same way.
 *
 * @since 0.1.0
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Frame from "./Frame.ts"
import { SubscriberWriteError } from "./Subscriber.ts"

type Batch = NonEmptyReadonlyArray<Frame.Frame>

// Resumes a waiting fiber on its own scheduler turn, not inline: `Effect.callback`'s
// resume runs the fiber synchronously, which would run the consumer's socket write
// inside the writer (or the writer inside the consumer's pull).
const later = <A, E>(
  fiber: Fiber.Fiber<unknown, unknown>,
  resume: (effect: Effect.Effect<A, E>) => void
) =>
(effect: Effect.Effect<A, E>): void => fiber.currentDispatcher.scheduleTask(() => resume(effect), 0)

/** A single-slot rendezvous between a subscriber's writer and its stream's consumer. */
export class Handoff {
  #pending: Batch | undefined = undefined
  #taker: ((effect: Effect.Effect<Batch, Cause.Done>) => void) | undefined = undefined
  #acker: ((effect: Effect.Effect<void, SubscriberWriteError>) => void) | undefined = undefined
  #held = false
  #consumer: Fiber.Fiber<unknown, unknown> | undefined = undefined
  #done = false

  /** Hands `batch` to the consumer; completes when the consumer pulls again (the socket took it). */
  readonly write = (batch: Batch): Effect.Effect<void, SubscriberWriteError> =>
    Effect.withFiber((writer) =>
      Effect.callback<void, SubscriberWriteError>((resume) => {
        if (this.#done) {
          resume(Effect.fail(new SubscriberWriteError({ message: "the subscription stream has ended" })))
          return
        }
        this.#acker = later(writer, resume)
        const taker = this.#taker
        if (taker !== undefined) {
          this.#taker = undefined
          this.#held = true
          taker(Effect.succeed(batch))
        } else {
          this.#pending = batch
        }
        return Effect.sync(() => {
          this.#acker = undefined
          this.#pending = undefined
        })
      })
    )

  /** The consumer's pull: acknowledges the previous batch, then waits for the next one or the end. */
  readonly pull: Effect.Effect<Batch, Cause.Done> = Effect.withFiber((fiber) => {
    this.#consumer = fiber
    if (this.#held) {
      this.#held = false
      const acker = this.#acker
      this.#acker = undefined
      acker?.(Effect.void)
    }
    const pending = this.#pending
    if (pending !== undefined) {
      this.#pending = undefined
      this.#held = true
      return Effect.succeed(pending)
    }
    if (this.#done) return Cause.done()
    return Effect.callback<Batch, Cause.Done>((resume) => {
      this.#taker = later(fiber, resume)
      return Effect.sync(() => {
        this.#taker = undefined
      })
    })
  })

  /** The writer ended: the stream completes at the consumer's next (or current) pull. */
  readonly end = (): void => {
    if (this.#done) return
    this.#done = true
    this.#pending = undefined
    const taker = this.#taker
    this.#taker = undefined
    taker?.(Cause.done())
  }

  /** Interrupts the consumer if it holds a batch it has not come back from (a blocked socket write). */
  readonly abort = (): void => {
    const consumer = this.#consumer
    if (this.#held && consumer !== undefined) {
      this.#held = false
      consumer.currentDispatcher.scheduleTask(() => consumer.interruptUnsafe(), 0)
    }
  }
}
