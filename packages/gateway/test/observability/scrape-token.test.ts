/**
 * `GET /metrics` with and without `JANUS_METRICS_TOKEN`, on a whole gateway:
 * the token's scrape gets the metrics, every other request the same 401;
 * hostile headers are 4xx; refused scrapes add no series and drain the
 * failed-authentication bucket; the token is never logged.
 */
import { assert, describe, layer } from "@effect/vitest"
import { AdminTokens } from "@janus/storage"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { randomBytes } from "node:crypto"
import { JanusConfig, type JanusSettings } from "../../src/config/JanusConfig.ts"
import { Logging } from "../../src/observability/index.ts"
import * as GatewayTesting from "../../src/testing.ts"
import * as Hostile from "../support/Hostile.ts"

const TOKEN = randomBytes(32).toString("base64url")

const captured: Array<string> = []

/** Everything written to stdout and stderr while `effect` runs, besides the gateway's own log lines. */
const capturingOutput = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const out = process.stdout.write.bind(process.stdout)
      const err = process.stderr.write.bind(process.stderr)
      process.stdout.write = ((chunk: string | Uint8Array, ...rest: Array<any>) => {
        captured.push(String(chunk))
        return out(chunk, ...rest)
      }) as typeof process.stdout.write
      process.stderr.write = ((chunk: string | Uint8Array, ...rest: Array<any>) => {
        captured.push(String(chunk))
        return err(chunk, ...rest)
      }) as typeof process.stderr.write
      return { out, err }
    }),
    () => effect,
    ({ err, out }) =>
      Effect.sync(() => {
        process.stdout.write = out
        process.stderr.write = err
      })
  )

const gateway = (config: Partial<JanusSettings>) =>
  GatewayTesting.layer({ config }).pipe(
    // every log line of the gateway, at every level
    Layer.provide(Logging.layer({ level: "trace", write: (line) => captured.push(line) }))
  )

const baseUrl = HttpServer.addressFormattedWith((url) => Effect.succeed(new URL(url)))

const scrape = (headers: ReadonlyArray<readonly [string, string]>) =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(async () => {
      const h = new Headers()
      for (const [name, value] of headers) h.append(name, value)
      const response = await fetch(new URL("/metrics", base), { headers: h })
      return {
        status: response.status,
        body: await response.text(),
        challenge: response.headers.get("www-authenticate"),
        contentType: response.headers.get("content-type"),
        retryAfter: response.headers.get("retry-after")
      }
    }))

const wire = (headers: ReadonlyArray<readonly [string, string]>) =>
  Effect.flatMap(
    baseUrl,
    (base) => Effect.promise(() => Hostile.send(base, { method: "GET", path: "/metrics", headers }))
  )

const bearer = (token: string) => [["authorization", `Bearer ${token}`]] as const

/** The series of an exposition: every sample line without its value. */
const series = (text: string): Set<string> =>
  new Set(text.split("\n").filter((l) => l !== "" && !l.startsWith("#")).map((l) => l.slice(0, l.lastIndexOf(" "))))

