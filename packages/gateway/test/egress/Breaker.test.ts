import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { DownstreamClient, type EgressConnection } from "../../src/egress/index.ts"
import { egress, resetServer, statusServer, trustLoopback } from "./servers.ts"

// TestClock drives the open duration. POST is not retried, so no backoff
// sleeps wait on the test clock; each call is one request.
const breakerConnection = (id: string, origin: string): EgressConnection => ({
  id,
  baseUrl: origin,
  allow: trustLoopback,
  breaker: { failures: 2, openDuration: "1 minute" }
})

const realSleep = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

describe("circuit breaker", () => {
  it.effect("opens after the threshold, fails fast, half-opens after the open duration, closes on success", () =>
    Effect.gen(function*() {
      let status = 503
      const server = yield* statusServer(() => status)
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare(breakerConnection("flaky", server.origin))
      const post = client.execute(prepared, { method: "POST", path: "/" })

      assert.strictEqual((yield* post).status, 503)
      assert.strictEqual((yield* post).status, 503)
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Open")

      const rejected = yield* Effect.flip(post)
      assert.strictEqual(rejected._tag, "BreakerOpen")
      if (rejected._tag === "BreakerOpen") {
        assert.strictEqual(rejected.connection, "flaky")
        assert.strictEqual(rejected.retryAfterMillis, 60_000)
      }
      assert.strictEqual(server.received.length, 2, "an open circuit sends nothing")

      yield* TestClock.adjust("59 seconds")
      assert.strictEqual((yield* Effect.flip(post))._tag, "BreakerOpen")
      assert.strictEqual(server.received.length, 2)

      status = 200
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* post).status, 200, "the probe goes through")
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed")
      assert.strictEqual((yield* post).status, 200)
      assert.strictEqual(server.received.length, 4)
    }).pipe(Effect.provide(egress())))

  it.effect("a failed probe opens the circuit again", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 500)
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare(breakerConnection("down", server.origin))
      const post = client.execute(prepared, { method: "POST", path: "/" })
      yield* post
      yield* post
      yield* TestClock.adjust("1 minute")
      assert.strictEqual((yield* post).status, 500)
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Open")
      assert.strictEqual((yield* Effect.flip(post))._tag, "BreakerOpen")
      assert.strictEqual(server.received.length, 3)
    }).pipe(Effect.provide(egress())))

  it.effect("transport errors count against the connection; 4xx answers do not", () =>
    Effect.gen(function*() {
      const reset = yield* resetServer
      const notFound = yield* statusServer(() => 404)
      const client = yield* DownstreamClient
      const broken = yield* client.prepare(breakerConnection("broken", reset.origin))
      yield* Effect.flip(client.execute(broken, { method: "POST", path: "/" }))
      yield* Effect.flip(client.execute(broken, { method: "POST", path: "/" }))
      assert.strictEqual(
        (yield* Effect.flip(client.execute(broken, { method: "POST", path: "/" })))._tag,
        "BreakerOpen"
      )
      assert.strictEqual(reset.connections(), 2)

      const fine = yield* client.prepare(breakerConnection("fine", notFound.origin))
      for (let i = 0; i < 5; i++) {
        assert.strictEqual((yield* client.execute(fine, { method: "POST", path: "/" })).status, 404)
      }
      assert.strictEqual((yield* fine.breaker.state)._tag, "Closed")
    }).pipe(Effect.provide(egress())))

  it.effect("a request the HTTP client refuses to send is not counted against the downstream, nor called unavailable", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 200)
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare(breakerConnection("caller-mistakes", server.origin))
      // characters no HTTP header can carry; undici refuses them before anything is sent
      for (const value of ["\u{1F600}", "a\u2028b", "\u{1F600}", "x\u2028"]) {
        const refused = yield* Effect.flip(
          client.execute(prepared, { method: "POST", path: "/", headers: { "x-note": value } })
        )
        assert.strictEqual(refused._tag, "UnsendableRequest")
        assert.notInclude(refused.message, "unavailable")
        assert.notInclude(refused.message, value)
      }
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed", "four refusals, threshold 2: still closed")
      assert.strictEqual(server.received.length, 0, "nothing was sent")
      assert.strictEqual((yield* client.execute(prepared, { method: "POST", path: "/" })).status, 200)
    }).pipe(Effect.provide(egress())))

  it.effect("one connection's open circuit does not affect another's", () =>
    Effect.gen(function*() {
      const bad = yield* statusServer(() => 503)
      const good = yield* statusServer(() => 200)
      const client = yield* DownstreamClient
      const a = yield* client.prepare(breakerConnection("a", bad.origin))
      const b = yield* client.prepare(breakerConnection("b", good.origin))
      yield* client.execute(a, { method: "POST", path: "/" })
      yield* client.execute(a, { method: "POST", path: "/" })
      assert.strictEqual((yield* Effect.flip(client.execute(a, { method: "POST", path: "/" })))._tag, "BreakerOpen")
      assert.strictEqual((yield* client.execute(b, { method: "POST", path: "/" })).status, 200)
    }).pipe(Effect.provide(egress())))

  it.effect("a GET's retries count as one outcome", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 503)
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare({
        ...breakerConnection("retried", server.origin),
        retry: { retries: 2, baseDelay: "1 second" }
      })
      const fiber = yield* Effect.forkChild(client.execute(prepared, { method: "GET", path: "/" }))
      // Let each backoff elapse on the test clock once its attempt has failed.
      for (let i = 0; i < 2; i++) {
        while (server.received.length < i + 1) yield* realSleep(5)
        yield* realSleep(20)
        yield* TestClock.adjust("2 seconds")
      }
      const response = yield* Fiber.join(fiber)
      assert.strictEqual(response.attempts, 3)
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed", "one failed call of a threshold of 2")
    }).pipe(Effect.provide(egress())))
})
