/**
 * The two rate-limit tiers of admission, on effect's `RateLimiter` (token
 * bucket).
 *
 * **Rules** (SCALING-PLAN 3b, SPEC "The hot path of tools/call")
 *
 * - Defaults are JanusConfig's (`RATE_LIMIT_*`), read from its `VARIABLES`.
 * - Three tiers. `ip` (default 300/s, burst 600) runs first, before any
 *   credential is looked at: a coarse pre-auth DoS guard, generous because
 *   enterprise clients share one NAT address. `identity` (default 50/s, burst
 *   100) runs after authentication and is keyed by the authenticated identity
 *   (`Caller.id`): real per-tenant fairness. It never runs on an unvalidated
 *   bearer string, which would let an attacker mint a fresh bucket per request.
 *   `auth_failure` (default 30 a minute, burst 10), keyed by client address,
 *   is drawn on only by failed authentications (the admin API's): while it is
 *   empty the address is refused before its credential is looked at
 *   (`peek`), so guessing tokens costs the guesser, not the store.
 * - A policy `{ rate, burst }` is a token bucket of capacity `burst` refilled
 *   at `rate` per second: effect's `consume({ algorithm: "token-bucket",
 *   limit: burst, window: burst / rate seconds })`.
 * - Stores: per instance in memory by default; with Redis, one bucket per key
 *   shared by every instance (a true global limit). The memory store is
 *   effect's token bucket with eviction: a bucket that has refilled to full is
 *   the same as no bucket and is dropped, and at most `MAX_MEMORY_KEYS` keys
 *   are kept, so addresses chosen by an attacker cannot grow memory without
 *   bound (effect's `layerStoreMemory` never forgets a key).
 * - Redis down or slow: fail open to the per-instance memory store, but with
 *   this instance's fair share of each limit only: rate and burst divided by
 *   the replicas known to share the store (at least one token), so the
 *   instances together still admit about one global bucket instead of
 *   N x the limit, and an optional component never becomes an outage of the
 *   MCP endpoint. Replicas are known through Redis itself: each instance
 *   writes a heartbeat (`instances` sorted set, every `HEARTBEAT_EVERY`) and
 *   counts the ones seen within `REPLICA_TTL`; before the first count it
 *   assumes it is alone. A command that fails (the client is offline:
 *   commands are never queued while disconnected) or does not answer within
 *   `timeout` (default `DEFAULT_REDIS_TIMEOUT`, 250 ms) switches to memory
 *   for `retryAfter` (default 1 s), then the next request probes Redis
 *   again. Each switch is logged once (warning down, info back); every
 *   decision taken in memory while Redis is configured counts in
 *   `janus.limiter.fallback{tier}`.
 * - The share keeps count while Redis decides: every token Redis is asked
 *   for is also taken from this instance's share (when it has one), and a
 *   request whose answer is late is decided by what the share had for it.
 *   A late answer may still have been counted by Redis, so without this a
 *   burst whose answers are late would admit one bucket through Redis plus a
 *   full share on every instance; with it the instances together admit about
 *   one bucket, and a switch to memory goes on from what this instance took.
 * - Start-up never fails or hangs on Redis: the layer waits up to
 *   `connectWait` (default 2 s) for a first connection, then serves from
 *   memory while it keeps connecting in the background (the connection of
 *   `redis/Redis.ts`: backoff up to 2 s).
 * - Every refusal counts in `janus.limiter.refused{tier}`.
 * - Hot path: per tier the consume options, metric handles and header values
 *   are computed once; a decision allocates only effect's own bookkeeping.
 *
 * Over 450 lines: the tiers, their Redis store and the fallback to this
 * instance's share are one decision (admit or not) and read best together.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Exit, Fiber, Metric, type Redacted, Schedule, Schema, type Scope } from "effect"
import { RateLimiter, Redis as EffectRedis } from "effect/persistence"
import { randomUUID } from "node:crypto"
import { VARIABLES } from "../config/JanusConfig.ts"
import { limiterFallback, limiterRefused } from "../observability/Metrics.ts"
import * as Redis from "../redis/Redis.ts"

/** A token bucket: `burst` tokens, refilled at `rate` per second. */
export interface RatePolicy {
  /** Sustained requests per second. */
  readonly rate: number
  /** Bucket capacity: requests allowed at once after a quiet period. */
  readonly burst: number
}

