/**
 * Global limits through Redis (127.0.0.1:6379 or JANUS_TEST_REDIS_URL): two
 * instances share one budget; Redis going away fails open to per-instance
 * limits, with a warning and a metric, and Redis coming back restores them.
 * Every test uses its own key prefix and deletes its keys afterwards.
 */
import { NodeRedis } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import { ClientTokens } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Duration, Effect, Layer, Logger, Metric, Redacted } from "effect"
import { Redis } from "effect/persistence"
import * as Net from "node:net"
import * as RateLimits from "../../src/auth/RateLimits.ts"
import * as Metrics from "../../src/observability/Metrics.ts"
import { admission, admitted, count, refusal, request, unique } from "./support.ts"

const redis = await StorageTesting.requireRedis()

/** A Redis client for the test, and the deletion of a prefix's keys when the scope closes. */
const keysUnder = (prefix: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(NodeRedis.layer({ url: StorageTesting.redisUrl() }))
    const client = Context.get(context, Redis.Redis)
    const keys = client.send<ReadonlyArray<string>>("KEYS", `${prefix}*`)
    yield* Effect.addFinalizer(() =>
      keys.pipe(
        Effect.flatMap((found) => found.length === 0 ? Effect.void : client.send("DEL", ...found)),
        Effect.ignore
      )
    )
    return keys
  })

/** A loopback TCP proxy in front of Redis that the test can stop and start again on the same port. */
const redisProxy = Effect.acquireRelease(
  Effect.sync(() => {
    const target = new URL(StorageTesting.redisUrl())
    const sockets = new Set<Net.Socket>()
    let server: Net.Server | undefined
    let port = 0
    const start = () =>
      new Promise<number>((resolve, reject) => {
        server = Net.createServer((client) => {
          const upstream = Net.connect({ host: target.hostname, port: Number(target.port || 6379) })
          for (const socket of [client, upstream]) {
            sockets.add(socket)
            socket.on("close", () => sockets.delete(socket))
            socket.on("error", () => {
              client.destroy()
              upstream.destroy()
            })
          }
          client.pipe(upstream).pipe(client)
        })
        server.once("error", reject)
        server.listen(port, "127.0.0.1", () => {
          port = (server!.address() as Net.AddressInfo).port
          resolve(port)
        })
      })
    const stop = () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        if (server === undefined) return resolve()
        server.close(() => resolve())
      })
    return { start, stop, url: () => `redis://127.0.0.1:${port}` }
  }),
  (proxy) => Effect.promise(proxy.stop)
)

/** Log lines written while `effect` runs. */
const captureLogs = (lines: Array<string>) =>
  Logger.layer([
    Logger.make(({ message }) => {
      lines.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
    })
  ])

const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

const fallbackIp = Metric.withAttributes(Metrics.limiterFallback, { tier: "ip" })

