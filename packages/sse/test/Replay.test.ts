/**
 * Last-Event-ID replay (ADR-0197): exact replay, the cap, the hold buffer and
 * the seam between replay and live.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Stream } from "effect"
import * as Filter from "../src/Filter.ts"
import * as Frame from "../src/Frame.ts"
import * as Hub from "../src/Hub.ts"
import * as ReplaySource from "../src/ReplaySource.ts"
import {
  ADR_MAX_BYTES,
  ADR_MAX_FRAMES,
  describe as d,
  dropped,
  ev,
  type Pull,
  REPLAY_CAP_EVENTS,
  take,
  withHub
} from "./helpers.ts"

/** An event whose size is exactly `size`. */
const sized = (id: number, size: number) => {
  const base = ev(id, "t", "").size
  return ev(id, "t", "x".repeat(size - base))
}

/** Pulls until `n` frames have arrived or a resync has: a bound set lower than the test expects fails fast. */
const takeUntilResync = (pull: Pull, n: number) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    while (out.length < n && out.at(-1) !== "resync") {
      for (const frame of yield* pull) if (frame._tag !== "Heartbeat") out.push(d(frame))
    }
    return out
  })

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** Appends to the log and publishes live, as storage's writer and change feed do. */
const commit = (hub: Hub.Hub["Service"], log: ReplaySource.MemoryReplaySource["Service"], topic = "a") =>
  hub.publishUnsafe(Frame.fromLogged(log.append({ topic, about: [], data: { topic } })))

/** A hub whose log reads wait for `gate`; `snapshotFirst` reads the rows before waiting. */
const gatedHub = (snapshotFirst: boolean) =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const { log, writer } = ReplaySource.makeMemory()
    const gated = ReplaySource.ReplaySource.of({
      after: (id, limit) =>
        snapshotFirst
          ? Effect.flatMap(log.after(id, limit), (rows) => Effect.as(Deferred.await(gate), rows))
          : Effect.andThen(Deferred.await(gate), log.after(id, limit))
    })
    const layer = Hub.Hub.layer.pipe(
      Layer.provideMerge(Layer.succeed(ReplaySource.ReplaySource, gated)),
      Layer.provideMerge(Layer.succeed(ReplaySource.MemoryReplaySource, writer))
    )
    return { gate, layer }
  })

