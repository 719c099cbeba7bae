/**
 * Tokens shaped like those of Keycloak, Auth0, Entra ID (v1 and v2) and Okta,
 * checked with the settings the README documents for each provider: read
 * from the README's own `sh` block, with the provider's host pointed at a
 * loopback stand-in that publishes the signing key where the provider would.
 * Each token is accepted with those settings and refused without them, with
 * the reason, and what the token carried, in the log (never the token).
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Logger, References } from "effect"
import { FetchHttpClient } from "effect/http"
import type { JWTPayload } from "jose"
import * as Fs from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { load } from "../../src/config/JanusConfig.ts"
import {
  type InsufficientScope,
  JwtVerifier,
  OAuthConfig,
  OAuthLayer,
  type TokenRequirement
} from "../../src/oauth/index.ts"
import * as OAuthVariables from "../../src/oauth/Variables.ts"
import { rsa, sign } from "./support.ts"

const README = Fs.readFileSync(new URL("../../../../README.md", import.meta.url), "utf8")

/** The variables of the first `sh` block under `### <provider>` in the README. */
const documented = (provider: string): Record<string, string> => {
  const start = README.indexOf(`### ${provider}\n`)
  assert.isAtLeast(start, 0, `README has a "### ${provider}" section`)
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(start))![1]!
  return Object.fromEntries(
    block.split("\n").filter((line) => /^[A-Z_]+=/.test(line)).map((line) => {
      const eq = line.indexOf("=")
      return [line.slice(0, eq), line.slice(eq + 1)]
    })
  )
}

/** The providers' public hosts, served here by the loopback stand-in. */
const PROVIDER_HOSTS = [
  "https://keycloak.example.com",
  "https://your-tenant.us.auth0.com",
  "https://login.microsoftonline.com",
  "https://sts.windows.net",
  "https://dev-123456.okta.com"
]

const onLoopback = (value: string, origin: string) =>
  PROVIDER_HOSTS.reduce((text, host) => text.split(host).join(origin), value)

/**
 * A provider stand-in: OpenID metadata appended to any issuer path (with the
 * issuer written as the provider writes it: a trailing slash at the root, as
 * Auth0 does) and the public key at any `/keys`, `/certs` or `/jwks` path.
 */
const providerServer = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ origin: string; close: () => Promise<void> }>((resolve) => {
      const http = createServer((req, res) => {
        const path = (req.url ?? "/").split("?")[0]!
        const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
        res.setHeader("content-type", "application/json")
        const metadata = /^(.*)\/\.well-known\/openid-configuration$/.exec(path)
        if (metadata !== null) {
          return res.end(JSON.stringify({
            issuer: metadata[1] === "" ? `${origin}/` : `${origin}${metadata[1]}`,
            jwks_uri: `${origin}/jwks`
          }))
        }
        if (/\/(keys|certs|jwks)$/.test(path)) return res.end(JSON.stringify({ keys: [rsa.RS256!.publicJwk] }))
        res.statusCode = 404
        res.end("{}")
      })
      http.listen(0, "127.0.0.1", () =>
        resolve({
          origin: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
          close: () =>
            new Promise<void>((done) => {
              http.closeAllConnections()
              http.close(() => done())
            })
        }))
    })
  ),
  ({ close }) => Effect.promise(close)
).pipe(Effect.map(({ origin }) => origin))

/** The verifier and settings `janus serve` would build from `env`. */
const verifierFrom = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const settings = yield* load.pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
    )
    const context = yield* Layer.build(
      OAuthLayer(OAuthVariables.options(settings)).pipe(Layer.provide(FetchHttpClient.layer))
    )
    return { verifier: Context.get(context, JwtVerifier), settings: Context.get(context, OAuthConfig) }
  })

/** The `env` without `names`. */
const without = (env: Record<string, string>, ...names: ReadonlyArray<string>) =>
  Object.fromEntries(Object.entries(env).filter(([name]) => !names.includes(name)))

const now = () => Math.floor(Date.now() / 1000)

