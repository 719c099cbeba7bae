/**
 * ADR-0197 "The writer thread always ends": end marker, failed write,
 * interrupt and timeout alike, with no fiber left behind; and a subscriber
 * stopped before its writer starts never starts one.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Fiber, FiberSet, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Filter from "../src/Filter.ts"
import * as Hub from "../src/Hub.ts"
import * as Metrics from "../src/Metrics.ts"
import * as Subscriber from "../src/Subscriber.ts"
import { ADR_MAX_FRAMES, describe as d, dropped, ev, eventually, subscribed, withHub } from "./helpers.ts"

/** Attaches a subscriber with `write` in a scope of its own; records how its writer ended. */
const attach = (hub: Hub.Hub["Service"], write: Subscriber.Write, timeout?: Duration.Input) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const exits: Array<Subscriber.ExitReason> = []
    const subscriber = yield* hub.attach(Filter.all, { write, timeout, onExit: (reason) => exits.push(reason) }).pipe(
      Scope.provide(scope)
    )
    return { scope, exits, subscriber }
  })

describe("writer", () => {
  it.effect("ends on the end marker (after a reconnect)", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const written: Array<string> = []
      const { exits, subscriber } = yield* attach(hub, (batch) => Effect.sync(() => written.push(...batch.map(d))))
      assert.strictEqual(yield* hub.writers, 1)
      let id = 0
      for (let round = 0; round < 3; round++) {
        yield* Effect.sync(() => {
          for (let i = 0; i <= ADR_MAX_FRAMES; i++) hub.publishUnsafe(ev(++id))
        })
        yield* eventually(() => subscriber.stats().queuedFrames === 0 || subscriber.state === "stopped")
      }
      assert.strictEqual(yield* subscriber.await, "end")
      assert.deepStrictEqual(written, ["resync", "resync", "reconnect"])
      assert.deepStrictEqual(exits, ["end"])
      assert.strictEqual(yield* hub.writers, 0)
      assert.strictEqual(yield* hub.subscribers, 0)
    })))

  it.effect("ends on a failed write", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const { exits, subscriber } = yield* attach(
        hub,
        () => Effect.fail(new Subscriber.SubscriberWriteError({ message: "connection reset" }))
      )
      yield* hub.publish(ev(1))
      assert.strictEqual(yield* subscriber.await, "write-failed")
      assert.deepStrictEqual(exits, ["write-failed"])
      assert.strictEqual(yield* hub.writers, 0)
      assert.strictEqual(yield* hub.subscribers, 0)
    })))

  it.effect("ends on a write that dies", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const { subscriber } = yield* attach(hub, () => Effect.die(new Error("socket exploded")))
      yield* hub.publish(ev(1))
      assert.strictEqual(yield* subscriber.await, "write-failed")
      assert.strictEqual(yield* hub.writers, 0)
    })))

  it.effect("ends on an interrupt (its scope closes), even in the middle of a write", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const { exits, scope, subscriber } = yield* attach(hub, () => Effect.never)
      yield* hub.publish(ev(1))
      yield* eventually(() => subscriber.stats().writeStartedAt !== undefined)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* subscriber.await, "interrupted")
      assert.deepStrictEqual(exits, ["interrupted"])
      assert.strictEqual(yield* hub.writers, 0)
      assert.strictEqual(yield* hub.subscribers, 0)
    })))

  it.effect("a write blocked more than 30 s is interrupted, and the subscriber dropped", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      let interrupted = false
      const blockedWrite: Subscriber.Write = () =>
        Effect.onInterrupt(Effect.never, () =>
          Effect.sync(() => {
            interrupted = true
          }))
      const { exits, subscriber } = yield* attach(hub, blockedWrite)
      yield* hub.publish(ev(1))
      yield* eventually(() => subscriber.stats().writeStartedAt !== undefined)
      yield* TestClock.adjust("31 seconds")
      yield* hub.publish(ev(2))
      assert.strictEqual(subscriber.state, "draining")
      assert.strictEqual(yield* subscriber.await, "interrupted")
      assert.isTrue(interrupted)
      assert.deepStrictEqual(exits, ["interrupted"])
      assert.strictEqual(yield* dropped("blocked"), 1)
      assert.strictEqual(yield* hub.writers, 0)
      assert.strictEqual(yield* hub.subscribers, 0)
    })))

  it.effect("ends on a timeout", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const { exits, subscriber } = yield* attach(hub, () => Effect.void, "10 minutes")
      yield* TestClock.adjust("9 minutes")
      assert.strictEqual(subscriber.state, "running")
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(yield* subscriber.await, "timeout")
      assert.deepStrictEqual(exits, ["timeout"])
      assert.strictEqual(yield* hub.writers, 0)
      assert.strictEqual(yield* hub.subscribers, 0)
    })))

  it.effect("a subscription stream completes on its timeout", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const fiber = yield* hub.subscribe(Filter.all, undefined, { timeout: "1 minute" }).pipe(
        Stream.runCollect,
        Effect.forkChild
      )
      yield* TestClock.adjust("1 minute")
      const frames = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isSuccess(frames))
      assert.strictEqual(yield* hub.writers, 0)
    })))

  it.effect("a subscription stream stops its writer when its consumer stops", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const consumer = yield* hub.subscribe(Filter.all).pipe(Stream.take(2), Stream.runCollect, Effect.forkChild)
      yield* subscribed(hub, 1)
      yield* Effect.sync(() => {
        for (let i = 1; i <= 5; i++) hub.publishUnsafe(ev(i))
      })
      assert.deepStrictEqual((yield* Fiber.join(consumer)).map(d), ["e1", "e2"])
      assert.strictEqual(yield* hub.writers, 0)
      assert.strictEqual(yield* hub.subscribers, 0)
    })))

  it.effect("a subscriber stopped before its writer starts never starts one", () =>
    Effect.gen(function*() {
      const fibers = yield* FiberSet.make<Subscriber.ExitReason, never>()
      const context = yield* Effect.context<never>()
      const exits: Array<Subscriber.ExitReason> = []
      const subscriber = Subscriber.make({
        id: 1,
        filter: Filter.all,
        write: () => Effect.void,
        context,
        metrics: Metrics.makeRecorder(context),
        fibers,
        onExit: (_, reason) => exits.push(reason)
      })
      yield* subscriber.stop
      assert.isFalse(subscriber.start())
      assert.strictEqual(yield* FiberSet.size(fibers), 0)
      assert.strictEqual(yield* subscriber.await, "not-started")
      assert.deepStrictEqual(exits, ["not-started"])
      subscriber.offer(ev(1), 0)
      assert.strictEqual(subscriber.stats().queuedFrames, 0)

      // Contrast: started, then stopped.
      const started = Subscriber.make({
        id: 2,
        filter: Filter.all,
        write: () => Effect.void,
        context,
        metrics: Metrics.makeRecorder(context),
        fibers
      })
      assert.isTrue(started.start())
      assert.strictEqual(yield* FiberSet.size(fibers), 1)
      yield* started.stop
      assert.strictEqual(yield* started.await, "interrupted")
      assert.strictEqual(yield* FiberSet.size(fibers), 0)
    }))
})