describe("replay", () => {
  it.effect("replays exactly the events after Last-Event-ID, filtered, then goes live", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const log = yield* ReplaySource.MemoryReplaySource
      for (let i = 1; i <= 20; i++) log.append({ topic: i % 2 === 1 ? "a" : "b", about: [`r${i}`], data: null })
      const pull = yield* Stream.toPull(hub.subscribe(Filter.topics(["a"]), 6))
      const replayed = yield* take(pull, 7)
      assert.deepStrictEqual(replayed, [7, 9, 11, 13, 15, 17, 19].map((i) => `s${i}[r${i}]`))
      commit(hub, log, "b")
      commit(hub, log, "a")
      assert.deepStrictEqual(yield* take(pull, 1), ["e22"])
    })))

  it.effect("a gap of exactly 10,000 events is replayed; one more gives a single resync", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const log = yield* ReplaySource.MemoryReplaySource
      for (let i = 1; i <= REPLAY_CAP_EVENTS + 1; i++) log.append({ topic: "a", about: [], data: i })

      const atCap = yield* Stream.toPull(hub.subscribe(Filter.all, 1))
      const all = yield* take(atCap, REPLAY_CAP_EVENTS)
      assert.strictEqual(all[0], "e2")
      assert.strictEqual(all.at(-1), `e${REPLAY_CAP_EVENTS + 1}`)

      const pastCap = yield* Stream.toPull(hub.subscribe(Filter.all, 0))
      assert.deepStrictEqual(yield* take(pastCap, 1), ["resync"])
      commit(hub, log)
      assert.deepStrictEqual(yield* take(pastCap, 1), [`e${REPLAY_CAP_EVENTS + 2}`])
    })))

  it.effect("a Last-Event-ID that is not an event id gives a resync", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const pull = yield* Stream.toPull(hub.subscribe(Filter.all, -1))
      assert.deepStrictEqual(yield* take(pull, 1), ["resync"])
    })))

  it.effect("an unreadable log gives a resync instead of a replay", () =>
    withHub(
      Effect.gen(function*() {
        const hub = yield* Hub.Hub
        const pull = yield* Stream.toPull(hub.subscribe(Filter.all, 3))
        assert.deepStrictEqual(yield* take(pull, 1), ["resync"])
      }),
      Hub.Hub.layer.pipe(
        Layer.provideMerge(ReplaySource.layerFailing),
        Layer.provideMerge(Layer.succeed(ReplaySource.MemoryReplaySource, ReplaySource.makeMemory().writer))
      )
    ))

  it.effect("a hold-buffer overflow drops the held frames (reason=replay) and releases a resync", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const log = yield* ReplaySource.MemoryReplaySource
      for (let i = 1; i <= 5; i++) log.append({ topic: "a", about: [], data: i })
      const pull = yield* Stream.toPull(hub.subscribe(Filter.all, 2))
      // The writer has read the log and is writing the replay (e3..e5), which the client has not taken.
      let writing = (yield* hub.stats)[0]!
      while (writing.writeStartedAt === undefined) {
        yield* Effect.yieldNow
        writing = (yield* hub.stats)[0]!
      }
      assert.isTrue(writing.holding)
      assert.strictEqual(writing.inflightFrames, 3)

      // Live frames arrive during the replay: 1,100 of them, ids 6..1105.
      yield* Effect.sync(() => {
        for (let i = 0; i < 1100; i++) commit(hub, log)
      })
      // The hold buffer shares the bound with the batch in flight: 997 fit, the 998th overflows.
      const fitting = ADR_MAX_FRAMES - 3
      const overflowAt = 6 + fitting // id of the frame that did not fit
      assert.strictEqual(yield* dropped("replay"), fitting + 1)
      assert.strictEqual(yield* dropped("overflow"), 0)

      const frames = yield* take(pull, 3 + 1 + (1105 - overflowAt))
      assert.deepStrictEqual(frames, [
        "e3",
        "e4",
        "e5",
        "resync",
        ...range(overflowAt + 1, 1105).map((i) => `e${i}`)
      ])
      assert.strictEqual(yield* hub.subscribers, 1) // a hold overflow is not one of the three
    })))

  it.effect("the hold buffer holds exactly 1 MiB; a byte more drops the held frames (reason=replay) for a resync", () =>
    Effect.gen(function*() {
      /** Holds four live frames of a quarter MiB (the last `extra` bytes larger) during a replay, then releases. */
      const hold = (extra: number) =>
        Effect.gen(function*() {
          const { gate, layer } = yield* gatedHub(false)
          return yield* withHub(
            Effect.gen(function*() {
              const hub = yield* Hub.Hub
              const log = yield* ReplaySource.MemoryReplaySource
              for (let i = 1; i <= 2; i++) log.append({ topic: "t", about: [], data: i })
              const pull = yield* Stream.toPull(hub.subscribe(Filter.all, 2))
              for (let i = 0; i < 20; i++) yield* Effect.yieldNow // the writer is waiting on the log read
              const quarter = ADR_MAX_BYTES / 4
              yield* Effect.sync(() => {
                for (let id = 3; id <= 5; id++) hub.publishUnsafe(sized(id, quarter))
                hub.publishUnsafe(sized(6, quarter + extra))
              })
              const [held] = yield* hub.stats
              assert.isTrue(held!.holding)
              yield* Deferred.succeed(gate, undefined)
              const frames = yield* takeUntilResync(pull, 4)
              return { frames, replayDropped: yield* dropped("replay"), overflowDropped: yield* dropped("overflow") }
            }),
            layer
          )
        })
      assert.deepStrictEqual(yield* hold(0), { frames: ["e3", "e4", "e5", "e6"], replayDropped: 0, overflowDropped: 0 })
      assert.deepStrictEqual(yield* hold(1), { frames: ["resync"], replayDropped: 4, overflowDropped: 0 })
    }))

  for (const snapshotFirst of [false, true]) {
    it.effect(
      `the seam has no duplicate and no gap (log read ${snapshotFirst ? "before" : "after"} live commits)`,
      () =>
        Effect.gen(function*() {
          const { gate, layer } = yield* gatedHub(snapshotFirst)
          yield* withHub(
            Effect.gen(function*() {
              const hub = yield* Hub.Hub
              const log = yield* ReplaySource.MemoryReplaySource
              for (let i = 1; i <= 10; i++) log.append({ topic: "a", about: [], data: i })
              const pull = yield* Stream.toPull(hub.subscribe(Filter.all, 5))
              for (let i = 0; i < 20; i++) yield* Effect.yieldNow // the writer is waiting on the log read
              // Commits between subscription and log read (or during it): held, maybe also in the log read.
              commit(hub, log)
              commit(hub, log)
              const [held] = yield* hub.stats
              assert.isTrue(held!.holding)
              assert.strictEqual(held!.queuedFrames, 2)
              yield* Deferred.succeed(gate, undefined)
              const early = yield* take(pull, 7)
              commit(hub, log)
              const late = yield* take(pull, 1)
              assert.deepStrictEqual([...early, ...late], range(6, 13).map((i) => `e${i}`))
            }),
            layer
          )
        })
    )
  }
})
