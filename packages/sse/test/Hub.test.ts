/**
 * The slow-subscriber policy through the hub (ADR-0197), under the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Filter from "../src/Filter.ts"
import type * as Frame from "../src/Frame.ts"
import * as Hub from "../src/Hub.ts"
import {
  ADR_MAX_BYTES,
  ADR_MAX_FRAMES,
  describe as d,
  dropped,
  ev,
  eventually,
  sig,
  subscribed,
  subscribersGauge,
  withHub
} from "./helpers.ts"

/** An event whose size is exactly `size`. */
const sized = (id: number, size: number) => {
  const base = ev(id, "t", "").size
  return ev(id, "t", "x".repeat(size - base))
}

/** A fast reader: collects every frame but heartbeats into `received`. */
const reader = (hub: Hub.Hub["Service"], received: Array<string>) =>
  hub.subscribe(Filter.all).pipe(
    Stream.runForEach((frame) =>
      Effect.sync(() => {
        if (frame._tag !== "Heartbeat") received.push(d(frame))
      })
    ),
    Effect.forkChild
  )

/** Waits until every subscriber has nothing queued or in flight. */
const idle = (hub: Hub.Hub["Service"]) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10_000; i++) {
      const stats = yield* hub.stats
      if (stats.every((s) => s.queuedFrames === 0 && s.inflightFrames === 0)) return
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error("subscribers never went idle"))
  })

