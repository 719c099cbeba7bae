/** Shared settings and helpers of the federation tests. */
import { Effect } from "effect"

/** Federation timings short enough for tests. */
export const fast = {
  listTimeout: "2 seconds",
  firstListWait: "5 seconds",
  probeInterval: "1 second",
  backoff: { initial: "100 millis", max: "500 millis" }
} as const

/** Polls `check` every 50 ms until it holds (dies after `seconds`). */
export const waitUntil = <E, R>(check: Effect.Effect<boolean, E, R>, what: string, seconds = 15) =>
  Effect.gen(function*() {
    for (let i = 0; i < seconds * 20; i++) {
      if (yield* check) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`timed out waiting for ${what}`))
  })
