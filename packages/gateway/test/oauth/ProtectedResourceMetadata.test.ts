import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Headers, HttpRouter, HttpServerResponse } from "effect/http"
import {
  authenticate,
  challengeResponse,
  InvalidToken,
  makeProtectedResourceMetadataRoutes,
  type OAuthOptions,
  withoutClientCredentials,
  wwwAuthenticate
} from "../../src/oauth/index.ts"
import { type AuthServer, authServer, claims, oauthLayer, RESOURCE, rsa, sign } from "./support.ts"

const ORIGIN = "https://janus.example.com"
const PRM_MCP = `${ORIGIN}/.well-known/oauth-protected-resource/mcp`

/** A gateway stand-in: the metadata routes and two protected routes using `authenticate`. */
const gateway = (server: AuthServer, options: Partial<OAuthOptions> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const ok = (request: Parameters<typeof authenticate>[0], scopes?: ReadonlyArray<string>) =>
        authenticate(request, scopes === undefined ? undefined : { scopes }).pipe(
          Effect.map((identity) =>
            HttpServerResponse.jsonUnsafe({ subject: identity.subject, scopes: identity.scopes })
          )
        )
      const app = Layer.mergeAll(
        makeProtectedResourceMetadataRoutes({ virtualServerExists: (name) => Effect.succeed(name !== "gone") }),
        HttpRouter.add("POST", "/mcp", (request) => ok(request)),
        HttpRouter.add("POST", "/servers/:name/mcp", (request) => ok(request)),
        HttpRouter.add("GET", "/api/v1/connections", (request) => ok(request, ["janus:admin"]))
      ).pipe(Layer.provideMerge(oauthLayer(server, { resourceName: "Janus", ...options })))
      return HttpRouter.toWebHandler(app, { disableLogger: true })
    }),
    ({ dispose }) => Effect.promise(dispose)
  ).pipe(
    Effect.map(({ handler }) => (path: string, init?: RequestInit) =>
      Effect.promise(async () => {
        const response = await handler(new Request(`${ORIGIN}${path}`, init))
        const text = await response.text()
        return { status: response.status, headers: response.headers, json: text === "" ? undefined : JSON.parse(text) }
      })
    )
  )

const now = () => Math.floor(Date.now() / 1000)
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })

describe("RFC 9728 protected resource metadata", () => {
  it.live("serves the root form", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const response = yield* get("/.well-known/oauth-protected-resource")
      assert.strictEqual(response.status, 200)
      assert.deepStrictEqual(response.json, {
        resource: RESOURCE,
        authorization_servers: [server.issuer],
        scopes_supported: ["mcp:tools"],
        bearer_methods_supported: ["header"],
        resource_name: "Janus"
      })
      assert.strictEqual(response.headers.get("access-control-allow-origin"), "*")
      assert.include(response.headers.get("content-type")!, "application/json")
    }))

  it.live("serves the path form for /mcp, with the resource the client used", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const response = yield* get("/.well-known/oauth-protected-resource/mcp")
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.json.resource, `${ORIGIN}/mcp`)
      assert.deepStrictEqual(response.json.authorization_servers, [server.issuer])
      assert.deepStrictEqual(response.json.bearer_methods_supported, ["header"])
    }))

  it.live("serves each virtual server's own document at its path form; 404 for others", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const response = yield* get("/.well-known/oauth-protected-resource/servers/crm/mcp")
      assert.strictEqual(response.status, 200)
      assert.deepStrictEqual(response.json, {
        resource: `${ORIGIN}/servers/crm/mcp`,
        authorization_servers: [server.issuer],
        scopes_supported: ["mcp:tools"],
        bearer_methods_supported: ["header"],
        resource_name: "Janus"
      })
      for (
        const path of [
          "/.well-known/oauth-protected-resource/servers/gone/mcp",
          "/.well-known/oauth-protected-resource/servers/-x/mcp",
          "/.well-known/oauth-protected-resource/servers/a%00b/mcp",
          "/.well-known/oauth-protected-resource/servers/%ED%A0%80/mcp",
          `/.well-known/oauth-protected-resource/servers/${"a".repeat(65)}/mcp`,
          "/.well-known/oauth-protected-resource/servers/crm/sse",
          "/.well-known/oauth-protected-resource/elsewhere"
        ]
      ) {
        assert.strictEqual((yield* get(path)).status, 404, path)
      }
    }))

  it.live("advertises scopes with the first issuer's prefix, and a multi-tenant issuer at its tenant", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server, {
        toolScopes: ["mcp.tools"],
        adminScopes: ["janus.admin"],
        authorizationServers: [
          {
            issuer: `${server.origin}/{tenantid}/v2.0`,
            jwksUri: server.jwksUri,
            tenants: ["72f988bf"],
            scopePrefix: "api://janus/"
          },
          { issuer: server.issuer, jwksUri: server.jwksUri }
        ]
      })
      const response = yield* get("/.well-known/oauth-protected-resource/mcp")
      assert.deepStrictEqual(response.json.authorization_servers, [`${server.origin}/72f988bf/v2.0`, server.issuer])
      // the admin scope is not advertised for /mcp: it belongs to the admin API
      assert.deepStrictEqual(response.json.scopes_supported, ["api://janus/mcp.tools"])
      const challenge = yield* get("/mcp", { method: "POST" })
      assert.include(challenge.headers.get("www-authenticate")!, `scope="api://janus/mcp.tools"`)
    }))

  it.live("builds the document from configuration, never from the Host header", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const response = yield* get("/.well-known/oauth-protected-resource/mcp", {
        headers: { host: "attacker.example", "x-forwarded-host": "attacker.example" }
      })
      assert.strictEqual(response.json.resource, `${ORIGIN}/mcp`)
    }))

  it.live("answers a CORS preflight", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const response = yield* get("/.well-known/oauth-protected-resource/mcp", { method: "OPTIONS" })
      assert.strictEqual(response.status, 204)
      assert.strictEqual(response.headers.get("access-control-allow-methods"), "GET, OPTIONS")
    }))
})

