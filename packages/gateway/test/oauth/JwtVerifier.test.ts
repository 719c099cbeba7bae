import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Logger, References } from "effect"
import { TestClock } from "effect/testing"
import { SignJWT } from "jose"
import {
  challengeResponse,
  type InvalidToken,
  type JwksUnavailable,
  JwtVerifier,
  type OAuthOptions,
  type TokenRequirement
} from "../../src/oauth/index.ts"
import {
  attacker,
  authServer,
  type AuthServerOptions,
  b64,
  claims,
  ec256,
  ec384,
  ed,
  eventually,
  everyAlgorithm,
  NOW,
  NOW_MS,
  oauthLayer,
  RESOURCE,
  rotated,
  rotated3,
  rsa,
  rsaPinned,
  sign
} from "./support.ts"

const setup = (options: Partial<OAuthOptions> = {}, serverOptions: AuthServerOptions = {}) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(NOW_MS)
    const server = yield* authServer(serverOptions)
    const context = yield* Layer.build(oauthLayer(server, options))
    const verifier = Context.get(context, JwtVerifier)
    // The start-up fetch runs in the background; wait (in real time) until it landed.
    yield* eventually(() => server.jwksFetches() === 1)
    return { server, verifier }
  })

const rejected = (
  verifier: JwtVerifier["Service"],
  token: string,
  reason: InvalidToken["reason"],
  requirement?: TokenRequirement
) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(verifier.verify(token, requirement))
    assert.strictEqual(error._tag, "InvalidToken", `expected InvalidToken, got ${error._tag}`)
    assert.strictEqual((error as InvalidToken).reason, reason)
    // The error never echoes the token or any of its parts.
    const serialized = JSON.stringify(error) + error.message
    for (const part of token.split(".").filter((p) => p.length > 8)) assert.notInclude(serialized, part)
    return error as InvalidToken
  })

describe("JwtVerifier: valid tokens", () => {
  it.effect.each(everyAlgorithm.map((key) => [key.alg, key] as const))(
    "accepts a valid %s token",
    ([, key]) =>
      Effect.gen(function*() {
        const { server, verifier } = yield* setup()
        const identity = yield* verifier.verify(yield* sign(key, claims(server)))
        assert.strictEqual(identity.subject, "user-1")
        assert.strictEqual(identity.issuer, server.issuer)
        assert.deepStrictEqual(identity.scopes, ["mcp:tools"])
        assert.strictEqual(server.jwksFetches(), 1)
      })
  )

  it.effect("returns the identity: subject, issuer, scopes, clientId, expiry, key", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(
        rsa.RS256!,
        claims(server, NOW, { scope: "mcp:tools janus:admin", client_id: undefined, azp: "spa-client" })
      )
      const identity = yield* verifier.verify(token, { scopes: ["janus:admin"] })
      assert.deepStrictEqual(identity, {
        subject: "user-1",
        issuer: server.issuer,
        clientId: "spa-client",
        scopes: ["mcp:tools", "janus:admin"],
        audience: [RESOURCE],
        expiresAt: NOW + 300,
        // accepted (and open streams kept) until exp plus the default clock skew of 60 s
        acceptedUntil: (NOW + 300 + 60) * 1_000,
        tokenId: "jti-1",
        key: `oauth:${server.issuer}#user-1`
      })
    }))

  it.effect("reads scopes from an scp array", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(ec256, claims(server, NOW, { scope: undefined, scp: ["mcp:tools", "other"] }))
      const identity = yield* verifier.verify(token)
      assert.deepStrictEqual(identity.scopes, ["mcp:tools", "other"])
    }))

  it.effect("accepts an audience array that contains the resource", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { aud: ["https://other.example.com", RESOURCE] }))
      const identity = yield* verifier.verify(token)
      assert.deepStrictEqual(identity.audience, ["https://other.example.com", RESOURCE])
    }))

  it.effect("accepts an audience from OAUTH_AUDIENCES exactly as configured", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup({ additionalAudiences: ["https://janus-api/"] })
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server, NOW, { aud: "https://janus-api/" })))
      yield* rejected(
        verifier,
        yield* sign(rsa.RS256!, claims(server, NOW, { aud: "https://janus-api" })),
        "wrong_audience"
      )
    }))

  it.effect("accepts a token expired by less than the clock skew", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server, NOW - 600, { exp: NOW - 30 }))
      yield* verifier.verify(token)
    }))

  it.effect("accepts nbf and iat slightly ahead, within the clock skew", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { nbf: NOW + 30, iat: NOW + 30 }))
      yield* verifier.verify(token)
    }))

  it.effect("a virtual server's token is accepted for that server only; /mcp tokens there unless turned off", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const crm = "https://janus.example.com/servers/crm/mcp"
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { aud: crm }))
      yield* verifier.verify(token, { resource: crm })
      yield* rejected(verifier, token, "wrong_audience")
      yield* rejected(verifier, token, "wrong_audience", { resource: "https://janus.example.com/servers/hr/mcp" })
      const mcp = yield* sign(rsa.RS256!, claims(server))
      yield* verifier.verify(mcp, { resource: crm })

      const strict = yield* setup({ mcpAudienceOnVirtualServers: false })
      const strictMcp = yield* sign(rsa.RS256!, claims(strict.server))
      yield* rejected(strict.verifier, strictMcp, "wrong_audience", { resource: crm })
      yield* strict.verifier.verify(yield* sign(rsa.RS256!, claims(strict.server, NOW, { aud: crm })), {
        resource: crm
      })
    }))
})

