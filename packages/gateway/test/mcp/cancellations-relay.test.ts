/**
 * The relay of cancellations between replicas (`src/mcp/Cancellations.ts`),
 * over an in-memory `CallCancellations`: a relayed cancellation interrupts the
 * call it names while that call runs, one follower serves every call (not a
 * subscription per call), and it lets go of the service one idle minute
 * after the last call (TestClock).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, PubSub, Ref, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Cancellations from "../../src/mcp/Cancellations.ts"

/** A `CallCancellations` on a PubSub that counts who follows `received`, now and in all. */
const inMemory = Effect.gen(function*() {
  const hub = yield* PubSub.unbounded<Cancellations.RelayedCancellation>()
  const following = yield* Ref.make(0)
  const subscriptions = yield* Ref.make(0)
  const service = Cancellations.CallCancellations.of({
    publish: (cancellation) => Effect.asVoid(PubSub.publish(hub, cancellation)),
    received: Stream.unwrap(
      Effect.acquireRelease(
        Effect.andThen(Ref.update(following, (n) => n + 1), Ref.update(subscriptions, (n) => n + 1)),
        () => Ref.update(following, (n) => n - 1)
      ).pipe(Effect.as(Stream.fromPubSub(hub)))
    )
  })
  return { service, following, subscriptions }
})

/** A call that runs until interrupted; `started` completes once it runs. */
const runningCall = (interrupted: Ref.Ref<number>) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const call = Effect.andThen(Deferred.succeed(started, undefined), Effect.never).pipe(
      Effect.onInterrupt(() => Ref.update(interrupted, (n) => n + 1))
    )
    return { started, call }
  })

describe("Cancellations.relay", () => {
  it.effect("a relayed cancellation interrupts the call it names, and only that one", () =>
    Effect.scoped(Effect.gen(function*() {
      const { service } = yield* inMemory
      const relay = yield* Cancellations.relay.pipe(Effect.provideService(Cancellations.CallCancellations, service))
      const interrupted = yield* Ref.make(0)
      const a = yield* runningCall(interrupted)
      const b = yield* runningCall(interrupted)
      // the relay's `interrupt` is what InFlightCalls gives it: here, interrupting the call's fiber
      const fibers: Record<string, Fiber.Fiber<void>> = {}
      const interruptOf = (key: string) => Effect.suspend(() => Fiber.interrupt(fibers[key]!))
      fibers["a"] = yield* Effect.forkChild(relay.during("s1", "number:1", interruptOf("a"), a.call))
      fibers["b"] = yield* Effect.forkChild(relay.during("s1", "number:2", interruptOf("b"), b.call))
      yield* Deferred.await(a.started)
      yield* Deferred.await(b.started)
      // let the follower subscribe before publishing (the relay, as before, does not wait for it)
      yield* Effect.yieldNow
      yield* service.publish({ sessionId: "s2", requestKey: "number:1" })
      yield* service.publish({ sessionId: "s1", requestKey: "number:1" })
      yield* Fiber.await(fibers["a"])
      assert.strictEqual(yield* Ref.get(interrupted), 1)
      assert.isUndefined(fibers["b"].pollUnsafe(), "the call of another request still runs")
      yield* Fiber.interrupt(fibers["b"])
    })))

  it.effect("one follower for every call; it lets go one idle minute after the last call ends", () =>
    Effect.scoped(Effect.gen(function*() {
      const { following, service, subscriptions } = yield* inMemory
      const relay = yield* Cancellations.relay.pipe(Effect.provideService(Cancellations.CallCancellations, service))
      assert.strictEqual(yield* Ref.get(following), 0, "nothing is followed before a call")
      for (let i = 0; i < 20; i++) {
        yield* relay.during("s1", `number:${i}`, Effect.void, Effect.yieldNow)
      }
      yield* Effect.yieldNow
      assert.strictEqual(yield* Ref.get(subscriptions), 1, "20 calls, one subscription")
      assert.strictEqual(yield* Ref.get(following), 1)
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual(yield* Ref.get(following), 1, "still followed within the idle minute")
      // a call within the minute keeps it, and restarts the minute when it ends
      yield* relay.during("s1", "number:99", Effect.void, Effect.yieldNow)
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual(yield* Ref.get(following), 1)
      yield* TestClock.adjust("2 seconds")
      yield* Effect.yieldNow
      assert.strictEqual(yield* Ref.get(following), 0, "let go one idle minute after the last call")
      // the next call follows again
      yield* relay.during("s1", "number:100", Effect.void, Effect.yieldNow)
      yield* Effect.yieldNow
      assert.strictEqual(yield* Ref.get(following), 1)
      assert.strictEqual(yield* Ref.get(subscriptions), 2)
    })))

  it.effect("without the service, a call just runs", () =>
    Effect.scoped(Effect.gen(function*() {
      const relay = yield* Cancellations.relay
      assert.strictEqual(yield* relay.during("s1", "number:1", Effect.void, Effect.succeed(undefined)), undefined)
    })))
})
