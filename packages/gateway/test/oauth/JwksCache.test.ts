import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Metric } from "effect"
import { FetchHttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  discover,
  discoveryUrls,
  type InvalidToken,
  JwksCache,
  type JwksUnavailable,
  JwtVerifier,
  OAuthLayer,
  type OAuthOptions
} from "../../src/oauth/index.ts"
import * as Metrics from "../../src/observability/Metrics.ts"
import {
  type AuthServer,
  authServer,
  type AuthServerOptions,
  claims,
  ec256,
  eventually,
  eventuallyEffect,
  NOW,
  NOW_MS,
  oauthLayer,
  publishedKeys,
  RESOURCE,
  rotated,
  rsa,
  settle,
  sign
} from "./support.ts"

/** `verify` fails with an `InvalidToken` for `reason`. */
const rejected = (verifier: JwtVerifier["Service"], token: string, reason: InvalidToken["reason"]) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(verifier.verify(token))
    assert.strictEqual(error._tag, "InvalidToken")
    assert.strictEqual((error as InvalidToken).reason, reason)
  })

/** Waits until the background fetches reached `fetches` attempts and the fiber sleeps again. */
const fetched = (cache: JwksCache["Service"], fetches: number) =>
  eventuallyEffect(Effect.map(cache.status, ([status]) => status!.fetches >= fetches)).pipe(Effect.andThen(settle(20)))

const build = (server: AuthServer, options: Partial<OAuthOptions> = {}) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(oauthLayer(server, options))
    return { verifier: Context.get(context, JwtVerifier), cache: Context.get(context, JwksCache) }
  })

/** A layer whose issuer has no configured JWKS URI, so it is discovered. */
const discovering = (server: AuthServer) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      OAuthLayer({ resource: RESOURCE, authorizationServers: [{ issuer: server.issuer }] }).pipe(
        Layer.provide(FetchHttpClient.layer)
      )
    )
    return { verifier: Context.get(context, JwtVerifier), cache: Context.get(context, JwksCache) }
  })

const start = (options: AuthServerOptions = {}) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(NOW_MS)
    return yield* authServer(options)
  })