/** The pre-auth per-IP tier (SCALING-PLAN 3b): JanusConfig's `RATE_LIMIT_IP` / `_BURST` defaults. */
export const DEFAULT_IP_POLICY: RatePolicy = {
  rate: VARIABLES.RATE_LIMIT_IP.default,
  burst: VARIABLES.RATE_LIMIT_IP_BURST.default
}
/** The per-identity tier (SCALING-PLAN 3b): JanusConfig's `RATE_LIMIT_IDENTITY` / `_BURST` defaults. */
export const DEFAULT_IDENTITY_POLICY: RatePolicy = {
  rate: VARIABLES.RATE_LIMIT_IDENTITY.default,
  burst: VARIABLES.RATE_LIMIT_IDENTITY_BURST.default
}
/**
 * Failed authentications per address (JanusConfig's `RATE_LIMIT_AUTH_FAILURES`,
 * per minute, and `_BURST`): 10 in a row (a mistyped token, a rotated one
 * still in a script), then one every 2 seconds. A person never notices; 30
 * parallel guesses get 10 answers.
 */
export const DEFAULT_AUTH_FAILURE_POLICY: RatePolicy = {
  rate: VARIABLES.RATE_LIMIT_AUTH_FAILURES.default / 60,
  burst: VARIABLES.RATE_LIMIT_AUTH_FAILURES_BURST.default
}

export type Tier = "ip" | "identity" | "auth_failure"

const TIERS: ReadonlyArray<Tier> = ["ip", "identity", "auth_failure"]

/**
 * How long one Redis decision may take by default. A decision is one
 * `EVALSHA` round trip, well under a millisecond on an idle loopback, but
 * under load it waits behind the instance's own event loop and every other
 * command of the connection: at 50 ms a busy instance gave up on answers
 * Redis was about to give and decided alone for a second. 250 ms (the circuit
 * breakers' store waits as long) is still far below any client's timeout.
 */
export const DEFAULT_REDIS_TIMEOUT = Duration.millis(250)

/** How often an instance tells the shared store it is alive (its fair share of a fallback depends on the count). */
export const HEARTBEAT_EVERY = Duration.seconds(5)

/** A replica whose heartbeat is older than this is no longer counted: three missed heartbeats. */
export const REPLICA_TTL = Duration.seconds(15)

/** Keys kept by the memory store at most (the least recently created are dropped first). */
export const MAX_MEMORY_KEYS = 100_000

/** The shared store of the limits. */
export interface RedisLimitOptions {
  /** `REDIS_URL`. */
  readonly url: Redacted.Redacted<string> | string
  /** Key prefix (default `janus:ratelimit:`); the tiers add `ip:` / `id:` / `fail:`. */
  readonly prefix?: string | undefined
  /** How long one Redis decision may take before the memory store decides (default `DEFAULT_REDIS_TIMEOUT`). */
  readonly timeout?: Duration.Input | undefined
  /** How long to stay on memory after a Redis failure before probing again (default 1 s). */
  readonly retryAfter?: Duration.Input | undefined
  /** How long start-up waits for the first connection (default 2 s). */
  readonly connectWait?: Duration.Input | undefined
}

/** The tiers and where their budgets live. */
export interface LimitsOptions {
  /** The per-IP tier (default 300/s, burst 600). */
  readonly ip?: RatePolicy | undefined
  /** The per-identity tier (default 50/s, burst 100). */
  readonly identity?: RatePolicy | undefined
  /** Failed authentications per address (default 30 a minute, burst 10; see `Admission.admitAuthentication`). */
  readonly authFailure?: RatePolicy | undefined
  /** Share the limits through Redis (global across instances). Default: per instance in memory. */
  readonly redis?: RedisLimitOptions | undefined
}

/** A request over its tier's limit. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  tier: Schema.Literals(TIERS),
  /** When one token is available again. */
  retryAfterMs: Schema.Number
}) {}

/** A limit setting that cannot work. */
export class InvalidLimits extends Schema.TaggedError<InvalidLimits>()("InvalidLimits", {
  message: Schema.String
}) {}

/** Where decisions are taken now. */
export type LimiterBackend = "memory" | "redis" | "memory (redis unavailable)"

