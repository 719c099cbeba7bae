/**
 * Cached client-token verification for the hot path.
 *
 * **Rules**
 *
 * - Keyed by the token's SHA-256 (the plaintext is not kept as a key); holds
 *   the verification result, including "no such token", for
 *   `CONFIG_CACHE_TTL` at most, bounded to 10,000 entries.
 * - Purged at once by any `client_token` change, local or remote, so a
 *   revoked token stops working on every instance within a second.
 * - A cached token is re-checked against the `Clock` on every hit, so one
 *   that expires while cached is refused at once.
 * - Lookup failures are not cached.
 *
 * @since 0.1.0
 */
import { Cache, Clock, Context, Duration, Effect, Exit, Layer, Option, Redacted } from "effect"
import { CacheObserver, CacheSettings, observedGet } from "./CacheSettings.ts"
import { ChangeFeed } from "./ChangeFeed.ts"
import { ClientTokens } from "./ClientTokens.ts"
import * as SecretBox from "./Crypto.ts"
import type { ClientToken } from "./Domain.ts"
import type { StorageError } from "./Errors.ts"

const CAPACITY = 10_000

export class TokenCache extends Context.Service<TokenCache, {
  /** The active client token with this plaintext, if any (cached). */
  readonly verify: (
    token: string | Redacted.Redacted<string>
  ) => Effect.Effect<Option.Option<ClientToken>, StorageError>
  readonly invalidate: Effect.Effect<void>
}>()("@janus/storage/TokenCache") {
  static readonly layer: Layer.Layer<TokenCache, never, ClientTokens | ChangeFeed> = Layer.effect(
    TokenCache,
    Effect.gen(function*() {
      const tokens = yield* ClientTokens
      const feed = yield* ChangeFeed
      const ttl = (yield* CacheSettings).config
      // The lookup needs the plaintext, the key must not be it: pass it alongside.
      const pending = new Map<string, Redacted.Redacted<string>>()
      const cache = yield* Cache.makeWith(
        (hash: string) => Effect.suspend(() => tokens.verify(pending.get(hash) ?? "")),
        { capacity: CAPACITY, timeToLive: (exit) => Exit.isSuccess(exit) ? ttl : Duration.zero }
      )
      const invalidate = Cache.invalidateAll(cache)
      yield* feed.register((change) => change.kind === "client_token" ? invalidate : Effect.void)
      const observe = yield* CacheObserver

      const verify = (token: string | Redacted.Redacted<string>) =>
        Effect.gen(function*() {
          const plaintext = Redacted.isRedacted(token) ? Redacted.value(token) : token
          if (!SecretBox.looksLikeToken(SecretBox.CLIENT_TOKEN_PREFIX, plaintext)) return Option.none<ClientToken>()
          const hash = SecretBox.hashTokenHex(plaintext)
          pending.set(hash, Redacted.make(plaintext))
          const found = yield* observedGet(cache, hash, "token", observe).pipe(
            Effect.ensuring(Effect.sync(() => pending.delete(hash)))
          )
          const now = yield* Clock.currentTimeMillis
          return Option.filter(found, (t) => t.isActiveAt(new Date(now)))
        })

      return TokenCache.of({ verify, invalidate })
    })
  )
}
