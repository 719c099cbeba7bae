/**
 * `janus doctor` on `/metrics`: a warning when the gateway listens beyond
 * loopback without `JANUS_METRICS_TOKEN`, ok otherwise; the token is never
 * shown.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { metricsTokenCheck } from "../../src/cli/DoctorChecks.ts"
import { freePort, janus, tempHome } from "./run.ts"

interface Report {
  readonly ok: boolean
  readonly checks: ReadonlyArray<{ readonly check: string; readonly verdict: string; readonly detail: string }>
}

const doctor = (env: Record<string, string>) =>
  Effect.promise(async () => {
    const ran = await janus(["doctor", "--json"], {
      JANUS_HOME: tempHome(),
      JANUS_PORT: String(await freePort()),
      ...env
    })
    return { ...ran, report: ran.stdout === "" ? undefined : JSON.parse(ran.stdout) as Report }
  })

const token = Option.some(Redacted.make(randomBytes(32).toString("hex")))

describe("janus doctor: the metrics token", () => {
  it.live(
    "warns for /metrics open on every interface, and never shows the token once it is set",
    () =>
      Effect.gen(function*() {
        const open = yield* doctor({ JANUS_HOST: "0.0.0.0" })
        const metrics = open.report?.checks.find((c) => c.check === "metrics")
        assert.strictEqual(metrics?.verdict, "warn", open.stdout + open.stderr)
        assert.include(metrics!.detail, "set JANUS_METRICS_TOKEN")
        // a warning does not fail the run
        assert.isTrue(open.report!.ok)

        const secret = randomBytes(32).toString("hex")
        const guarded = yield* doctor({ JANUS_HOST: "0.0.0.0", JANUS_METRICS_TOKEN: secret })
        assert.deepStrictEqual(guarded.report?.checks.find((c) => c.check === "metrics"), {
          check: "metrics",
          verdict: "ok",
          detail: "GET /metrics needs the JANUS_METRICS_TOKEN bearer token"
        })
        assert.notInclude(guarded.stdout + guarded.stderr, secret)
      }),
    60_000
  )

  it("loopback addresses are ok without a token; any other address warns", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]"]) {
      assert.strictEqual(
        metricsTokenCheck({ JANUS_HOST: host, JANUS_PORT: 8080, JANUS_METRICS_TOKEN: Option.none() }).verdict,
        "ok",
        host
      )
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.5", "janus.example.com", "127.0.0.1.example.com"]) {
      const check = metricsTokenCheck({ JANUS_HOST: host, JANUS_PORT: 8080, JANUS_METRICS_TOKEN: Option.none() })
      assert.strictEqual(check.verdict, "warn", host)
      assert.include(check.detail, `${host} port 8080`)
      assert.strictEqual(
        metricsTokenCheck({ JANUS_HOST: host, JANUS_PORT: 8080, JANUS_METRICS_TOKEN: token }).verdict,
        "ok",
        host
      )
    }
  })
})