/** The limits of both tiers. */
export interface Limits {
  /** Takes one token for `key` from `tier`'s bucket, or refuses. */
  readonly consume: (tier: Tier, key: string) => Effect.Effect<void, RateLimited>
  /** Refuses when `key`'s bucket in `tier` is empty, taking nothing. */
  readonly peek: (tier: Tier, key: string) => Effect.Effect<void, RateLimited>
  /** The policy of `tier`. */
  readonly policy: (tier: Tier) => RatePolicy
  /** Where decisions are taken now. */
  readonly backend: Effect.Effect<LimiterBackend>
  /** The replicas known to share the Redis store (1 until counted, or without Redis). */
  readonly replicas: Effect.Effect<number>
}

const validate = (tier: Tier, policy: RatePolicy): InvalidLimits | undefined => {
  if (!Number.isFinite(policy.rate) || policy.rate <= 0) {
    return new InvalidLimits({
      message: `The ${tier} rate limit must be a positive number per second, got ${policy.rate}`
    })
  }
  if (!Number.isInteger(policy.burst) || policy.burst < 1) {
    return new InvalidLimits({ message: `The ${tier} burst must be a whole number of at least 1, got ${policy.burst}` })
  }
  return undefined
}

// -----------------------------------------------------------------------------
// Memory store: effect's token bucket, with eviction
// -----------------------------------------------------------------------------

interface Bucket {
  tokens: number
  lastRefill: number
  limit: number
  refillMillis: number
}

/** A bounded memory store, and how many buckets it holds (tests, diagnostics). */
export interface MemoryStore {
  readonly store: RateLimiter.RateLimiterStore["Service"]
  readonly size: () => number
  /**
   * Takes one token from `key`'s bucket of `limit` if it has one: the tokens
   * left after (negative: there was none, nothing taken) and the milliseconds
   * since the last refill. Synchronous, for the decision's hot path.
   */
  readonly takeUnsafe: (
    key: string,
    limit: number,
    refillMillis: number,
    now: number
  ) => readonly [remaining: number, sinceRefill: number]
}

/**
 * A `RateLimiterStore` whose token buckets are effect's (same arithmetic as
 * `RateLimiter.layerStoreMemory`) but forgotten once full, and capped at
 * `maxKeys`. The other algorithms are effect's memory store.
 */
export const makeMemoryStore = (maxKeys = MAX_MEMORY_KEYS): Effect.Effect<MemoryStore> =>
  Effect.gen(function*() {
    const inner = yield* Effect.service(RateLimiter.RateLimiterStore).pipe(
      Effect.provide(RateLimiter.layerStoreMemory)
    )
    const buckets = new Map<string, Bucket>()
    const minSweep = Math.min(1_024, maxKeys)
    let sweepAt = minSweep

    const sweep = (now: number) => {
      for (const [key, b] of buckets) {
        if (b.tokens + Math.floor((now - b.lastRefill) / b.refillMillis) >= b.limit) buckets.delete(key)
      }
      // Still too many live buckets: drop the oldest (Map order is creation order).
      if (buckets.size >= maxKeys) {
        let excess = buckets.size - Math.floor(maxKeys * 0.9)
        for (const key of buckets.keys()) {
          if (excess-- <= 0) break
          buckets.delete(key)
        }
      }
      sweepAt = Math.min(maxKeys, Math.max(minSweep, buckets.size * 2))
    }

    /** Refills `key`'s bucket up to `now`, then takes `tokens` if it has them (or `allowOverflow`). */
    const take = (
      key: string,
      limit: number,
      refillMillis: number,
      tokens: number,
      allowOverflow: boolean,
      now: number
    ): readonly [remaining: number, sinceRefill: number] => {
      let bucket = buckets.get(key)
      if (bucket === undefined) {
        if (buckets.size >= sweepAt) sweep(now)
        bucket = { tokens: limit, lastRefill: now, limit, refillMillis }
        buckets.set(key, bucket)
      }
      bucket.limit = limit
      bucket.refillMillis = refillMillis
      const tokensToAdd = Math.floor((now - bucket.lastRefill) / refillMillis)
      if (tokensToAdd > 0) {
        bucket.tokens = Math.min(limit, bucket.tokens + tokensToAdd)
        bucket.lastRefill += tokensToAdd * refillMillis
      }
      if (bucket.tokens >= limit) bucket.lastRefill = now
      const next = bucket.tokens - tokens
      if (allowOverflow || next >= 0) bucket.tokens = next
      return [next, Math.max(0, now - bucket.lastRefill)]
    }

    const store = RateLimiter.RateLimiterStore.of({
      ...inner,
      tokenBucket: (options) =>
        Effect.clockWith((clock) =>
          Effect.sync(() =>
            take(
              options.key,
              options.limit,
              Duration.toMillis(options.refillRate),
              options.tokens,
              options.allowOverflow,
              clock.currentTimeMillisUnsafe()
            )
          )
        )
    })
    return {
      store,
      size: () => buckets.size,
      takeUnsafe: (key, limit, refillMillis, now) => take(key, limit, refillMillis, 1, false, now)
    }
  })

