/**
 * Time-to-live of the in-process caches.
 *
 * **Rules**
 *
 * - Caches are purged by change signals (local writes at once, other
 *   instances' writes within a second); the TTLs are only the backstop for a
 *   lost signal.
 * - Defaults: config and client tokens 5 s (`CONFIG_CACHE_TTL`), secrets
 *   30 s (`SECRET_CACHE_TTL`). `defaults` is their one home: storage runs
 *   without the gateway too, and the gateway's JanusConfig refers to it.
 * - Imports only effect: the gateway's configuration loads it
 *   (`@janus/storage/CacheSettings`) without loading storage.
 *
 * @since 0.1.0
 */
import { Cache, Config, Context, Duration, Effect } from "effect"

export interface CacheTtls {
  /** `CONFIG_CACHE_TTL`: connections, endpoints, virtual servers, and client-token verifications. */
  readonly config: Duration.Duration
  /** `SECRET_CACHE_TTL`: revealed secrets. */
  readonly secrets: Duration.Duration
}

export const defaults: CacheTtls = { config: Duration.seconds(5), secrets: Duration.seconds(30) }

/** Which in-process cache a lookup went to (the gateway's `janus_cache_lookups_total{cache}`). */
export type CacheName = "config" | "token" | "secret"

/**
 * Told of every lookup of storage's caches, hit or miss (default: nobody).
 * The gateway provides one that counts them in `janus_cache_lookups_total`.
 * A lookup that joins one in flight for the same key counts as a hit: it
 * caused no load.
 */
export const CacheObserver = Context.Reference<(cache: CacheName, hit: boolean) => void>(
  "@janus/storage/CacheObserver",
  { defaultValue: () => () => undefined }
)

/** `Cache.get` that tells `observe` whether the entry was there (not expired) before. */
export const observedGet = <K, A, E, R>(
  cache: Cache.Cache<K, A, E, R>,
  key: K,
  name: CacheName,
  observe: (cache: CacheName, hit: boolean) => void
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Cache.has(cache, key), (hit) => {
    observe(name, hit)
    return Cache.get(cache, key)
  })

export const CacheSettings = Context.Reference<CacheTtls>("@janus/storage/CacheSettings", {
  defaultValue: () => defaults
})

/** Builds the settings from plain options (e.g. the gateway's config module). */
export const make = (options: {
  readonly configCacheTtl?: Duration.Input | undefined
  readonly secretCacheTtl?: Duration.Input | undefined
}): CacheTtls => ({
  config: options.configCacheTtl === undefined ? defaults.config : Duration.fromInputUnsafe(options.configCacheTtl),
  secrets: options.secretCacheTtl === undefined ? defaults.secrets : Duration.fromInputUnsafe(options.secretCacheTtl)
})

/** `CONFIG_CACHE_TTL` and `SECRET_CACHE_TTL` (e.g. "5 seconds", "30 seconds"). */
export const config: Config.Config<CacheTtls> = Config.all({
  config: Config.Duration("CONFIG_CACHE_TTL").pipe(Config.withDefault(defaults.config)),
  secrets: Config.Duration("SECRET_CACHE_TTL").pipe(Config.withDefault(defaults.secrets))
})
