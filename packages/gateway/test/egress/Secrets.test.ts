import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Logger, Redacted, References } from "effect"
import { inspect } from "node:util"
import { type DownstreamError, type DownstreamResponse } from "../../src/egress/index.ts"
import { call, egress, fastRetry, httpServer, resetServer, statusServer, trustLoopback } from "./servers.ts"

const SECRET = "sk_live_TOPSECRET_0123456789"

/** Every log line, at every level, as the JSON logger would write it. */
const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.map(Logger.formatJson, (line) => void lines.push(line))
  const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(
      Effect.provideService(Logger.CurrentLoggers, new Set([logger])),
      Effect.provideService(References.MinimumLogLevel, "All")
    )
  return { lines, provide }
}

const everyRendering = (value: DownstreamError | DownstreamResponse): string =>
  [
    String(value),
    JSON.stringify(value),
    inspect(value, { depth: 10 }),
    "message" in value ? value.message : "",
    "_tag" in value ? Cause.pretty(Cause.fail(value)) : ""
  ].join("\n")

const echoServer = httpServer((_req, res, received) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify({ method: received.method, sawAuthorization: received.headers.authorization !== undefined }))
})

describe("secret injection", () => {
  it.live("bearer, header API key and basic reach the downstream", () =>
    Effect.gen(function*() {
      const server = yield* echoServer
      const secret = Redacted.make(SECRET)
      const base = { baseUrl: server.origin, allow: trustLoopback }
      yield* call({ ...base, id: "bearer", auth: { _tag: "Bearer" } }, { method: "GET", path: "/", secret })
      yield* call({ ...base, id: "key", auth: { _tag: "Header", name: "X-Api-Key" } }, {
        method: "GET",
        path: "/",
        secret
      })
      yield* call({ ...base, id: "basic", auth: { _tag: "Basic", username: "svc" } }, {
        method: "GET",
        path: "/",
        secret
      })
      assert.strictEqual(server.received[0]?.headers.authorization, `Bearer ${SECRET}`)
      assert.strictEqual(server.received[1]?.headers["x-api-key"], SECRET)
      assert.strictEqual(
        server.received[2]?.headers.authorization,
        `Basic ${Buffer.from(`svc:${SECRET}`).toString("base64")}`
      )
    }).pipe(Effect.provide(egress())))

  it.live("caller headers cannot replace the credential or the host", () =>
    Effect.gen(function*() {
      const server = yield* echoServer
      yield* call({ id: "c", baseUrl: server.origin, allow: trustLoopback, auth: { _tag: "Bearer" } }, {
        method: "GET",
        path: "/",
        secret: Redacted.make(SECRET),
        headers: { Authorization: "Bearer attacker", Host: "internal.example", "X-Trace": "1", Upgrade: "websocket" }
      })
      const headers = server.received[0]!.headers
      assert.strictEqual(headers.authorization, `Bearer ${SECRET}`)
      assert.strictEqual(headers.host, `127.0.0.1:${server.port}`)
      assert.strictEqual(headers["x-trace"], "1")
      assert.isUndefined(headers.upgrade)
    }).pipe(Effect.provide(egress())))

  it.live("a secret with a line break is refused without being echoed; nothing is sent", () =>
    Effect.gen(function*() {
      const server = yield* echoServer
      const error = yield* Effect.flip(
        call({ id: "c", baseUrl: server.origin, allow: trustLoopback, auth: { _tag: "Bearer" } }, {
          method: "GET",
          path: "/",
          secret: Redacted.make(`${SECRET}\r\nX-Injected: 1`)
        })
      )
      assert.strictEqual(error._tag, "InvalidEgressConfig")
      assert.notInclude(everyRendering(error), SECRET)
      assert.strictEqual(server.received.length, 0)
      const missing = yield* Effect.flip(
        call({ id: "c", baseUrl: server.origin, allow: trustLoopback, auth: { _tag: "Bearer" } }, {
          method: "GET",
          path: "/"
        })
      )
      assert.strictEqual(missing._tag, "InvalidEgressConfig")
    }).pipe(Effect.provide(egress())))
})

describe("secrets never leak", () => {
  const auths = [
    { _tag: "Bearer" },
    { _tag: "Header", name: "X-Api-Key" },
    { _tag: "Basic", username: "svc" }
  ] as const
  for (const auth of auths) {
    it.live(`${auth._tag}: not in logs, errors or responses`, () => {
      const logs = captureLogs()
      return logs.provide(
        Effect.gen(function*() {
          const secret = Redacted.make(SECRET)
          const failing = yield* statusServer(() => 503)
          const reset = yield* resetServer
          const fine = yield* echoServer
          const connection = (id: string, baseUrl: string) => ({
            id,
            baseUrl,
            allow: trustLoopback,
            auth,
            retry: fastRetry
          })

          // A retried 5xx (logs a line per failed attempt), returned as data.
          const unavailable = yield* call(connection("503", failing.origin), { method: "GET", path: "/", secret })
          assert.strictEqual(unavailable.attempts, 4)
          // A transport error after retries.
          const transport = yield* Effect.flip(
            call(connection("reset", reset.origin), { method: "GET", path: "/", secret })
          )
          assert.strictEqual(transport._tag, "DownstreamUnavailable")
          // A timeout.
          const timeout = yield* Effect.flip(
            call({ ...connection("slow", fine.origin), timeout: "0 millis" }, { method: "GET", path: "/", secret })
          )
          assert.strictEqual(timeout._tag, "DownstreamTimeout")
          // A success.
          const ok = yield* call(connection("ok", fine.origin), { method: "GET", path: "/", secret })
          assert.include(new TextDecoder().decode(ok.body), "\"sawAuthorization\"")

          assert.isAbove(logs.lines.length, 0, "the retries were logged")
          for (const line of logs.lines) assert.notInclude(line, SECRET)
          for (const value of [unavailable, transport, timeout, ok]) {
            const text = everyRendering(value)
            assert.notInclude(text, SECRET)
            assert.notInclude(text, Buffer.from(`svc:${SECRET}`).toString("base64"))
          }
        }).pipe(Effect.provide(egress()))
      )
    })
  }
})