// -----------------------------------------------------------------------------
// Redis connection
// -----------------------------------------------------------------------------

const connectRedis = (
  options: RedisLimitOptions,
  scope: Scope.Scope
): Effect.Effect<
  readonly [RateLimiter.RateLimiter, RateLimiter.RateLimiter, RateLimiter.RateLimiter, EffectRedis.Redis["Service"]],
  unknown
> =>
  Redis.withConnection(
    options.url,
    scope,
    Effect.gen(function*() {
      const prefix = options.prefix ?? `${Redis.KEY_PREFIX}ratelimit:`
      const limiterFor = (tierPrefix: string) =>
        RateLimiter.makeStoreRedis({ prefix: `${prefix}${tierPrefix}` }).pipe(
          Effect.flatMap((store) => Effect.provideService(RateLimiter.make, RateLimiter.RateLimiterStore, store))
        )
      return [
        yield* limiterFor("ip:"),
        yield* limiterFor("id:"),
        yield* limiterFor("fail:"),
        yield* EffectRedis.Redis
      ] as const
    })
  )

// -----------------------------------------------------------------------------
// The limits
// -----------------------------------------------------------------------------

interface TierState {
  readonly tier: Tier
  readonly policy: RatePolicy
  readonly window: Duration.Duration
  readonly memory: RateLimiter.RateLimiter
  readonly memoryStore: MemoryStore
  redis: RateLimiter.RateLimiter | undefined
  readonly refused: Metric.Metric<number, unknown>
  readonly fallback: Metric.Metric<number, unknown>
}

/**
 * Builds both tiers. With `redis`, connects in the background (waiting up to
 * `connectWait`); the connection lives as long as the scope.
 */
