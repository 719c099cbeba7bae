/**
 * Each trusted issuer's signing keys (JWKS, RFC 7517 §5), fetched through
 * effect's `HttpClient` (or read from the operator's own set, `LocalKeySet`)
 * and kept in memory per instance.
 *
 * **Rules**
 *
 * - The hot path reads the cached key set and never waits on the network,
 *   except for the first fetch of an issuer's keys and for a token the held
 *   keys do not verify (key rotation).
 * - Keys are fetched at start (in the background, so the gateway starts even
 *   when an authorization server is down) and refreshed every issuer's
 *   `jwksRefreshInterval` (10 minutes). A failed refresh keeps the keys held.
 * - A failed background fetch is retried after `JWKS_RETRY_INITIAL` (1 s),
 *   doubling up to `JWKS_RETRY_MAX` (30 s), until one succeeds; only then
 *   does the refresh interval apply again. A replica that started while its
 *   identity provider was down is ready within seconds of its return, with
 *   no traffic needed (an unready replica gets none).
 * - On-demand fetches (first fetch, a `kid` the set lacks, a signature the
 *   key of its `kid` does not verify) are rate-limited: at most one per issuer
 *   within `jwksMinRefreshInterval` (30 s) of the previous on-demand one, and
 *   concurrent callers share one fetch. A flood of tokens with invented
 *   `kid`s or forged signatures therefore costs the authorization server one
 *   request per window. Background fetches do not count against that budget.
 * - Whether the set is current decides the answer for a key it lacks: when
 *   the last fetch succeeded (just now, or within the window), the set is
 *   known current and the token is refused (401 `invalid_token`, the client
 *   re-authorises). Only when the authorization server cannot be reached (the
 *   last fetch failed) is the answer `JwksUnavailable` with the time until
 *   the next fetch: a 503 with `Retry-After`.
 * - The JWKS URI is the configured one, or discovered (RFC 8414, then OpenID
 *   Discovery) and re-discovered after a failed fetch. An issuer with an
 *   inline set uses it as is; one with a key-set file re-reads it on every
 *   fetch.
 * - Only public asymmetric signing keys are kept (`kty` RSA, EC or OKP, no
 *   private members, `use` absent or `sig`); symmetric (`oct`) keys are
 *   dropped, so no JWKS entry can ever act as an HMAC secret. A document with
 *   no usable key is a failed fetch.
 * - Key material is imported by `jose` (`createLocalJWKSet`); no crypto here.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Schema, Semaphore } from "effect"
import { HttpClient } from "effect/http"
import type { JWK, JWTVerifyGetKey } from "jose"
import { PRIVATE_MEMBERS, type PublicJwk, readKeySetFile } from "../config/LocalKeySet.ts"
import * as Metrics from "../observability/Metrics.ts"
import { discover } from "./AuthorizationServerMetadata.ts"
import { fetchJson } from "./internal/fetchJson.ts"
import { jose } from "./internal/jose.ts"
import { JwksUnavailable } from "./OAuthErrors.ts"
import { type AuthorizationServer, OAuthConfig } from "./OAuthOptions.ts"

/**
 * First wait before a failed background fetch is tried again. Why 1 s: an
 * identity provider that restarts, or a DNS name not yet resolvable at pod
 * start, is usually back within seconds, and one retry a second from each
 * replica is no load on it.
 */
export const JWKS_RETRY_INITIAL: Duration.Duration = Duration.seconds(1)

/**
 * Longest wait between failed background fetches (the retry doubles up to
 * it). Why 30 s: a replica becomes ready at most 30 s after its identity
 * provider returns, the same window an on-demand refetch is rate-limited to,
 * while a long outage costs the provider two requests a minute per replica.
 * Never longer than the issuer's refresh interval.
 */
export const JWKS_RETRY_MAX: Duration.Duration = Duration.seconds(30)

/** The wait before background retry number `failures` (1 for the first) of an issuer refreshed every `refresh`. */
export const retryDelay = (failures: number, refresh: Duration.Duration): Duration.Duration => {
  const doubled = Duration.toMillis(JWKS_RETRY_INITIAL) * 2 ** Math.min(Math.max(failures - 1, 0), 30)
  return Duration.millis(Math.min(doubled, Duration.toMillis(JWKS_RETRY_MAX), Duration.toMillis(refresh)))
}

/** One fetched key set of one issuer. */
export interface JwksSnapshot {
  readonly issuer: string
  /** Increases by one on every successful fetch. */
  readonly generation: number
  /** The `jose` key resolver over the fetched keys. */
  readonly keySet: JWTVerifyGetKey
  /** The `kid`s in the set. */
  readonly kids: ReadonlySet<string>
  readonly keyCount: number
  /** Clock time of the fetch, in epoch milliseconds. */
  readonly fetchedAt: number
  /** Where the keys came from: the JWKS URI, `file:<path>`, or `inline`. */
  readonly jwksUri: string
}