describe.skipIf(!redis)("Admission limits on Redis", () => {
  layer(StorageTesting.layerMemory(), { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("two instances share one budget per IP and per identity", () =>
      Effect.gen(function*() {
        const prefix = `${unique("janus-test")}:`
        const keys = yield* keysUnder(prefix)
        const options = {
          limits: {
            redis: { url: Redacted.make(StorageTesting.redisUrl()), prefix },
            ip: { rate: 0.1, burst: 10 },
            identity: { rate: 0.1, burst: 5 }
          }
        }
        const a = yield* admission({ ...options, requireAuth: false })
        const b = yield* admission({ ...options, requireAuth: false })
        assert.strictEqual(yield* a.limiterBackend, "redis")
        assert.strictEqual(yield* b.limiterBackend, "redis")

        // Per IP: 10 in total, whichever instance serves them.
        const ip = "198.51.100.40"
        const both = (i: number) => (i % 2 === 0 ? a : b).admit(request({ ip }))
        assert.strictEqual(yield* admitted(16, both), 10)
        assert.strictEqual((yield* refusal(a.admit(request({ ip })))).status, 429)
        assert.strictEqual((yield* refusal(b.admit(request({ ip })))).status, 429)
        assert.isTrue((yield* keys).some((key) => key === `${prefix}ip:${ip}`))

        // Per identity: 5 in total across both instances (each request from a fresh address).
        const { plaintext, token } = yield* ClientTokens.use((t) => t.create({ name: unique("ci") }))
        const secret = Redacted.value(plaintext)
        const asToken = (i: number) =>
          (i % 2 === 0 ? a : b).admit(request({ token: secret, ip: `198.51.100.${100 + i}` }))
        assert.strictEqual(yield* admitted(9, asToken), 5)
        const stored = yield* keys
        assert.isTrue(stored.includes(`${prefix}id:token:${token.id}`))
        assert.isFalse(stored.some((key) => key.includes(secret)), "never keyed by the bearer string")
      }))

    it.effect("failed authentications: one bucket per address across instances", () =>
      Effect.gen(function*() {
        const prefix = `${unique("janus-test")}:`
        const keys = yield* keysUnder(prefix)
        // a generous Redis timeout: this is about sharing, not about a slow Redis on a busy machine
        const options = {
          limits: { redis: { url: Redacted.make(StorageTesting.redisUrl()), prefix, timeout: Duration.seconds(2) } }
        }
        const a = yield* admission(options)
        const b = yield* admission(options)
        const ip = "198.51.100.60"
        const fail = (i: number) =>
          (i % 2 === 0 ? a : b).admitAuthentication(request({ ip }), Effect.fail("invalid_token"), () => true)
        for (let i = 0; i < 10; i++) assert.strictEqual(yield* Effect.flip(fail(i)), "invalid_token")
        for (const instance of [a, b]) {
          const refused = yield* Effect.flip(
            instance.admitAuthentication(request({ ip }), Effect.fail("invalid_token" as const), () => true)
          )
          assert.notStrictEqual(refused, "invalid_token")
          if (refused !== "invalid_token") assert.strictEqual(refused.status, 429)
          // a valid credential from the address is still admitted
          assert.strictEqual(
            yield* instance.admitAuthentication(request({ ip }), Effect.succeed("admin"), () => false),
            "admin"
          )
        }
        assert.isTrue((yield* keys).some((key) => key === `${prefix}fail:${ip}`))
      }))

    it.effect("Redis down: fail open to per-instance memory limits, with a warning and a metric; then back", () =>
      Effect.gen(function*() {
        const prefix = `${unique("janus-test")}:`
        const keys = yield* keysUnder(prefix)
        const proxy = yield* redisProxy
        yield* Effect.promise(proxy.start)
        const lines: Array<string> = []
        const admit = yield* admission({
          requireAuth: false,
          limits: {
            ip: { rate: 0.1, burst: 5 },
            redis: { url: proxy.url(), prefix, timeout: "200 millis", retryAfter: "300 millis" }
          }
        })
        assert.strictEqual(yield* admit.limiterBackend, "redis")
        const ip = "198.51.100.50"
        assert.strictEqual(yield* admitted(2, () => admit.admit(request({ ip }))), 2)
        assert.isTrue((yield* keys).includes(`${prefix}ip:${ip}`))

        // Redis goes away.
        yield* Effect.promise(proxy.stop)
        const before = yield* count(fallbackIp)
        const started = Date.now()
        yield* admit.admit(request({ ip })).pipe(Effect.provide(captureLogs(lines)))
        assert.isBelow(Date.now() - started, 500, "a down Redis does not stall admission")
        assert.strictEqual(yield* admit.limiterBackend, "memory (redis unavailable)")
        assert.isTrue(lines.some((line) => line.includes("Redis store is unavailable")), lines.join("\n"))

        // Still limited: this instance's own bucket for the address goes on from what this instance took
        // (5: two through Redis before it went away, one in memory above).
        assert.strictEqual(yield* admitted(6, () => admit.admit(request({ ip }))), 2)
        const limited = yield* refusal(admit.admit(request({ ip })))
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(yield* count(fallbackIp), before + 8)
        assert.strictEqual(lines.filter((line) => line.includes("Redis store is unavailable")).length, 1)

        // Redis comes back on the same address: decisions go to Redis again.
        yield* Effect.promise(proxy.start)
        const deadline = Date.now() + 10_000
        let probe = 0
        while ((yield* admit.limiterBackend) !== "redis") {
          if (Date.now() > deadline) assert.fail("Redis was not used again within 10 s")
          yield* Effect.result(admit.admit(request({ ip: `198.51.100.${150 + (probe++ % 50)}` })))
          yield* sleep(50)
        }
        const fresh = "198.51.100.60"
        assert.strictEqual(yield* admitted(7, () => admit.admit(request({ ip: fresh }))), 5)
        assert.isTrue((yield* keys).includes(`${prefix}ip:${fresh}`))
      }))

    it.effect("Redis unreachable at start: the gateway starts at once on per-instance limits", () =>
      Effect.gen(function*() {
        const proxy = yield* redisProxy
        yield* Effect.promise(proxy.start)
        yield* Effect.promise(proxy.stop) // a port where nothing listens now
        const before = yield* count(fallbackIp)
        const started = Date.now()
        const admit = yield* admission({
          requireAuth: false,
          limits: {
            ip: { rate: 0.1, burst: 3 },
            redis: { url: proxy.url(), prefix: `${unique("janus-test")}:`, connectWait: "300 millis" }
          }
        })
        assert.isBelow(Date.now() - started, 2_000)
        assert.strictEqual(yield* admit.limiterBackend, "memory (redis unavailable)")
        assert.strictEqual(yield* admitted(5, () => admit.admit(request({ ip: "198.51.100.70" }))), 3)
        assert.strictEqual(yield* count(fallbackIp), before + 5)
      }))

    it.effect("under concurrent load two instances with the default timeout admit about one bucket, not two", () =>
      Effect.gen(function*() {
        const prefix = `${unique("janus-test")}:`
        yield* keysUnder(prefix)
        // the default timeout (no `timeout`): this is about a busy instance with the shipped setting
        const options = {
          identity: { rate: 1, burst: 130 },
          redis: { url: Redacted.make(StorageTesting.redisUrl()), prefix }
        }
        const a = yield* RateLimits.make(options)
        const b = yield* RateLimits.make(options)
        // both know there are two of them (their heartbeats)
        for (let i = 0; i < 250 && ((yield* a.replicas) < 2 || (yield* b.replicas) < 2); i++) yield* sleep(20)
        assert.deepStrictEqual([yield* a.replicas, yield* b.replicas], [2, 2])
        assert.strictEqual(yield* a.backend, "redis")
        // 300 decisions for one identity at once, half on each instance, amid 1,200 for other identities
        const results = yield* Effect.forEach(
          Array.from({ length: 1_500 }, (_, i) => i),
          (i) =>
            Effect.result((i % 2 === 0 ? a : b).consume("identity", i < 300 ? "token:one" : `token:other-${i % 40}`)),
          { concurrency: "unbounded" }
        )
        const admittedOne = results.slice(0, 300).filter((r) => r._tag === "Success").length
        // one bucket of 130, plus what refills at 1/s while the burst runs and a small margin
        assert.isAtLeast(admittedOne, 100)
        assert.isAtMost(admittedOne, 130 + 10, `${admittedOne} of 300 admitted`)
      }))
  })
})