describe("Hub", () => {
  it.effect("coalescing keeps the position and counts dropped{reason=coalesced}", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const pull = yield* Stream.toPull(hub.subscribe(Filter.all))
      yield* Effect.sync(() => {
        hub.publishUnsafe(sig(1, ["a"]))
        hub.publishUnsafe(ev(2))
        hub.publishUnsafe(sig(3, ["b"]))
        hub.publishUnsafe(sig(4, ["a"]))
        hub.publishUnsafe(sig(5, ["a", "b"]))
        hub.publishUnsafe(sig(6, ["a"]))
      })
      const batch = yield* pull
      assert.deepStrictEqual(batch.map(d), ["s6[a]", "e2", "s3[b]", "s5[a,b]"])
      assert.strictEqual(yield* dropped("coalesced"), 2)
    })))

  it.effect("1,000 frames fit; the 1,001st overflows into one resync", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const fits = yield* Stream.toPull(hub.subscribe(Filter.topics(["t"])))
      yield* Effect.sync(() => {
        for (let i = 1; i <= ADR_MAX_FRAMES; i++) hub.publishUnsafe(ev(i))
      })
      const got: Array<string> = []
      while (got.length < ADR_MAX_FRAMES && got.at(-1) !== "resync") got.push(...(yield* fits).map(d))
      assert.strictEqual(got.length, ADR_MAX_FRAMES)
      assert.strictEqual(got.at(-1), `e${ADR_MAX_FRAMES}`)
      assert.strictEqual(yield* dropped("overflow"), 0)
    })))

  it.effect("the 1,001st frame overflows into one resync", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const pull = yield* Stream.toPull(hub.subscribe(Filter.all))
      yield* Effect.sync(() => {
        for (let i = 1; i <= ADR_MAX_FRAMES + 1; i++) hub.publishUnsafe(ev(i))
      })
      assert.deepStrictEqual((yield* pull).map(d), ["resync"])
      assert.strictEqual(yield* dropped("overflow"), ADR_MAX_FRAMES + 1)
      // The queue is usable again after the resync.
      yield* hub.publish(ev(2000))
      assert.deepStrictEqual((yield* pull).map(d), ["e2000"])
      assert.strictEqual(yield* hub.subscribers, 1)
    })))

  it.effect("exactly 1 MiB fits; the byte past 1 MiB overflows into one resync", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const quarter = ADR_MAX_BYTES / 4
      const fits = yield* Stream.toPull(hub.subscribe(Filter.topics(["t"])))
      yield* Effect.sync(() => {
        for (let i = 1; i <= 4; i++) hub.publishUnsafe(sized(i, quarter))
      })
      const got: Array<string> = []
      while (got.length < 4 && got.at(-1) !== "resync") got.push(...(yield* fits).map(d))
      assert.deepStrictEqual(got, ["e1", "e2", "e3", "e4"])
      assert.strictEqual(yield* dropped("overflow"), 0)

      yield* Effect.sync(() => {
        for (let i = 5; i <= 7; i++) hub.publishUnsafe(sized(i, quarter))
        hub.publishUnsafe(sized(8, quarter + 1))
      })
      assert.deepStrictEqual((yield* fits).map(d), ["resync"])
      assert.strictEqual(yield* dropped("overflow"), 4)
    })))

  it.effect("three overflows within 60 s drop the subscriber: reconnect, end of stream, out of the hub", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const received: Array<string> = []
      const consumer = yield* reader(hub, received)
      yield* subscribed(hub, 1)
      let id = 0
      const burst = Effect.sync(() => {
        for (let i = 0; i <= ADR_MAX_FRAMES; i++) hub.publishUnsafe(ev(++id))
      })
      yield* burst
      yield* idle(hub)
      yield* TestClock.adjust("30 seconds")
      yield* idle(hub)
      yield* burst
      yield* idle(hub)
      yield* TestClock.adjust("30 seconds")
      yield* idle(hub)
      assert.strictEqual(yield* hub.subscribers, 1)
      yield* burst // the third, 60 s after the first

      yield* Fiber.join(consumer) // the stream ended
      assert.deepStrictEqual(received, ["resync", "resync", "reconnect"])
      assert.strictEqual(yield* dropped("overflow"), 3 * (ADR_MAX_FRAMES + 1))
      assert.strictEqual(yield* hub.subscribers, 0)
      assert.strictEqual(yield* subscribersGauge, 0)
      assert.strictEqual(yield* hub.writers, 0)
    })))

  it.effect("three overflows within 61 s do not drop the subscriber", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const received: Array<string> = []
      const consumer = yield* reader(hub, received)
      yield* subscribed(hub, 1)
      let id = 0
      const burst = Effect.sync(() => {
        for (let i = 0; i <= ADR_MAX_FRAMES; i++) hub.publishUnsafe(ev(++id))
      })
      yield* burst
      yield* idle(hub)
      yield* TestClock.adjust("30500 millis")
      yield* idle(hub)
      yield* burst
      yield* idle(hub)
      yield* TestClock.adjust("30500 millis")
      yield* idle(hub)
      yield* burst // 61 s after the first
      yield* idle(hub)
      assert.deepStrictEqual(received, ["resync", "resync", "resync"])
      assert.strictEqual(yield* hub.subscribers, 1)
      assert.strictEqual(yield* subscribersGauge, 1)
      assert.isUndefined(consumer.pollUnsafe())
      yield* Fiber.interrupt(consumer)
      assert.strictEqual(yield* hub.writers, 0)
      assert.strictEqual(yield* subscribersGauge, 0)
    })))

  it.effect("a write blocked more than 30 s drops the subscriber, interrupts the writer and ends the stream", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const other: Array<string> = []
      const otherReader = yield* reader(hub, other)
      yield* subscribed(hub, 1)
      const pull = yield* Stream.toPull(hub.subscribe(Filter.all))
      yield* hub.publish(ev(1))
      // The client takes one batch and never comes back: its write is blocked from t=0.
      assert.deepStrictEqual((yield* pull).map(d), ["e1"])
      yield* Effect.sync(() => {
        for (let i = 2; i <= 6; i++) hub.publishUnsafe(ev(i))
      })
      const blocked = (yield* hub.stats).find((s) => s.inflightFrames === 1)!
      assert.strictEqual(blocked.writeStartedAt, 0)

      yield* TestClock.adjust("30 seconds") // heartbeats at 15 s and 30 s: not more than 30 s yet
      assert.strictEqual(yield* hub.subscribers, 2)
      yield* TestClock.adjust("1 second")
      yield* hub.publish(ev(7)) // the next frame queued finds the write blocked for 31 s

      assert.strictEqual(yield* hub.subscribers, 1)
      assert.strictEqual(yield* subscribersGauge, 1)
      assert.strictEqual(yield* dropped("blocked"), 6) // e2..e6 queued, e7 arriving
      yield* eventually(() => other.includes("e7"))
      const ended = yield* Effect.exit(pull)
      assert.isTrue(Exit.isFailure(ended)) // Cause.Done: the stream completed
      yield* eventually(() => true)
      assert.strictEqual(yield* hub.writers, 1) // only the other reader's
      assert.deepStrictEqual(other, ["e1", "e2", "e3", "e4", "e5", "e6", "e7"])
      yield* Fiber.interrupt(otherReader)
      assert.strictEqual(yield* hub.writers, 0)
    })))

  it.effect("the heartbeat finds a blocked write when nothing is published", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const pull = yield* Stream.toPull(hub.subscribe(Filter.all))
      yield* hub.publish(ev(1))
      yield* pull
      yield* hub.publish(ev(2))
      yield* TestClock.adjust("44 seconds")
      assert.strictEqual(yield* hub.subscribers, 1)
      yield* TestClock.adjust("1 second") // tick at 45 s: blocked for 45 s
      assert.strictEqual(yield* hub.subscribers, 0)
      assert.strictEqual(yield* dropped("blocked"), 1)
      assert.isTrue(Exit.isFailure(yield* Effect.exit(pull)))
      yield* eventually(() => true)
      assert.strictEqual(yield* hub.writers, 0)
    })))

  it.effect("idle subscribers get a heartbeat comment", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const pull = yield* Stream.toPull(hub.subscribe(Filter.all))
      yield* TestClock.adjust("15 seconds")
      assert.deepStrictEqual((yield* pull).map(d), ["heartbeat"])
    })))

  it.effect("publish reaches only the subscribers of its topic, and serialises nothing without one", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const a = yield* Stream.toPull(hub.subscribe(Filter.topics(["a"])))
      const all = yield* Stream.toPull(hub.subscribe(Filter.all))
      yield* hub.publish(ev(1, "a"))
      yield* hub.publish(ev(2, "b"))
      assert.deepStrictEqual((yield* a).map(d), ["e1"])
      assert.deepStrictEqual((yield* all).map(d), ["e1", "e2"])
      assert.strictEqual(yield* subscribersGauge, 2)
    })))

  it.effect("a frame nobody subscribes to is never serialised", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      yield* Stream.toPull(hub.subscribe(Filter.topics(["a"])))
      let serialised = 0
      const frame: Frame.Frame = ev(1, "b", { toJSON: () => ++serialised })
      yield* hub.publish(frame as Frame.Data)
      assert.strictEqual(serialised, 0)
    })))
})
