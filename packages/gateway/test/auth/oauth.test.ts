/**
 * Admission with the OAuth resource server on: JWTs checked against the
 * cached JWKS of a loopback authorization server, the OAuth challenges, and
 * client tokens still accepted alongside.
 */
import { assert, describe, layer } from "@effect/vitest"
import { ClientTokens } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Effect, Layer, Redacted } from "effect"
import { attacker, authServer, claims, eventually, oauthLayer, rsa, sign } from "../oauth/support.ts"
import { admission, assertClean, refusal, request, unique } from "./support.ts"

const METADATA = "https://janus.example.com/.well-known/oauth-protected-resource/mcp"

/** Seconds since the epoch, real time (these tests run on the live clock). */
const now = () => Math.floor(Date.now() / 1_000)

const setup = Effect.gen(function*() {
  const server = yield* authServer()
  const oauth = yield* Layer.build(oauthLayer(server))
  yield* eventually(() => server.jwksFetches() === 1)
  const admit = yield* admission({ oauth: true }).pipe(Effect.provide(oauth))
  return { server, admit }
})

describe("Admission with OAuth", () => {
  layer(StorageTesting.layerMemory(), { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("a valid JWT is admitted as its OAuth identity (iss#sub), unrestricted in tools", () =>
      Effect.gen(function*() {
        const { admit, server } = yield* setup
        const token = yield* sign(rsa.RS256!, claims(server, now()))
        const caller = yield* admit.admit(request({ token }))
        assert.strictEqual(caller.kind, "oauth")
        assert.strictEqual(caller.id, `oauth:${server.issuer}#user-1`)
        assert.strictEqual(caller.name, "user-1")
        assert.deepStrictEqual(caller.scopes, ["mcp:tools"])
        assert.isNull(caller.tools)
        assert.notInclude(caller.id, token)
      }))

    it.effect("no credential: 401 with the OAuth challenge (resource_metadata, scope)", () =>
      Effect.gen(function*() {
        const { admit } = yield* setup
        const refused = yield* refusal(admit.admit(request()))
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(
          refused.headers?.["www-authenticate"],
          `Bearer resource_metadata="${METADATA}", scope="mcp:tools"`
        )
        assert.match(refused.message, /OAuth access token/)
      }))

    it.effect("a bad JWT is 401 invalid_token; a JWT without the tool scope is 403 insufficient_scope", () =>
      Effect.gen(function*() {
        const { admit, server } = yield* setup
        const forged = yield* sign(attacker, claims(server, now()), { kid: rsa.RS256!.kid })
        const bad = yield* refusal(admit.admit(request({ token: forged })))
        assert.strictEqual(bad.status, 401)
        assert.match(bad.headers?.["www-authenticate"] ?? "", /resource_metadata=.*error="invalid_token"/)
        assertClean(bad, forged.split("."))

        const expired = yield* sign(rsa.RS256!, claims(server, now() - 3_600))
        const old = yield* refusal(admit.admit(request({ token: expired })))
        assert.strictEqual(old.status, 401)
        assert.strictEqual(old.message, "The token has expired")

        const narrow = yield* sign(rsa.RS256!, claims(server, now(), { scope: "profile" }))
        const step = yield* refusal(admit.admit(request({ token: narrow })))
        assert.strictEqual(step.status, 403)
        assert.match(step.headers?.["www-authenticate"] ?? "", /error="insufficient_scope"/)
        assert.match(step.headers?.["www-authenticate"] ?? "", /scope="mcp:tools"/)
      }))

    it.effect("client tokens still work; an unknown one gets the OAuth-style challenge", () =>
      Effect.gen(function*() {
        const { admit } = yield* setup
        const { plaintext, token } = yield* ClientTokens.use((t) => t.create({ name: unique("ci") }))
        const caller = yield* admit.admit(request({ token: Redacted.value(plaintext) }))
        assert.strictEqual(caller.id, `token:${token.id}`)

        const refused = yield* refusal(admit.admit(request({ token: `jns_${"D".repeat(43)}` })))
        assert.strictEqual(refused.status, 401)
        assert.match(refused.headers?.["www-authenticate"] ?? "", /^Bearer resource_metadata=".*error="invalid_token"/)

        const neither = yield* refusal(admit.admit(request({ token: "opaque-token-0123456789" })))
        assert.strictEqual(neither.status, 401)
        assert.match(neither.message, /neither a Janus client token .* nor a signed JWT/)
      }))

    it.effect("the issuer's keys unavailable: 503 with Retry-After, not a re-authorization", () =>
      Effect.gen(function*() {
        const server = yield* authServer()
        server.status.set("/jwks", 500)
        const oauth = yield* Layer.build(oauthLayer(server))
        const admit = yield* admission({ oauth: true }).pipe(Effect.provide(oauth))
        const token = yield* sign(rsa.RS256!, claims(server, now()))
        const refused = yield* refusal(admit.admit(request({ token })))
        assert.strictEqual(refused.status, 503)
        assert.isDefined(refused.headers?.["retry-after"])
        assert.isUndefined(refused.headers?.["www-authenticate"])
        assertClean(refused, [token])
      }))

    it.effect("two access tokens of one subject share one identity bucket; another subject has its own", () =>
      Effect.gen(function*() {
        const server = yield* authServer()
        const oauth = yield* Layer.build(oauthLayer(server))
        yield* eventually(() => server.jwksFetches() === 1)
        const admit = yield* admission({ oauth: true, limits: { identity: { rate: 0.001, burst: 3 } } }).pipe(
          Effect.provide(oauth)
        )
        // two different bearer strings for user-1 (another jti, another client), each from its own address
        const first = yield* sign(rsa.RS256!, claims(server, now(), { jti: "jti-a" }))
        const second = yield* sign(rsa.RS256!, claims(server, now(), { jti: "jti-b", client_id: "client-2" }))
        assert.notStrictEqual(first, second)
        for (let i = 0; i < 2; i++) yield* admit.admit(request({ token: first, ip: "198.51.100.70" }))
        yield* admit.admit(request({ token: second, ip: "198.51.100.71" }))
        // the bucket of user-1 (burst 3) is empty, whichever of its tokens is presented
        for (const token of [second, first]) {
          const refused = yield* refusal(admit.admit(request({ token, ip: "198.51.100.72" })))
          assert.strictEqual(refused.status, 429)
          assert.match(refused.message, /^Too many requests for this identity/)
        }
        const other = yield* sign(rsa.RS256!, claims(server, now(), { sub: "user-2", jti: "jti-c" }))
        assert.strictEqual((yield* admit.admit(request({ token: other, ip: "198.51.100.72" }))).name, "user-2")
      }))
  })
})
