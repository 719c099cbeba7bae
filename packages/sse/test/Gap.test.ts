/**
 * Gap markers (`ReplaySource.GAP_TOPIC`): the writer lost events before them, so
 * every subscriber resyncs, live or replaying, whatever its topics; the
 * marker itself is never delivered as data.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Filter from "../src/Filter.ts"
import * as Frame from "../src/Frame.ts"
import * as Hub from "../src/Hub.ts"
import * as ReplaySource from "../src/ReplaySource.ts"
import { subscribed, take, withHub } from "./helpers.ts"

/** Appends to the log and publishes live, as storage's writer does. */
const commit = (
  hub: Hub.Hub["Service"],
  log: ReplaySource.MemoryReplaySource["Service"],
  topic: string,
  data: unknown
) => hub.publishUnsafe(Frame.fromLogged(log.append({ topic, about: [], data })))

describe("gap markers", () => {
  it("the topic is the one storage's writer uses", () => {
    assert.strictEqual(ReplaySource.GAP_TOPIC, "janus.gap")
  })

  it.effect("a live gap marker queues one resync for every subscriber, whatever its topics, never the marker", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const log = yield* ReplaySource.MemoryReplaySource
      const calls = yield* Stream.toPull(hub.subscribe(Filter.topics(["calls"])))
      const tools = yield* Stream.toPull(hub.subscribe(Filter.topics(["tools"])))
      const all = yield* Stream.toPull(hub.subscribe(Filter.all))
      yield* subscribed(hub, 3)

      commit(hub, log, "calls", { n: 1 })
      commit(hub, log, ReplaySource.GAP_TOPIC, { dropped: 5 })
      // a second marker before the first resync was written adds none
      commit(hub, log, ReplaySource.GAP_TOPIC, { dropped: 1 })
      commit(hub, log, "calls", { n: 4 })

      assert.deepStrictEqual(yield* take(calls, 3), ["e1", "resync", "e4"])
      assert.deepStrictEqual(yield* take(tools, 1), ["resync"])
      assert.deepStrictEqual(yield* take(all, 3), ["e1", "resync", "e4"])
    })))

  it.effect("a replay across a gap marker is answered by one resync, then live frames", () =>
    withHub(Effect.gen(function*() {
      const hub = yield* Hub.Hub
      const log = yield* ReplaySource.MemoryReplaySource
      log.append({ topic: "calls", about: [], data: { n: 1 } })
      log.append({ topic: "calls", about: [], data: { n: 2 } })
      log.append({ topic: ReplaySource.GAP_TOPIC, about: [], data: { dropped: 3 } })
      log.append({ topic: "calls", about: [], data: { n: 4 } })

      // resuming before the marker, even with a filter the marker's topic is not in
      const across = yield* Stream.toPull(hub.subscribe(Filter.topics(["calls"]), 1))
      assert.deepStrictEqual(yield* take(across, 1), ["resync"])
      // resuming after it replays as usual
      const after = yield* Stream.toPull(hub.subscribe(Filter.topics(["calls"]), 3))
      assert.deepStrictEqual(yield* take(after, 1), ["e4"])

      commit(hub, log, "calls", { n: 5 })
      assert.deepStrictEqual(yield* take(across, 1), ["e5"])
      assert.deepStrictEqual(yield* take(after, 1), ["e5"])
    })))
})