describe("GET /metrics with JANUS_METRICS_TOKEN", () => {
  layer(
    gateway({ JANUS_METRICS_TOKEN: Option.some(Redacted.make(TOKEN)), RATE_LIMIT_AUTH_FAILURES_BURST: 10_000 }),
    { timeout: 60_000, excludeTestServices: true }
  )("", (it) => {
    it.effect("the token's scrape gets the metrics; any Bearer spelling of the scheme", () =>
      Effect.gen(function*() {
        const ok = yield* scrape(bearer(TOKEN))
        assert.strictEqual(ok.status, 200)
        assert.include(ok.body, "# TYPE http_server_active_requests gauge")
        assert.include(ok.contentType!, "text/plain; version=0.0.4")
        assert.strictEqual((yield* scrape([["authorization", `bearer  ${TOKEN}`]])).status, 200)
        const open = yield* scrape([...bearer(TOKEN), ["accept", "application/openmetrics-text"]])
        assert.strictEqual(open.status, 200)
        assert.isTrue(open.body.endsWith("# EOF\n"))
      }))

    it.effect("no header, a wrong token, another scheme: the same 401, with no hint", () =>
      Effect.gen(function*() {
        const refusals = [
          yield* scrape([]),
          yield* scrape(bearer("x".repeat(TOKEN.length))),
          yield* scrape(bearer(TOKEN.slice(0, -1))),
          yield* scrape(bearer(`${TOKEN}x`)),
          yield* scrape([["authorization", `Basic ${Buffer.from(`prometheus:${TOKEN}`).toString("base64")}`]]),
          yield* scrape([["authorization", `Token ${TOKEN}`]]),
          yield* scrape([["authorization", "Bearer"]]),
          // the token in the query string is never read
          yield* Effect.flatMap(baseUrl, (base) =>
            Effect.promise(async () => {
              const response = await fetch(new URL(`/metrics?access_token=${TOKEN}`, base))
              return {
                status: response.status,
                body: await response.text(),
                challenge: response.headers.get("www-authenticate")
              }
            }))
        ]
        for (const refusal of refusals) {
          assert.strictEqual(refusal.status, 401)
          assert.strictEqual(refusal.challenge, "Bearer realm=\"metrics\"")
          assert.strictEqual(refusal.body, refusals[0]!.body)
          assert.notInclude(refusal.body, TOKEN)
        }
        assert.deepStrictEqual(JSON.parse(refusals[0]!.body), {
          error: "unauthorized",
          message: "GET /metrics needs the scrape token: send Authorization: Bearer <the value of JANUS_METRICS_TOKEN>"
        })
      }))

    it.effect("an admin token is not a scrape token", () =>
      Effect.gen(function*() {
        const admin = yield* (yield* AdminTokens).create({ name: "prometheus" })
        const refused = yield* scrape(bearer(Redacted.value(admin.plaintext)))
        assert.strictEqual(refused.status, 401)
      }))

    it.effect("hostile headers are 4xx, never 5xx: huge, NUL, control bytes, two Authorization headers", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [ReadonlyArray<readonly [string, string]>, number]> = [
          [bearer("a".repeat(12_000)), 401],
          // past the 16 KiB header block: the server refuses the request itself
          [bearer("a".repeat(20_000)), 431],
          [bearer(`${TOKEN}\u0000`), 400],
          [[["authorization", `Bearer \u0000${TOKEN}`]], 400],
          [bearer(`${TOKEN}\u00e9`), 401],
          [bearer(`${TOKEN}\u{1F600}`), 401],
          [[["authorization", `Bearer ${TOKEN}`], ["authorization", `Bearer ${TOKEN}`]], 401],
          [[["authorization", "Bearer wrong"], ["authorization", `Bearer ${TOKEN}`]], 401],
          [[["authorization", `Bearer ${TOKEN}`], ["authorization", "Bearer wrong"]], 401],
          [[["authorization", `Bearer ${TOKEN}, Bearer ${TOKEN}`]], 401],
          [[["authorization", `Bearer ${TOKEN}`], ["x-authorization", "\r"]], 400]
        ]
        for (const [headers, expected] of cases) {
          const answer = yield* wire(headers)
          assert.strictEqual(answer.status, expected, JSON.stringify(headers).slice(0, 200))
          assert.notInclude(answer.text, TOKEN)
        }
        // the gateway still answers the token afterwards
        assert.strictEqual((yield* scrape(bearer(TOKEN))).status, 200)
      }))

    it.effect("refused scrapes create no series, whatever they carry", () =>
      Effect.gen(function*() {
        // the first refusal is one series (route /metrics, status 401), as for any route
        yield* scrape(bearer("first-refusal"))
        const before = series((yield* scrape(bearer(TOKEN))).body)
        for (let i = 0; i < 40; i++) {
          yield* scrape([
            ["authorization", `Bearer guess-${i}-${randomBytes(8).toString("hex")}`],
            ["user-agent", `agent-${i}`],
            ["x-forwarded-for", `10.0.0.${i}`]
          ])
        }
        const after = series((yield* scrape(bearer(TOKEN))).body)
        const added = [...after].filter((s) => !before.has(s))
        // nothing a refusal carried is in any series
        for (const line of after) assert.notMatch(line, /guess-|agent-|10\.0\.0\./)
        // the storage writers' first flush (fixed series, no request labels) may land between the scrapes
        const background = /^janus_(event_log|audit)_/
        assert.deepStrictEqual(added.filter((s) => !background.test(s)), [])
      }))

    it.effect("the token never appears in a log line or on stdout/stderr", () =>
      capturingOutput(Effect.gen(function*() {
        yield* scrape(bearer(TOKEN))
        yield* scrape(bearer(`${TOKEN}x`))
        yield* scrape(bearer(TOKEN.slice(0, -1)))
        yield* wire(bearer(`${TOKEN}\u0000`))
        // nor in the settings the admin API lists
        const admin = yield* (yield* AdminTokens).create({ name: "settings" })
        const settings = yield* Effect.flatMap(
          baseUrl,
          (base) =>
            Effect.promise(() =>
              fetch(new URL("/api/v1/config", base), {
                headers: { authorization: `Bearer ${Redacted.value(admin.plaintext)}` }
              }).then((r) => r.text())
            )
        )
        assert.include(settings, "JANUS_METRICS_TOKEN")
        assert.include(settings, "(set, hidden)")
        assert.notInclude(settings, TOKEN)
        const all = captured.join("\n")
        // the capture holds the gateway's log lines (its start-up warning at least)
        assert.isAbove(captured.length, 0)
        assert.notInclude(all, TOKEN)
        assert.notInclude(all, TOKEN.slice(0, -1))
      })))
  })
})