export const make = (options: LimitsOptions = {}): Effect.Effect<Limits, InvalidLimits, Scope.Scope> =>
  Effect.gen(function*() {
    const ipPolicy = options.ip ?? DEFAULT_IP_POLICY
    const identityPolicy = options.identity ?? DEFAULT_IDENTITY_POLICY
    const authFailurePolicy = options.authFailure ?? DEFAULT_AUTH_FAILURE_POLICY
    const invalid = validate("ip", ipPolicy) ?? validate("identity", identityPolicy) ??
      validate("auth_failure", authFailurePolicy)
    if (invalid !== undefined) return yield* invalid

    const tierState = (tier: Tier, policy: RatePolicy) =>
      Effect.gen(function*() {
        const memoryStore = yield* makeMemoryStore()
        const memory = yield* Effect.provideService(RateLimiter.make, RateLimiter.RateLimiterStore, memoryStore.store)
        const state: TierState = {
          tier,
          policy,
          window: Duration.millis(policy.burst * 1_000 / policy.rate),
          memory,
          memoryStore,
          redis: undefined,
          refused: Metric.withAttributes(limiterRefused, { tier }),
          fallback: Metric.withAttributes(limiterFallback, { tier })
        }
        return state
      })
    const ip = yield* tierState("ip", ipPolicy)
    const identity = yield* tierState("identity", identityPolicy)
    const authFailure = yield* tierState("auth_failure", authFailurePolicy)
    const stateOf = (tier: Tier): TierState => tier === "ip" ? ip : tier === "identity" ? identity : authFailure

    const redisOptions = options.redis
    const timeout = Duration.fromInputUnsafe(redisOptions?.timeout ?? DEFAULT_REDIS_TIMEOUT)
    const noAnswer = new RateLimiter.RateLimitStoreError({
      message: `no answer within ${Duration.format(timeout)}`
    })
    const retryAfterMs = Duration.toMillis(Duration.fromInputUnsafe(redisOptions?.retryAfter ?? "1 second"))
    /** Redis is skipped until this time (epoch ms) after a failure. */
    let downUntil = 0
    let down = false

    const markDown = (state: TierState, reason: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        downUntil = now + retryAfterMs
        if (down) return Effect.void
        down = true
        return Effect.logWarning(
          `Rate limits: the Redis store is unavailable (${reason}); limiting per instance until it answers again`
        ).pipe(Effect.annotateLogs({ tier: state.tier }))
      })

    const markUp = Effect.suspend(() => {
      if (!down) return Effect.void
      down = false
      return Effect.logInfo("Rate limits: the Redis store answers again; limits are global again")
    })

    const refuse = (state: TierState, retryAfter: Duration.Duration) =>
      Effect.andThen(
        Metric.update(state.refused, 1),
        Effect.fail(new RateLimited({ tier: state.tier, retryAfterMs: Duration.toMillis(retryAfter) }))
      )

    /** Replicas known to share the Redis store (see the Rules): a fallback decides with 1/replicas of each limit. */
    let replicas = 1

    /** Takes `tokens` (1, or 0 to look: refused when not even one is left) from a bucket of `burst`. */
    const decide = (
      state: TierState,
      limiter: RateLimiter.RateLimiter,
      key: string,
      tokens: 0 | 1,
      burst = state.policy.burst
    ): Effect.Effect<void, RateLimited | RateLimiter.RateLimitStoreError> =>
      // the window (burst / rate) is the same for a share: both are divided by the replicas
      limiter.consume({ algorithm: "token-bucket", limit: burst, window: state.window, key, tokens })
        .pipe(
          Effect.matchEffect({
            onFailure: (error): Effect.Effect<void, RateLimited | RateLimiter.RateLimitStoreError> =>
              error.reason._tag === "RateLimitExceeded" ?
                refuse(state, error.reason.retryAfter) :
                Effect.fail(error.reason),
            onSuccess: (result) => {
              if (tokens === 1 || result.remaining >= 1) return Effect.void
              // empty: the next token comes one refill before a full bucket would be reset
              const refillMillis = Duration.toMillis(state.window) / burst
              const nextMillis = Duration.toMillis(result.resetAfter) - (burst - 1) * refillMillis
              return refuse(state, Duration.millis(Math.max(1, Math.ceil(nextMillis))))
            }
          })
        )

    // The memory store never fails: its only error is the refusal.
    const inMemory = (state: TierState, key: string, tokens: 0 | 1) =>
      decide(state, state.memory, key, tokens) as Effect.Effect<void, RateLimited>

    const shareOf = (state: TierState) => Math.max(1, Math.floor(state.policy.burst / replicas))

    /** This instance's share of the global bucket, while Redis does not decide. */
    const inMemoryFallback = (state: TierState, key: string, tokens: 0 | 1) =>
      Effect.andThen(
        Metric.update(state.fallback, 1),
        decide(state, state.memory, key, tokens, shareOf(state)) as Effect.Effect<void, RateLimited>
      )

    /** Redis decides within `timeout`; a store failure or a late answer is decided by `fallback`. */
    const askRedis = (
      state: TierState,
      redis: RateLimiter.RateLimiter,
      key: string,
      tokens: 0 | 1,
      fallback: () => Effect.Effect<void, RateLimited>
    ): Effect.Effect<void, RateLimited> =>
      decide(state, redis, key, tokens).pipe(
        Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(noAnswer) }),
        Effect.matchEffect({
          onSuccess: () => markUp,
          onFailure: (error) =>
            error._tag === "RateLimited"
              ? Effect.andThen(markUp, Effect.fail(error))
              : Effect.andThen(markDown(state, error.message), fallback())
        })
      )

    /**
     * Redis decides, and the same token is taken from this instance's share
     * (see the Rules): when Redis does not answer in time, what the share had
     * for this request is the decision, so instances whose answers are late
     * together admit about one bucket, not one plus a share each.
     */
    const inRedis = (state: TierState, redis: RateLimiter.RateLimiter, key: string, now: number) => {
      const share = shareOf(state)
      const refillMillis = Duration.toMillis(state.window) / share
      const [remaining, sinceRefill] = state.memoryStore.takeUnsafe(key, share, refillMillis, now)
      // built only when Redis did not answer: the hot path allocates nothing for it
      const fromShare = (): Effect.Effect<void, RateLimited> =>
        Effect.andThen(
          Metric.update(state.fallback, 1),
          remaining >= 0
            ? Effect.void
            : refuse(state, Duration.millis(Math.max(1, Math.ceil(refillMillis - sinceRefill))))
        )
      return askRedis(state, redis, key, 1, fromShare)
    }

    const consumeIn = (state: TierState, key: string, tokens: 0 | 1): Effect.Effect<void, RateLimited> => {
      const redis = state.redis
      if (redis === undefined) {
        return redisOptions === undefined ? inMemory(state, key, tokens) : inMemoryFallback(state, key, tokens)
      }
      return Effect.clockWith((clock) => {
        const now = clock.currentTimeMillisUnsafe()
        if (now < downUntil) return inMemoryFallback(state, key, tokens)
        if (tokens === 1) return inRedis(state, redis, key, now)
        // a look takes nothing, from Redis or from the share
        return askRedis(state, redis, key, 0, () => inMemoryFallback(state, key, 0))
      })
    }

    if (redisOptions !== undefined) {
      const scope = yield* Effect.scope
      const connecting = yield* connectRedis(redisOptions, scope).pipe(
        Effect.tap(([ipLimiter, identityLimiter, authFailureLimiter, redis]) =>
          Effect.andThen(
            Effect.sync(() => {
              ip.redis = ipLimiter
              identity.redis = identityLimiter
              authFailure.redis = authFailureLimiter
            }),
            Effect.andThen(
              Effect.logInfo("Rate limits: connected to Redis; limits are global across instances"),
              heartbeat(redis, redisOptions, (n) => {
                replicas = Math.max(1, n)
              }).pipe(Effect.forkIn(scope), Effect.asVoid)
            )
          )
        ),
        Effect.tapCause((cause) => Effect.logWarning("Rate limits: could not set up the Redis store", cause)),
        Effect.forkIn(scope)
      )
      const waited = yield* Fiber.await(connecting).pipe(
        Effect.timeoutOption(redisOptions.connectWait ?? "2 seconds")
      )
      if (waited._tag === "None" || Exit.isFailure(waited.value)) {
        yield* Effect.logWarning(
          "Rate limits: Redis is not reachable yet; limiting per instance until it is (still connecting)"
        )
      }
    }

    return {
      consume: (tier, key) => consumeIn(stateOf(tier), key, 1),
      peek: (tier, key) => consumeIn(stateOf(tier), key, 0),
      policy: (tier) => stateOf(tier).policy,
      backend: Effect.clockWith((clock) =>
        Effect.succeed<LimiterBackend>(
          redisOptions === undefined
            ? "memory"
            : ip.redis === undefined || down || clock.currentTimeMillisUnsafe() < downUntil
            ? "memory (redis unavailable)"
            : "redis"
        )
      ),
      replicas: Effect.sync(() => replicas)
    } satisfies Limits
  })