describe("JwksCache", () => {
  it.effect("fetches every issuer's keys once at start, in the background", () =>
    Effect.gen(function*() {
      const server = yield* start()
      const { cache, verifier } = yield* build(server)
      yield* eventually(() => server.jwksFetches() === 1)
      const lookups = (result: "hit" | "miss") =>
        Effect.map(
          Metric.value(Metric.withAttributes(Metrics.cacheLookups, { cache: "jwks", result })),
          (state) => Number(state.count)
        )
      const [hits, misses] = [yield* lookups("hit"), yield* lookups("miss")]
      for (let i = 0; i < 20; i++) yield* verifier.verify(yield* sign(rsa.RS256!, claims(server)))
      assert.strictEqual(server.jwksFetches(), 1, "the hot path never fetches for known keys")
      // each verification found the keys cached: janus_cache_lookups_total{cache="jwks"} counts it
      assert.strictEqual((yield* lookups("hit")) - hits, 20)
      assert.strictEqual((yield* lookups("miss")) - misses, 0)
      const [status] = yield* cache.status
      assert.strictEqual(status!.keyCount, 6)
      assert.strictEqual(status!.fetches, 1)
      assert.strictEqual(status!.generation, 1)
    }))

  it.effect("the periodic refresh (every 10 minutes) picks up a rotated key", () =>
    Effect.gen(function*() {
      const server = yield* start()
      const { cache, verifier } = yield* build(server)
      yield* fetched(cache, 1)
      // The authorization server rotates: the new key replaces the old one.
      server.keys = [rotated.publicJwk, ec256.publicJwk]
      yield* TestClock.adjust("9 minutes")
      yield* settle()
      assert.strictEqual(server.jwksFetches(), 1, "no refresh before the interval")
      yield* TestClock.adjust("1 minute")
      yield* fetched(cache, 2)
      const now = NOW + 600
      const identity = yield* verifier.verify(yield* sign(rotated, claims(server, now)))
      assert.strictEqual(identity.subject, "user-1")
      assert.strictEqual(server.jwksFetches(), 2, "the new key was already cached: no on-demand fetch")
      // a key that left the set: one on-demand refetch (the refresh did not use that budget), then refused
      const old = yield* Effect.flip(verifier.verify(yield* sign(rsa.RS256!, claims(server, now))))
      assert.strictEqual(old._tag, "InvalidToken")
      assert.strictEqual(server.jwksFetches(), 3)
      yield* TestClock.adjust("10 minutes")
      yield* eventually(() => server.jwksFetches() >= 4)
    }))

  it.effect("keeps the held keys when a refresh fails", () =>
    Effect.gen(function*() {
      const server = yield* start()
      const { cache, verifier } = yield* build(server)
      yield* fetched(cache, 1)
      server.status.set("/jwks", 500)
      yield* TestClock.adjust("10 minutes")
      yield* fetched(cache, 2)
      const [status] = yield* cache.status
      assert.strictEqual(status!.failures, 1)
      assert.include(status!.lastError!, "HTTP 500")
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server, NOW + 600)))
    }))

  it.effect("without any keys, answers JwksUnavailable; tokens fetch at most once per 30 s", () =>
    Effect.gen(function*() {
      const server = yield* start()
      server.status.set("/jwks", 503)
      const { cache, verifier } = yield* build(server)
      yield* fetched(cache, 1)
      const token = yield* sign(rsa.RS256!, claims(server))
      for (let i = 0; i < 5; i++) {
        const error = yield* Effect.flip(verifier.verify(token))
        assert.strictEqual(error._tag, "JwksUnavailable")
        // the background retry comes first: 1 s after the failed start-up fetch
        assert.strictEqual((error as JwksUnavailable).retryAfterMs, 1_000)
      }
      assert.strictEqual(server.jwksFetches(), 2, "one on-demand fetch for the five tokens")
      server.status.delete("/jwks")
      yield* TestClock.adjust("1 second")
      yield* fetched(cache, 3)
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server, NOW + 1)))
      assert.strictEqual(server.jwksFetches(), 3, "the background retry fetched the keys")
    }))

  it.effect("a failed start-up fetch is retried after 1 s, doubling to 30 s, until one succeeds", () =>
    Effect.gen(function*() {
      const server = yield* start()
      server.status.set("/jwks", 503)
      const { cache } = yield* build(server)
      yield* fetched(cache, 1)
      // no token arrives (an unready replica gets no traffic): the retries alone bring the keys
      let fetches = 1
      for (const seconds of [1, 2, 4, 8, 16, 30, 30]) {
        yield* TestClock.adjust(`${seconds - 1} seconds`)
        yield* settle()
        assert.strictEqual(server.jwksFetches(), fetches, `no retry before ${seconds} s`)
        yield* TestClock.adjust("1 second")
        yield* fetched(cache, ++fetches)
      }
      server.status.delete("/jwks")
      yield* TestClock.adjust("30 seconds")
      yield* fetched(cache, ++fetches)
      const [status] = yield* cache.status
      assert.isDefined(status!.fetchedAt, "ready 30 s at most after the identity provider is back")
      assert.isUndefined(status!.lastError)
      // from now on the refresh interval applies again
      yield* TestClock.adjust("9 minutes")
      yield* settle()
      assert.strictEqual(server.jwksFetches(), fetches)
      yield* TestClock.adjust("1 minute")
      yield* fetched(cache, fetches + 1)
    }))

  it.effect("a key removed from the set is refused (401), never 503, while the refresh runs every 30 s", () =>
    Effect.gen(function*() {
      const server = yield* start()
      const { cache, verifier } = yield* build(server, { jwksRefreshInterval: "30 seconds" })
      yield* fetched(cache, 1)
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server)))
      // the authorization server drops rsa-1; the next refresh brings the set without it
      server.keys = publishedKeys.filter((jwk) => jwk.kid !== "rsa-1")
      yield* TestClock.adjust("30 seconds")
      yield* fetched(cache, 2)
      for (let second = 30; second <= 120; second += 5) {
        const error = yield* Effect.flip(verifier.verify(yield* sign(rsa.RS256!, claims(server, NOW + second))))
        assert.strictEqual(error._tag, "InvalidToken", `at ${second} s`)
        assert.strictEqual((error as InvalidToken).reason, "unknown_key")
        yield* TestClock.adjust("5 seconds")
        yield* settle(10)
      }
      // truly unreachable: now, and only now, 503
      server.status.set("/jwks", 503)
      yield* TestClock.adjust("30 seconds")
      yield* settle()
      const down = yield* Effect.flip(verifier.verify(yield* sign(rsa.RS256!, claims(server, NOW + 155))))
      assert.strictEqual(down._tag, "JwksUnavailable")
    }))

  it.effect("an inline key set is used as is: no fetch, even with the identity provider down", () =>
    Effect.gen(function*() {
      const server = yield* start()
      server.status.set("/jwks", 503)
      const context = yield* Layer.build(
        OAuthLayer({
          resource: RESOURCE,
          authorizationServers: [{ issuer: server.issuer, jwks: JSON.stringify({ keys: publishedKeys }) }]
        }).pipe(Layer.provide(FetchHttpClient.layer))
      )
      const verifier = Context.get(context, JwtVerifier)
      const identity = yield* verifier.verify(yield* sign(ec256, claims(server)))
      assert.strictEqual(identity.subject, "user-1")
      yield* rejected(verifier, yield* sign(rotated, claims(server)), "unknown_key")
      const [status] = yield* Context.get(context, JwksCache).status
      assert.strictEqual(status!.jwksUri, "inline")
      assert.strictEqual(server.jwksFetches(), 0)
      assert.strictEqual(server.hits.size, 0, "not even discovery")
    }))

  it.effect("a key-set file is re-read on refresh and for a key it lacks; a broken file keeps the held keys", () =>
    Effect.gen(function*() {
      const server = yield* start()
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-jwks-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true })))
      const file = Path.join(dir, "jwks.json")
      Fs.writeFileSync(file, JSON.stringify({ keys: [rsa.RS256!.publicJwk] }))
      const context = yield* Layer.build(
        OAuthLayer({ resource: RESOURCE, authorizationServers: [{ issuer: server.issuer, jwksFile: file }] }).pipe(
          Layer.provide(FetchHttpClient.layer)
        )
      )
      const verifier = Context.get(context, JwtVerifier)
      const cache = Context.get(context, JwksCache)
      yield* fetched(cache, 1)
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server)))
      // a key added to the file: the token naming it has the file read again
      Fs.writeFileSync(file, JSON.stringify({ keys: [rsa.RS256!.publicJwk, rotated.publicJwk] }))
      yield* verifier.verify(yield* sign(rotated, claims(server)))
      assert.strictEqual((yield* cache.status)[0]!.fetches, 2)
      // the periodic refresh reads it too: rsa-1 removed
      Fs.writeFileSync(file, JSON.stringify({ keys: [rotated.publicJwk] }))
      yield* TestClock.adjust("10 minutes")
      yield* fetched(cache, 3)
      assert.deepStrictEqual([...(yield* cache.current(server.issuer)).kids], ["rsa-2"])
      // a file that became invalid is a failed fetch: the held keys stay, the reason is named
      Fs.writeFileSync(file, JSON.stringify({ keys: [{ ...rotated.publicJwk, d: "AAAA" }] }))
      yield* TestClock.adjust("10 minutes")
      yield* fetched(cache, 4)
      const [status] = yield* cache.status
      assert.include(status!.lastError!, "holds private key material (d)")
      assert.strictEqual(status!.jwksUri, `file:${file}`)
      yield* verifier.verify(yield* sign(rotated, claims(server, NOW + 1200)))
      assert.strictEqual(server.hits.size, 0, "the identity provider is never asked")
    }))

  it.effect("drops symmetric and private keys from a JWKS", () =>
    Effect.gen(function*() {
      const server = yield* start({
        keys: [
          { kty: "oct", k: "c2VjcmV0", kid: "hmac" },
          { ...rsa.RS256!.publicJwk, kid: "with-private", d: "AAAA" },
          { ...ec256.publicJwk, use: "enc", kid: "enc-key" },
          rsa.RS256!.publicJwk
        ]
      })
      const { cache } = yield* build(server)
      yield* eventually(() => server.jwksFetches() === 1)
      yield* settle()
      const snapshot = yield* cache.current(server.issuer)
      assert.deepStrictEqual([...snapshot.kids], ["rsa-1"])
    }))
})

