/**
 * Admission: the first steps of the tools/call hot path, and the tool scope
 * of a caller.
 *
 * **Rules** (SPEC "The hot path of tools/call, in order")
 *
 * - `admitMessage`: each message of a JSON-RPC batch after the first takes
 *   one token of both tiers, as a request of its own would (the batch's
 *   request took one for its first message); the credential is not looked
 *   at again.
 * - `admit`, once per HTTP request, before the body is read:
 *   1. per-IP limiter (pre-auth DoS guard, 300/s burst 600) keyed by the
 *      client address (`ClientIp`: the socket peer, or `X-Forwarded-For`
 *      behind `trustedProxies`; IPv6 by /64);
 *   2. authenticate (`Authenticate`: client token through the token cache,
 *      or a JWT through the OAuth module when it is configured);
 *   3. per-identity limiter (50/s burst 100) keyed by `Caller.id`, never by
 *      the bearer string: keying on an unvalidated token would let an
 *      attacker mint a fresh bucket per request (SCALING-PLAN 3b). Anonymous
 *      callers have no identity; the per-IP tier is their limit.
 *   Refusals are `AdmissionRefused`: 401/403 with `WWW-Authenticate`, 429
 *   with `Retry-After`, `RateLimit` and `RateLimit-Policy`, 503 with
 *   `Retry-After`.
 * - `admitAuthentication`: the same pre-auth tier for another surface that
 *   authenticates its own way (the admin API): the per-IP bucket, then the
 *   credential, then, for a failed one only, the failed-authentication bucket
 *   of the address (`auth_failure`, 30 a minute, burst 10): each failure
 *   draws one token, and while it is empty every failure is 429. A valid credential is admitted
 *   whatever the bucket holds: bad tokens sent from an address (a neighbour
 *   behind the same NAT, an attacker spoofing nothing more than the
 *   address) never lock the valid admin out. Checking a credential is a hash
 *   lookup, bounded by the per-IP tier; guessing a 256-bit token is not
 *   made easier by being answered.
 * - `authorize` (inside the guard, before the concurrency permit) and
 *   `canSee` (tools/list) apply `ToolScope`: `denied` outside the scope.
 * - `requireAuth` (default true): a request without credentials is refused.
 *   `false` admits it as `anonymous` (embedded developer mode, only when the
 *   operator explicitly allows it; a warning is logged at start).
 * - OAuth is on when `JwtVerifier` and `OAuthConfig` are in context (the
 *   lead provides `OAuthLayer`); `oauth: true` makes their absence a start
 *   error instead of silently accepting client tokens only.
 * - Limits: effect `RateLimiter` token buckets, in memory, or shared through
 *   Redis when `redis` is given (fail open to memory while Redis is down;
 *   see `RateLimits`).
 *
 * @since 0.1.0
 */
import { ConfigCache, TokenCache } from "@janus/storage"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type * as Caller from "../mcp/Caller.ts"
import { AdmissionRefused, type AdmissionRequest } from "../mcp/Guard.ts"
import type { ToolCallRefused } from "../mcp/ToolCatalog.ts"
import { JwtVerifier, OAuthConfig } from "../oauth/index.ts"
import * as Authenticate from "./Authenticate.ts"
import * as ClientIp from "./ClientIp.ts"
import * as AuthHeaders from "./Headers.ts"
import * as RateLimits from "./RateLimits.ts"
import * as ToolScope from "./ToolScope.ts"

/** How admission is set up. */
export interface AdmissionOptions {
  /** Refuse requests without credentials (default true). `false`: admit them as `anonymous`. */
  readonly requireAuth?: boolean | undefined
  /** Proxies whose `X-Forwarded-For` hop is trusted: CIDRs or addresses (default none). */
  readonly trustedProxies?: ReadonlyArray<string> | undefined
  /** The rate limits' tiers and their store (see `RateLimits.LimitsOptions`). */
  readonly limits?: RateLimits.LimitsOptions | undefined
  /** `true`: OAuth must be configured (start fails otherwise). Default: used when provided. */
  readonly oauth?: boolean | undefined
  /** `realm` of the `WWW-Authenticate` challenge without OAuth (default `janus`). */
  readonly realm?: string | undefined
}

/** Admission cannot start with these options. */
export class AdmissionConfigError extends Schema.TaggedError<AdmissionConfigError>()("AdmissionConfigError", {
  message: Schema.String
}) {}

/** @since 0.1.0 */
export class Admission extends Context.Service<Admission, {
  /** per-IP limiter -> authenticate -> per-identity limiter. */
  readonly admit: (request: AdmissionRequest) => Effect.Effect<Caller.Caller, AdmissionRefused>
  /** One more message of an admitted request: one token of each tier. */
  readonly admitMessage: (request: AdmissionRequest, caller: Caller.Caller) => Effect.Effect<void, AdmissionRefused>
  /**
   * per-IP limiter -> failed-authentication limiter -> `authenticate`; a failure that `failed` recognises draws
   * on the failed-authentication bucket.
   */
  readonly admitAuthentication: <A, E, R>(
    request: AdmissionRequest,
    authenticate: Effect.Effect<A, E, R>,
    failed: (error: E) => boolean
  ) => Effect.Effect<A, E | AdmissionRefused, R>
  /** The "authorize the tool" step: `denied` when `toolName` is outside the caller's scope. */
  readonly authorize: (caller: Caller.Caller, toolName: string) => Effect.Effect<void, ToolCallRefused>
  /** Whether tools/list shows `toolName` to `caller`. */
  readonly canSee: (caller: Caller.Caller, toolName: string) => boolean
  /** Whether `caller` may use the URL of the virtual server `name`. */
  readonly canUseServer: (caller: Caller.Caller, name: string) => boolean
  /** The client's address (the socket peer, or `X-Forwarded-For` behind trusted proxies), for the audit. */
  readonly clientAddress: (request: AdmissionRequest) => string
  /** Where rate-limit decisions are taken now (diagnostics). */
  readonly limiterBackend: Effect.Effect<RateLimits.LimiterBackend>
}>()("@janus/gateway/auth/Admission") {
  /** Admission over the token and config caches (and the OAuth services when present). */
  static readonly layer = (
    options: AdmissionOptions = {}
  ): Layer.Layer<Admission, AdmissionConfigError, TokenCache | ConfigCache> => Layer.effect(Admission, make(options))
}