/** Log lines (JSON) written while `effect` runs. */
const logged = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const lines: Array<any> = []
    const logger = Logger.map(Logger.formatJson, (line) => void lines.push(JSON.parse(line)))
    const result = yield* Effect.result(effect.pipe(
      Effect.provideService(Logger.CurrentLoggers, new Set([logger])),
      Effect.provideService(References.MinimumLogLevel, "All")
    ))
    return { result, lines }
  })

/** `token` is accepted by the verifier built from `env`; returns the identity. */
const accepted = (env: Record<string, string>, token: string, requirement?: TokenRequirement) =>
  Effect.flatMap(verifierFrom(env), ({ verifier }) => verifier.verify(token, requirement))

/**
 * `token` is refused by the verifier built from `env` for `reason`, and the
 * log says so with what the token carried; returns the log line.
 */
const refused = (env: Record<string, string>, token: string, reason: string, requirement?: TokenRequirement) =>
  Effect.gen(function*() {
    const { verifier } = yield* verifierFrom(env)
    const { lines, result } = yield* logged(verifier.verify(token, requirement))
    assert.strictEqual(result._tag, "Failure", `expected a refusal (${reason})`)
    const line = lines.find((l) => l.message === "OAuth access token refused")
    assert.isDefined(line, "the refusal is logged")
    assert.strictEqual(line.annotations.reason, reason)
    for (const l of lines) {
      const text = JSON.stringify(l)
      for (const part of token.split(".")) assert.notInclude(text, part, "the token never reaches the log")
    }
    return line.annotations as Record<string, unknown>
  })

const TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
const OTHER_TENANT = "0e3e2e3c-4d7f-4b3a-9a1e-3c2b1a0f9e8d"
const APP_ID = "00000000-0000-0000-0000-00000000a11d"