describe("JwtVerifier: refused algorithms", () => {
  it.effect("refuses alg none", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = `${b64({ alg: "none", typ: "JWT" })}.${b64(claims(server))}.`
      yield* rejected(verifier, token, "algorithm_not_allowed")
    }))

  it.effect("refuses alg NONE written in upper case, even with a signature part", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = `${b64({ alg: "NONE", kid: "rsa-1" })}.${b64(claims(server))}.c2lnbmF0dXJl`
      yield* rejected(verifier, token, "algorithm_not_allowed")
    }))

  it.effect.each(["HS256", "HS384", "HS512"])(
    "refuses %s signed with the RSA public key as the secret, without fetching keys",
    (alg) =>
      Effect.gen(function*() {
        const { server, verifier } = yield* setup()
        const secret = new TextEncoder().encode(JSON.stringify(rsa.RS256!.publicJwk))
        const token = yield* Effect.promise(() =>
          new SignJWT(claims(server)).setProtectedHeader({ alg, kid: "rsa-1" }).sign(secret)
        )
        yield* rejected(verifier, token, "algorithm_not_allowed")
        assert.strictEqual(server.jwksFetches(), 1)
      })
  )

  it.effect("refuses an algorithm outside the configured allow-list", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup({ algorithms: ["RS256", "ES256"] })
      yield* verifier.verify(yield* sign(ec256, claims(server)))
      yield* rejected(verifier, yield* sign(ec384, claims(server)), "algorithm_not_allowed")
    }))

  it.effect("refuses an algorithm outside the issuer's own allow-list", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW_MS)
      const server = yield* authServer()
      const context = yield* Layer.build(oauthLayer(server, {
        authorizationServers: [{ issuer: server.issuer, jwksUri: server.jwksUri, algorithms: ["EdDSA"] }]
      }))
      const verifier = Context.get(context, JwtVerifier)
      yield* verifier.verify(yield* sign(ed.EdDSA!, claims(server)))
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server)), "algorithm_not_allowed")
    }))

  it.effect("refuses a key/alg mismatch: ES384 header naming the P-256 key", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(ec384, claims(server), { kid: "ec-256" })
      yield* rejected(verifier, token, "key_mismatch")
      assert.strictEqual(server.jwksFetches(), 1, "a known kid never triggers a refresh")
    }))

  it.effect("refuses a key/alg mismatch: PS256 with an RSA key pinned to RS256", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* verifier.verify(yield* sign(rsaPinned.RS256!, claims(server)))
      yield* rejected(verifier, yield* sign(rsaPinned.PS256!, claims(server)), "key_mismatch")
    }))
})

