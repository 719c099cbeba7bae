/**
 * The admin API is rate limited like the MCP endpoint (issue 15, item 10):
 * the per-IP bucket applies to `/api/v1` and `/api/v1/events`, and failed
 * authentications draw on a stricter bucket per address (10 at once, then one
 * every 2 seconds) that, once empty, refuses further failed ones with 429;
 * a valid credential from the address is still served.
 *
 * The gateway trusts X-Forwarded-For from loopback here, so each test is its
 * own client address and the buckets of one test never meet another's.
 */
import { assert, describe, layer } from "@effect/vitest"
import { AdminTokens } from "@janus/storage"
import { Effect, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"

const baseUrl = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${server.address.port}`
)

const adminToken = Effect.flatMap(
  AdminTokens,
  (tokens) =>
    Effect.map(tokens.create({ name: `limits-${Math.random()}` }), (created) => Redacted.value(created.plaintext))
)

interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

/** A request from client address `ip` (X-Forwarded-For, trusted from loopback). */
const get = (path: string, ip: string, token?: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(async (): Promise<Reply> => {
      const controller = new AbortController()
      const response = await fetch(`${base}${path}`, {
        headers: {
          "x-forwarded-for": ip,
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          ...headers
        },
        signal: controller.signal
      })
      if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        controller.abort()
        return { status: response.status, headers: response.headers, body: undefined }
      }
      const text = await response.text()
      return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
    }))

const guess = (i: number) => `jna_${String(i).padStart(43, "A")}`

const Defaults = GatewayTesting.layer({
  config: { JANUS_ALLOW_ANONYMOUS: false, JANUS_TRUSTED_PROXIES: ["127.0.0.1"] }
})

layer(Defaults, { excludeTestServices: true, timeout: "60 seconds" })("admin API: failed authentications", (it) => {
  it.effect("30 parallel guesses of admin tokens: 10 are checked (401), the rest are 429 with Retry-After", () =>
    Effect.gen(function*() {
      const token = yield* adminToken
      const ip = "198.51.100.10"
      const started = Date.now()
      const replies = yield* Effect.forEach(
        Array.from({ length: 30 }, (_, i) => i),
        (i) => get("/api/v1/connections", ip, guess(i)),
        { concurrency: "unbounded" }
      )
      const elapsed = Date.now() - started
      const unauthorized = replies.filter((r) => r.status === 401).length
      const limited = replies.filter((r) => r.status === 429)
      assert.strictEqual(unauthorized + limited.length, 30, JSON.stringify(replies.map((r) => r.status)))
      // a burst of 10, refilled at one failure every 2 seconds while the guesses ran
      assert.isAtLeast(unauthorized, 10)
      assert.isAtMost(unauthorized, 10 + Math.ceil(elapsed / 2_000), `${unauthorized} checked in ${elapsed} ms`)
      for (const reply of limited) {
        assert.strictEqual(reply.body.error.code, "rate_limited")
        const retryAfter = Number(reply.headers.get("retry-after"))
        assert.isTrue(retryAfter >= 1 && retryAfter <= 2, `Retry-After ${retryAfter}`)
        assert.include(reply.body.error.message, "failed authentications")
      }
      // one failure is forgiven every 2 seconds: then the address is served again
      yield* Effect.sleep("2100 millis")
      assert.strictEqual((yield* get("/api/v1/connections", ip, token)).status, 200)
    }))
})

const Strict = GatewayTesting.layer({
  config: {
    JANUS_ALLOW_ANONYMOUS: false,
    JANUS_TRUSTED_PROXIES: ["127.0.0.1"],
    // no refill while a test runs: one failure forgiven a minute, one request per 100 seconds
    RATE_LIMIT_AUTH_FAILURES: 1,
    RATE_LIMIT_AUTH_FAILURES_BURST: 10,
    RATE_LIMIT_IP: 0.01,
    RATE_LIMIT_IP_BURST: 45
  }
})

layer(Strict, { excludeTestServices: true, timeout: "60 seconds" })("admin API: strict limits", (it) => {
  describe("failed authentications", () => {
    it.effect("10 bad tokens from an address never lock out the valid one there; bad ones stay refused", () =>
      Effect.gen(function*() {
        const token = yield* adminToken
        const ip = "198.51.100.11"
        for (let i = 0; i < 10; i++) assert.strictEqual((yield* get("/api/v1/connections", ip, guess(i))).status, 401)
        const blocked = yield* get("/api/v1/connections", ip, guess(10))
        assert.strictEqual(blocked.status, 429)
        assert.strictEqual(blocked.body.error.code, "rate_limited")
        // the valid admin token is served from that address, on the event stream as well
        assert.strictEqual((yield* get("/api/v1/connections", ip, token)).status, 200)
        const events = yield* get("/api/v1/events", ip, token, { accept: "text/event-stream" })
        assert.strictEqual(events.status, 200)
        // and the next bad one is still throttled
        assert.strictEqual((yield* get("/api/v1/connections", ip, guess(11))).status, 429)
      }))

    it.effect("requests without credentials and successful ones draw nothing from the failure bucket", () =>
      Effect.gen(function*() {
        const token = yield* adminToken
        const ip = "198.51.100.13"
        for (let i = 0; i < 15; i++) assert.strictEqual((yield* get("/api/v1/connections", ip)).status, 401)
        for (let i = 0; i < 15; i++) assert.strictEqual((yield* get("/api/v1/connections", ip, token)).status, 200)
        for (let i = 0; i < 10; i++) assert.strictEqual((yield* get("/api/v1/connections", ip, guess(i))).status, 401)
        assert.strictEqual((yield* get("/api/v1/connections", ip, guess(10))).status, 429)
      }))
  })

  describe("the per-IP bucket, shared with /mcp", () => {
    it.effect("admin requests and the event stream draw on the address's bucket: 429 past it", () =>
      Effect.gen(function*() {
        const token = yield* adminToken
        const ip = "203.0.113.20"
        const statuses: Array<number> = []
        for (let i = 0; i < 44; i++) statuses.push((yield* get("/api/v1/connections", ip, token)).status)
        statuses.push((yield* get("/api/v1/events", ip, token, { accept: "text/event-stream" })).status)
        assert.deepStrictEqual(statuses, Array.from({ length: 45 }, () => 200))
        const refused = yield* get("/api/v1/connections", ip, token)
        assert.strictEqual(refused.status, 429)
        assert.strictEqual(refused.body.error.code, "rate_limited")
        assert.include(refused.body.error.message, "from this address")
        assert.isAbove(Number(refused.headers.get("retry-after")), 0)
        assert.isNotNull(refused.headers.get("ratelimit-policy"))
        assert.strictEqual((yield* get("/api/v1/events", ip, token, { accept: "text/event-stream" })).status, 429)
        // the same bucket as the MCP endpoint's
        const mcp = yield* Effect.flatMap(baseUrl, (base) =>
          Effect.promise(() =>
            fetch(`${base}/mcp`, {
              method: "POST",
              headers: { "x-forwarded-for": ip, "content-type": "application/json" },
              body: "{}"
            })
          ))
        assert.strictEqual(mcp.status, 429)
        assert.strictEqual((yield* get("/api/v1/connections", "203.0.113.21", token)).status, 200)
      }))
  })
})
