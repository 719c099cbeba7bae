import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { DownstreamClient, type EgressConnection } from "../../src/egress/index.ts"
import { egress, httpServer, resetServer, statusServer, trustLoopback } from "./servers.ts"

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

  it.effect("one caller's failures open only its own circuit: other callers go on, the connection stays closed", () =>
    Effect.gen(function*() {
      // the arguments decide: /boom answers 500, everything else 200
      const server = yield* httpServer((req, res) => {
        res.writeHead(req.url === "/boom" ? 500 : 200, { "content-type": "application/json" })
        res.end("{}")
      })
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare(breakerConnection("shared", server.origin))
      const hog = (path: string) => client.execute(prepared, { method: "POST", path, caller: "token:hog" })
      const victim = client.execute(prepared, { method: "POST", path: "/fine", caller: "token:victim" })

      // threshold 2: the hog's two 500s open its own circuit
      for (let i = 0; i < 2; i++) assert.strictEqual((yield* hog("/boom")).status, 500)
      assert.strictEqual((yield* victim).status, 200)
      for (let i = 0; i < 5; i++) assert.strictEqual((yield* Effect.flip(hog("/boom")))._tag, "BreakerOpen")
      assert.strictEqual((yield* Effect.flip(hog("/fine")))._tag, "BreakerOpen", "its circuit, whatever it sends")
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed")
      assert.strictEqual((yield* victim).status, 200, "the victim still gets through")
      assert.strictEqual(server.received.length, 4)
    }).pipe(Effect.provide(egress())))

  it.effect("a caller whose calls keep failing gets its own BreakerOpen and stops reaching the downstream", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 500)
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare(breakerConnection("own", server.origin))
      const hog = client.execute(prepared, { method: "POST", path: "/", caller: "token:hog" })
      yield* hog
      yield* hog
      const refused = yield* Effect.flip(hog)
      assert.strictEqual(refused._tag, "BreakerOpen")
      if (refused._tag === "BreakerOpen") {
        assert.strictEqual(refused.scope, "caller")
        assert.strictEqual(refused.retryAfterMillis, 60_000)
        assert.include(refused.message, "this caller's calls to connection own")
        assert.include(refused.message, "other callers are unaffected")
      }
      assert.strictEqual(server.received.length, 2, "the caller's open circuit sends nothing")
      assert.strictEqual((yield* prepared.breaker.callerState("token:hog"))._tag, "Open")
      assert.strictEqual((yield* prepared.breaker.callerState("token:other"))._tag, "Closed")
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed")
      // its circuit half-opens after the open duration like any other
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual((yield* hog).status, 500, "the probe goes through")
      assert.strictEqual(server.received.length, 3)
    }).pipe(Effect.provide(egress())))

  it.effect("failures from two distinct callers within 60 s open the connection for everyone", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 503)
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare(breakerConnection("outage", server.origin))
      const as = (caller: string) => client.execute(prepared, { method: "POST", path: "/", caller })
      yield* as("token:a") // one failing caller: not counted against the connection
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed")
      yield* TestClock.adjust("59 seconds")
      yield* as("token:b") // a second caller within the minute: counted (1 of 2)
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed")
      yield* as("token:c") // counted (2 of 2)
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Open")
      const refused = yield* Effect.flip(as("token:d"))
      assert.strictEqual(refused._tag, "BreakerOpen")
      if (refused._tag === "BreakerOpen") {
        assert.isUndefined(refused.scope)
        assert.include(refused.message, "Circuit open for connection outage")
      }
      assert.strictEqual(server.received.length, 3)
    }).pipe(Effect.provide(egress())))

  it.effect("a failure older than 60 s does not make a second failing caller", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 503)
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare(breakerConnection("window", server.origin))
      const as = (caller: string) => client.execute(prepared, { method: "POST", path: "/", caller })
      yield* as("token:a")
      yield* TestClock.adjust("60 seconds")
      yield* as("token:b")
      yield* as("token:b")
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed", "a's failure is a minute old")
      assert.strictEqual((yield* prepared.breaker.callerState("token:b"))._tag, "Open")
      assert.strictEqual((yield* as("token:c")).status, 503, "c reaches the downstream")
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed", "b and c: one counted failure of 2")
      assert.strictEqual((yield* Effect.flip(as("token:b")))._tag, "BreakerOpen")
    }).pipe(Effect.provide(egress())))

  it.effect("many failing callers are remembered in bounded memory, and still open the connection", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 503)
      const client = yield* DownstreamClient
      const prepared = yield* client.prepare({
        ...breakerConnection("crowd", server.origin),
        breaker: { failures: 50 }
      })
      for (let i = 0; i < 50; i++) {
        yield* client.execute(prepared, { method: "POST", path: "/", caller: `token:${i}` })
      }
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Closed", "the first caller's failure does not count")
      yield* client.execute(prepared, { method: "POST", path: "/", caller: "token:50" })
      assert.strictEqual((yield* prepared.breaker.state)._tag, "Open")
    }).pipe(Effect.provide(egress())))
})