describe("JwtVerifier: claims", () => {
  it.effect("refuses an untrusted issuer without any network traffic", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { iss: "https://evil.example.com" }))
      yield* rejected(verifier, token, "untrusted_issuer")
      assert.strictEqual(server.jwksFetches(), 1)
    }))

  it.effect("accepts an issuer that differs only by a trailing slash; the identity names it without", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const identity = yield* verifier.verify(
        yield* sign(rsa.RS256!, claims(server, NOW, { iss: `${server.issuer}/` }))
      )
      assert.strictEqual(identity.issuer, server.issuer)
      assert.strictEqual(identity.key, `oauth:${server.issuer}#user-1`)
      yield* rejected(
        verifier,
        yield* sign(rsa.RS256!, claims(server, NOW, { iss: `${server.issuer}//` })),
        "untrusted_issuer"
      )
    }))

  it.effect("refuses a wrong audience", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { aud: "https://other-api.example.com" }))
      yield* rejected(verifier, token, "wrong_audience")
    }))

  // RFC 7519 §4.1.3: StringOrURI values compare as strings, never after URL canonicalisation
  it.effect.each([
    "https://janus.example.com/mcp/",
    "HTTPS://janus.example.com/mcp",
    "https://JANUS.example.com/mcp",
    "https://janus.example.com:443/mcp",
    "https://janus.example.com/mcp#x",
    "https://janus.example.com/mcp?",
    "https://janus.example.com/mcp/../mcp",
    "https://janus.example.com/servers/vs1/mcp/../../../mcp",
    "https://janus.example.com/%6Dcp"
  ])("refuses the audience %s for /mcp: audiences compare exactly", (aud) =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server, NOW, { aud })), "wrong_audience")
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server, NOW, { aud: [aud] })), "wrong_audience")
    }))

  it.effect("refuses a sender-constrained token (cnf: DPoP jkt or mTLS x5t#S256) presented as a bearer token", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      for (
        const cnf of [{ jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" }, {
          "x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"
        }]
      ) {
        const error = yield* rejected(
          verifier,
          yield* sign(rsa.RS256!, claims(server, NOW, { cnf })),
          "sender_constrained"
        )
        assert.include(error.message, "cnf")
        assert.include(error.message, "Bearer")
      }
    }))

  it.effect("refuses a token that lives longer than the maximum lifetime (24 h by default)", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const century = NOW + 100 * 365 * 86_400
      const error = yield* rejected(
        verifier,
        yield* sign(rsa.RS256!, claims(server, NOW, { exp: century })),
        "lifetime_too_long"
      )
      assert.include(error.message, "lives longer")
      // without iat the lifetime counts from now
      yield* rejected(
        verifier,
        yield* sign(rsa.RS256!, claims(server, NOW, { iat: undefined, exp: century })),
        "lifetime_too_long"
      )
      // exactly 24 h is accepted; a second more is not
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server, NOW, { exp: NOW + 86_400 })))
      yield* rejected(
        verifier,
        yield* sign(rsa.RS256!, claims(server, NOW, { exp: NOW + 86_401 })),
        "lifetime_too_long"
      )
      // a token issued an hour ago for 24 h and an hour is too long-lived too
      yield* rejected(
        verifier,
        yield* sign(rsa.RS256!, claims(server, NOW, { iat: NOW - 3_600, exp: NOW + 86_400 })),
        "lifetime_too_long"
      )
    }))

  it.effect("takes the maximum lifetime from maxTokenLifetime", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup({ maxTokenLifetime: "1 hour" })
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server, NOW, { exp: NOW + 3_600 })))
      yield* rejected(
        verifier,
        yield* sign(rsa.RS256!, claims(server, NOW, { exp: NOW + 3_601 })),
        "lifetime_too_long"
      )
    }))

  it.effect("refuses an audience array without the resource", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(
        rsa.RS256!,
        claims(server, NOW, { aud: ["https://a.example.com", "https://janus.example.com"] })
      )
      yield* rejected(verifier, token, "wrong_audience")
    }))

  it.effect("refuses a token without aud", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server, NOW, { aud: undefined })), "missing_claim")
    }))

  it.effect("refuses an expired token", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server, NOW - 3600, { exp: NOW - 61 })), "expired")
    }))

  it.effect("a token valid now expires as the clock moves past exp plus skew", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server))
      yield* verifier.verify(token)
      yield* TestClock.adjust("6 minutes")
      yield* rejected(verifier, token, "expired")
    }))

  it.effect("refuses a token that is not yet valid (nbf beyond the skew)", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server, NOW, { nbf: NOW + 120 })), "not_yet_valid")
    }))

  it.effect("refuses a token issued in the future (iat beyond the skew)", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { iat: NOW + 300, exp: NOW + 900 }))
      yield* rejected(verifier, token, "issued_in_future")
    }))

  it.effect("refuses a token without exp", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server, NOW, { exp: undefined })), "missing_claim")
    }))

  it.effect("refuses a token without sub", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server, NOW, { sub: undefined })), "missing_claim")
    }))

  it.effect("checks typ when requiredTokenType is set (RFC 9068 at+jwt)", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup({ requiredTokenType: "at+jwt" })
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server)))
      yield* rejected(verifier, yield* sign(rsa.RS256!, claims(server), { typ: "JWT" }), "wrong_type")
    }))

  it.effect("answers a missing scope with InsufficientScope listing the required scopes", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { scope: "profile" }))
      const error = yield* Effect.flip(verifier.verify(token))
      assert.strictEqual(error._tag, "InsufficientScope")
      if (error._tag === "InsufficientScope") {
        assert.deepStrictEqual(error.required, ["mcp:tools"])
        assert.deepStrictEqual(error.missing, ["mcp:tools"])
      }
      const admin = yield* Effect.flip(
        verifier.verify(yield* sign(rsa.RS256!, claims(server)), { scopes: ["janus:admin"] })
      )
      assert.strictEqual(admin._tag, "InsufficientScope")
    }))
})

