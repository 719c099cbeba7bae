/**
 * Structured JSON logs: correlation fields, level, and no secret, ever.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { JwtVerifier } from "../../src/oauth/index.ts"
import { Logging } from "../../src/observability/index.ts"
import { authServer, claims, eventually, NOW, NOW_MS, oauthLayer, rsa, sign } from "../oauth/support.ts"

const SECRETS = {
  redacted: "s3cr3t-value-123",
  bearer: "abcDEF1234567890ghijkl",
  admin: "jna_T3XeSTdf8jzkfWjn4CP5mKbXJivV_6PzEqO7EmB3H_Y",
  client: "jns_Qm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA",
  jwt: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVz",
  urlPassword: "hunter2pw",
  apiKey: "AKIAEXAMPLEKEY123",
  annotated: "p4ssw0rd-annotation",
  cookie: "session=abcdef0123456789"
}

const capture = <A, E>(self: Effect.Effect<A, E>, level: Logging.Level = "info") =>
  Effect.suspend(() => {
    const lines: Array<string> = []
    return self.pipe(
      Effect.provide(Logging.layer({ level, write: (line) => lines.push(line) })),
      Effect.as(lines)
    )
  })

describe("Logging", () => {
  it.effect("never writes a secret, a token or a Redacted value", () =>
    Effect.gen(function*() {
      const lines = yield* capture(Effect.gen(function*() {
        yield* Effect.logInfo("connecting with", Redacted.make(SECRETS.redacted))
        yield* Effect.logInfo({ downstream: "pets", secret: Redacted.make(SECRETS.redacted) })
        yield* Effect.logInfo(`forwarding Authorization: Bearer ${SECRETS.bearer}`)
        yield* Effect.logWarning(`admin token ${SECRETS.admin} and client token ${SECRETS.client} seen`)
        yield* Effect.logWarning(`jwt ${SECRETS.jwt} rejected`)
        yield* Effect.logError(
          "database unreachable",
          new Error(`connect postgres://janus:${SECRETS.urlPassword}@db:5432/janus failed`)
        )
        yield* Effect.logInfo(`GET /v1/things?api_key=${SECRETS.apiKey}&page=2`)
        yield* Effect.logInfo("annotated").pipe(
          Effect.annotateLogs({
            authorization: `Bearer ${SECRETS.bearer}`,
            password: SECRETS.annotated,
            cookie: SECRETS.cookie,
            tool: "get_pet"
          })
        )
        yield* Effect.fail(new Error(`token=${SECRETS.bearer}`)).pipe(
          Effect.catchCause((cause) => Effect.logError("call failed", cause))
        )
      }))
      assert.strictEqual(lines.length, 9)
      const text = lines.join("\n")
      for (const [name, secret] of Object.entries(SECRETS)) assert.notInclude(text, secret, `${name} was logged`)
      assert.include(text, "<redacted>")
      // Everything else survives, as JSON.
      const records = lines.map((line) => JSON.parse(line))
      assert.strictEqual(records[0].message[0], "connecting with")
      assert.strictEqual(records[7].annotations.tool, "get_pet")
      assert.strictEqual(records[7].annotations.authorization, "<redacted>")
      assert.include(records[6].message, "page=2")
      assert.include(records[5].message[1].message ?? JSON.stringify(records[5]), "@db:5432/janus")
    }))

  it.effect("adds trace_id, span_id and request_id, and honours the level", () =>
    Effect.gen(function*() {
      const lines = yield* capture(
        Effect.gen(function*() {
          yield* Effect.logDebug("not at info")
          yield* Effect.logInfo("outside a span")
          yield* Effect.logInfo("inside").pipe(Effect.annotateLogs("request_id", "req-42"), Effect.withSpan("work"))
        }),
        "info"
      )
      const records = lines.map((line) => JSON.parse(line))
      assert.deepStrictEqual(records.map((r) => r.message), ["outside a span", "inside"])
      assert.isUndefined(records[0].trace_id)
      assert.match(records[1].trace_id, /^[0-9a-f]{32}$/)
      assert.match(records[1].span_id, /^[0-9a-f]{16}$/)
      assert.strictEqual(records[1].request_id, "req-42")
      assert.strictEqual(records[1].level, "INFO")
      const debug = yield* capture(Effect.logDebug("now visible"), "debug")
      assert.strictEqual(debug.length, 1)
    }))

  it("scrub keeps ordinary text", () => {
    assert.strictEqual(Logging.scrub("GET /pets/7 answered 200 in 12 ms"), "GET /pets/7 answered 200 in 12 ms")
    assert.strictEqual(Logging.scrub("Bearer realm=\"janus\""), "Bearer realm=\"janus\"")
  })

  it.effect("keeps the words after \"token\" in the gateway's refusal lines, and still scrubs a real token", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW_MS)
      const server = yield* authServer()
      const verifier = Context.get(yield* Layer.build(oauthLayer(server)), JwtVerifier)
      yield* eventually(() => server.jwksFetches() === 1)
      const tokens = [
        yield* sign(rsa.RS256!, claims(server, NOW, { aud: "https://elsewhere.example.com" })),
        yield* sign(rsa.RS256!, claims(server, NOW, { iss: "https://untrusted.example.com" })),
        yield* sign(rsa.RS256!, claims(server, NOW, { iss: undefined }))
      ]
      const lines = yield* capture(Effect.gen(function*() {
        for (const token of tokens) yield* Effect.ignore(verifier.verify(token))
        yield* Effect.logInfo(`retrying with Authorization: Bearer ${tokens[0]}`)
        yield* Effect.logInfo(`upstream answered 401 to Bearer ${SECRETS.bearer}; token refused`)
      }))
      const records = lines.map((line) => JSON.parse(line))
      // The phrase the README tells operators to search for, and each detail, verbatim.
      const refusals = records.filter((r) => r.message === "OAuth access token refused")
      assert.deepStrictEqual(refusals.map((r) => r.annotations.detail), [
        "The token was not issued for this resource",
        "The token issuer is not trusted",
        "The token has no iss claim"
      ])
      // A real bearer token is still scrubbed, the scheme and the prose around it kept.
      assert.strictEqual(records.at(-2).message, "retrying with Authorization: Bearer <redacted>")
      assert.strictEqual(records.at(-1).message, "upstream answered 401 to Bearer <redacted>; token refused")
      const text = lines.join("\n")
      for (const token of tokens) for (const part of token.split(".")) assert.notInclude(text, part)
      assert.notInclude(text, SECRETS.bearer)
    }))

  it("scrub judges the value after Bearer, Basic, Token and token: by its shape, not by the word before it", () => {
    for (
      const prose of [
        "OAuth access token refused",
        "OAuth access token expired",
        "A bearer token is required",
        "Expected an admin token or an OAuth access token with the admin scope",
        "The token algorithm is not allowed for its issuer",
        "A token holding open streams could not be read",
        "Use Basic authentication over TLS only",
        "Token Expired",
        "token: expired",
        "secret: rotated."
      ]
    ) assert.strictEqual(Logging.scrub(prose), prose)
    assert.strictEqual(Logging.scrub("Authorization: Basic dXNlcjpwYXNz"), "Authorization: Basic <redacted>")
    assert.strictEqual(Logging.scrub("Authorization: token 0123456789abcdef"), "Authorization: token <redacted>")
    assert.strictEqual(Logging.scrub("BEARER abcDEFghiJKL"), "BEARER <redacted>")
    assert.strictEqual(Logging.scrub("token: s3cr3t-value"), "token: <redacted>")
    assert.strictEqual(Logging.scrub("token=expired"), "token=<redacted>")
  })
})
