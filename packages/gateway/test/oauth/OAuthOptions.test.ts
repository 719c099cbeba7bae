import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  canonicalResource,
  DEFAULT_ALGORITHMS,
  metadataUrl,
  type OAuthOptions,
  resolveOAuthOptions,
  resourceOf,
  sameResource
} from "../../src/oauth/index.ts"

const base: OAuthOptions = {
  resource: "https://janus.example.com/mcp",
  authorizationServers: [{ issuer: "https://auth.example.com" }]
}

const problems = (options: OAuthOptions) =>
  Effect.map(Effect.flip(resolveOAuthOptions(options)), (error) => error.problems)

describe("OAuthOptions", () => {
  it.effect("gives the documented defaults", () =>
    Effect.gen(function*() {
      const settings = yield* resolveOAuthOptions(base)
      assert.strictEqual(settings.resource, "https://janus.example.com/mcp")
      assert.strictEqual(settings.origin, "https://janus.example.com")
      assert.strictEqual(settings.resourcePath, "/mcp")
      assert.deepStrictEqual(settings.toolScopes, ["mcp:tools"])
      assert.deepStrictEqual(settings.adminScopes, ["janus:admin"])
      // /mcp's metadata names the tool scopes only: the admin scope is not for MCP clients
      assert.deepStrictEqual(settings.scopesSupported, ["mcp:tools"])
      assert.isTrue(Duration.equals(settings.maxTokenLifetime, Duration.hours(24)))
      assert.deepStrictEqual(settings.algorithms, DEFAULT_ALGORITHMS)
      const server = settings.authorizationServers.get("https://auth.example.com")!
      assert.isTrue(Duration.equals(server.clockSkew, Duration.seconds(60)))
      assert.isTrue(Duration.equals(server.jwksRefreshInterval, Duration.minutes(10)))
      assert.deepStrictEqual(server.scopeClaims, ["scope", "scp"])
      assert.deepStrictEqual(server.audiences, [])
      assert.isTrue(Duration.equals(settings.jwksMinRefreshInterval, Duration.seconds(30)))
      assert.isTrue(settings.mcpAudienceOnVirtualServers)
      assert.strictEqual(metadataUrl(settings), "https://janus.example.com/.well-known/oauth-protected-resource/mcp")
      // a Keycloak token with many roles passes 8 KiB; the HTTP header block is 16 KiB
      assert.strictEqual(settings.maxTokenLength, 16_384)
    }))

  it.effect("checks an inline or file JWK Set at start, naming what is wrong", () =>
    Effect.gen(function*() {
      const publicKey = { kty: "EC", crv: "P-256", kid: "k1", x: "x", y: "y" }
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-jwks-"))
      const file = Path.join(dir, "jwks.json")
      Fs.writeFileSync(file, JSON.stringify({ keys: [publicKey] }))
      const issuer = (extra: Record<string, unknown>) => ({
        ...base,
        authorizationServers: [{ issuer: "https://auth.example.com", ...extra }]
      })
      const inline = yield* resolveOAuthOptions(issuer({ jwks: JSON.stringify({ keys: [publicKey] }) }))
      assert.deepStrictEqual(inline.authorizationServers.get("https://auth.example.com")!.jwks, [publicKey])
      const fromFile = yield* resolveOAuthOptions(issuer({ jwksFile: file }))
      assert.strictEqual(fromFile.authorizationServers.get("https://auth.example.com")!.jwksFile, file)

      const of = "jwks of https://auth.example.com"
      assert.deepStrictEqual(yield* problems(issuer({ jwks: "{\"keys\": [" })), [
        `${of} is not JSON (it ends in the middle); expected a JWK Set {"keys": [...]}`
      ])
      assert.deepStrictEqual(yield* problems(issuer({ jwks: `{"keys": [{"d": "${"s".repeat(20)}",}]}` })), [
        `${of} is not JSON (syntax error at position 39); expected a JWK Set {"keys": [...]}`
      ])
      assert.deepStrictEqual(yield* problems(issuer({ jwks: { keys: [] } })), [
        `${of} holds no keys; expected at least one public signing key`
      ])
      assert.deepStrictEqual(yield* problems(issuer({ jwks: [publicKey] })), [
        `${of} is not a JWK Set; expected a JSON object {"keys": [...]}`
      ])
      const secret = "c2VjcmV0LXByaXZhdGUtZXhwb25lbnQ"
      const leaked = yield* problems(issuer({ jwks: { keys: [publicKey, { ...publicKey, kid: "k2", d: secret }] } }))
      assert.deepStrictEqual(leaked, [
        `${of}: key 2 (kid "k2") holds private key material (d); give only the public key ` +
        `(a symmetric key can never verify tokens here)`
      ])
      assert.notInclude(leaked.join(), secret)
      assert.deepStrictEqual(yield* problems(issuer({ jwks: { keys: [{ kty: "oct", k: secret }] } })), [
        `${of}: key 1 holds private key material (k); give only the public key ` +
        `(a symmetric key can never verify tokens here)`
      ])
      assert.deepStrictEqual(yield* problems(issuer({ jwks: { keys: [{ ...publicKey, use: "enc" }] } })), [
        `${of}: key 1 (kid "k1") has use "enc"; expected sig (or no use)`
      ])
      assert.deepStrictEqual(yield* problems(issuer({ jwksFile: Path.join(dir, "missing.json") })), [
        `jwksFile of https://auth.example.com: file ${Path.join(dir, "missing.json")} cannot be read (ENOENT)`
      ])
      assert.deepStrictEqual(yield* problems(issuer({ jwksFile: file, jwksUri: "https://auth.example.com/jwks" })), [
        "jwksUri, jwksFile of https://auth.example.com: give one source of signing keys, not 2"
      ])
      Fs.rmSync(dir, { recursive: true })
    }))

  it.effect("refuses none and HMAC algorithms at start", () =>
    Effect.gen(function*() {
      const found = yield* problems({ ...base, algorithms: ["RS256", "none", "HS256"] })
      assert.strictEqual(found.length, 2)
      assert.include(found[0]!, "unsigned")
      assert.include(found[1]!, "HMAC")
      const perIssuer = yield* problems({
        ...base,
        authorizationServers: [{ issuer: "https://auth.example.com", algorithms: ["HS512"] }]
      })
      assert.include(perIssuer.join(), "HMAC")
    }))

  it.effect("reports every mistake at once", () =>
    Effect.gen(function*() {
      const found = yield* problems({
        resource: "https://janus.example.com/mcp#frag",
        authorizationServers: [
          { issuer: "http://auth.example.com" },
          { issuer: "https://auth.example.com?x=1" },
          { issuer: "https://a.example.com", jwksUri: "not a url" }
        ],
        toolScopes: ["mcp:tools", "bad\"scope"],
        clockSkew: -5,
        jwksRefreshInterval: "10 seconds",
        maxTokenLength: 10
      })
      assert.strictEqual(found.length, 8, found.join("\n"))
    }))

  it.effect("accepts http on loopback hosts only (or with allowInsecureHttp)", () =>
    Effect.gen(function*() {
      yield* resolveOAuthOptions({
        resource: "http://127.0.0.1:8080/mcp",
        authorizationServers: [{ issuer: "http://localhost:9000" }]
      })
      yield* problems({ ...base, authorizationServers: [{ issuer: "http://keycloak:8080/realms/x" }] })
      yield* resolveOAuthOptions({
        ...base,
        authorizationServers: [{ issuer: "http://keycloak:8080/realms/x" }],
        allowInsecureHttp: true
      })
    }))

  it.effect("requires at least one authorization server", () =>
    Effect.gen(function*() {
      const found = yield* problems({ ...base, authorizationServers: [] })
      assert.include(found[0]!, "at least one issuer")
    }))

  it.effect("matches issuers up to a trailing slash, and multi-tenant templates by tenant", () =>
    Effect.gen(function*() {
      const settings = yield* resolveOAuthOptions({
        ...base,
        authorizationServers: [
          { issuer: "https://tenant.auth0.com" },
          { issuer: "https://sts.windows.net/{tenantid}/", tenants: ["72F988BF-86F1-41AF-91AB-2D7CD011DB47"] },
          { issuer: "https://login.microsoftonline.com/{tenantid}/v2.0" },
          { issuer: "https://login.microsoftonline.com/common/v2.0" }
        ]
      })
      const issuerOf = (iss: string) => settings.issuerOf(iss)?.issuer
      assert.strictEqual(issuerOf("https://tenant.auth0.com/"), "https://tenant.auth0.com")
      assert.strictEqual(issuerOf("https://tenant.auth0.com"), "https://tenant.auth0.com")
      assert.isUndefined(issuerOf("https://tenant.auth0.com//"))
      assert.isUndefined(issuerOf("https://TENANT.auth0.com/"))
      assert.strictEqual(
        issuerOf("https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/"),
        "https://sts.windows.net/{tenantid}"
      )
      assert.isUndefined(issuerOf("https://sts.windows.net/00000000-0000-0000-0000-000000000000/"), "tenant not listed")
      assert.strictEqual(
        issuerOf("https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000/v2.0"),
        "https://login.microsoftonline.com/{tenantid}/v2.0"
      )
      assert.strictEqual(
        issuerOf("https://login.microsoftonline.com/common/v2.0"),
        "https://login.microsoftonline.com/common/v2.0",
        "an exact issuer wins over a template"
      )
      assert.isUndefined(issuerOf("https://login.microsoftonline.com/a/b/v2.0"), "one path segment only")
      assert.isUndefined(issuerOf("https://login.microsoftonline.com/x/v2.0/extra"))
      assert.deepStrictEqual(settings.issuers, [
        "https://tenant.auth0.com",
        "https://sts.windows.net/72F988BF-86F1-41AF-91AB-2D7CD011DB47/",
        "https://login.microsoftonline.com/common/v2.0",
        "https://login.microsoftonline.com/common/v2.0"
      ])
    }))

  it.effect("takes per-issuer settings, the global ones as defaults", () =>
    Effect.gen(function*() {
      const settings = yield* resolveOAuthOptions({
        ...base,
        additionalAudiences: ["https://every.example.com/"],
        clockSkew: "2 minutes",
        authorizationServers: [
          { issuer: "https://auth.example.com" },
          {
            issuer: "http://keycloak.auth.svc:8080/realms/janus",
            allowInsecureHttp: true,
            jwksUri: "http://keycloak.auth.svc:8080/realms/janus/protocol/openid-connect/certs",
            audiences: ["janus-mcp"],
            scopeClaims: ["scope", "realm_access.roles"],
            scopePrefix: "janus/",
            clockSkew: "5 seconds",
            jwksRefreshInterval: "1 minute"
          }
        ]
      })
      const [plain, keycloak] = [...settings.authorizationServers.values()]
      // audiences are kept as written: a token's aud is compared with them exactly
      assert.deepStrictEqual(plain!.audiences, ["https://every.example.com/"])
      assert.isTrue(Duration.equals(plain!.clockSkew, Duration.minutes(2)))
      assert.deepStrictEqual(keycloak!.audiences, ["https://every.example.com/", "janus-mcp"])
      assert.deepStrictEqual(keycloak!.scopeClaims, ["scope", "realm_access.roles"])
      assert.strictEqual(keycloak!.scopePrefix, "janus/")
      assert.isTrue(Duration.equals(keycloak!.clockSkew, Duration.seconds(5)))
      assert.isTrue(Duration.equals(keycloak!.jwksRefreshInterval, Duration.minutes(1)))
      assert.isFalse(plain!.allowInsecureHttp)
      // the challenge asks with the first issuer's prefix (none here)
      assert.deepStrictEqual(settings.advertisedToolScopes, ["mcp:tools"])
    }))

  it.effect("reports per-issuer mistakes naming the issuer", () =>
    Effect.gen(function*() {
      const found = yield* problems({
        ...base,
        authorizationServers: [
          { issuer: "http://keycloak:8080/realms/x", jwksUri: "http://keycloak:8080/certs" },
          { issuer: "https://{tenantid}.example.com" },
          { issuer: "https://login.example.com/{a}/{b}" },
          { issuer: "https://auth.example.com", tenants: ["x"], scopeClaims: [], jwksRefreshInterval: "10 seconds" }
        ]
      })
      assert.deepStrictEqual(found, [
        `issuer "http://keycloak:8080/realms/x": expected https (http only on a loopback host)`,
        `jwksUri of http://keycloak:8080/realms/x "http://keycloak:8080/certs": expected https (http only on a loopback host)`,
        `issuer "https://{tenantid}.example.com": the placeholder {tenantid} must be a whole path segment, e.g. https://login.microsoftonline.com/{tenantid}/v2.0`,
        `issuer "https://login.example.com/{a}/{b}": expected at most one placeholder such as {tenantid}`,
        "scopeClaims of https://auth.example.com: at least one claim is required",
        "tenants of https://auth.example.com: only a multi-tenant issuer (with a placeholder such as {tenantid}) has tenants",
        "jwksRefreshInterval of https://auth.example.com: must not be shorter than jwksMinRefreshInterval (30s)"
      ])
    }))

  it.effect("places virtual servers beside /mcp, under the prefix a proxy mounts Janus at", () =>
    Effect.gen(function*() {
      const plain = yield* resolveOAuthOptions(base)
      assert.strictEqual(
        resourceOf(plain, "/servers/crm/mcp?x=1").resource,
        "https://janus.example.com/servers/crm/mcp"
      )
      assert.strictEqual(resourceOf(plain, "/servers/crm/sse").resource, "https://janus.example.com/servers/crm/mcp")
      assert.strictEqual(resourceOf(plain, "/api/v1/connections").resource, "https://janus.example.com/mcp")
      assert.strictEqual(resourceOf(plain, "/servers/a%00b/mcp").resource, "https://janus.example.com/mcp")
      const prefixed = yield* resolveOAuthOptions({ ...base, resource: "https://gw.example.com/janus/mcp" })
      assert.strictEqual(
        resourceOf(prefixed, "/servers/crm/mcp").resource,
        "https://gw.example.com/janus/servers/crm/mcp"
      )
      assert.strictEqual(
        metadataUrl(prefixed, "/servers/crm/mcp"),
        "https://gw.example.com/.well-known/oauth-protected-resource/janus/servers/crm/mcp"
      )
      assert.strictEqual(
        metadataUrl(prefixed, "/mcp"),
        "https://gw.example.com/.well-known/oauth-protected-resource/janus/mcp"
      )
    }))

  it("canonicalizes resource identifiers (RFC 8707, RFC 3986 §6)", () => {
    assert.strictEqual(canonicalResource("HTTPS://Janus.Example.COM:443/mcp/"), "https://janus.example.com/mcp")
    assert.strictEqual(canonicalResource("https://janus.example.com/"), "https://janus.example.com")
    assert.strictEqual(canonicalResource("https://janus.example.com/mcp#x"), "https://janus.example.com/mcp")
    assert.strictEqual(canonicalResource("api://janus"), "api://janus")
    assert.isTrue(sameResource("https://janus.example.com/mcp", "https://JANUS.example.com/mcp/"))
    assert.isFalse(sameResource("https://janus.example.com/mcp", "https://janus.example.com/MCP"))
  })
})