describe("Challenges (RFC 6750 §3, MCP authorization)", () => {
  it.live("401 without a token: resource_metadata and scope, no error code", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const response = yield* get("/mcp", { method: "POST" })
      assert.strictEqual(response.status, 401)
      assert.strictEqual(
        response.headers.get("www-authenticate"),
        `Bearer resource_metadata="${PRM_MCP}", scope="mcp:tools"`
      )
    }))

  it.live("ignores a token in the query string (answered as no token)", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const token = yield* sign(rsa.RS256!, claims(server, now()))
      const accepted = yield* get("/mcp", { method: "POST", ...bearer(token) })
      assert.strictEqual(accepted.status, 200, "the same token is valid in the header")
      const response = yield* get(`/mcp?access_token=${token}`, { method: "POST" })
      assert.strictEqual(response.status, 401)
      assert.notInclude(response.headers.get("www-authenticate")!, "error=")
      const form = yield* get("/mcp", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `access_token=${token}`
      })
      assert.strictEqual(form.status, 401)
    }))

  it.live("treats another scheme (Basic) as no bearer token", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const response = yield* get("/mcp", { method: "POST", headers: { authorization: "Basic dXNlcjpwdw==" } })
      assert.strictEqual(response.status, 401)
      assert.notInclude(response.headers.get("www-authenticate")!, "error=")
    }))

  it.live("401 invalid_token with a short description for a rejected token", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const token = yield* sign(rsa.RS256!, claims(server, now() - 3600))
      const response = yield* get("/mcp", { method: "POST", ...bearer(token) })
      assert.strictEqual(response.status, 401)
      assert.strictEqual(
        response.headers.get("www-authenticate"),
        `Bearer resource_metadata="${PRM_MCP}", scope="mcp:tools", error="invalid_token", error_description="The token has expired"`
      )
      assert.deepStrictEqual(response.json, { error: "invalid_token", error_description: "The token has expired" })
      const malformed = yield* get("/mcp", { method: "POST", headers: { authorization: "Bearer" } })
      assert.strictEqual(malformed.status, 401)
      assert.include(malformed.headers.get("www-authenticate")!, `error="invalid_token"`)
    }))

  it.live("403 insufficient_scope with the required scope for step-up", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const token = yield* sign(rsa.RS256!, claims(server, now(), { scope: "profile" }))
      const response = yield* get("/mcp", { method: "POST", ...bearer(token) })
      assert.strictEqual(response.status, 403)
      const header = response.headers.get("www-authenticate")!
      assert.match(header, /^Bearer /)
      assert.include(header, `error="insufficient_scope"`)
      assert.include(header, `scope="mcp:tools"`)
      assert.include(header, `resource_metadata="${PRM_MCP}"`)
      assert.strictEqual(response.json.error, "insufficient_scope")
    }))

  it.live("admin API: 403 asks for janus:admin and points at the metadata of /mcp (its audience)", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const token = yield* sign(rsa.RS256!, claims(server, now()))
      const response = yield* get("/api/v1/connections", bearer(token))
      assert.strictEqual(response.status, 403)
      assert.strictEqual(
        response.headers.get("www-authenticate"),
        `Bearer resource_metadata="${PRM_MCP}", scope="janus:admin", error="insufficient_scope", error_description="Missing scope janus:admin"`
      )
      const admin = yield* sign(rsa.RS256!, claims(server, now(), { scope: "janus:admin" }))
      assert.strictEqual((yield* get("/api/v1/connections", bearer(admin))).status, 200)
      const forCrm = yield* sign(
        rsa.RS256!,
        claims(server, now(), { scope: "janus:admin", aud: `${ORIGIN}/servers/crm/mcp` })
      )
      assert.strictEqual((yield* get("/api/v1/connections", bearer(forCrm))).status, 401, "a virtual server's token")
    }))

  it.live("a virtual server points at its own metadata and accepts tokens for its URL", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      const get = yield* gateway(server)
      const response = yield* get("/servers/crm/mcp", { method: "POST" })
      assert.strictEqual(response.status, 401)
      assert.include(
        response.headers.get("www-authenticate")!,
        `resource_metadata="${ORIGIN}/.well-known/oauth-protected-resource/servers/crm/mcp"`
      )
      const forCrm = yield* sign(rsa.RS256!, claims(server, now(), { aud: `${ORIGIN}/servers/crm/mcp` }))
      assert.strictEqual((yield* get("/servers/crm/mcp", { method: "POST", ...bearer(forCrm) })).status, 200)
      assert.strictEqual((yield* get("/servers/hr/mcp", { method: "POST", ...bearer(forCrm) })).status, 401)
      assert.strictEqual((yield* get("/mcp", { method: "POST", ...bearer(forCrm) })).status, 401)
      const forMcp = yield* sign(rsa.RS256!, claims(server, now()))
      assert.strictEqual((yield* get("/servers/crm/mcp", { method: "POST", ...bearer(forMcp) })).status, 200)
    }))

  it.live("503 with Retry-After when the signing keys cannot be fetched", () =>
    Effect.gen(function*() {
      const server = yield* authServer()
      server.status.set("/jwks", 500)
      const get = yield* gateway(server)
      const token = yield* sign(rsa.RS256!, claims(server, now()))
      const response = yield* get("/mcp", { method: "POST", ...bearer(token) })
      assert.strictEqual(response.status, 503)
      // when the next fetch may run: the background retry (1 s, doubling) or the on-demand window (30 s)
      const retryAfter = Number(response.headers.get("retry-after"))
      assert.isTrue(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 30, `retry-after ${retryAfter}`)
      assert.isNull(response.headers.get("www-authenticate"))
    }))

  it("keeps quoted values within the RFC 6750 character set", () => {
    const header = wwwAuthenticate({
      resourceMetadataUrl: "https://x/.well-known/oauth-protected-resource",
      scopes: ["a", "b"],
      error: "invalid_token",
      errorDescription: "bad \"quote\" and \\ backslash\r\n"
    })
    assert.strictEqual(
      header,
      `Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b", error="invalid_token", error_description="bad quote and  backslash"`
    )
    const response = challengeResponse(new InvalidToken({ reason: "expired", message: "The token has expired" }), {
      resourceMetadataUrl: "https://x/m",
      scopes: []
    })
    assert.strictEqual(response.status, 401)
    assert.strictEqual(
      Option.getOrUndefined(Headers.get(response.headers, "www-authenticate")),
      `Bearer resource_metadata="https://x/m", error="invalid_token", error_description="The token has expired"`
    )
  })
})

describe("Downstream headers", () => {
  it("never carry the client's token", () => {
    const incoming = Headers.fromInput({
      authorization: "Bearer client-token",
      "proxy-authorization": "Basic x",
      cookie: "session=1",
      accept: "application/json",
      "x-request-id": "r1"
    })
    assert.deepStrictEqual({ ...withoutClientCredentials(incoming) }, {
      accept: "application/json",
      "x-request-id": "r1"
    })
  })
})
