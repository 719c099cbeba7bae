import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as Http from "node:http"
import { call, egress, httpServer, trustLoopback } from "./servers.ts"

const done = (deferred: Deferred.Deferred<void>) => () => void Deferred.doneUnsafe(deferred, Effect.void)

/** A server that accepts a request and never answers; tells when it arrives and when its socket closes. */
const hangingServer = Effect.gen(function*() {
  const arrived = Deferred.makeUnsafe<void>()
  const closed = Deferred.makeUnsafe<void>()
  const server = yield* httpServer((req) => {
    done(arrived)()
    req.socket.on("close", done(closed))
  })
  return { server, arrived, closed }
})

const withinTwoSeconds = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.timeoutOrElse(effect, { duration: "2 seconds", orElse: () => Effect.die(new Error("timed out waiting")) })

describe("cancellation", () => {
  it.live("aborting the caller's signal aborts the downstream request; the server sees the socket close", () =>
    Effect.gen(function*() {
      const { arrived, closed, server } = yield* hangingServer
      const controller = new AbortController()
      const fiber = yield* Effect.forkChild(
        call({ id: "slow", baseUrl: server.origin, allow: trustLoopback }, {
          method: "GET",
          path: "/",
          signal: controller.signal
        })
      )
      yield* withinTwoSeconds(Deferred.await(arrived))
      controller.abort()
      const error = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(error._tag, "DownstreamCancelled")
      yield* withinTwoSeconds(Deferred.await(closed))
      assert.strictEqual(server.received.length, 1)
    }).pipe(Effect.provide(egress())))

  it.live("an already aborted signal sends nothing", () =>
    Effect.gen(function*() {
      const { server } = yield* hangingServer
      const controller = new AbortController()
      controller.abort()
      const error = yield* Effect.flip(
        call({ id: "slow", baseUrl: server.origin, allow: trustLoopback }, {
          method: "GET",
          path: "/",
          signal: controller.signal
        })
      )
      assert.strictEqual(error._tag, "DownstreamCancelled")
      yield* Effect.sleep("50 millis")
      assert.strictEqual(server.connections(), 0)
    }).pipe(Effect.provide(egress())))

  it.live("interrupting the calling fiber aborts the request too", () =>
    Effect.gen(function*() {
      const { arrived, closed, server } = yield* hangingServer
      const fiber = yield* Effect.forkChild(
        call({ id: "slow", baseUrl: server.origin, allow: trustLoopback }, { method: "GET", path: "/" })
      )
      yield* withinTwoSeconds(Deferred.await(arrived))
      yield* Fiber.interrupt(fiber)
      yield* withinTwoSeconds(Deferred.await(closed))
    }).pipe(Effect.provide(egress())))
})

describe("timeouts", () => {
  it.live("the connection's total timeout fails the call and aborts the request", () =>
    Effect.gen(function*() {
      const { closed, server } = yield* hangingServer
      const error = yield* Effect.flip(
        call({ id: "slow", baseUrl: server.origin, allow: trustLoopback, timeout: "150 millis" }, {
          method: "GET",
          path: "/"
        })
      )
      assert.strictEqual(error._tag, "DownstreamTimeout")
      if (error._tag === "DownstreamTimeout") {
        assert.strictEqual(error.phase, "total")
        assert.strictEqual(error.timeoutMillis, 150)
      }
      yield* withinTwoSeconds(Deferred.await(closed))
    }).pipe(Effect.provide(egress())))

  it.live("the headers timeout", () =>
    Effect.gen(function*() {
      const { server } = yield* hangingServer
      const error = yield* Effect.flip(
        call({ id: "slow", baseUrl: server.origin, allow: trustLoopback }, { method: "GET", path: "/" })
      )
      assert.strictEqual(error._tag, "DownstreamTimeout")
      if (error._tag === "DownstreamTimeout") assert.strictEqual(error.phase, "headers")
      assert.strictEqual(server.received.length, 1, "a headers timeout is not retried")
    }).pipe(Effect.provide(egress({ headersTimeout: "100 millis" }))))

  it.live("the body timeout (silence between chunks)", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, res: Http.ServerResponse) => {
        res.writeHead(200, { "content-type": "text/plain" })
        res.write("first chunk")
      })
      const error = yield* Effect.flip(
        call({ id: "slow", baseUrl: server.origin, allow: trustLoopback }, { method: "POST", path: "/" })
      )
      assert.strictEqual(error._tag, "DownstreamTimeout")
      if (error._tag === "DownstreamTimeout") assert.strictEqual(error.phase, "body")
    }).pipe(Effect.provide(egress({ bodyTimeout: "100 millis" }))))
})