describe("JwtVerifier: signatures and shapes", () => {
  it.effect("refuses a tampered payload", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const [header, , signature] = (yield* sign(rsa.RS256!, claims(server, NOW, { scope: "profile" }))).split(".")
      const forged = `${header}.${b64(claims(server, NOW, { scope: "mcp:tools janus:admin" }))}.${signature}`
      yield* rejected(verifier, forged, "bad_signature")
    }))

  it.effect("refuses a tampered signature", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const [header, payload, signature] = (yield* sign(ec256, claims(server))).split(".")
      const bytes = Buffer.from(signature!, "base64url")
      bytes[10] = bytes[10]! ^ 0xff
      yield* rejected(verifier, `${header}.${payload}.${bytes.toString("base64url")}`, "bad_signature")
    }))

  it.effect("refuses a token signed by another key under a published kid, after one rate-limited refetch", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* rejected(verifier, yield* sign(attacker, claims(server), { kid: "rsa-1" }), "bad_signature")
      assert.strictEqual(server.jwksFetches(), 2, "the key of kid may have new material: one refetch")
      // a flood of forged signatures costs the authorization server nothing more within the window
      for (let i = 0; i < 5; i++) {
        yield* rejected(verifier, yield* sign(attacker, claims(server), { kid: "rsa-1" }), "bad_signature")
      }
      assert.strictEqual(server.jwksFetches(), 2)
      yield* TestClock.adjust("30 seconds")
      yield* rejected(verifier, yield* sign(attacker, claims(server, NOW + 30), { kid: "rsa-1" }), "bad_signature")
      assert.strictEqual(server.jwksFetches(), 3, "one more once the window passed")
    }))

  it.effect("new key material under the same kid: one refetch, then the token is accepted", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      // the authorization server replaces the key of rsa-1 and keeps its kid
      server.keys = [{ ...rotated.publicJwk, kid: "rsa-1" }]
      const identity = yield* verifier.verify(yield* sign(rotated, claims(server), { kid: "rsa-1" }))
      assert.strictEqual(identity.subject, "user-1")
      assert.strictEqual(server.jwksFetches(), 2)
      // known from now on: no further fetch
      yield* verifier.verify(yield* sign(rotated, claims(server), { kid: "rsa-1" }))
      assert.strictEqual(server.jwksFetches(), 2)
    }))

  it.effect("refuses a token whose header embeds its own key (jwk header is ignored)", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup({ jwksMinRefreshInterval: "1 second" })
      yield* TestClock.adjust("2 seconds")
      const token = yield* sign(attacker, claims(server), { kid: "rsa-evil", jwk: attacker.publicJwk })
      yield* rejected(verifier, token, "unknown_key")
    }))

  it.effect.each(
    [
      ["empty", ""],
      ["one part", "abc"],
      ["two parts", "abc.def"],
      ["five parts (JWE)", "a.b.c.d.e"],
      ["bad base64 header", "!!!.eyJ9.sig"],
      ["header not JSON", `${Buffer.from("not json").toString("base64url")}.${b64({})}.c2ln`],
      ["payload not JSON", `${b64({ alg: "RS256" })}.${Buffer.from("nope").toString("base64url")}.c2ln`],
      ["header without alg", `${b64({ typ: "JWT" })}.${b64({ iss: "x" })}.c2ln`],
      ["signature missing", `${b64({ alg: "RS256", kid: "rsa-1" })}.${b64({ iss: "x" })}.`],
      ["whitespace inside", "abc. def.ghi"]
    ] as const
  )("refuses a malformed token: %s", ([, token]) =>
    Effect.gen(function*() {
      const { verifier } = yield* setup()
      yield* rejected(verifier, token, "malformed")
    }))

  it.effect("accepts a 12 KiB token by default (a Keycloak token with many roles)", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const roles = Array.from({ length: 500 }, (_, i) => `realm-role-${String(i).padStart(4, "0")}`)
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { realm_access: { roles } }))
      assert.isAbove(token.length, 12 * 1024)
      const identity = yield* verifier.verify(token)
      assert.strictEqual(identity.subject, "user-1")
    }))

  it.effect("refuses a token longer than maxTokenLength", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup({ maxTokenLength: 1024 })
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { padding: "x".repeat(2000) }))
      yield* rejected(verifier, token, "too_large")
    }))
})

