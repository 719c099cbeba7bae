import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import {
  canonicalResource,
  DEFAULT_ALGORITHMS,
  metadataUrl,
  type OAuthOptions,
  resolveOAuthOptions,
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
      assert.deepStrictEqual(settings.scopesSupported, ["mcp:tools", "janus:admin"])
      assert.deepStrictEqual(settings.algorithms, DEFAULT_ALGORITHMS)
      assert.isTrue(Duration.equals(settings.clockSkew, Duration.seconds(60)))
      assert.isTrue(Duration.equals(settings.jwksRefreshInterval, Duration.minutes(10)))
      assert.isTrue(Duration.equals(settings.jwksMinRefreshInterval, Duration.seconds(30)))
      assert.deepStrictEqual(settings.resourcePaths, [{ path: "/mcp", prefix: false }])
      assert.strictEqual(metadataUrl(settings), "https://janus.example.com/.well-known/oauth-protected-resource/mcp")
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

  it("canonicalizes resource identifiers (RFC 8707, RFC 3986 §6)", () => {
    assert.strictEqual(canonicalResource("HTTPS://Janus.Example.COM:443/mcp/"), "https://janus.example.com/mcp")
    assert.strictEqual(canonicalResource("https://janus.example.com/"), "https://janus.example.com")
    assert.strictEqual(canonicalResource("https://janus.example.com/mcp#x"), "https://janus.example.com/mcp")
    assert.strictEqual(canonicalResource("api://janus"), "api://janus")
    assert.isTrue(sameResource("https://janus.example.com/mcp", "https://JANUS.example.com/mcp/"))
    assert.isFalse(sameResource("https://janus.example.com/mcp", "https://janus.example.com/MCP"))
  })
})