describe("GET /metrics, refused scrapes and the failed-authentication bucket", () => {
  layer(
    gateway({
      JANUS_METRICS_TOKEN: Option.some(Redacted.make(TOKEN)),
      RATE_LIMIT_AUTH_FAILURES: 1,
      RATE_LIMIT_AUTH_FAILURES_BURST: 2
    }),
    { timeout: 60_000, excludeTestServices: true }
  )("", (it) => {
    it.effect("past the burst a wrong token is 429; the token still scrapes", () =>
      Effect.gen(function*() {
        assert.strictEqual((yield* scrape(bearer("guess-1-aaaaaaaaaaaaaaaa"))).status, 401)
        assert.strictEqual((yield* scrape([])).status, 401)
        const limited = yield* scrape(bearer("guess-2-aaaaaaaaaaaaaaaa"))
        assert.strictEqual(limited.status, 429)
        assert.isNotNull(limited.retryAfter)
        assert.strictEqual((yield* scrape(bearer(TOKEN))).status, 200)
      }))
  })
})

describe("GET /metrics without JANUS_METRICS_TOKEN", () => {
  layer(gateway({}), { timeout: 60_000, excludeTestServices: true })("", (it) => {
    it.effect("answers every scrape, whatever Authorization it carries", () =>
      Effect.gen(function*() {
        for (const headers of [[], bearer("anything-at-all"), [["authorization", "Basic Zm9vOmJhcg=="]]] as const) {
          const response = yield* scrape(headers)
          assert.strictEqual(response.status, 200)
          assert.include(response.body, "# TYPE")
        }
      }))
  })
})

describe("JANUS_METRICS_TOKEN as a setting", () => {
  const load = (env: Record<string, string>) =>
    JanusConfig.layer.pipe(
      Layer.build,
      Effect.map((context) => context),
      Effect.scoped,
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })),
      Effect.flip
    )

  layer(Layer.empty)("", (it) => {
    it.effect("a short or malformed token is refused at start, and the message never quotes it", () =>
      Effect.gen(function*() {
        for (const bad of ["short-secret", `${"s".repeat(20)} with spaces`, `${"n".repeat(20)}\u0000`]) {
          const error = yield* load({ JANUS_METRICS_TOKEN: bad })
          assert.include(error.message, "JANUS_METRICS_TOKEN=(")
          assert.include(error.message, "characters, hidden)")
          assert.notInclude(error.message, bad.trim())
          assert.include(error.message, "16 to 4096 characters")
        }
      }))
  })
})