/** What the cache knows about one issuer, for health checks and `doctor`. */
export interface JwksStatus {
  readonly issuer: string
  readonly generation: number
  readonly keyCount: number
  readonly fetchedAt: number | undefined
  readonly jwksUri: string | undefined
  readonly fetches: number
  readonly failures: number
  readonly lastError: string | undefined
}

/** A fetched, usable key set. */
export interface FetchedKeySet {
  readonly uri: string
  readonly keySet: JWTVerifyGetKey
  readonly kids: ReadonlySet<string>
  readonly keyCount: number
  /** Entries dropped as not public signing keys. */
  readonly dropped: number
}

interface IssuerState {
  readonly server: AuthorizationServer
  readonly semaphore: Semaphore.Semaphore
  snapshot: JwksSnapshot | undefined
  generation: number
  /** Clock time of the last on-demand fetch: the rate limit's window starts there. */
  onDemandAt: number | undefined
  /** Clock time the background fiber fetches next. */
  nextBackgroundAt: number | undefined
  /** Why the last fetch failed; `undefined` when it succeeded (the held set is current). */
  lastError: string | undefined
  /** Failed fetches in a row. */
  failuresInRow: number
  discoveredUri: string | undefined
  fetches: number
  failures: number
}

const JwksDocument = Schema.Struct({ keys: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)) })
const decodeJwks = Schema.decodeUnknownEffect(JwksDocument)

/** A public asymmetric signing key: no `oct`, no private members, `use` absent or `sig`. */
export const isPublicSigningKey = (jwk: Readonly<Record<string, unknown>>): boolean =>
  (jwk.kty === "RSA" || jwk.kty === "EC" || jwk.kty === "OKP") &&
  PRIVATE_MEMBERS.every((member) => !(member in jwk)) &&
  (jwk.use === undefined || jwk.use === "sig")

/** The key set of checked public signing keys from `uri`. */
const keySetOf = (
  uri: string,
  usable: ReadonlyArray<PublicJwk>,
  dropped: number
): Effect.Effect<FetchedKeySet, string> =>
  Effect.gen(function*() {
    if (usable.length === 0) return yield* Effect.fail(`${uri} holds no public signing key`)
    const keySet = yield* Effect.try({
      try: () => jose().createLocalJWKSet({ keys: usable as unknown as Array<JWK> }),
      catch: () => `${uri} is not a valid JWK Set`
    })
    const kids = new Set(usable.flatMap((jwk) => typeof jwk.kid === "string" ? [jwk.kid] : []))
    return { uri, keySet, kids, keyCount: usable.length, dropped }
  })

/** Fetches the key set at `uri`; fails with the reason in words (never a body). */
export const fetchKeySet = (
  uri: string,
  timeout: Duration.Duration
): Effect.Effect<FetchedKeySet, string, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const result = yield* fetchJson(uri, timeout)
    if (result._tag === "NotFound") return yield* Effect.fail(`${uri} answered HTTP ${result.status}`)
    const document = yield* decodeJwks(result.json).pipe(Effect.mapError(() => `${uri} is not a JWK Set`))
    const usable = document.keys.filter(isPublicSigningKey)
    return yield* keySetOf(uri, usable, document.keys.length - usable.length)
  })

/** The key set of `server` when the operator gave it (inline or a file), else `undefined`. */
export const localKeySet = (server: AuthorizationServer): Effect.Effect<FetchedKeySet, string> | undefined =>
  server.jwks !== undefined
    ? keySetOf("inline", server.jwks, 0)
    : server.jwksFile !== undefined
    ? Effect.flatMap(readKeySetFile(server.jwksFile), (keys) => keySetOf(`file:${server.jwksFile}`, keys, 0))
    : undefined

/**
 * The JWKS URI of `server`: the configured one, else discovered from its
 * metadata (for a multi-tenant issuer, at the advertised tenant, accepting
 * metadata that names the template itself, as Entra's `common` does).
 */
export const jwksUriOf = (
  server: AuthorizationServer,
  timeout: Duration.Duration
): Effect.Effect<string, string, HttpClient.HttpClient> =>
  server.jwksUri !== undefined ? Effect.succeed(server.jwksUri) : discover(server.advertised, {
    timeout,
    allowInsecureHttp: server.allowInsecureHttp,
    alsoAccept: server.template === undefined ? [] : [server.issuer]
  }).pipe(Effect.map((metadata) => metadata.jwks_uri), Effect.mapError((error) => error.message))