const make = Effect.fnUntraced(function*(options: AdmissionOptions) {
  const clientIp = ClientIp.make(options.trustedProxies)
  if (clientIp instanceof ClientIp.InvalidTrustedProxy) {
    return yield* new AdmissionConfigError({ message: clientIp.message })
  }
  const limits = yield* RateLimits.make(options.limits ?? {}).pipe(
    Effect.mapError((error) => new AdmissionConfigError({ message: error.message }))
  )

  const verifier = yield* Effect.serviceOption(JwtVerifier)
  const settings = yield* Effect.serviceOption(OAuthConfig)
  const oauth = Option.isSome(verifier) && Option.isSome(settings)
    ? Option.some({ verifier: verifier.value, settings: settings.value })
    : Option.none()
  if (options.oauth === true && Option.isNone(oauth)) {
    return yield* new AdmissionConfigError({
      message: "OAuth is required (oauth: true) but OAuthLayer is not provided to Admission"
    })
  }
  const requireAuth = options.requireAuth ?? true
  if (!requireAuth) {
    yield* Effect.logWarning(
      "MCP requests without credentials are admitted as anonymous (requireAuth: false); " +
        "they may list and call every tool"
    )
  }

  const authenticate = Authenticate.make({
    requireAuth,
    realm: options.realm ?? "janus",
    tokens: yield* TokenCache,
    config: yield* ConfigCache,
    oauth
  })

  // Refusals of each tier: precomputed policy headers and messages.
  const tooMany = (tier: RateLimits.Tier) => {
    const policy = limits.policy(tier)
    const header = AuthHeaders.ratePolicy(policy)
    const what = tier === "ip" ? "from this address" : "for this identity"
    return (error: RateLimits.RateLimited, caller?: Caller.Caller) => {
      const s = AuthHeaders.seconds(error.retryAfterMs)
      return new AdmissionRefused({
        status: 429,
        message: tier === "auth_failure" ?
          `Too many failed authentications from this address: after ${policy.burst} in a row, one is allowed ` +
          `every ${1 / policy.rate} s; retry after ${s} s` :
          `Too many requests ${what}: the limit is ${policy.rate} per second (burst ${policy.burst}); ` +
          `retry after ${s} s`,
        headers: AuthHeaders.tooManyRequests(policy, header, error.retryAfterMs),
        retryAfterMs: error.retryAfterMs,
        bucket: tier,
        caller
      })
    }
  }
  const ipRefusal = tooMany("ip")
  const identityRefusal = tooMany("identity")
  const failureRefusal = tooMany("auth_failure")

  const identityLimit = (caller: Caller.Caller): Effect.Effect<Caller.Caller, AdmissionRefused> =>
    caller.kind === "anonymous" || caller.kind === undefined
      ? Effect.succeed(caller)
      : Effect.as(Effect.mapError(limits.consume("identity", caller.id), (e) => identityRefusal(e, caller)), caller)

  const ipLimit = (request: AdmissionRequest): Effect.Effect<void, AdmissionRefused> =>
    Effect.mapError(limits.consume("ip", clientIp.bucket(request.headers, request.remoteAddress)), (e) => ipRefusal(e))

  const admit = (request: AdmissionRequest): Effect.Effect<Caller.Caller, AdmissionRefused> =>
    ipLimit(request).pipe(
      Effect.andThen(authenticate(request.headers, request.url)),
      Effect.flatMap(identityLimit)
    )

  const admitMessage = (request: AdmissionRequest, caller: Caller.Caller): Effect.Effect<void, AdmissionRefused> =>
    Effect.andThen(ipLimit(request), Effect.asVoid(identityLimit(caller)))

  const admitAuthentication = <A, E, R>(
    request: AdmissionRequest,
    authenticated: Effect.Effect<A, E, R>,
    failed: (error: E) => boolean
  ): Effect.Effect<A, E | AdmissionRefused, R> => {
    const address = clientIp.bucket(request.headers, request.remoteAddress)
    // The credential is checked first (a hash lookup, or a JWT signature): a valid one is admitted whatever the
    // failure bucket holds, so failures sent from an address never lock its valid credentials out. Only a failure
    // meets the bucket: refused while it is empty, else it draws one token.
    const charged = Effect.catch(
      authenticated,
      (error) =>
        failed(error)
          ? limits.consume("auth_failure", address).pipe(
            Effect.mapError((e) => failureRefusal(e)),
            Effect.andThen(Effect.fail(error))
          )
          : Effect.fail(error)
    )
    return limits.consume("ip", address).pipe(
      Effect.mapError((e) => ipRefusal(e)),
      Effect.andThen(charged)
    )
  }

  return Admission.of({
    admit,
    admitMessage,
    admitAuthentication,
    authorize: ToolScope.authorize,
    canSee: ToolScope.canSee,
    canUseServer: ToolScope.canUseServer,
    clientAddress: (request) => clientIp.address(request.headers, request.remoteAddress),
    limiterBackend: limits.backend
  })
})
