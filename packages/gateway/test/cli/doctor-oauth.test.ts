/**
 * `janus doctor` with OAuth on: each issuer's metadata and keys fetched and
 * reported; an authorization server that is down fails the run naming the
 * issuer; settings `serve` would refuse are refused here too.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { authServer } from "../oauth/support.ts"
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

const oauthChecks = (report: Report | undefined) => report?.checks.filter((c) => c.check.startsWith("oauth")) ?? []

describe("janus doctor with OAuth", () => {
  it.live("fetches each issuer's metadata and keys; a server that is down fails naming the issuer", () =>
    Effect.gen(function*() {
      const up = yield* authServer()
      const downPort = yield* Effect.promise(freePort)
      const down = `http://127.0.0.1:${downPort}/realms/janus`
      const r = yield* doctor({
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: `${up.issuer},${down}`
      })
      assert.strictEqual(r.code, 1, r.stderr)
      assert.isFalse(r.report!.ok)
      const checks = oauthChecks(r.report)
      assert.deepStrictEqual(checks.map((c) => [c.check, c.verdict]), [
        ["oauth", "ok"],
        [`oauth ${up.issuer}`, "ok"],
        [`oauth ${down}`, "FAIL"]
      ])
      assert.strictEqual(
        checks[0]!.detail,
        "resource https://janus.example.com/mcp, metadata at https://janus.example.com/.well-known/oauth-protected-resource/mcp"
      )
      assert.strictEqual(
        checks[1]!.detail,
        `metadata at ${up.origin}/.well-known/oauth-authorization-server; 6 signing key(s) at ${up.jwksUri} ` +
          "(kid rsa-1, ec-256, ec-384, ec-521, ed-1, rsa-pinned)"
      )
      assert.include(checks[2]!.detail, "no usable metadata, so no signing keys")
      assert.include(
        checks[2]!.detail,
        `request to http://127.0.0.1:${downPort}/.well-known/oauth-authorization-server`
      )
      assert.include(r.stderr, "1 doctor check(s) failed")
    }))

  it.live("keys that cannot be fetched fail; a configured JWKS URL without metadata warns", () =>
    Effect.gen(function*() {
      const server = yield* authServer({ metadata: "none" })
      const env = {
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: server.issuer,
        OAUTH_JWKS_URL: server.jwksUri
      }
      const warned = yield* doctor(env)
      assert.strictEqual(warned.code, 0, warned.stdout + warned.stderr)
      const [, issuer] = oauthChecks(warned.report)
      assert.strictEqual(issuer!.verdict, "warn")
      assert.include(issuer!.detail, "no usable metadata, so MCP clients cannot discover it")
      assert.include(issuer!.detail, `6 signing key(s) at ${server.jwksUri}`)

      server.status.set("/jwks", 502)
      const failed = yield* doctor(env)
      assert.strictEqual(failed.code, 1)
      const [, broken] = oauthChecks(failed.report)
      assert.strictEqual(broken!.verdict, "FAIL")
      assert.include(broken!.detail, `signing keys not fetched: ${server.jwksUri} answered HTTP 502`)
    }))

  it.live("refuses what serve would refuse: an http issuer beyond loopback, settings the OAuth module rejects", () =>
    Effect.gen(function*() {
      const insecure = yield* doctor({
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: "http://keycloak.auth.svc:8080/realms/janus"
      })
      assert.strictEqual(insecure.code, 78, "an invalid configuration, as serve reports it")
      assert.include(
        insecure.stderr,
        `OAUTH_ISSUERS="http://keycloak.auth.svc:8080/realms/janus": expected https (plain http only on a ` +
          "loopback host, or for an issuer also listed in OAUTH_HTTP_ISSUERS)"
      )

      const tooOften = yield* doctor({
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: "https://auth.example.com",
        OAUTH_JWKS_REFRESH: "10s"
      })
      assert.strictEqual(tooOften.code, 78)
      assert.include(
        tooOften.stderr,
        `OAUTH_JWKS_REFRESH="10s": expected a duration such as 500ms, 5s, 2m or 1h (at least 30s`
      )

      // what only the OAuth module checks: doctor runs it, as serve's start would
      const twoTenants = yield* doctor({
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: "https://login.example.com/{a}/{b}"
      })
      assert.strictEqual(twoTenants.code, 1)
      assert.deepStrictEqual(oauthChecks(twoTenants.report).map((c) => [c.check, c.verdict, c.detail]), [
        [
          "oauth",
          "FAIL",
          `issuer "https://login.example.com/{a}/{b}": expected at most one placeholder such as {tenantid}`
        ]
      ])
    }))
})
