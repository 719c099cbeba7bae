import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Option, Redacted } from "effect"
import { defaults, describeUrl, InvalidConfiguration, load, unknownJanusVariables } from "../src/config/JanusConfig.ts"

const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))

describe("JanusConfig", () => {
  it.effect("gives the single-machine defaults when nothing is set", () =>
    Effect.gen(function*() {
      const settings = yield* load.pipe(withEnv({}))
      assert.strictEqual(settings.JANUS_HOST, "127.0.0.1")
      assert.strictEqual(settings.JANUS_PORT, 8080)
      assert.strictEqual(settings.DB_MAX_OPEN_CONNS, 15)
      assert.isTrue(Option.isNone(settings.DATABASE_URL))
      assert.isTrue(Duration.equals(settings.CONFIG_CACHE_TTL, Duration.seconds(5)))
      assert.isTrue(Duration.equals(settings.SECRET_CACHE_TTL, Duration.seconds(30)))
      assert.isTrue(Duration.equals(settings.RESPONSE_CACHE_TTL, Duration.zero))
      assert.deepStrictEqual(Object.keys(settings).sort(), Object.keys(defaults()).sort())
    }))

  it.effect("parses durations, URLs and keys", () =>
    Effect.gen(function*() {
      const key = Buffer.alloc(32, 7).toString("base64")
      const settings = yield* load.pipe(withEnv({
        CONFIG_CACHE_TTL: "500ms",
        SECRET_CACHE_TTL: "2m",
        RESPONSE_CACHE_TTL: "10 seconds",
        DATABASE_URL: "postgres://janus:pw@db:5432/janus",
        JANUS_MASTER_KEY: key,
        JANUS_PORT: "9090"
      }))
      assert.strictEqual(Duration.toMillis(settings.CONFIG_CACHE_TTL), 500)
      assert.strictEqual(Duration.toMillis(settings.SECRET_CACHE_TTL), 120_000)
      assert.strictEqual(Duration.toMillis(settings.RESPONSE_CACHE_TTL), 10_000)
      assert.strictEqual(new URL(Option.getOrThrow(settings.DATABASE_URL).pipe(Redacted.value)).hostname, "db")
      assert.strictEqual(Option.getOrThrow(settings.JANUS_MASTER_KEY).pipe(Redacted.value), key)
      assert.strictEqual(describeUrl(Option.getOrThrow(settings.DATABASE_URL)), "postgres://janus:***@db:5432/janus")
      assert.strictEqual(settings.JANUS_PORT, 9090)
    }))

  it.effect("reports every mistake at once, naming the variable, the value and what is expected", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(load.pipe(withEnv({
        JANUS_PORT: "80800",
        DB_MAX_OPEN_CONNS: "lots",
        CONFIG_CACHE_TTL: "5 fortnights",
        DATABASE_URL: "mysql://root:hunter2@db/janus",
        JANUS_MASTER_KEY: "c2hvcnQ="
      })))
      assert.instanceOf(error, InvalidConfiguration)
      assert.deepStrictEqual(error.problems.map((p) => p.name), [
        "JANUS_PORT",
        "JANUS_MASTER_KEY",
        "DATABASE_URL",
        "DB_MAX_OPEN_CONNS",
        "CONFIG_CACHE_TTL"
      ])
      const message = error.message
      assert.include(message, "JANUS_PORT=\"80800\": expected a port from 0 to 65535")
      assert.include(message, "DB_MAX_OPEN_CONNS=\"lots\": expected an integer from 1 to 1000")
      assert.include(message, "CONFIG_CACHE_TTL=\"5 fortnights\": expected a duration")
      assert.include(message, "DATABASE_URL=(29 characters, hidden): expected a URL starting with postgres://")
      assert.include(message, "JANUS_MASTER_KEY=(8 characters, hidden): expected 32 random bytes in base64")
      // secrets never appear, even in part
      assert.notInclude(message, "hunter2")
      assert.notInclude(message, "c2hvcnQ")
    }))

  it.effect("reads JANUS_ALLOWED_HOSTS as names and domains, and refuses URLs, ports and paths", () =>
    Effect.gen(function*() {
      const settings = yield* load.pipe(withEnv({
        JANUS_ALLOWED_HOSTS: " Janus.Example.com., .corp.example ,janus ",
        RATE_LIMIT_AUTH_FAILURES: "6",
        RATE_LIMIT_AUTH_FAILURES_BURST: "3"
      }))
      assert.deepStrictEqual(settings.JANUS_ALLOWED_HOSTS, ["janus.example.com", ".corp.example", "janus"])
      assert.strictEqual(settings.RATE_LIMIT_AUTH_FAILURES, 6)
      assert.strictEqual(settings.RATE_LIMIT_AUTH_FAILURES_BURST, 3)
      const defaults = yield* load.pipe(withEnv({}))
      assert.deepStrictEqual(defaults.JANUS_ALLOWED_HOSTS, [])
      assert.strictEqual(defaults.RATE_LIMIT_AUTH_FAILURES, 30)
      assert.strictEqual(defaults.RATE_LIMIT_AUTH_FAILURES_BURST, 10)
      for (const bad of ["https://janus.example.com", "janus.example.com:443", "janus.example.com/mcp", "-x.example"]) {
        const error = yield* Effect.flip(load.pipe(withEnv({ JANUS_ALLOWED_HOSTS: `janus,${bad}` })))
        assert.include(error.message, `JANUS_ALLOWED_HOSTS=${JSON.stringify(`janus,${bad}`)}: expected host names`)
        assert.include(error.message, JSON.stringify(bad.toLowerCase()))
      }
    }))

  it.effect("requires a master key in Postgres mode", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(load.pipe(withEnv({ DATABASE_URL: "postgres://db/janus" })))
      assert.deepStrictEqual(error.problems.map((p) => p.name), ["JANUS_MASTER_KEY"])
      assert.include(error.message, "when DATABASE_URL is set")
    }))

  it.effect("refuses anonymous access outside a loopback, embedded setup, and OAuth without issuers", () =>
    Effect.gen(function*() {
      const exposed = yield* Effect.flip(load.pipe(withEnv({ JANUS_ALLOW_ANONYMOUS: "true", JANUS_HOST: "0.0.0.0" })))
      assert.deepStrictEqual(exposed.problems.map((p) => p.name), ["JANUS_ALLOW_ANONYMOUS"])
      const local = yield* load.pipe(withEnv({ JANUS_ALLOW_ANONYMOUS: "true" }))
      assert.isTrue(local.JANUS_ALLOW_ANONYMOUS)
      const oauth = yield* Effect.flip(load.pipe(withEnv({ OAUTH_ENABLED: "true" })))
      assert.deepStrictEqual(oauth.problems.map((p) => p.name), ["OAUTH_ISSUERS", "OAUTH_RESOURCE"])
    }))

  it.effect("reads per-issuer OAuth settings: one value for every issuer, <issuer>=<value> entries for some", () =>
    Effect.gen(function*() {
      const settings = yield* load.pipe(withEnv({
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: "https://tenant.auth0.com/,https://login.microsoftonline.com/{tenantid}/v2.0",
        OAUTH_AUDIENCES: "https://janus-api ; https://login.microsoftonline.com/{tenantid}/v2.0=api://janus,6f1c0e42",
        OAUTH_SCOPE_CLAIMS: "https://tenant.auth0.com=permissions",
        OAUTH_JWKS_URL: "https://login.microsoftonline.com/{tenantid}/v2.0=https://login.microsoftonline.com/" +
          "common/discovery/v2.0/keys?appid=6f1c0e42",
        OAUTH_CLOCK_TOLERANCE: "https://tenant.auth0.com/=5s"
      }))
      const auth0 = "https://tenant.auth0.com"
      const entra = "https://login.microsoftonline.com/{tenantid}/v2.0"
      assert.deepStrictEqual(settings.OAUTH_AUDIENCES.for(auth0), ["https://janus-api"])
      assert.deepStrictEqual(settings.OAUTH_AUDIENCES.for(entra), ["api://janus", "6f1c0e42"])
      assert.deepStrictEqual(settings.OAUTH_SCOPE_CLAIMS.for(auth0), ["permissions"])
      assert.deepStrictEqual(settings.OAUTH_SCOPE_CLAIMS.for(entra), ["scope", "scp"], "the default for the others")
      assert.strictEqual(
        settings.OAUTH_JWKS_URL.for(entra),
        "https://login.microsoftonline.com/common/discovery/v2.0/keys?appid=6f1c0e42"
      )
      assert.isUndefined(settings.OAUTH_JWKS_URL.for(auth0))
      assert.strictEqual(Duration.toMillis(settings.OAUTH_CLOCK_TOLERANCE.for(auth0)!), 5_000)
      assert.strictEqual(Duration.toMillis(settings.OAUTH_CLOCK_TOLERANCE.for(entra)!), 60_000)
      assert.strictEqual(String(settings.OAUTH_CLOCK_TOLERANCE), "1m; https://tenant.auth0.com/=5s")
      assert.isTrue(settings.OAUTH_VIRTUAL_SERVERS_ACCEPT_MCP_TOKENS)
    }))

  it.effect("refuses OAuth settings for issuers not listed, and plain http beyond loopback unless allowed", () =>
    Effect.gen(function*() {
      const base = { OAUTH_ENABLED: "true", OAUTH_RESOURCE: "https://janus.example.com/mcp" }
      const error = yield* Effect.flip(load.pipe(withEnv({
        ...base,
        OAUTH_ISSUERS: "http://keycloak.auth.svc:8080/realms/janus,ftp://x,http://127.0.0.1:9000",
        OAUTH_AUDIENCES: "https://keycloak.auth.svc:8080/realms/janus=janus",
        OAUTH_HTTP_ISSUERS: "http://keycloak.other.svc:8080/realms/janus",
        OAUTH_CLOCK_TOLERANCE: "https://auth.example.com=5 fortnights"
      })))
      assert.deepStrictEqual(error.problems.map((p) => p.line), [
        `OAUTH_CLOCK_TOLERANCE="https://auth.example.com=5 fortnights": expected a duration such as 500ms, 5s, 2m ` +
        `or 1h (at most 10m), for every issuer or as <issuer>=<value> entries separated by ";" (the entry for ` +
        `https://auth.example.com)`,
        `OAUTH_ISSUERS="http://keycloak.auth.svc:8080/realms/janus": expected https (plain http only on a loopback ` +
        `host, or for an issuer also listed in OAUTH_HTTP_ISSUERS)`,
        `OAUTH_ISSUERS="ftp://x": expected issuer URLs starting with https:// (comma-separated)`,
        `OAUTH_HTTP_ISSUERS="http://keycloak.other.svc:8080/realms/janus": expected an issuer listed in ` +
        `OAUTH_ISSUERS (http://keycloak.auth.svc:8080/realms/janus, ftp://x, http://127.0.0.1:9000)`,
        `OAUTH_AUDIENCES="https://keycloak.auth.svc:8080/realms/janus": expected an issuer listed in OAUTH_ISSUERS ` +
        `(http://keycloak.auth.svc:8080/realms/janus, ftp://x, http://127.0.0.1:9000)`
      ])
      const allowed = yield* load.pipe(withEnv({
        ...base,
        OAUTH_ISSUERS: "http://keycloak.auth.svc:8080/realms/janus/",
        OAUTH_HTTP_ISSUERS: "http://keycloak.auth.svc:8080/realms/janus"
      }))
      assert.deepStrictEqual(allowed.OAUTH_HTTP_ISSUERS, ["http://keycloak.auth.svc:8080/realms/janus"])
    }))

  it("names unknown JANUS_* variables with the closest known one", () => {
    const unknown = unknownJanusVariables({ JANUS_PROT: "1", JANUS_PORT: "2", JANUS_SOMETHING_ELSE: "3", PATH: "/bin" })
    assert.deepStrictEqual(unknown, [
      { name: "JANUS_PROT", suggestion: Option.some("JANUS_PORT") },
      { name: "JANUS_SOMETHING_ELSE", suggestion: Option.none() }
    ])
  })
})
