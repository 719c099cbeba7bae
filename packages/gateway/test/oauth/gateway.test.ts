/**
 * The OAuth resource server inside a whole gateway: the RFC 9728 metadata
 * mounted for /mcp and each virtual server, challenges pointing at the right
 * one, virtual servers' own tokens, /readyz reporting the key state, and a key
 * endpoint down during a rotation (503 with Retry-After, then accepted).
 *
 * The authorization server is the suite's loopback stand-in (its keys and
 * failures are set per test); the OAuth options come from `OAUTH_*` variables
 * as `janus serve` reads them, with a 1 s refetch window instead of 30 s so
 * that recovery takes a second of real time.
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog, ClientTokens } from "@janus/storage"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpServer } from "effect/http"
import { createHash } from "node:crypto"
import * as Http from "node:http"
import { load } from "../../src/config/JanusConfig.ts"
import { OAuthLayer } from "../../src/oauth/index.ts"
import * as OAuthVariables from "../../src/oauth/Variables.ts"
import * as GatewayTesting from "../../src/testing.ts"
import { stateless } from "../mcp/http-client.ts"
import * as Downstream from "../support/Downstream.ts"
import { type AuthServer, authServer, claims, rotated, rsa, sign } from "./support.ts"

const ORIGIN = "https://janus.example.com"
const RESOURCE = `${ORIGIN}/mcp`
const CRM = `${ORIGIN}/servers/crm/mcp`

class TestAuthServer extends Context.Service<TestAuthServer, AuthServer>()("test/oauth/TestAuthServer") {}

/** The OAuth layer `janus serve` would build from these variables, with a 1 s refetch window. */
const fromVariables = (env: Record<string, string>) =>
  Effect.map(
    load.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))),
    (settings) =>
      OAuthLayer({ ...OAuthVariables.options(settings), jwksMinRefreshInterval: "1 second" }).pipe(
        Layer.provide(FetchHttpClient.layer)
      )
  )

const TestLayer = Layer.unwrap(Effect.gen(function*() {
  const server = yield* TestAuthServer
  // the first key fetch fails: the gateway starts without keys
  server.status.set("/jwks", 503)
  const oauth = yield* fromVariables({
    OAUTH_ENABLED: "true",
    OAUTH_RESOURCE: RESOURCE,
    OAUTH_ISSUERS: server.issuer,
    OAUTH_JWKS_URL: server.jwksUri
  })
  return Layer.effectDiscard(Downstream.seedPets({ tools: ["get_pet"], virtualServers: [["crm", ["get_pet"]]] })).pipe(
    Layer.provideMerge(
      GatewayTesting.layer({
        // X-Forwarded-For from loopback: the audit test gives each case a client address of its own
        config: { JANUS_ALLOW_ANONYMOUS: false, JANUS_TRUSTED_PROXIES: ["127.0.0.1"] },
        extra: oauth
      })
    ),
    Layer.provideMerge(Downstream.layer)
  )
})).pipe(Layer.provideMerge(Layer.effect(TestAuthServer, authServer())))

const now = () => Math.floor(Date.now() / 1000)

/** A 2026-07-28 tools/list on `path`, with `token` when given. */
const list = (path: string, token?: string) =>
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base).href)),
    (url) =>
      Effect.map(
        stateless(url, "tools/list", {}, token === undefined ? {} : { authorization: `Bearer ${token}` }),
        (reply) => ({ ...reply, text: reply.text + JSON.stringify(reply.events) })
      )
  )

/** A 2026-07-28 tools/list on `path` with exactly `headers` (e.g. another Authorization scheme). */
const listWith = (path: string, headers: Record<string, string>) =>
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base).href)),
    (url) => stateless(url, "tools/list", {}, headers)
  )

/**
 * A request through node:http, which sends each value of an array as its own
 * header line (fetch would join them): two `Authorization` headers.
 */
const rawRequest = (method: string, path: string, headers: Record<string, string | Array<string>>, body?: string) =>
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base))),
    (url) =>
      Effect.promise(() =>
        new Promise<{ status: number; headers: Http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
          const request = Http.request(url, { method, headers, agent: false }, (response) => {
            let text = ""
            response.setEncoding("utf8")
            response.on("data", (chunk) => (text += chunk))
            response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, text }))
          })
          request.on("error", reject)
          request.end(body)
        })
      )
  )

