/**
 * `janus doctor` with OAuth on: each issuer's metadata and keys fetched and
 * reported; an authorization server that is down fails the run naming the
 * issuer; settings `serve` would refuse are refused here too.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { clientSupport, tokenRequirements } from "../../src/cli/DoctorOAuth.ts"
import { resolveOAuthOptions } from "../../src/oauth/index.ts"
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
      up.extraMetadata = {
        authorization_endpoint: `${up.issuer}/authorize`,
        code_challenge_methods_supported: ["S256"],
        registration_endpoint: `${up.issuer}/register`
      }
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
        [`oauth ${up.issuer} token`, "ok"],
        [`oauth ${up.issuer} pkce`, "ok"],
        [`oauth ${up.issuer} endpoints`, "ok"],
        [`oauth ${up.issuer} registration`, "ok"],
        [`oauth ${up.issuer} resource`, "warn"],
        [`oauth ${down}`, "FAIL"],
        [`oauth ${down} token`, "ok"],
        [`oauth ${down} clients`, "skip"]
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
      assert.include(checks[7]!.detail, "no usable metadata, so no signing keys")
      assert.include(
        checks[7]!.detail,
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
      const [, issuer, , clients] = oauthChecks(warned.report)
      assert.strictEqual(clients!.verdict, "skip")
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

  it.live("says what a token must carry and what MCP clients need: a Keycloak- and an Entra-v2-shaped provider", () =>
    Effect.gen(function*() {
      const keycloak = yield* authServer({ issuerPath: "/realms/janus", metadata: "openid" })
      keycloak.extraMetadata = {
        authorization_endpoint: `${keycloak.issuer}/protocol/openid-connect/auth`,
        token_endpoint: `${keycloak.issuer}/protocol/openid-connect/token`,
        code_challenge_methods_supported: ["plain", "S256"],
        registration_endpoint: `${keycloak.issuer}/clients-registrations/openid-connect`
      }
      // Entra v2: the tenant's metadata names no PKCE methods, no registration, nothing about resource
      const tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
      const entra = yield* authServer({ issuerPath: `/${tenant}/v2.0`, metadata: "openid" })
      entra.extraMetadata = {
        authorization_endpoint: `${entra.issuer}/oauth2/v2.0/authorize`,
        token_endpoint: `${entra.issuer}/oauth2/v2.0/token`
      }
      const entraTemplate = `${entra.origin}/{tenantid}/v2.0`
      const r = yield* doctor({
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: `${keycloak.issuer},${entraTemplate}`,
        OAUTH_TENANTS: `${entraTemplate}=${tenant}`,
        OAUTH_AUDIENCES: `${entraTemplate}=api://janus-mcp`,
        OAUTH_SCOPE_PREFIX: `${entraTemplate}=api://janus-mcp/`,
        OAUTH_TOOL_SCOPES: `mcp:tools; ${entraTemplate}=mcp.tools`,
        OAUTH_REQUIRED_TOKEN_TYPE: "at+jwt"
      })
      assert.strictEqual(r.code, 1, "Entra's missing S256 fails the run")
      const byName = new Map(oauthChecks(r.report).map((c) => [c.check, c]))
      const line = (name: string) => {
        const found = byName.get(name)
        assert.isDefined(found, `a check ${name} in ${[...byName.keys()].join(" | ")}`)
        return found!
      }

      const kToken = line(`oauth ${keycloak.issuer} token`)
      assert.strictEqual(kToken.verdict, "ok")
      assert.strictEqual(
        kToken.detail,
        `an accepted token has iss ${keycloak.issuer}; aud https://janus.example.com/mcp (the resource); ` +
          "scope mcp:tools in claim scope or scp; typ header at+jwt; " +
          "signed with RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519; exp and sub; " +
          "exp at most 1d after iat (after now without iat); at most 16384 characters; " +
          "no cnf claim (bearer tokens only)"
      )
      assert.strictEqual(line(`oauth ${keycloak.issuer} pkce`).verdict, "ok")
      assert.strictEqual(
        line(`oauth ${keycloak.issuer} pkce`).detail,
        `code_challenge_methods_supported ["plain","S256"] includes S256, the PKCE method MCP clients use`
      )
      assert.strictEqual(
        line(`oauth ${keycloak.issuer} registration`).detail,
        `registration_endpoint ${keycloak.issuer}/clients-registrations/openid-connect: MCP clients can register ` +
          "themselves (dynamic client registration)"
      )
      assert.strictEqual(line(`oauth ${keycloak.issuer} endpoints`).verdict, "ok")
      const kResource = line(`oauth ${keycloak.issuer} resource`)
      assert.strictEqual(kResource.verdict, "warn")
      assert.include(kResource.detail, "says nothing about the resource parameter MCP clients send (RFC 8707")
      assert.include(kResource.detail, "set it up to issue tokens with aud https://janus.example.com/mcp")

      const eName = `${entra.origin}/{tenantid}/v2.0`
      const eToken = line(`oauth ${eName} token`)
      assert.include(
        eToken.detail,
        `an accepted token has iss ${eName} with a tenant of ${tenant} as {tenantid}; ` +
          "aud https://janus.example.com/mcp (the resource) or one of api://janus-mcp; " +
          "scope mcp.tools in claim scope or scp (prefix api://janus-mcp/ stripped: clients request " +
          "api://janus-mcp/mcp.tools); typ header at+jwt;"
      )
      const ePkce = line(`oauth ${eName} pkce`)
      assert.strictEqual(ePkce.verdict, "FAIL")
      assert.strictEqual(
        ePkce.detail,
        `${entra.origin}/.well-known/openid-configuration/${tenant}/v2.0 has no code_challenge_methods_supported; ` +
          "expected a list including S256: MCP clients use PKCE with S256 and refuse a provider that does not " +
          "advertise it (the MCP authorization spec reads its absence as no PKCE; some clients, such as the " +
          "TypeScript SDK's, still proceed)"
      )
      const eRegistration = line(`oauth ${eName} registration`)
      assert.strictEqual(eRegistration.verdict, "warn")
      assert.include(eRegistration.detail, "has no registration_endpoint and no client_id_metadata_document_supported")
      assert.include(eRegistration.detail, "registered at the provider beforehand (pre-registration)")
      const eResource = line(`oauth ${eName} resource`)
      assert.strictEqual(eResource.verdict, "ok", "the audience Entra issues is configured")
      assert.include(eResource.detail, "tokens are accepted with aud api://janus-mcp (configured audiences)")

      // the text form says the same, one line each
      const text = yield* Effect.promise(async () =>
        (await janus(["doctor"], {
          JANUS_HOME: tempHome(),
          JANUS_PORT: String(await freePort()),
          OAUTH_ENABLED: "true",
          OAUTH_RESOURCE: "https://janus.example.com/mcp",
          OAUTH_ISSUERS: keycloak.issuer
        })).stdout
      )
      assert.include(text, `ok    oauth ${keycloak.issuer} pkce: code_challenge_methods_supported`)
      assert.include(text, `warn  oauth ${keycloak.issuer} resource: `)
    }))

  it.effect("odd or hostile metadata values give a bounded line each, never a crash", () =>
    Effect.gen(function*() {
      const settings = yield* resolveOAuthOptions({
        resource: "https://janus.example.com/mcp",
        authorizationServers: [{ issuer: "https://auth.example.com" }]
      })
      const server = [...settings.authorizationServers.values()][0]!
      const huge = "S256".repeat(100_000)
      const checks = clientSupport(settings, server, {
        issuer: "https://auth.example.com",
        jwks_uri: "https://auth.example.com/jwks",
        metadataUrl: "https://auth.example.com/.well-known/oauth-authorization-server",
        token_endpoint: "javascript:alert(1)",
        authorization_endpoint: "https://auth.example.com/authorize",
        code_challenge_methods_supported: "S256\u0000\ud800",
        registration_endpoint: { url: huge },
        client_id_metadata_document_supported: "true",
        resource_indicators_supported: [huge]
      })
      assert.deepStrictEqual(checks.map((c) => [c.check, c.verdict]), [
        ["oauth https://auth.example.com pkce", "FAIL"],
        ["oauth https://auth.example.com endpoints", "FAIL"],
        ["oauth https://auth.example.com registration", "warn"],
        ["oauth https://auth.example.com resource", "warn"]
      ])
      assert.include(checks[0]!.detail, `code_challenge_methods_supported "S256\\u0000\\ud800"; expected a list`)
      assert.include(
        checks[1]!.detail,
        `token_endpoint "javascript:alert(1)"; expected the URL clients get tokens from`
      )
      for (const check of checks) assert.isBelow(check.detail.length, 1_000, check.check)
      // a token line for every issuer, whatever its settings
      assert.strictEqual(tokenRequirements(settings, server).verdict, "ok")
    }))
})