describe("AuthorizationServerMetadata (RFC 8414 discovery)", () => {
  it("lists the well-known URLs in the MCP SDK's order", () => {
    assert.deepStrictEqual(discoveryUrls("https://as.example.com").map((u) => u.url), [
      "https://as.example.com/.well-known/oauth-authorization-server",
      "https://as.example.com/.well-known/openid-configuration"
    ])
    assert.deepStrictEqual(discoveryUrls("https://as.example.com/tenant/").map((u) => u.url), [
      "https://as.example.com/.well-known/oauth-authorization-server/tenant",
      "https://as.example.com/.well-known/openid-configuration/tenant",
      "https://as.example.com/tenant/.well-known/openid-configuration"
    ])
  })

  it.effect("discovers the JWKS URI through RFC 8414 metadata", () =>
    Effect.gen(function*() {
      const server = yield* start()
      const { verifier } = yield* discovering(server)
      yield* eventually(() => server.jwksFetches() === 1)
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server)))
      assert.strictEqual(server.count("/.well-known/oauth-authorization-server"), 1)
      assert.strictEqual(server.count("/.well-known/openid-configuration"), 0)
    }))

  it.effect("inserts the well-known suffix before the issuer's path", () =>
    Effect.gen(function*() {
      const server = yield* start({ issuerPath: "/tenant" })
      const { verifier } = yield* discovering(server)
      yield* eventually(() => server.jwksFetches() === 1)
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server)))
      assert.strictEqual(server.count("/.well-known/oauth-authorization-server/tenant"), 1)
    }))

  it.effect("falls back to OpenID Connect discovery", () =>
    Effect.gen(function*() {
      const server = yield* start({ metadata: "openid" })
      const { verifier } = yield* discovering(server)
      yield* eventually(() => server.jwksFetches() === 1)
      yield* verifier.verify(yield* sign(rsa.RS256!, claims(server)))
      assert.strictEqual(server.count("/.well-known/oauth-authorization-server"), 1)
      assert.strictEqual(server.count("/.well-known/openid-configuration"), 1)
    }))

  it.effect("refuses metadata naming another issuer (mix-up)", () =>
    Effect.gen(function*() {
      const server = yield* start()
      server.metadataIssuer = "https://evil.example.com"
      const result = yield* Effect.flip(
        discover(server.issuer, { timeout: 5000 as never }).pipe(
          Effect.provide(FetchHttpClient.layer)
        )
      )
      assert.include(result.message, "different issuer")
      const { verifier } = yield* discovering(server)
      yield* settle(100)
      const error = yield* Effect.flip(verifier.verify(yield* sign(rsa.RS256!, claims(server))))
      assert.strictEqual(error._tag, "JwksUnavailable")
      assert.strictEqual(server.jwksFetches(), 0)
    }))

  it.effect("fails when no metadata exists", () =>
    Effect.gen(function*() {
      const server = yield* start({ metadata: "none" })
      const { verifier } = yield* discovering(server)
      yield* settle(100)
      const error = yield* Effect.flip(verifier.verify(yield* sign(rsa.RS256!, claims(server))))
      assert.strictEqual(error._tag, "JwksUnavailable")
      assert.include(error.message, "no metadata found")
    }))
})