/** The audit rows of refused authentications whose credential is `token`. */
const refusedRows = (token: string) =>
  Effect.gen(function*() {
    const log = yield* AuditLog
    yield* log.flush
    const fingerprint = createHash("sha256").update(token).digest("hex").slice(0, 16)
    const page = yield* log.query({ kind: "auth", limit: 500 })
    return page.items.filter((r) => r.credentialFingerprint === fingerprint)
  })

const getJson = (path: string) =>
  Effect.gen(function*() {
    const response = yield* HttpClient.get(path)
    return { status: response.status, headers: response.headers, json: (yield* response.json) as any }
  })

const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

// The real clock: the gateway's verifier and the tokens' times agree with the wall clock. The tests run in
// order on one gateway: the first sees it start without keys.
layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("OAuth through the gateway", (it) => {
  it.effect("not ready while OAuth is the only way in and no key was ever fetched; ready once one was", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      const down = yield* getJson("/readyz")
      assert.strictEqual(down.status, 503)
      assert.strictEqual(down.json.status, "unavailable")
      assert.include(down.json.reason, "no issuer's signing keys were fetched yet")
      assert.include(down.json.reason, `${server.issuer}: ${server.jwksUri} answered HTTP 503`)
      assert.deepStrictEqual(down.json.oauth, [
        { issuer: server.issuer, keys: 0, fetchedAt: null, lastError: `${server.jwksUri} answered HTTP 503` }
      ])

      // a client token is another way in: ready, with the OAuth detail
      const tokens = yield* ClientTokens
      const created = yield* tokens.create({ name: "ci" })
      const withToken = yield* getJson("/readyz")
      assert.strictEqual(withToken.status, 200)
      assert.strictEqual(withToken.json.oauth[0].keys, 0)
      yield* tokens.revoke(created.token.id)
      assert.strictEqual((yield* getJson("/readyz")).status, 503)

      // a token while the keys cannot be fetched: 503 with Retry-After, no challenge
      const token = yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE }))
      const refused = yield* list("/mcp", token)
      assert.strictEqual(refused.status, 503)
      assert.strictEqual(refused.headers.get("retry-after"), "1")
      assert.isNull(refused.headers.get("www-authenticate"))

      server.status.delete("/jwks")
      yield* sleep(1_100)
      assert.strictEqual((yield* list("/mcp", token)).status, 200)
      const up = yield* getJson("/readyz")
      assert.strictEqual(up.status, 200)
      assert.deepStrictEqual(up.json.oauth.map((o: any) => [o.issuer, o.keys]), [[server.issuer, 6]])
    }))

  it.effect("serves the metadata of /mcp (path and root forms) and of each virtual server", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
        const found = yield* getJson(path)
        assert.strictEqual(found.status, 200, path)
        assert.deepStrictEqual(found.json, {
          resource: RESOURCE,
          authorization_servers: [server.issuer],
          // the admin scope is the admin API's, not something to offer MCP clients
          scopes_supported: ["mcp:tools"],
          bearer_methods_supported: ["header"]
        })
      }
      const crm = yield* getJson("/.well-known/oauth-protected-resource/servers/crm/mcp")
      assert.strictEqual(crm.status, 200)
      assert.strictEqual(crm.json.resource, CRM)
      const unknown = yield* HttpClient.get("/.well-known/oauth-protected-resource/servers/nope/mcp")
      assert.strictEqual(unknown.status, 404)
      // Janus is not an authorization server: a client must not mistake it for one
      assert.strictEqual((yield* HttpClient.get("/.well-known/oauth-authorization-server")).status, 404)
    }))

  it.effect("each resource's 401 points at its own metadata; a virtual server's token works there only", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      const challenge = (path: string) => Effect.map(list(path), (r) => r.headers.get("www-authenticate"))
      assert.strictEqual(
        yield* challenge("/mcp"),
        `Bearer resource_metadata="${ORIGIN}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`
      )
      assert.strictEqual(
        yield* challenge("/servers/crm/mcp"),
        `Bearer resource_metadata="${ORIGIN}/.well-known/oauth-protected-resource/servers/crm/mcp", scope="mcp:tools"`
      )
      const forCrm = yield* sign(rsa.RS256!, claims(server, now(), { aud: CRM }))
      const onCrm = yield* list("/servers/crm/mcp", forCrm)
      assert.strictEqual(onCrm.status, 200)
      assert.include(onCrm.text, "get_pet")
      const onMcp = yield* list("/mcp", forCrm)
      assert.strictEqual(onMcp.status, 401)
      assert.include(onMcp.headers.get("www-authenticate")!, `error="invalid_token"`)
      // a token for /mcp opens every tool, so it is accepted on a virtual server (OAUTH_VIRTUAL_SERVERS_ACCEPT_MCP_TOKENS)
      const forMcp = yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE }))
      assert.strictEqual((yield* list("/servers/crm/mcp", forMcp)).status, 200)
    }))

  it.effect("the key endpoint down during a rotation: 503 with Retry-After, then accepted after recovery", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      yield* sleep(1_100) // past the refetch window of earlier fetches
      server.keys = [rotated.publicJwk, ...server.keys]
      server.status.set("/jwks", 500)
      const token = yield* sign(rotated, claims(server, now(), { aud: RESOURCE }))
      const during = yield* list("/mcp", token)
      assert.strictEqual(during.status, 503)
      assert.strictEqual(during.headers.get("retry-after"), "1")
      assert.isNull(during.headers.get("www-authenticate"), "the client is not sent to re-authorise")
      assert.notInclude(during.text, token)
      // tokens signed with the keys held keep working
      assert.strictEqual(
        (yield* list("/mcp", yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE })))).status,
        200
      )

      server.status.delete("/jwks")
      yield* sleep(1_100)
      assert.strictEqual((yield* list("/mcp", token)).status, 200)
    }))

  it.effect("a cnf-bound token is refused as a bearer token; Authorization: DPoP says DPoP is not supported", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      for (
        const cnf of [{ jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" }, {
          "x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsX"
        }]
      ) {
        const bound = yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE, cnf }))
        const refused = yield* list("/mcp", bound)
        assert.strictEqual(refused.status, 401, JSON.stringify(cnf))
        const challenge = refused.headers.get("www-authenticate")!
        assert.include(challenge, `error="invalid_token"`)
        assert.include(challenge, "cnf")
        assert.notInclude(refused.text, bound)
        // the proof-of-possession scheme is a credential too, not "no credential"
        const dpop = yield* listWith("/mcp", { authorization: `DPoP ${bound}`, dpop: "eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.x" })
        assert.strictEqual(dpop.status, 401)
        const dpopChallenge = dpop.headers.get("www-authenticate")!
        assert.include(dpopChallenge, `error="invalid_token"`)
        assert.include(dpopChallenge, "DPoP-bound tokens are not supported")
        assert.include(dpop.text, "DPoP-bound tokens are not supported")
      }
      // the same token without cnf is fine
      assert.strictEqual(
        (yield* list("/mcp", yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE })))).status,
        200
      )
    }))

  it.effect("a token for a century, or for /mcp/ or HTTP://..., is refused on /mcp", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      const century = yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE, exp: now() + 100 * 365 * 86_400 }))
      const old = yield* list("/mcp", century)
      assert.strictEqual(old.status, 401)
      assert.include(old.headers.get("www-authenticate")!, "lives longer than this server accepts")
      for (const aud of [`${RESOURCE}/`, "HTTP://janus.example.com/mcp", `${RESOURCE}#x`, `${RESOURCE}/../mcp`]) {
        const refused = yield* list("/mcp", yield* sign(rsa.RS256!, claims(server, now(), { aud })))
        assert.strictEqual(refused.status, 401, aud)
        assert.include(refused.headers.get("www-authenticate")!, "The token was not issued for this resource")
      }
    }))

  it.effect("two Authorization headers, or two credentials in one: 400 invalid_request on /mcp and /api/v1", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      const good = yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE, scope: "mcp:tools janus:admin" }))
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
      const mcpHeaders = {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list"
      }
      const variants: ReadonlyArray<string | Array<string>> = [
        [`Bearer ${good}`, "Bearer jns_somebody-else"],
        ["Bearer jns_somebody-else", `Bearer ${good}`],
        `Bearer ${good}, Bearer jns_somebody-else`,
        `Bearer ${good},x`
      ]
      for (const authorization of variants) {
        const mcp = yield* rawRequest("POST", "/mcp", { ...mcpHeaders, authorization }, body)
        assert.strictEqual(mcp.status, 400, `/mcp ${JSON.stringify(authorization).slice(0, 40)}`)
        assert.include(String(mcp.headers["www-authenticate"]), `error="invalid_request"`)
        assert.include(mcp.text, "more than one credential")
        const admin = yield* rawRequest("GET", "/api/v1/connections", { authorization })
        assert.strictEqual(admin.status, 400, `/api/v1 ${JSON.stringify(authorization).slice(0, 40)}`)
        assert.include(String(admin.headers["www-authenticate"]), `error="invalid_request"`)
        assert.strictEqual(JSON.parse(admin.text).error.code, "invalid_request")
      }
      // one of them alone is fine
      const alone = yield* rawRequest("GET", "/api/v1/connections", { authorization: `Bearer ${good}` })
      assert.strictEqual(alone.status, 200, alone.text)
      assert.strictEqual((yield* listWith("/mcp", { authorization: `Bearer ${good}` })).status, 200)
    }))

  it.effect("the audit row of a refused authentication says why, on /mcp and /api/v1", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
        ["expired", { exp: now() - 3_600, iat: now() - 7_200 }],
        ["wrong_audience", { aud: `${RESOURCE}/` }],
        ["sender_constrained", { cnf: { jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" } }],
        ["lifetime_too_long", { exp: now() + 100 * 365 * 86_400 }],
        ["untrusted_issuer", { iss: "https://evil.example.com" }]
      ]
      let ip = 0
      // refusal rows are sampled per address, outcome and reason: each case is an address of its own, and each
      // token has a jti of its own, so no earlier test signed the same claims in the same second
      const from = () => ({ "x-forwarded-for": `198.51.100.${++ip}` })
      for (const [reason, extra] of cases) {
        const token = yield* sign(
          rsa.RS256!,
          claims(server, now(), { aud: RESOURCE, jti: `audit-${reason}`, ...extra })
        )
        assert.strictEqual((yield* listWith("/mcp", { authorization: `Bearer ${token}`, ...from() })).status, 401)
        const admin = yield* rawRequest("GET", "/api/v1/connections", { authorization: `Bearer ${token}`, ...from() })
        assert.strictEqual(admin.status, 401, reason)
        const rows = yield* refusedRows(token)
        assert.deepStrictEqual(rows.map((r) => [r.action, r.reason, r.status]).sort(), [
          ["admin", reason, 401],
          ["mcp", reason, 401]
        ])
      }
      // a valid token without the admin scope: insufficient_scope on the admin API
      const narrow = yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE, jti: "audit-narrow" }))
      const step = yield* rawRequest("GET", "/api/v1/connections", { authorization: `Bearer ${narrow}`, ...from() })
      assert.strictEqual(step.status, 403)
      assert.deepStrictEqual((yield* refusedRows(narrow)).map((r) => r.reason), ["insufficient_scope"])
      // what the audit API of Studio answers carries it too
      // a token of its own (the first case signed the same claims, maybe in the same second)
      const expired = yield* sign(
        rsa.RS256!,
        claims(server, now(), { aud: RESOURCE, exp: now() - 3_600, iat: now() - 7_200, jti: "audit-api" })
      )
      yield* listWith("/mcp", { authorization: `Bearer ${expired}`, ...from() })
      const admin = yield* sign(rsa.RS256!, claims(server, now(), { aud: RESOURCE, scope: "janus:admin" }))
      const api = yield* rawRequest("GET", "/api/v1/audit?kind=auth&limit=500", { authorization: `Bearer ${admin}` })
      assert.strictEqual(api.status, 200)
      const fingerprint = createHash("sha256").update(expired).digest("hex").slice(0, 16)
      const found = JSON.parse(api.text).items.filter((r: any) => r.credentialFingerprint === fingerprint)
      assert.deepStrictEqual(found.map((r: any) => r.reason), ["expired"])
    }))
})