describe("JwtVerifier: unknown kid and key rotation", () => {
  it.effect("an unknown kid causes exactly one JWKS refetch; within the next 30 s it is refused without another", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      // the start-up fetch is a background one: it leaves the on-demand budget whole
      yield* rejected(verifier, yield* sign(rotated, claims(server)), "unknown_key")
      assert.strictEqual(server.jwksFetches(), 2, "exactly one refetch")

      // the key set was fetched moments ago and is current: a key it lacks is refused (401), not 503
      yield* TestClock.adjust("10 seconds")
      for (const key of [rotated3, attacker]) {
        yield* rejected(verifier, yield* sign(key, claims(server, NOW + 10)), "unknown_key")
      }
      assert.strictEqual(server.jwksFetches(), 2, "no refetch within the rate-limit window")

      yield* TestClock.adjust("20 seconds")
      yield* rejected(verifier, yield* sign(attacker, claims(server, NOW + 30)), "unknown_key")
      assert.strictEqual(server.jwksFetches(), 3, "one more refetch once the window passed")
    }))

  it.effect("the key endpoint down during a rotation: 503 with Retry-After, accepted after recovery", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* TestClock.adjust("31 seconds")
      // the authorization server rotates to a new key while its JWKS endpoint fails
      server.keys = [rotated.publicJwk]
      server.status.set("/jwks", 503)
      const token = yield* sign(rotated, claims(server, NOW + 31))
      const down = yield* Effect.flip(verifier.verify(token))
      assert.strictEqual(down._tag, "JwksUnavailable")
      assert.strictEqual((down as JwksUnavailable).retryAfterMs, 30_000)
      const response = challengeResponse(down, { resourceMetadataUrl: "https://janus.example.com/x", scopes: [] })
      assert.strictEqual(response.status, 503)
      assert.strictEqual(response.headers["retry-after"], "30")
      assert.isUndefined(response.headers["www-authenticate"], "not a reason to re-authorise")
      // tokens signed with a held key still pass meanwhile
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server, NOW + 31)))
      assert.strictEqual(server.jwksFetches(), 2)

      server.status.delete("/jwks")
      yield* TestClock.adjust("15 seconds")
      const early = yield* Effect.flip(verifier.verify(yield* sign(rotated, claims(server, NOW + 46))))
      assert.strictEqual((early as JwksUnavailable).retryAfterMs, 15_000)
      yield* TestClock.adjust("15 seconds")
      const identity = yield* verifier.verify(yield* sign(rotated, claims(server, NOW + 61)))
      assert.strictEqual(identity.subject, "user-1")
      assert.strictEqual(server.jwksFetches(), 3)
    }))

  it.effect("a rotated-in key is picked up by the unknown-kid refresh", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* TestClock.adjust("31 seconds")
      server.keys = [...server.keys, rotated.publicJwk]
      const identity = yield* verifier.verify(yield* sign(rotated, claims(server, NOW + 31)))
      assert.strictEqual(identity.subject, "user-1")
      assert.strictEqual(server.jwksFetches(), 2)
      // Known from now on: no further fetch.
      yield* verifier.verify(yield* sign(rotated, claims(server, NOW + 31)))
      assert.strictEqual(server.jwksFetches(), 2)
    }))

  it.effect("concurrent tokens with unknown kids share one fetch", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      yield* TestClock.adjust("31 seconds")
      server.keys = [...server.keys, rotated.publicJwk]
      const tokens = yield* Effect.forEach([rotated, rotated3, attacker, rotated, rotated3], (key) =>
        sign(key, claims(server, NOW + 31)))
      const fibers = yield* Effect.forEach(tokens, (token) =>
        Effect.forkChild(Effect.result(verifier.verify(token))))
      const results = yield* Fiber.joinAll(fibers)
      assert.strictEqual(server.jwksFetches(), 2, "one shared fetch")
      assert.deepStrictEqual(results.map((r) => r._tag), ["Success", "Failure", "Failure", "Success", "Failure"])
    }))
})

