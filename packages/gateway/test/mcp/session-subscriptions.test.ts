/**
 * `SessionSubscriptions`: a 2025 session's resource subscriptions are held
 * once per URI and let go when it unsubscribes, when it ends, and when the
 * sweep (every minute) finds it gone from the session store without a word.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { anonymous } from "../../src/mcp/Caller.ts"
import { Features } from "../../src/mcp/Features.ts"
import * as SessionSubscriptions from "../../src/mcp/SessionSubscriptions.ts"

/** Features whose `hold` counts the holders of each URI. */
const counting = () => {
  const holders = new Map<string, number>()
  const add = (uri: string, n: number) => holders.set(uri, (holders.get(uri) ?? 0) + n)
  const features = Features.of({
    capabilities: () => Effect.succeed({}),
    list: () => Effect.succeed([]),
    route: () => Effect.die(new Error("not routed")),
    changes: Stream.never,
    updatesFor: () => Effect.succeed(Stream.never),
    hold: (_caller, uri) =>
      Effect.andThen(
        Effect.sync(() => add(uri, 1)),
        Effect.as(Effect.addFinalizer(() => Effect.sync(() => add(uri, -1))), true)
      )
  })
  return { features, held: (uri: string) => holders.get(uri) ?? 0 }
}

describe("SessionSubscriptions", () => {
  it.effect("holds a URI once per session, and lets it go on unsubscribe and when the session ends", () =>
    Effect.gen(function*() {
      const { features, held } = counting()
      const subscriptions = yield* SessionSubscriptions.make(Option.some(features))
      yield* subscriptions.record("a", anonymous, "resources/subscribe", "x://1")
      yield* subscriptions.record("a", anonymous, "resources/subscribe", "x://1")
      yield* subscriptions.record("b", anonymous, "resources/subscribe", "x://1")
      yield* subscriptions.record("a", anonymous, "resources/subscribe", "x://2")
      assert.strictEqual(held("x://1"), 2)
      assert.isTrue(subscriptions.has("a", "x://2"))
      yield* subscriptions.record("a", anonymous, "resources/unsubscribe", "x://2")
      assert.strictEqual(held("x://2"), 0)
      assert.isFalse(subscriptions.has("a", "x://2"))
      yield* subscriptions.end("a")
      assert.strictEqual(held("x://1"), 1)
      yield* subscriptions.end("b")
      assert.strictEqual(held("x://1"), 0)
    }).pipe(Effect.scoped))

  it.effect("a session gone from the store is let go by the sweep after 1 minute; a store failure keeps it", () =>
    Effect.gen(function*() {
      const { features, held } = counting()
      const gone = new Set<string>()
      const failing = new Set<string>()
      const scope = yield* Scope.make()
      const subscriptions = yield* SessionSubscriptions.make(Option.some(features), {
        alive: (id) => failing.has(id) ? Effect.fail("store down") : Effect.succeed(!gone.has(id))
      }).pipe(Scope.provide(scope))
      yield* subscriptions.record("expired", anonymous, "resources/subscribe", "x://1")
      yield* subscriptions.record("unknown", anonymous, "resources/subscribe", "x://2")
      yield* subscriptions.record("live", anonymous, "resources/subscribe", "x://3")
      gone.add("expired")
      failing.add("unknown")
      yield* TestClock.adjust(Duration.seconds(59))
      assert.strictEqual(held("x://1"), 1)
      yield* TestClock.adjust(Duration.seconds(1))
      assert.strictEqual(held("x://1"), 0)
      assert.isFalse(subscriptions.has("expired", "x://1"))
      assert.strictEqual(held("x://2"), 1)
      assert.strictEqual(held("x://3"), 1)
      // gone later: the next sweep
      gone.add("live")
      yield* TestClock.adjust(Duration.minutes(1))
      assert.strictEqual(held("x://3"), 0)
      // the endpoint stopping lets go of everything
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(held("x://2"), 0)
    }))
})
