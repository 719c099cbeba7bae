import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Schedule } from "effect"
import type { HttpMethod } from "effect/http"
import { isRetryable, mayRetry, retryOptions } from "../../src/egress/index.ts"
import { call, egress, fastRetry, resetServer, statusServer, trustLoopback } from "./servers.ts"

const connection = (origin: string) => ({ id: "retry", baseUrl: origin, allow: trustLoopback, retry: fastRetry })

describe("retries", () => {
  describe("on 5xx", () => {
    const cases: ReadonlyArray<readonly [HttpMethod.HttpMethod, boolean, number]> = [
      ["GET", false, 4],
      ["HEAD", false, 4],
      ["OPTIONS", false, 4],
      ["PUT", false, 4],
      ["DELETE", false, 4],
      ["POST", false, 1],
      ["PATCH", false, 1],
      ["POST", true, 4]
    ]
    for (const [method, idempotent, attempts] of cases) {
      it.live(`${method}${idempotent ? " (marked idempotent)" : ""}: ${attempts} attempt(s), then the 503 as data`, () =>
        Effect.gen(function*() {
          const server = yield* statusServer(() => 503)
          const response = yield* call(connection(server.origin), { method, path: "/", idempotent })
          assert.strictEqual(response.status, 503)
          assert.strictEqual(response.attempts, attempts)
          assert.strictEqual(server.received.length, attempts)
        }).pipe(Effect.provide(egress())))
    }
  })

  it.live("a 5xx that recovers returns the success", () =>
    Effect.gen(function*() {
      let n = 0
      const server = yield* statusServer(() => ++n < 3 ? 502 : 200)
      const response = yield* call(connection(server.origin), { method: "GET", path: "/" })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.attempts, 3)
    }).pipe(Effect.provide(egress())))

  it.live("no retry on 4xx", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 404)
      const response = yield* call(connection(server.origin), { method: "GET", path: "/" })
      assert.strictEqual(response.status, 404)
      assert.strictEqual(response.attempts, 1)
      assert.strictEqual(server.received.length, 1)
      const tooMany = yield* statusServer(() => 429)
      assert.strictEqual((yield* call(connection(tooMany.origin), { method: "GET", path: "/" })).attempts, 1)
    }).pipe(Effect.provide(egress())))

  describe("on a transport error (the server resets the connection)", () => {
    for (const [method, attempts] of [["GET", 4], ["POST", 1]] as const) {
      it.live(`${method}: ${attempts} connection(s), then DownstreamUnavailable`, () =>
        Effect.gen(function*() {
          const server = yield* resetServer
          const error = yield* Effect.flip(call(connection(server.origin), { method, path: "/" }))
          assert.strictEqual(error._tag, "DownstreamUnavailable")
          if (error._tag === "DownstreamUnavailable") assert.isTrue(error.transient)
          assert.strictEqual(server.connections(), attempts)
        }).pipe(Effect.provide(egress())))
    }
  })

  it.live("retries: 0 disables retrying", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(() => 500)
      const response = yield* call(
        { ...connection(server.origin), retry: { retries: 0 } },
        { method: "GET", path: "/" }
      )
      assert.strictEqual(response.attempts, 1)
    }).pipe(Effect.provide(egress())))

  it("classifies methods and failures", () => {
    assert.isTrue(mayRetry("GET", false))
    assert.isFalse(mayRetry("POST", false))
    assert.isTrue(mayRetry("POST", true))
    const unavailable = { _tag: "DownstreamUnavailable", transient: true } as const
    assert.isTrue(isRetryable(unavailable as never))
    assert.isFalse(isRetryable({ ...unavailable, transient: false } as never))
    assert.isTrue(isRetryable({ _tag: "DownstreamTimeout", phase: "connect" } as never))
    assert.isFalse(isRetryable({ _tag: "DownstreamTimeout", phase: "headers" } as never))
    assert.isFalse(isRetryable({ _tag: "EgressRefused" } as never))
  })

  it.effect("backs off exponentially with jitter, capped", () =>
    Effect.gen(function*() {
      const { schedule, times } = retryOptions({ baseDelay: "100 millis", maxDelay: "300 millis" })
      assert.strictEqual(times, 3)
      const step = yield* Schedule.toStep(schedule)
      const delays: Array<number> = []
      for (let i = 0; i < 4; i++) {
        const [, delay] = yield* step(0, undefined as never)
        delays.push(Duration.toMillis(delay))
      }
      // 100, 200, 400 -> capped 300, 800 -> capped 300; each +/-20 % before the cap.
      assert.isTrue(delays[0]! >= 80 && delays[0]! <= 120, String(delays))
      assert.isTrue(delays[1]! >= 160 && delays[1]! <= 240, String(delays))
      assert.strictEqual(delays[2], 300)
      assert.strictEqual(delays[3], 300)
    }))
})