describe("JwtVerifier: the refusal log", () => {
  /** The JSON log lines written while `effect` runs. */
  const logged = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logger = Logger.map(Logger.formatJson, (line) => void lines.push(line))
      yield* Effect.ignore(effect.pipe(
        Effect.provideService(Logger.CurrentLoggers, new Set([logger])),
        Effect.provideService(References.MinimumLogLevel, "All")
      ))
      return lines
    })

  it.effect("names the reason, what the token carried and what was expected; never the token", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup()
      const token = yield* sign(rsa.RS256!, claims(server, NOW, { aud: "https://elsewhere.example.com", roles: ["x"] }))
      const [line] = yield* logged(verifier.verify(token))
      const entry = JSON.parse(line!)
      assert.strictEqual(entry.message, "OAuth access token refused")
      assert.strictEqual(entry.level, "INFO")
      assert.deepStrictEqual(entry.annotations, {
        reason: "wrong_audience",
        detail: "The token was not issued for this resource",
        issuer: server.issuer,
        audience: "https://elsewhere.example.com",
        scopes: ["mcp:tools"],
        claims: ["aud", "client_id", "exp", "iat", "iss", "jti", "roles", "scope", "sub"],
        kid: "rsa-1",
        alg: "RS256",
        resource: RESOURCE,
        expected_audience: [RESOURCE],
        required_scopes: ["mcp:tools"],
        scope_claims: ["scope", "scp"]
      })
      for (const part of token.split(".")) assert.notInclude(line!, part)
    }))

  it.effect("bounds hostile claim values: long, many, NUL, lone surrogates, numbers and objects", () =>
    Effect.gen(function*() {
      const { server, verifier } = yield* setup({ maxTokenLength: 65_536 })
      const token = yield* sign(rsa.RS256!, {
        ...claims(server),
        iss: `https://evil.example.com/${"a".repeat(5_000)}\u0000\ud800`,
        aud: Array.from({ length: 500 }, (_, i) => `aud-${i}\u0000`),
        scope: 1e308,
        scp: { nested: "object" },
        ...Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`claim_${i}`, i]))
      })
      const error = yield* Effect.flip(verifier.verify(token))
      assert.strictEqual(error._tag, "InvalidToken")
      const [line] = yield* logged(verifier.verify(token))
      assert.isBelow(line!.length, 4_000, "one bounded line")
      const entry = JSON.parse(line!)
      assert.strictEqual(entry.annotations.reason, "untrusted_issuer")
      assert.strictEqual(entry.annotations.issuer.length, 201)
      assert.strictEqual(entry.annotations.audience.length, 21)
      assert.strictEqual(entry.annotations.audience[20], "… (500 in all)")
      assert.deepStrictEqual(entry.annotations.scopes, [])
      assert.strictEqual(entry.annotations.claims.length, 40)
      assert.deepStrictEqual(entry.annotations.trusted_issuers, [server.issuer])
    }))
})
