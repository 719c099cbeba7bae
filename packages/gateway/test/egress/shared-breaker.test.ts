/**
 * The circuit breakers' shared store on Redis (127.0.0.1:6379 or
 * JANUS_TEST_REDIS_URL), through the gateway's one Redis connection
 * (`redis/Redis.ts`): failures recorded on one replica open the circuit seen
 * by another. The test uses its own key prefix and deletes its keys afterwards.
 */
import { NodeRedis } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { CircuitBreaker, Redis } from "effect/persistence"
import * as SharedBreakerStore from "../../src/egress/SharedBreakerStore.ts"

const redis = await StorageTesting.requireRedis()

const replica = (prefix: string) =>
  Effect.map(
    Layer.build(SharedBreakerStore.layer({ url: StorageTesting.redisUrl(), prefix })),
    (context) => Context.get(context, CircuitBreaker.CircuitBreakerStore)
  )

describe.skipIf(!redis)("Circuit breakers' shared store on Redis", () => {
  it.live("failures recorded on one replica open the circuit on another", () =>
    Effect.gen(function*() {
      const prefix = `janus:test:breaker:${crypto.randomUUID()}:`
      const cleanup = Context.get(
        yield* Layer.build(NodeRedis.layer({ url: StorageTesting.redisUrl() })),
        Redis.Redis
      )
      yield* Effect.addFinalizer(() =>
        cleanup.send<ReadonlyArray<string>>("KEYS", `${prefix}*`).pipe(
          Effect.flatMap((keys) => keys.length === 0 ? Effect.void : cleanup.send("DEL", ...keys)),
          Effect.ignore
        )
      )
      const a = yield* replica(prefix)
      const b = yield* replica(prefix)
      // the connection is made in the background: an admission from Redis has a generation >= 0
      const admission = yield* Effect.scoped(a.admit("downstream")).pipe(
        Effect.filterOrFail((admitted) => admitted.generation >= 0, () => "still on memory"),
        Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 100 })
      )
      const tripPolicy: CircuitBreaker.TripPolicy = { _tag: "Consecutive", failures: 1 }
      yield* a.record({
        key: "downstream",
        generation: admission.generation,
        outcome: "Failure",
        tripPolicy,
        openFor: Duration.seconds(30)
      })
      const seen = yield* b.state("downstream").pipe(
        Effect.filterOrFail((state) => state._tag === "Open", (state) => `state ${state._tag}`),
        Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 100 })
      )
      assert.strictEqual(seen._tag, "Open")
    }).pipe(Effect.scoped), 20_000)
})
