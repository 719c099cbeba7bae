import { assert, layer } from "@effect/vitest"
import { AdminTokens, ClientTokens } from "@janus/storage"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { type AuthServer, authServer, claims, oauthLayer, rsa, sign } from "../oauth/support.ts"
import { adminToken, call, client, expectStatus } from "./support.ts"
import * as Support from "./support.ts"

layer(Support.layer(), Support.suiteOptions)("admin API authentication (admin tokens)", (it) => {
  it.effect("no credentials: 401 with a Bearer challenge, and nothing about the route", () =>
    Effect.gen(function*() {
      for (
        const [method, path] of [["GET", "/api/v1/connections"], ["POST", "/api/v1/secrets/x"], ["GET", "/api/v1/nope"]]
      ) {
        const reply = expectStatus(yield* call(method!, path!), 401, "unauthorized")
        assert.strictEqual(reply.headers["www-authenticate"], `Bearer realm="janus-admin"`)
        assert.strictEqual(reply.headers["cache-control"], "no-store")
      }
    }))

  it.effect("a wrong, malformed or client token: 401 invalid_token, never echoing the token", () =>
    Effect.gen(function*() {
      const clientToken = yield* Effect.map(
        Effect.flatMap(Effect.service(ClientTokens), (tokens) => tokens.create({ name: "a client" })),
        (created) => Redacted.value(created.plaintext)
      )
      const wrong = "jna_" + "A".repeat(43)
      for (const token of [wrong, "jna_short", clientToken, "not-a-janus-token", "a.b.c"]) {
        const reply = expectStatus(yield* call("GET", "/api/v1/connections", { token }), 401, "invalid_token")
        assert.include(reply.headers["www-authenticate"]!, `error="invalid_token"`)
        assert.notInclude(reply.text, token)
        assert.notInclude(reply.headers["www-authenticate"]!, token)
      }
      const basic = yield* call("GET", "/api/v1/connections", { headers: { authorization: "Basic dXNlcjpwYXNz" } })
      expectStatus(basic, 401, "unauthorized")
      const malformed = yield* call("GET", "/api/v1/connections", { headers: { authorization: "Bearer a b c" } })
      expectStatus(malformed, 401, "invalid_token")
    }))

  it.effect("a valid admin token: 200; revoked: 401 at once", () =>
    Effect.gen(function*() {
      const token = yield* adminToken("to revoke")
      const other = yield* adminToken("keeper")
      expectStatus(yield* client(token).get("/api/v1/connections"), 200)
      const tokens = yield* AdminTokens
      const id = Option.getOrThrow(yield* tokens.verify(token)).id
      expectStatus(yield* client(other).post(`/api/v1/admin-tokens/${id}/revoke`), 200)
      expectStatus(yield* client(token).get("/api/v1/connections"), 401, "invalid_token")
    }))

  it.effect("admin tokens: created with the plaintext once; list and get never show it or a hash", () =>
    Effect.gen(function*() {
      const api = client(yield* adminToken())
      const created = expectStatus(yield* api.post("/api/v1/admin-tokens", { name: "ci pipeline" }), 201)
      const plaintext: string = created.body.token
      assert.match(plaintext, /^jna_[A-Za-z0-9_-]{43}$/)
      assert.strictEqual(created.body.name, "ci pipeline")
      assert.strictEqual(created.body.active, true)
      assert.isTrue(plaintext.startsWith(created.body.prefix))
      assert.strictEqual(created.headers.location, `/api/v1/admin-tokens/${created.body.id}`)
      assert.strictEqual(created.headers["cache-control"], "no-store")
      // the new token works
      expectStatus(yield* client(plaintext).get("/api/v1/admin-tokens"), 200)

      const one = expectStatus(yield* api.get(`/api/v1/admin-tokens/${created.body.id}`), 200)
      const list = expectStatus(yield* api.get("/api/v1/admin-tokens"), 200)
      for (const reply of [one, list]) {
        assert.notInclude(reply.text, plaintext)
        assert.notInclude(reply.text.toLowerCase(), "hash")
        assert.notProperty(one.body, "token")
      }
      assert.deepStrictEqual(Object.keys(one.body).sort(), [
        "active",
        "createdAt",
        "id",
        "lastUsedAt",
        "name",
        "prefix",
        "revokedAt"
      ])
      expectStatus(yield* api.get("/api/v1/admin-tokens/00000000-0000-0000-0000-000000000000"), 404, "not_found")
      expectStatus(yield* api.post("/api/v1/admin-tokens", { name: "" }), 400, "invalid_input")
      expectStatus(yield* api.post("/api/v1/admin-tokens/not-a-uuid/revoke"), 404, "not_found")
      // no delete: admin tokens stay for the audit trail
      expectStatus(yield* api.del(`/api/v1/admin-tokens/${created.body.id}`), 405, "method_not_allowed")
    }))
})

