import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { display } from "../src/admin/Config.ts"
import {
  defaults,
  describeUrl,
  InvalidConfiguration,
  load,
  unknownVariables,
  VARIABLES
} from "../src/config/JanusConfig.ts"
import * as OAuthOptions from "../src/oauth/Variables.ts"

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

  it.effect("reads the token settings, the metadata names and an issuer's own key set as OAUTH_* variables", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-config-"))
      const file = Path.join(dir, "jwks.json")
      const jwks = JSON.stringify({ keys: [{ kty: "EC", crv: "P-256", kid: "k1", x: "x", y: "y" }] })
      Fs.writeFileSync(file, jwks)
      const base = {
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: "https://keycloak.example.com/realms/janus,https://offline.example.com"
      }
      const settings = yield* load.pipe(withEnv({
        ...base,
        OAUTH_REQUIRED_TOKEN_TYPE: "at+jwt",
        OAUTH_MAX_TOKEN_LENGTH: "12000",
        OAUTH_RESOURCE_NAME: "Janus (production)",
        OAUTH_RESOURCE_DOCUMENTATION: "https://docs.example.com/janus",
        OAUTH_JWKS: `https://offline.example.com=${jwks}`,
        OAUTH_JWKS_FILE: `https://keycloak.example.com/realms/janus=${file}`
      }))
      const options = OAuthOptions.options(settings)
      assert.strictEqual(options.requiredTokenType, "at+jwt")
      assert.strictEqual(options.maxTokenLength, 12_000)
      assert.strictEqual(options.resourceName, "Janus (production)")
      assert.strictEqual(options.resourceDocumentation, "https://docs.example.com/janus")
      assert.deepStrictEqual(options.authorizationServers.map((s) => [s.jwks, s.jwksFile]), [
        [undefined, file],
        [jwks, undefined]
      ])
      // the default bound takes a Keycloak token with many roles (beyond 8 KiB)
      assert.strictEqual(OAuthOptions.options(yield* load.pipe(withEnv(base))).maxTokenLength, 16_384)

      const secret = "c2VjcmV0LXByaXZhdGUtZXhwb25lbnQ"
      Fs.writeFileSync(file, JSON.stringify({ keys: [{ kty: "EC", crv: "P-256", x: "x", y: "y", d: secret }] }))
      const pasted = `{"keys": [{"kty": "RSA", "n": "n", "e": "AQAB", "d": "${secret}"}]}`
      const error = yield* Effect.flip(load.pipe(withEnv({
        ...base,
        OAUTH_MAX_TOKEN_LENGTH: "65536",
        OAUTH_JWKS: pasted,
        OAUTH_JWKS_FILE: `https://keycloak.example.com/realms/janus=${file}`
      })))
      const lines = error.problems.map((p) => p.line)
      assert.deepStrictEqual(lines.slice(0, 2), [
        `OAUTH_JWKS=(${pasted.length} characters, hidden): expected a JWK Set of public signing keys (the value: key 1 holds private key ` +
        `material (d); give only the public key (a symmetric key can never verify tokens here)), for every issuer ` +
        `or as <issuer>=<value> entries separated by ";"`,
        `OAUTH_MAX_TOKEN_LENGTH="65536": expected an integer from 256 to 16384`
      ])
      assert.deepStrictEqual(lines.slice(2), [
        `OAUTH_JWKS_FILE=${JSON.stringify(file)}: expected a readable file holding a JWK Set of public signing keys ` +
        `(file ${file}: key 1 holds private key material (d); give only the public key (a symmetric key can never ` +
        `verify tokens here))`
      ])
      for (const line of lines) assert.notInclude(line, secret)

      const twice = yield* Effect.flip(load.pipe(withEnv({
        ...base,
        OAUTH_JWKS: jwks,
        OAUTH_JWKS_URL: "https://offline.example.com=https://offline.example.com/keys"
      })))
      assert.deepStrictEqual(twice.problems.map((p) => p.line), [
        `OAUTH_JWKS_URL, OAUTH_JWKS="https://offline.example.com": expected one source of signing keys per issuer ` +
        `(OAUTH_JWKS_URL, OAUTH_JWKS or OAUTH_JWKS_FILE), not 2`
      ])
      // an inline set is shown as hidden (a pasted one may have held a private key), unset as unset
      assert.strictEqual(display(settings.OAUTH_JWKS, VARIABLES.OAUTH_JWKS.secret), "(set, hidden)")
      assert.isNull(display(defaults().OAUTH_JWKS, VARIABLES.OAUTH_JWKS.secret))
      Fs.rmSync(dir, { recursive: true })
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
    const unknown = unknownVariables({ JANUS_PROT: "1", JANUS_PORT: "2", JANUS_SOMETHING_ELSE: "3", PATH: "/bin" })
    assert.deepStrictEqual(unknown, [
      { name: "JANUS_PROT", suggestion: Option.some("JANUS_PORT") },
      { name: "JANUS_SOMETHING_ELSE", suggestion: Option.none() }
    ])
  })

  it("names unknown OAUTH_* variables with the closest known one, as JANUS_* ones", () => {
    const unknown = unknownVariables({
      OAUTH_ISSUER: "https://auth.example.com",
      OAUTH_AUDIENCE: "api://janus",
      OAUTH_ISSUERS: "https://auth.example.com",
      OAUTH_SOMETHING_ELSE: "1",
      OAUTH2_PROXY_CLIENT_ID: "another program's"
    })
    assert.deepStrictEqual(unknown, [
      { name: "OAUTH_AUDIENCE", suggestion: Option.some("OAUTH_AUDIENCES") },
      { name: "OAUTH_ISSUER", suggestion: Option.some("OAUTH_ISSUERS") },
      { name: "OAUTH_SOMETHING_ELSE", suggestion: Option.none() }
    ])
  })
})
