/**
 * `CredentialLifetime` on its own, over the embedded storage (its change feed
 * is the same code as on Postgres, with local deliveries only): which signals
 * end which streams, the gap between a request's admission and its stream,
 * and expiry on the `Clock` (a TestClock). Across real replicas: revocation.test.ts.
 */
import { assert, layer } from "@effect/vitest"
import { ChangeFeed, ClientTokens } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Clock, Effect, Fiber, Layer } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { TestClock } from "effect/testing"
import { CredentialLifetime } from "../../src/auth/CredentialLifetime.ts"

const Live = CredentialLifetime.layer.pipe(Layer.provideMerge(StorageTesting.layerMemory()))

const newToken = (name: string) =>
  Effect.map(ClientTokens.use((tokens) => tokens.create({ name })), (created) => created.token)

/** Whether `fiber` completes within `ms` of real time. */
const completesWithin = <A, E>(fiber: Fiber.Fiber<A, E>, ms: number) =>
  Effect.map(
    Effect.timeoutOption(Fiber.await(fiber), `${ms} millis`),
    (exit) => exit._tag === "Some"
  )

layer(Live, { excludeTestServices: true, timeout: "60 seconds" })("CredentialLifetime", (it) => {
  it.effect("a revoked or deleted token ends its streams; other tokens' streams stay", () =>
    Effect.gen(function*() {
      const lifetime = yield* CredentialLifetime
      const revoked = yield* newToken("lifetime-revoked")
      const deleted = yield* newToken("lifetime-deleted")
      const kept = yield* newToken("lifetime-kept")
      const now = yield* Clock.currentTimeMillis
      const watch = (id: string) =>
        Effect.forkChild(lifetime.until({ kind: "client_token", id, expiresAt: undefined }, now))
      const [a, b, c] = [yield* watch(revoked.id), yield* watch(deleted.id), yield* watch(kept.id)]
      assert.isFalse(yield* completesWithin(a, 200), "nothing happened yet")
      yield* ClientTokens.use((tokens) => tokens.revoke(revoked.id))
      yield* ClientTokens.use((tokens) => tokens.delete(deleted.id))
      assert.isTrue(yield* completesWithin(a, 1_000), "revoked")
      assert.isTrue(yield* completesWithin(b, 1_000), "deleted")
      assert.isFalse(yield* completesWithin(c, 300), "another token's stream stays open")
      yield* Fiber.interrupt(c)
    }))

  it.effect("a stream that starts after the revocation's signal, for a request that arrived before it, ends", () =>
    Effect.gen(function*() {
      const lifetime = yield* CredentialLifetime
      const token = yield* newToken("lifetime-gap")
      // the request arrives and is admitted...
      const arrived = yield* Clock.currentTimeMillis
      // ...the revocation is delivered...
      yield* ClientTokens.use((tokens) => tokens.revoke(token.id))
      // ...and only then does its stream start
      const stream = yield* Effect.forkChild(
        lifetime.until({ kind: "client_token", id: token.id, expiresAt: undefined }, arrived)
      )
      assert.isTrue(yield* completesWithin(stream, 1_000))
    }))

  it.effect("a signal about every token (the change feed reconnected) re-reads every token a stream holds", () =>
    Effect.gen(function*() {
      const lifetime = yield* CredentialLifetime
      const token = yield* newToken("lifetime-reconnect")
      const kept = yield* newToken("lifetime-reconnect-kept")
      const now = yield* Clock.currentTimeMillis
      const stream = yield* Effect.forkChild(
        lifetime.until({ kind: "client_token", id: token.id, expiresAt: undefined }, now)
      )
      const other = yield* Effect.forkChild(
        lifetime.until({ kind: "client_token", id: kept.id, expiresAt: undefined }, now)
      )
      // revoked behind the feed's back (as while the LISTEN connection was down), then "anything may have changed"
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE client_tokens SET revoked_at = now() WHERE id = ${token.id}`
      assert.isFalse(yield* completesWithin(stream, 300), "no signal, no read")
      const feed = yield* ChangeFeed
      yield* sql.withTransaction(feed.publish({ kind: "client_token", ids: [] }))
      assert.isTrue(yield* completesWithin(stream, 1_000))
      assert.isFalse(yield* completesWithin(other, 300))
      yield* Fiber.interrupt(other)
    }))
  it.effect("a credential's streams end at its expiry on the Clock, not before", () =>
    Effect.gen(function*() {
      const lifetime = yield* CredentialLifetime
      const stream = yield* Effect.forkChild(lifetime.until({ kind: "expiring", expiresAt: 60_000 }, 0))
      const token = yield* Effect.forkChild(
        lifetime.until({ kind: "client_token", id: "00000000-0000-4000-8000-000000000000", expiresAt: 30_000 }, 0)
      )
      yield* TestClock.adjust("29999 millis")
      assert.isUndefined(token.pollUnsafe(), "a client token's stream before its expiry")
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(token)
      yield* TestClock.adjust("29999 millis")
      assert.isUndefined(stream.pollUnsafe(), "an access token's stream before its expiry")
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(stream)
      const never = yield* Effect.forkChild(lifetime.until({ kind: "none" }, 0))
      yield* TestClock.adjust("100 days")
      assert.isUndefined(never.pollUnsafe(), "an anonymous caller's stream never ends this way")
    }).pipe(Effect.provide(TestClock.layer())))
})