layer(Support.layer(), Support.suiteOptions)("the last active admin token", (it) => {
  it.effect("cannot be revoked (409), so no one is locked out; revoking is idempotent", () =>
    Effect.gen(function*() {
      const tokens = yield* AdminTokens
      const token = yield* adminToken("only one")
      const api = client(token)
      const self = Option.getOrThrow(yield* tokens.verify(token))
      assert.strictEqual(yield* tokens.count, 1)
      const refused = expectStatus(yield* api.post(`/api/v1/admin-tokens/${self.id}/revoke`), 409, "last_admin_token")
      assert.include(refused.body.error.message, "last active admin token")
      expectStatus(yield* api.get("/api/v1/connections"), 200)

      // with a second token the first can go; then the second is the last one
      const second = yield* api.post("/api/v1/admin-tokens", { name: "successor" })
      const revoked = expectStatus(yield* api.post(`/api/v1/admin-tokens/${self.id}/revoke`), 200)
      assert.strictEqual(revoked.body.active, false)
      const successor = client(second.body.token)
      expectStatus(yield* successor.post(`/api/v1/admin-tokens/${second.body.id}/revoke`), 409, "last_admin_token")
      // revoking an already revoked token changes nothing and is allowed
      const again = expectStatus(yield* successor.post(`/api/v1/admin-tokens/${self.id}/revoke`), 200)
      assert.strictEqual(again.body.revokedAt, revoked.body.revokedAt)
    }))

  it.effect("concurrent revocations of the last two tokens leave one active", () =>
    Effect.gen(function*() {
      const tokens = yield* AdminTokens
      const api = client(yield* adminToken("one of two"))
      const active = (yield* tokens.list).filter((t) => t.revokedAt === null)
      assert.strictEqual(active.length, 2)
      const replies = yield* Effect.forEach(
        active,
        (t) => api.post(`/api/v1/admin-tokens/${t.id}/revoke`),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(replies.map((r) => r.status).sort(), [200, 409])
      assert.strictEqual(yield* tokens.count, 1)
    }))
})

/** The loopback authorization server of the OAuth suite. */
class TestAuthServer extends Context.Service<TestAuthServer, AuthServer>()("test/admin/TestAuthServer") {}

const withOAuth = Layer.unwrap(
  Effect.map(Effect.service(TestAuthServer), (server) => Support.layer(oauthLayer(server)))
).pipe(Layer.provideMerge(Layer.effect(TestAuthServer, authServer())))

// Real clock (no TestClock): the tokens carry real times and the verifier reads the clock.
layer(withOAuth, { timeout: 60_000, excludeTestServices: true })(
  "admin API authentication with OAuth configured",
  (it) => {
    it.effect("a JWT with the admin scope is accepted; without it 403; no token 401 with resource metadata", () =>
      Effect.gen(function*() {
        const server = yield* TestAuthServer
        const now = Math.floor(Date.now() / 1000)
        const admin = yield* sign(rsa.RS256!, claims(server, now, { scope: "janus:admin" }))
        const toolsOnly = yield* sign(rsa.RS256!, claims(server, now, { scope: "mcp:tools" }))
        const expired = yield* sign(rsa.RS256!, claims(server, now - 3600, { scope: "janus:admin" }))

        expectStatus(yield* call("GET", "/api/v1/connections", { token: admin }), 200)

        const forbidden = expectStatus(
          yield* call("GET", "/api/v1/connections", { token: toolsOnly }),
          403,
          "insufficient_scope"
        )
        assert.include(forbidden.headers["www-authenticate"]!, `scope="janus:admin"`)
        assert.include(forbidden.headers["www-authenticate"]!, `error="insufficient_scope"`)

        const stale = expectStatus(yield* call("GET", "/api/v1/connections", { token: expired }), 401, "invalid_token")
        assert.notInclude(stale.text, expired)
        assert.include(stale.headers["www-authenticate"]!, `error="invalid_token"`)

        const none = expectStatus(yield* call("GET", "/api/v1/connections"), 401, "unauthorized")
        assert.include(none.headers["www-authenticate"]!, `resource_metadata="https://janus.example.com/`)
        assert.include(none.headers["www-authenticate"]!, `scope="janus:admin"`)

        // admin tokens still work beside OAuth, and a bad one gets the OAuth challenge
        expectStatus(yield* call("GET", "/api/v1/connections", { token: yield* adminToken() }), 200)
        const wrong = yield* call("GET", "/api/v1/connections", { token: "jna_" + "B".repeat(43) })
        expectStatus(wrong, 401, "invalid_token")
        assert.include(wrong.headers["www-authenticate"]!, "resource_metadata=")
      }))
  }
)

layer(Support.layer(), Support.suiteOptions)("tokens in the wrong place", (it) => {
  it.effect("a token used as an id or name is masked in error messages", () =>
    Effect.gen(function*() {
      const token = yield* adminToken()
      const c = client(token)
      const created = (yield* c.post("/api/v1/client-tokens", { name: "leaky" })).body.token as string
      for (const path of [`/api/v1/client-tokens/${created}`, `/api/v1/admin-tokens/${token}/revoke`]) {
        const reply = yield* c.call(path.endsWith("revoke") ? "POST" : "GET", path)
        expectStatus(reply, 404, "not_found")
        assert.notInclude(reply.text, created)
        assert.notInclude(reply.text, token)
        assert.include(reply.text, "_…")
      }
    }))
})
