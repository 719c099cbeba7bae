/**
 * Each trusted issuer's signing keys (JWKS, RFC 7517 §5), fetched through
 * effect's `HttpClient` and kept in memory per instance.
 *
 * **Rules**
 *
 * - The hot path reads the cached key set and never waits on the network,
 *   except for the first fetch of an issuer's keys and for a token whose `kid`
 *   is unknown (key rotation).
 * - Keys are fetched at start (in the background, so the gateway starts even
 *   when an authorization server is down) and refreshed every issuer's
 *   `jwksRefreshInterval` (10 minutes). A failed refresh keeps the keys held.
 * - On-demand fetches (first fetch, unknown `kid`) are rate-limited: at most one
 *   per issuer within `jwksMinRefreshInterval` (30 s) of the previous fetch,
 *   and concurrent callers share one fetch. A flood of tokens with invented
 *   `kid`s therefore costs the authorization server one request per window.
 * - An unknown `kid` is only called unknown once a fetch made for it (or
 *   after it arrived) came back without it. When the keys cannot be fetched
 *   now (the fetch failed, or the window has not passed), the answer is
 *   `JwksUnavailable` with the time until the next fetch may run: a 503 with
 *   `Retry-After`, not a 401 that would send the client to re-authorise in a
 *   loop while the authorization server is rotating or down.
 * - The JWKS URI is the configured one, or discovered (RFC 8414, then OpenID
 *   Discovery) and re-discovered after a failed fetch.
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
import * as Metrics from "../observability/Metrics.ts"
import { discover } from "./AuthorizationServerMetadata.ts"
import { fetchJson } from "./internal/fetchJson.ts"
import { jose } from "./internal/jose.ts"
import { JwksUnavailable } from "./OAuthErrors.ts"
import { type AuthorizationServer, OAuthConfig } from "./OAuthOptions.ts"

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
  lastAttemptAt: number | undefined
  lastError: string | undefined
  discoveredUri: string | undefined
  fetches: number
  failures: number
}

const JwksDocument = Schema.Struct({ keys: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)) })
const decodeJwks = Schema.decodeUnknownEffect(JwksDocument)

const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "priv"]

/** A public asymmetric signing key: no `oct`, no private members, `use` absent or `sig`. */
export const isPublicSigningKey = (jwk: Readonly<Record<string, unknown>>): boolean =>
  (jwk.kty === "RSA" || jwk.kty === "EC" || jwk.kty === "OKP") &&
  PRIVATE_MEMBERS.every((member) => !(member in jwk)) &&
  (jwk.use === undefined || jwk.use === "sig")

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
    if (usable.length === 0) return yield* Effect.fail(`${uri} holds no public signing key`)
    const keySet = yield* Effect.try({
      try: () => jose().createLocalJWKSet({ keys: usable as unknown as Array<JWK> }),
      catch: () => `${uri} is not a valid JWK Set`
    })
    const kids = new Set(usable.flatMap((jwk) => typeof jwk.kid === "string" ? [jwk.kid] : []))
    return { uri, keySet, kids, keyCount: usable.length, dropped: document.keys.length - usable.length }
  })

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
   * A token named a key that `seen` lacks: refetch unless a fetch happened
   * within `jwksMinRefreshInterval`, sharing the fetch with concurrent callers.
   * Returns a snapshot newer than `seen` (which may still lack the key), or
   * fails with `JwksUnavailable` when no newer one can be had now.
   */
  readonly refreshForUnknownKey: (issuer: string, seen: JwksSnapshot) => Effect.Effect<JwksSnapshot, JwksUnavailable>
  /** Refetches now, regardless of the rate limit (the periodic refresh uses it). */
  readonly refresh: (issuer: string) => Effect.Effect<JwksSnapshot, JwksUnavailable>
  readonly status: Effect.Effect<ReadonlyArray<JwksStatus>>
}>()("@janus/gateway/oauth/JwksCache") {
  /**
   * Fetches every issuer's keys in the background at start, then every
   * issuer's `jwksRefreshInterval`; the background fibers end with the layer's scope.
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
          lastAttemptAt: undefined,
          lastError: undefined,
          discoveredUri: undefined,
          fetches: 0,
          failures: 0
        })
      }

      const fetchKeys = (state: IssuerState) =>
        Effect.gen(function*() {
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

      const load = (state: IssuerState, mode: Mode, seenGeneration: number) =>
        Semaphore.withPermit(state.semaphore)(Effect.gen(function*() {
          // another caller fetched while this one waited: share its result
          if (state.snapshot !== undefined && state.generation !== seenGeneration) return state.snapshot
          const startedAt = yield* Clock.currentTimeMillis
          const last = state.lastAttemptAt
          if (mode !== "scheduled" && last !== undefined && startedAt - last < minInterval) {
            const wait = last + minInterval - startedAt
            return yield* unavailable(
              state,
              state.lastError === undefined
                ? "the key is not in the set fetched moments ago; the set is fetched again after the rate-limit window"
                : `the last fetch failed (${state.lastError}); retried after the rate-limit window`,
              wait
            )
          }
          const result = yield* Effect.result(fetchKeys(state))
          state.lastAttemptAt = startedAt
          state.fetches++
          if (result._tag === "Failure") {
            state.failures++
            state.lastError = result.failure
            yield* Effect.logWarning("JWKS fetch failed").pipe(
              Effect.annotateLogs({ issuer: state.server.issuer, reason: result.failure, trigger: mode })
            )
            // held keys still serve tokens signed with them; a key being looked for is not among them
            if (mode !== "unknown-key" && state.snapshot !== undefined) return state.snapshot
            return yield* unavailable(state, result.failure, minInterval)
          }
          const fetched = result.success
          state.generation++
          state.lastError = undefined
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
      // kid the cached set does not have)
      const current = (issuer: string) =>
        Effect.flatMap(
          stateOf(issuer),
          (state) =>
            state.snapshot !== undefined
              ? Effect.as(jwksHit, state.snapshot)
              : Effect.andThen(jwksMiss, load(state, "initial", state.generation))
        )

      const refreshForUnknownKey = (issuer: string, seen: JwksSnapshot) =>
        Effect.flatMap(
          stateOf(issuer),
          (state) => Effect.andThen(jwksMiss, load(state, "unknown-key", seen.generation))
        )

      const refresh = (issuer: string) =>
        Effect.flatMap(stateOf(issuer), (state) => load(state, "scheduled", state.generation))

      // one refresher per issuer, each on its own interval
      for (const state of states.values()) {
        const scheduled = Effect.ignore(Effect.suspend(() => load(state, "scheduled", state.generation)))
        yield* scheduled.pipe(
          Effect.andThen(Effect.forever(Effect.andThen(Effect.sleep(state.server.jwksRefreshInterval), scheduled))),
          Effect.forkScoped
        )
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