/**
 * Every `HEARTBEAT_EVERY`: this instance's heartbeat in the `instances` sorted
 * set (score: the time), the ones older than `REPLICA_TTL` dropped, and the
 * count of the rest handed to `counted`. A failed round keeps the last count.
 */
const heartbeat = (
  redis: EffectRedis.Redis["Service"],
  options: RedisLimitOptions,
  counted: (replicas: number) => void
): Effect.Effect<void> => {
  const key = `${options.prefix ?? `${Redis.KEY_PREFIX}ratelimit:`}instances`
  const id = randomUUID()
  const ttlMillis = Duration.toMillis(REPLICA_TTL)
  const round = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    redis.send("ZADD", key, String(now), id).pipe(
      Effect.andThen(redis.send("ZREMRANGEBYSCORE", key, "-inf", String(now - ttlMillis))),
      Effect.andThen(redis.send("PEXPIRE", key, String(ttlMillis))),
      Effect.andThen(redis.send<number>("ZCARD", key)),
      Effect.tap((n) => Effect.sync(() => counted(Number(n)))),
      Effect.ignore
    ))
  return Effect.repeat(round, Schedule.spaced(HEARTBEAT_EVERY)).pipe(
    Effect.ensuring(Effect.ignore(redis.send("ZREM", key, id))),
    Effect.asVoid
  )
}
