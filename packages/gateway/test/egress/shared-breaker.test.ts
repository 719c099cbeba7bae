/**
 * The circuit breakers' shared store on Redis (127.0.0.1:6379 or
 * JANUS_TEST_REDIS_URL), through the gateway's one Redis connection
 * (`redis/Redis.ts`): failures recorded on one replica open the circuit seen
 * by another; `REDIS_TIMEOUT` is how long a decision waits for it (behind a
 * proxy that delays Redis' answers). The tests use their own key prefix and
 * delete their keys afterwards.
 */
import { NodeRedis } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { CircuitBreaker, Redis } from "effect/persistence"
import * as Net from "node:net"
import { JanusConfig } from "../../src/config/JanusConfig.ts"
import * as SharedBreakerStore from "../../src/egress/SharedBreakerStore.ts"

const redis = await StorageTesting.requireRedis()

const replica = (prefix: string) =>
  Effect.map(
    Layer.build(SharedBreakerStore.layer({ url: StorageTesting.redisUrl(), prefix })),
    (context) => Context.get(context, CircuitBreaker.CircuitBreakerStore)
  )

/** A TCP proxy to the test Redis that holds every answer for `delayMs`; its redis:// URL. */
const slowRedis = (delayMs: number) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly server: Net.Server }>((resume) => {
      const target = new URL(StorageTesting.redisUrl())
      const server = Net.createServer((client) => {
        const upstream = Net.connect(Number(target.port || 6379), target.hostname)
        client.on("data", (chunk) => upstream.write(chunk))
        upstream.on("data", (chunk) => setTimeout(() => client.destroyed || client.write(chunk), delayMs))
        client.on("error", () => upstream.destroy())
        upstream.on("error", () => client.destroy())
        client.on("close", () => upstream.destroy())
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as Net.AddressInfo).port
        resume(Effect.succeed({ url: `redis://127.0.0.1:${port}${target.pathname}`, server }))
      })
    }),
    ({ server }) => Effect.sync(() => server.close())
  )

describe.skipIf(!redis)("Circuit breakers' shared store on Redis", () => {
  it.live("REDIS_TIMEOUT is how long a decision waits for Redis (layerConfig)", () =>
    Effect.gen(function*() {
      const proxy = yield* slowRedis(600)
      const store = (timeout: Duration.Duration) =>
        Effect.map(
          Layer.build(SharedBreakerStore.layerConfig.pipe(Layer.provide(JanusConfig.layerWith({
            REDIS_URL: Option.some(Redacted.make(proxy.url)),
            REDIS_TIMEOUT: timeout
          })))),
          (context) => Context.get(context, CircuitBreaker.CircuitBreakerStore)
        )
      const key = `janus:test:breaker-timeout:${crypto.randomUUID()}`
      const cleanup = Context.get(
        yield* Layer.build(NodeRedis.layer({ url: StorageTesting.redisUrl() })),
        Redis.Redis
      )
      // layerConfig keeps the gateway's prefix: the keys of this test's circuit go afterwards
      yield* Effect.addFinalizer(() =>
        cleanup.send<ReadonlyArray<string>>("KEYS", `*${key}*`).pipe(
          Effect.flatMap((keys) => keys.length === 0 ? Effect.void : cleanup.send("DEL", ...keys)),
          Effect.ignore
        )
      )
      // answers take 600 ms; REDIS_TIMEOUT=3s waits for them: once connected, admissions come from Redis
      const patient = yield* store(Duration.seconds(3))
      const fromRedis = yield* Effect.scoped(patient.admit(key)).pipe(
        Effect.filterOrFail((admitted) => admitted.generation >= 0, () => "still on memory"),
        Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 60 })
      )
      assert.isAtLeast(fromRedis.generation, 0)
      // REDIS_TIMEOUT=100ms does not: every decision is this instance's own (memory generations are negative)
      const hasty = yield* store(Duration.millis(100))
      yield* Effect.sleep("1500 millis")
      for (let i = 0; i < 5; i++) {
        const admitted = yield* Effect.scoped(hasty.admit(key))
        assert.isBelow(admitted.generation, 0, `admission ${i}`)
        yield* Effect.sleep("300 millis")
      }
    }).pipe(Effect.scoped), 30_000)

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