describe("identity providers' tokens with the README's settings", () => {
  it.live("Keycloak: mapped audience, azp, scope or realm_access roles", () =>
    Effect.gen(function*() {
      const origin = yield* providerServer
      const env = Object.fromEntries(Object.entries(documented("Keycloak")).map(([k, v]) => [k, onLoopback(v, origin)]))
      const base: JWTPayload = {
        exp: now() + 300,
        iat: now(),
        jti: "8f0b2c1e-6f5a-4c1e-9a1a-0d6c1e2f3a4b",
        iss: `${origin}/realms/janus`,
        aud: ["janus-mcp", "account"],
        sub: "f1c3e0a2-7a4b-4d8e-9c6f-2b1a0e9d8c7b",
        typ: "Bearer",
        azp: "mcp-inspector",
        sid: "4d1c2b3a",
        acr: "1",
        "allowed-origins": ["http://localhost:6274"],
        resource_access: { account: { roles: ["manage-account", "view-profile"] } },
        preferred_username: "ada"
      }
      const byScope = yield* sign(rsa.RS256!, {
        ...base,
        scope: "openid profile email mcp:tools",
        realm_access: { roles: ["offline_access", "default-roles-janus"] }
      }, { typ: "JWT" })
      const byRole = yield* sign(rsa.RS256!, {
        ...base,
        scope: "openid profile email",
        realm_access: { roles: ["offline_access", "default-roles-janus", "mcp:tools"] }
      }, { typ: "JWT" })

      const identity = yield* accepted(env, byScope)
      assert.strictEqual(identity.clientId, "mcp-inspector")
      assert.strictEqual(identity.issuer, `${origin}/realms/janus`)
      yield* accepted(env, byRole)

      const noAudience = yield* refused(without(env, "OAUTH_AUDIENCES"), byScope, "wrong_audience")
      assert.deepStrictEqual(noAudience.audience, ["janus-mcp", "account"])
      assert.deepStrictEqual(noAudience.expected_audience, ["https://janus.example.com/mcp"])
      assert.strictEqual(noAudience.issuer, `${origin}/realms/janus`)
      assert.deepStrictEqual(noAudience.scopes, [
        "openid",
        "profile",
        "email",
        "mcp:tools",
        "offline_access",
        "default-roles-janus"
      ])

      const noRoles = yield* refused(without(env, "OAUTH_SCOPE_CLAIMS"), byRole, "insufficient_scope")
      assert.deepStrictEqual(noRoles.scopes, ["openid", "profile", "email"])
      assert.deepStrictEqual(noRoles.required_scopes, ["mcp:tools"])
      assert.include(noRoles.claims as Array<string>, "realm_access")
    }))

  it.live("Auth0: permissions, API identifier audience, issuer with a trailing slash", () =>
    Effect.gen(function*() {
      const origin = yield* providerServer
      const env = Object.fromEntries(Object.entries(documented("Auth0")).map(([k, v]) => [k, onLoopback(v, origin)]))
      assert.strictEqual(env.OAUTH_ISSUERS, `${origin}/`, "the README writes Auth0's issuer with its slash")
      const user = yield* sign(rsa.RS256!, {
        iss: `${origin}/`,
        sub: "auth0|64f1c2d3e4b5a6978a9b0c1d",
        aud: ["https://janus-api", `${origin}/userinfo`],
        iat: now(),
        exp: now() + 300,
        scope: "openid profile email",
        azp: "x7YcQ2pLr9",
        permissions: ["mcp:tools"]
      }, { typ: "JWT" })
      const machine = yield* sign(rsa.RS256!, {
        iss: `${origin}/`,
        sub: "x7YcQ2pLr9@clients",
        aud: "https://janus-api",
        iat: now(),
        exp: now() + 300,
        scope: "mcp:tools",
        gty: "client-credentials",
        azp: "x7YcQ2pLr9",
        permissions: ["mcp:tools"]
      }, { typ: "JWT" })

      const identity = yield* accepted(env, user)
      assert.strictEqual(identity.issuer, origin)
      assert.deepStrictEqual(identity.scopes, ["openid", "profile", "email", "mcp:tools"])
      yield* accepted(env, machine)
      // the slash is not what matters: written without it, the same tokens pass
      yield* accepted({ ...env, OAUTH_ISSUERS: origin }, user)

      yield* refused(without(env, "OAUTH_AUDIENCES"), machine, "wrong_audience")
      const noPermissions = yield* refused(without(env, "OAUTH_SCOPE_CLAIMS"), user, "insufficient_scope")
      assert.deepStrictEqual(noPermissions.scope_claims, ["scope", "scp"])
      assert.include(noPermissions.claims as Array<string>, "permissions")

      // another tenant's issuer is not trusted, and the log names the issuer the token named
      const stranger = yield* sign(rsa.RS256!, {
        iss: "https://other-tenant.us.auth0.com/",
        sub: "x",
        aud: "https://janus-api",
        exp: now() + 300
      })
      const untrusted = yield* refused(env, stranger, "untrusted_issuer")
      assert.strictEqual(untrusted.issuer, "https://other-tenant.us.auth0.com/")
      assert.deepStrictEqual(untrusted.trusted_issuers, [`${origin}/`])
    }))

  it.live("Entra ID: v2 and v1, delegated scp and application roles, GUID audience, multi-tenant issuer", () =>
    Effect.gen(function*() {
      const origin = yield* providerServer
      const env = Object.fromEntries(Object.entries(documented("Entra ID")).map(([k, v]) => [k, onLoopback(v, origin)]))
      const v2 = (tenant: string, claims: JWTPayload) =>
        sign(rsa.RS256!, {
          aud: APP_ID,
          iss: `${origin}/${tenant}/v2.0`,
          iat: now(),
          nbf: now(),
          exp: now() + 3600,
          aio: "AWQAm/8aAAAA",
          azp: "3f2b1c0d-aaaa-bbbb-cccc-0123456789ab",
          azpacr: "0",
          oid: "6b2e4f1a-1111-2222-3333-444455556666",
          rh: "0.AXEA",
          sub: "kBf3Nq3J2sV",
          tid: tenant,
          uti: "Zk2pQ",
          ver: "2.0",
          ...claims
        }, { typ: "JWT" })
      const delegated = yield* v2(TENANT, {
        scp: "mcp.tools",
        name: "Ada Lovelace",
        preferred_username: "ada@contoso.com"
      })
      const application = yield* v2(TENANT, { roles: ["mcp.tools"], idtyp: "app" })
      const v1 = yield* sign(rsa.RS256!, {
        aud: "api://janus-mcp",
        iss: `${origin}/${TENANT}/`,
        iat: now(),
        nbf: now(),
        exp: now() + 3600,
        appid: "3f2b1c0d-aaaa-bbbb-cccc-0123456789ab",
        appidacr: "0",
        scp: "mcp.tools",
        tid: TENANT,
        sub: "kBf3Nq3J2sV",
        upn: "ada@contoso.com",
        ver: "1.0"
      }, { typ: "JWT" })
      const otherTenant = yield* v2(OTHER_TENANT, { scp: "mcp.tools" })

      const { settings } = yield* verifierFrom(env)
      // clients are told to ask for the scope with the Application ID URI, and where
      assert.deepStrictEqual(settings.advertisedToolScopes, ["api://janus-mcp/mcp.tools"])
      assert.deepStrictEqual(settings.issuers, [`${origin}/${TENANT}/v2.0`, `${origin}/${TENANT}/`])

      assert.strictEqual((yield* accepted(env, delegated)).issuer, `${origin}/${TENANT}/v2.0`)
      yield* accepted(env, application)
      const old = yield* accepted(env, v1)
      assert.strictEqual(old.clientId, "3f2b1c0d-aaaa-bbbb-cccc-0123456789ab")
      assert.strictEqual(old.issuer, `${origin}/${TENANT}`)

      const stranger = yield* refused(env, otherTenant, "untrusted_issuer")
      assert.strictEqual(stranger.issuer, `${origin}/${OTHER_TENANT}/v2.0`)
      // a multi-tenant app: every tenant
      yield* accepted(without(env, "OAUTH_TENANTS"), otherTenant)

      const guid = yield* refused(without(env, "OAUTH_AUDIENCES"), delegated, "wrong_audience")
      assert.strictEqual(guid.audience, APP_ID)
      yield* refused(without(env, "OAUTH_AUDIENCES"), v1, "wrong_audience")
      const roles = yield* refused(without(env, "OAUTH_SCOPE_CLAIMS"), application, "insufficient_scope")
      assert.deepStrictEqual(roles.scopes, [])
      const named = yield* refused(without(env, "OAUTH_TOOL_SCOPES"), delegated, "insufficient_scope")
      assert.deepStrictEqual(named.scopes, ["mcp.tools"])
      assert.deepStrictEqual(named.required_scopes, ["mcp:tools"])
    }))

  it.live("Okta: custom authorization server audience, scp array, cid", () =>
    Effect.gen(function*() {
      const origin = yield* providerServer
      const env = Object.fromEntries(Object.entries(documented("Okta")).map(([k, v]) => [k, onLoopback(v, origin)]))
      const token = yield* sign(rsa.RS256!, {
        ver: 1,
        jti: "AT.q2VbIkYc9dS8",
        iss: `${origin}/oauth2/default`,
        aud: "api://default",
        iat: now(),
        exp: now() + 3600,
        cid: "0oa1b2c3d4E5F6g7H8i9",
        uid: "00u1a2b3c4D5E6f7G8h9",
        scp: ["openid", "mcp:tools"],
        auth_time: now() - 60,
        sub: "ada@example.com"
      }, { typ: "JWT" })
      const identity = yield* accepted(env, token)
      assert.strictEqual(identity.clientId, "0oa1b2c3d4E5F6g7H8i9")
      assert.deepStrictEqual(identity.scopes, ["openid", "mcp:tools"])
      const refusal = yield* refused(without(env, "OAUTH_AUDIENCES"), token, "wrong_audience")
      assert.strictEqual(refusal.audience, "api://default")
    }))

  it.live("Keycloak and Entra v2 side by side: each issuer's tokens need that issuer's tool scopes", () =>
    Effect.gen(function*() {
      const origin = yield* providerServer
      const keycloak = `${origin}/realms/janus`
      const entra = `${origin}/{tenantid}/v2.0`
      const env = {
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: `${keycloak},${entra}`,
        OAUTH_AUDIENCES: `${keycloak}=janus-mcp; ${entra}=${APP_ID}`,
        OAUTH_SCOPE_PREFIX: `${entra}=api://janus-mcp/`,
        // Keycloak's client scope is mcp:tools (the value for every issuer); Entra names scopes with dots
        OAUTH_TOOL_SCOPES: `mcp:tools; ${entra}=mcp.tools,mcp.read`
      }
      const fromKeycloak = (scope: string) =>
        sign(rsa.RS256!, {
          iss: keycloak,
          aud: ["janus-mcp", "account"],
          sub: "f1c3e0a2",
          azp: "mcp-inspector",
          iat: now(),
          exp: now() + 300,
          scope
        }, { typ: "JWT" })
      const fromEntra = (scp: string) =>
        sign(rsa.RS256!, {
          iss: `${origin}/${TENANT}/v2.0`,
          aud: APP_ID,
          sub: "kBf3Nq3J2sV",
          tid: TENANT,
          ver: "2.0",
          iat: now(),
          exp: now() + 300,
          scp
        }, { typ: "JWT" })

      yield* accepted(env, yield* fromKeycloak("openid mcp:tools"))
      const entraIdentity = yield* accepted(env, yield* fromEntra("mcp.tools mcp.read"))
      assert.deepStrictEqual(entraIdentity.scopes, ["mcp.tools", "mcp.read"])

      // Keycloak's scope means nothing coming from Entra, and the reverse
      const wrongName = yield* refused(env, yield* fromEntra("mcp:tools"), "insufficient_scope")
      assert.deepStrictEqual(wrongName.required_scopes, ["mcp.tools", "mcp.read"])
      const { verifier } = yield* verifierFrom(env)
      const step = yield* Effect.flip(verifier.verify(yield* fromEntra("mcp.tools")))
      assert.strictEqual(step._tag, "InsufficientScope")
      // the step-up names the scopes as Entra's clients request them
      assert.deepStrictEqual((step as InsufficientScope).required, [
        "api://janus-mcp/mcp.tools",
        "api://janus-mcp/mcp.read"
      ])
      assert.deepStrictEqual((step as InsufficientScope).missing, ["api://janus-mcp/mcp.read"])
      const keycloakRefused = yield* refused(env, yield* fromKeycloak("openid mcp.tools"), "insufficient_scope")
      assert.deepStrictEqual(keycloakRefused.required_scopes, ["mcp:tools"])

      // before a token, clients are told the first issuer's scopes (with its prefix): the one they ask
      const first = (yield* verifierFrom(env)).settings
      assert.deepStrictEqual(first.advertisedToolScopes, ["mcp:tools"])
      assert.deepStrictEqual(first.scopesSupported, ["mcp:tools"])
      const entraFirst = (yield* verifierFrom({ ...env, OAUTH_ISSUERS: `${entra},${keycloak}` })).settings
      assert.deepStrictEqual(entraFirst.advertisedToolScopes, ["api://janus-mcp/mcp.tools", "api://janus-mcp/mcp.read"])
      assert.deepStrictEqual(entraFirst.scopesSupported, ["api://janus-mcp/mcp.tools", "api://janus-mcp/mcp.read"])
    }))

  it.effect("per-issuer tool scopes must name a listed issuer and hold scope tokens", () =>
    Effect.gen(function*() {
      const env = {
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: "https://janus.example.com/mcp",
        OAUTH_ISSUERS: "https://keycloak.example.com/realms/janus"
      }
      const typo = yield* Effect.flip(load.pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromEnv({
            env: { ...env, OAUTH_TOOL_SCOPES: "https://keycloak.example.com/realm/janus=mcp:tools" }
          })
        )
      ))
      assert.deepStrictEqual(typo.problems.map((p) => p.line), [
        `OAUTH_TOOL_SCOPES="https://keycloak.example.com/realm/janus": expected an issuer listed in OAUTH_ISSUERS ` +
        `(https://keycloak.example.com/realms/janus)`
      ])
      const quoted = yield* Effect.flip(verifierFrom({
        ...env,
        OAUTH_TOOL_SCOPES: `https://keycloak.example.com/realms/janus/=mcp"tools`
      }))
      assert.strictEqual(quoted._tag, "OAuthConfigError")
      assert.include(
        quoted.message,
        `toolScopes of https://keycloak.example.com/realms/janus "mcp\\"tools": expected a scope token`
      )
    }))
})
