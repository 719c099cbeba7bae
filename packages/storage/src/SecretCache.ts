/**
 * Cached secret values for the hot path.
 *
 * **Rules**
 *
 * - Holds revealed values (inside `Redacted`) for `SECRET_CACHE_TTL` (default
 *   30 s) at most, bounded to 10,000 entries; failures (missing secret, bad
 *   key) are not cached.
 * - Purged at once by any `secret` change, local or remote (set, delete,
 *   rotation).
 *
 * @since 0.1.0
 */
import { Cache, Context, Duration, Effect, Exit, Layer, type Redacted } from "effect"
import { CacheObserver, CacheSettings, observedGet } from "./CacheSettings.ts"
import { ChangeFeed } from "./ChangeFeed.ts"
import type { SecretDecryptionFailed, SecretNotFound, StorageError } from "./Errors.ts"
import { Secrets } from "./Secrets.ts"

export class SecretCache extends Context.Service<SecretCache, {
  readonly reveal: (
    name: string
  ) => Effect.Effect<Redacted.Redacted<string>, SecretNotFound | SecretDecryptionFailed | StorageError>
  readonly invalidate: Effect.Effect<void>
}>()("@janus/storage/SecretCache") {
  static readonly layer: Layer.Layer<SecretCache, never, Secrets | ChangeFeed> = Layer.effect(
    SecretCache,
    Effect.gen(function*() {
      const secrets = yield* Secrets
      const feed = yield* ChangeFeed
      const ttl = (yield* CacheSettings).secrets
      const cache = yield* Cache.makeWith(secrets.reveal, {
        capacity: 10_000,
        timeToLive: (exit) => Exit.isSuccess(exit) ? ttl : Duration.zero
      })
      const invalidate = Cache.invalidateAll(cache)
      yield* feed.register((change) => change.kind === "secret" ? invalidate : Effect.void)
      const observe = yield* CacheObserver
      return SecretCache.of({ reveal: (name) => observedGet(cache, name, "secret", observe), invalidate })
    })
  )
}