type Mode = "initial" | "unknown-key" | "scheduled"

/** Per-instance cache of every trusted issuer's JWKS. */
export class JwksCache extends Context.Service<JwksCache, {
  /** The issuer's keys; fetches (rate-limited) only when none were ever fetched. */
  readonly current: (issuer: string) => Effect.Effect<JwksSnapshot, JwksUnavailable>
  /**
   * The keys of `seen` do not verify a token (its `kid` is not among them, or
   * its key does not verify the signature): a newer snapshot when one was or
   * can be fetched now (rate-limited, shared with concurrent callers); `seen`
   * itself when it is known current (the last fetch succeeded and the window
   * has not passed), so the token is refused; `JwksUnavailable` when the
   * authorization server cannot be reached.
   */
  readonly refreshForUnknownKey: (issuer: string, seen: JwksSnapshot) => Effect.Effect<JwksSnapshot, JwksUnavailable>
  /** Refetches now, regardless of the rate limit (the periodic refresh uses it). */
  readonly refresh: (issuer: string) => Effect.Effect<JwksSnapshot, JwksUnavailable>
  readonly status: Effect.Effect<ReadonlyArray<JwksStatus>>
}>()("@janus/gateway/oauth/JwksCache") {
  /**
   * Fetches every issuer's keys in the background at start, then every
   * issuer's `jwksRefreshInterval`, retrying failures with a bounded backoff;
   * the background fibers end with the layer's scope.
   */
  static readonly layer: Layer.Layer<JwksCache, never, OAuthConfig | HttpClient.HttpClient> = Layer.effect(
    JwksCache,
    Effect.gen(function*() {
      const settings = yield* OAuthConfig
      const httpClient = yield* HttpClient.HttpClient
      const minInterval = Duration.toMillis(settings.jwksMinRefreshInterval)
      const states = new Map<string, IssuerState>()
      for (const server of settings.authorizationServers.values()) {
        states.set(server.issuer, {
          server,
          semaphore: yield* Semaphore.make(1),
          snapshot: undefined,
          generation: 0,
          onDemandAt: undefined,
          nextBackgroundAt: undefined,
          lastError: undefined,
          failuresInRow: 0,
          discoveredUri: undefined,
          fetches: 0,
          failures: 0
        })
      }

      const fetchKeys = (state: IssuerState) =>
        localKeySet(state.server) ?? Effect.gen(function*() {
          const uri = state.discoveredUri ?? (yield* jwksUriOf(state.server, settings.httpTimeout))
          state.discoveredUri = state.server.jwksUri === undefined ? uri : undefined
          return yield* fetchKeySet(uri, settings.httpTimeout)
        }).pipe(
          Effect.tapError(() =>
            Effect.sync(() => {
              state.discoveredUri = undefined
            })
          ),
          Effect.provideService(HttpClient.HttpClient, httpClient)
        )

      const unavailable = (state: IssuerState, why: string, retryAfterMs: number) =>
        new JwksUnavailable({
          issuer: state.server.issuer,
          message: `Signing keys unavailable: ${why}`,
          retryAfterMs: Math.max(1_000, retryAfterMs)
        })

      /** Until the next fetch may run: the background retry, or the end of the on-demand window. */
      const retryAfter = (state: IssuerState, now: number) => {
        const windowEnd = state.onDemandAt === undefined ? now : state.onDemandAt + minInterval
        const next = state.nextBackgroundAt === undefined
          ? windowEnd
          : Math.min(windowEnd, Math.max(state.nextBackgroundAt, now))
        return Math.max(next, now) - now
      }

      /** One fetch; records its outcome. Fails with the reason in words. */
      const attempt = (state: IssuerState, mode: Mode, startedAt: number) =>
        Effect.gen(function*() {
          const result = yield* Effect.result(fetchKeys(state))
          state.fetches++
          if (result._tag === "Failure") {
            state.failures++
            state.failuresInRow++
            state.lastError = result.failure
            yield* Effect.logWarning("JWKS fetch failed").pipe(
              Effect.annotateLogs({ issuer: state.server.issuer, reason: result.failure, trigger: mode })
            )
            return yield* Effect.fail(result.failure)
          }
          const fetched = result.success
          state.generation++
          state.lastError = undefined
          state.failuresInRow = 0
          state.snapshot = {
            issuer: state.server.issuer,
            generation: state.generation,
            keySet: fetched.keySet,
            kids: fetched.kids,
            keyCount: fetched.keyCount,
            fetchedAt: startedAt,
            jwksUri: fetched.uri
          }
          yield* Effect.logDebug("JWKS fetched").pipe(
            Effect.annotateLogs({
              issuer: state.server.issuer,
              keys: fetched.keyCount,
              dropped: fetched.dropped,
              trigger: mode
            })
          )
          return state.snapshot
        })

      /**
       * The keys for `mode`, given the generation and the fetch count the
       * caller saw before it queued for the issuer's permit.
       */
      const load = (state: IssuerState, mode: Mode, seenGeneration: number, seenFetches: number) =>
        Semaphore.withPermit(state.semaphore)(Effect.gen(function*() {
          const startedAt = yield* Clock.currentTimeMillis
          if (mode === "scheduled") {
            return yield* attempt(state, mode, startedAt).pipe(
              Effect.catch((why) =>
                state.snapshot !== undefined
                  ? Effect.succeed(state.snapshot)
                  : Effect.fail(unavailable(state, why, retryAfter(state, startedAt)))
              )
            )
          }
          // another caller (or the background) fetched newer keys while this one waited: share them
          if (state.snapshot !== undefined && state.generation !== seenGeneration) return state.snapshot
          // a fetch finished while this one waited and brought nothing newer: it failed, share that too
          if (state.fetches !== seenFetches && state.lastError !== undefined) {
            return yield* unavailable(state, state.lastError, retryAfter(state, startedAt))
          }
          const last = state.onDemandAt
          if (last !== undefined && startedAt - last < minInterval) {
            // the last fetch succeeded: the held set is current, and the caller refuses the token
            if (state.lastError === undefined && state.snapshot !== undefined) return state.snapshot
            return yield* unavailable(
              state,
              state.lastError === undefined
                ? "no key set was fetched yet; fetched again after the rate-limit window"
                : `the last fetch failed (${state.lastError}); retried after the rate-limit window`,
              retryAfter(state, startedAt)
            )
          }
          state.onDemandAt = startedAt
          return yield* attempt(state, mode, startedAt).pipe(
            Effect.mapError((why) => unavailable(state, why, retryAfter(state, startedAt)))
          )
        }))

      const jwksHit = Metrics.cacheLookup("jwks", true)
      const jwksMiss = Metrics.cacheLookup("jwks", false)
      const stateOf = (issuer: string) => {
        const state = states.get(issuer)
        return state === undefined
          ? Effect.fail(new JwksUnavailable({ issuer, message: "Not a trusted issuer" }))
          : Effect.succeed(state)
      }

      // a token's verification finds the keys cached (hit) or has them fetched first (miss: the first use, or a
      // key the cached set does not have)
      const current = (issuer: string) =>
        Effect.flatMap(
          stateOf(issuer),
          (state) =>
            state.snapshot !== undefined
              ? Effect.as(jwksHit, state.snapshot)
              : Effect.andThen(jwksMiss, load(state, "initial", state.generation, state.fetches))
        )

      const refreshForUnknownKey = (issuer: string, seen: JwksSnapshot) =>
        Effect.flatMap(
          stateOf(issuer),
          (state) => Effect.andThen(jwksMiss, load(state, "unknown-key", seen.generation, state.fetches))
        )

      const refresh = (issuer: string) =>
        Effect.flatMap(stateOf(issuer), (state) => load(state, "scheduled", state.generation, state.fetches))

      // one background fiber per issuer: fetch, then wait the refresh interval, or the retry delay after a failure
      for (const state of states.values()) {
        const once = Effect.gen(function*() {
          yield* Effect.ignore(Effect.suspend(() => load(state, "scheduled", state.generation, state.fetches)))
          // an inline set never changes: one load is all it needs
          if (state.server.jwks !== undefined && state.lastError === undefined) return yield* Effect.never
          const wait = state.lastError === undefined
            ? state.server.jwksRefreshInterval
            : retryDelay(state.failuresInRow, state.server.jwksRefreshInterval)
          state.nextBackgroundAt = (yield* Clock.currentTimeMillis) + Duration.toMillis(wait)
          yield* Effect.sleep(wait)
        })
        yield* Effect.forkScoped(Effect.forever(once))
      }

      const status = Effect.sync(() =>
        [...states.values()].map((state): JwksStatus => ({
          issuer: state.server.issuer,
          generation: state.generation,
          keyCount: state.snapshot?.keyCount ?? 0,
          fetchedAt: state.snapshot?.fetchedAt,
          jwksUri: state.snapshot?.jwksUri ?? state.server.jwksUri,
          fetches: state.fetches,
          failures: state.failures,
          lastError: state.lastError
        }))
      )

      return JwksCache.of({ current, refreshForUnknownKey, refresh, status })
    })
  )
}
