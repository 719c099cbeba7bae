/**
 * The limiter tiers on one instance (memory store), with exact admission
 * counts under the TestClock.
 */
import { assert, describe, layer } from "@effect/vitest"
import { ClientTokens } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Duration, Effect, Metric, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { AuthHeaders, RateLimits } from "../../src/auth/index.ts"
import * as Metrics from "../../src/observability/Metrics.ts"
import { admission, admitted, count, refusal, request, unique } from "./support.ts"

const refusedIp = Metric.withAttributes(Metrics.limiterRefused, { tier: "ip" })
const refusedIdentity = Metric.withAttributes(Metrics.limiterRefused, { tier: "identity" })
const refusedFailures = Metric.withAttributes(Metrics.limiterRefused, { tier: "auth_failure" })

const token = Effect.map(
  ClientTokens.use((t) => t.create({ name: unique("client") })),
  ({ plaintext }) => Redacted.value(plaintext)
)

describe("Admission limits (memory store)", () => {
  layer(StorageTesting.layerMemory(), { timeout: "60 seconds" })((it) => {
    it.effect("per-IP: a burst of 600 is admitted, then 429 with Retry-After and RateLimit headers; +1 s: 300 more", () =>
      Effect.gen(function*() {
        const admit = yield* admission({ requireAuth: false })
        const from = (ip: string) => () => admit.admit(request({ ip }))
        const before = yield* count(refusedIp)

        assert.strictEqual(yield* admitted(600, from("198.51.100.1")), 600)
        const refused = yield* refusal(admit.admit(request({ ip: "198.51.100.1" })))
        assert.strictEqual(refused.status, 429)
        assert.deepStrictEqual(refused.headers, {
          "retry-after": "1",
          "ratelimit": "limit=600, remaining=0, reset=1",
          "ratelimit-policy": "600;w=2"
        })
        assert.strictEqual(
          refused.message,
          "Too many requests from this address: the limit is 300 per second (burst 600); retry after 1 s"
        )
        assert.strictEqual(yield* admitted(10, from("198.51.100.1")), 0)
        assert.strictEqual(yield* count(refusedIp), before + 11)

        // Another address has its own bucket.
        assert.strictEqual(yield* admitted(600, from("198.51.100.2")), 600)

        // Refill: 300 per second, exactly.
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* admitted(400, from("198.51.100.1")), 300)
        // After 2 s idle the bucket is full again, and no fuller than the burst.
        yield* TestClock.adjust("10 seconds")
        assert.strictEqual(yield* admitted(700, from("198.51.100.1")), 600)
      }))

    it.effect("per-identity: 100 per identity, each identity its own bucket, refilled at 50/s", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const a = yield* token
        const b = yield* token
        const as = (secret: string) => () => admit.admit(request({ token: secret, ip: "198.51.100.10" }))
        const before = yield* count(refusedIdentity)

        assert.strictEqual(yield* admitted(100, as(a)), 100)
        const refused = yield* refusal(as(a)())
        assert.strictEqual(refused.status, 429)
        assert.deepStrictEqual(refused.headers, {
          "retry-after": "1",
          "ratelimit": "limit=100, remaining=0, reset=1",
          "ratelimit-policy": "100;w=2"
        })
        assert.match(refused.message, /^Too many requests for this identity: the limit is 50 per second \(burst 100\)/)
        assert.notInclude(refused.message + JSON.stringify(refused.headers), a)

        // Same address, another identity: a full bucket (the IP tier allows 600).
        assert.strictEqual(yield* admitted(150, as(b)), 100)
        assert.strictEqual(yield* count(refusedIdentity), before + 51)

        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* admitted(80, as(a)), 50)
      }))

    it.effect("the identity tier is keyed after authentication: fresh invalid tokens only drain the IP bucket", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const attacker = "198.51.100.20"
        let unauthenticated = 0
        for (let i = 0; i < 600; i++) {
          const forged = `jns_${i.toString().padStart(43, "x")}`
          const refused = yield* refusal(admit.admit(request({ token: forged, ip: attacker })))
          if (refused.status === 401) unauthenticated++
        }
        assert.strictEqual(unauthenticated, 600)
        const limited = yield* refusal(admit.admit(request({ token: `jns_${"y".repeat(43)}`, ip: attacker })))
        assert.strictEqual(limited.status, 429, "the per-IP guard runs before authentication")

        // A real client elsewhere is unaffected, and its identity bucket is full.
        const good = yield* token
        assert.strictEqual(
          yield* admitted(100, () => admit.admit(request({ token: good, ip: "198.51.100.21" }))),
          100
        )
      }))

    it.effect("custom policies; the RateLimit-Policy header when burst/rate is not whole", () =>
      Effect.gen(function*() {
        const admit = yield* admission({ requireAuth: false, limits: { ip: { rate: 3, burst: 10 } } })
        assert.strictEqual(yield* admitted(12, () => admit.admit(request({ ip: "198.51.100.30" }))), 10)
        const refused = yield* refusal(admit.admit(request({ ip: "198.51.100.30" })))
        assert.strictEqual(refused.headers?.["ratelimit-policy"], "3;w=1;burst=10")
        assert.strictEqual(AuthHeaders.ratePolicy({ rate: 300, burst: 600 }), "600;w=2")
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* admitted(5, () => admit.admit(request({ ip: "198.51.100.30" }))), 3)
      }))

    it.effect("failed authentications: 10 are answered, then 429; a valid credential still passes; one more every 2 s", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const before = yield* count(refusedFailures)
        const attempt = (ip: string, outcome: "fails" | "succeeds") =>
          admit.admitAuthentication(
            request({ ip }),
            Effect.suspend(() =>
              outcome === "fails" ? Effect.fail("invalid_token" as const) : Effect.succeed("admin" as const)
            ),
            (error) => error === "invalid_token"
          )
        const ip = "198.51.100.50"
        // successes draw nothing from the failure bucket
        for (let i = 0; i < 50; i++) assert.strictEqual(yield* attempt(ip, "succeeds"), "admin")
        for (let i = 0; i < 10; i++) assert.strictEqual(yield* Effect.flip(attempt(ip, "fails")), "invalid_token")
        const refused = yield* Effect.flip(attempt(ip, "fails"))
        assert.notStrictEqual(refused, "invalid_token")
        if (refused === "invalid_token") return
        assert.strictEqual(refused.status, 429)
        assert.deepStrictEqual(refused.headers, {
          "retry-after": "2",
          "ratelimit": "limit=10, remaining=0, reset=2",
          "ratelimit-policy": "10;w=20"
        })
        assert.strictEqual(
          refused.message,
          "Too many failed authentications from this address: after 10 in a row, one is allowed every 2 s; " +
            "retry after 2 s"
        )
        // a valid credential from that address is still admitted: the failures lock out failures only
        assert.strictEqual(yield* attempt(ip, "succeeds"), "admin")
        assert.notStrictEqual(yield* Effect.flip(attempt(ip, "fails")), "invalid_token")
        // another address is not affected
        assert.strictEqual(yield* attempt("198.51.100.51", "succeeds"), "admin")
        // 2 s later one failure is forgiven: exactly one more failure is answered as such
        yield* TestClock.adjust("1999 millis")
        assert.notStrictEqual(yield* Effect.flip(attempt(ip, "fails")), "invalid_token")
        yield* TestClock.adjust("1 millis")
        assert.strictEqual(yield* Effect.flip(attempt(ip, "fails")), "invalid_token")
        assert.notStrictEqual(yield* Effect.flip(attempt(ip, "fails")), "invalid_token")
        assert.strictEqual((yield* count(refusedFailures)) - before, 4)
      }))

    it.effect("admitAuthentication draws on the per-IP bucket like admit", () =>
      Effect.gen(function*() {
        const admit = yield* admission({ limits: { ip: { rate: 1, burst: 3 } } })
        const ip = "198.51.100.52"
        const attempt = () => admit.admitAuthentication(request({ ip }), Effect.succeed("admin"), () => false)
        for (let i = 0; i < 3; i++) assert.strictEqual(yield* attempt(), "admin")
        const refused = yield* Effect.flip(attempt())
        assert.strictEqual(refused.status, 429)
        assert.include(refused.message, "from this address")
        // the same bucket as the MCP endpoint's
        assert.strictEqual((yield* refusal(admit.admit(request({ ip })))).status, 429)
      }))

    it.effect("the memory store forgets full buckets and never holds more than its cap", () =>
      Effect.gen(function*() {
        const { size, store } = yield* RateLimits.makeMemoryStore(2_000)
        const take = (key: string) =>
          store.tokenBucket({ key, tokens: 1, limit: 10, refillRate: Duration.millis(100), allowOverflow: false })
        // 5,000 distinct addresses at once: capped.
        for (let i = 0; i < 5_000; i++) yield* take(`k${i}`)
        assert.isAtMost(size(), 2_000)
        // Once they have refilled, new keys sweep the full ones away.
        yield* TestClock.adjust("1 second")
        for (let i = 0; i < 1_100; i++) yield* take(`n${i}`)
        assert.isAtMost(size(), 1_100)
        // A drained bucket is kept (forgetting it would hand out a fresh burst).
        for (let i = 0; i < 10; i++) yield* take("busy")
        const [remaining] = yield* take("busy")
        assert.strictEqual(remaining, -1)
      }))
  })
})
