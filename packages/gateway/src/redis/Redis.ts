/**
 * The gateway's one connection recipe for Redis (`REDIS_URL`): the rate
 * limits and the circuit breakers' shared store both connect through here, on
 * effect's `Redis` service (`@effect/platform-node/NodeRedis`).
 *
 * **Rules** (SPEC "Scale-out": Redis is optional)
 *
 * - Redis is optional, so the gateway never gives up on it: the client
 *   reconnects forever, with capped exponential backoff (50 ms doubling, at
 *   most 2 s, plus up to 100 ms of jitter).
 * - A command fails at once while disconnected instead of queueing
 *   (`disableOfflineQueue`): the caller decides in memory meanwhile.
 * - One connection attempt takes at most 1 s (`connectTimeout`).
 * - The client module is loaded only when Redis is configured: the redis
 *   client is hundreds of modules to load at start-up.
 * - The connection lives as long as the scope it is built in; keys are
 *   namespaced under `janus:` (`KEY_PREFIX`), each user adding its own part.
 * - The URL may be `Redacted`: it is unwrapped only to hand it to the client.
 *
 * @since 0.1.0
 */
import { type Context, Effect, Layer, Redacted, type Scope } from "effect"
import type * as EffectRedis from "effect/persistence/Redis"

/** The root of every key the gateway writes to Redis. */
export const KEY_PREFIX = "janus:"

/** Reconnects forever with capped exponential backoff: Redis is optional, the gateway never gives up on it. */
export const reconnectStrategy = (retries: number): number =>
  Math.min(50 * 2 ** Math.min(retries, 10), 2_000) + Math.floor(Math.random() * 100)

/**
 * The `Redis` service of `url`, connected in `scope` (closed with it). Fails
 * as node-redis does on the first connection (e.g. a bad URL); callers decide
 * whether that is logged and memory used instead.
 */
export const connect = (
  url: Redacted.Redacted<string> | string,
  scope: Scope.Scope
): Effect.Effect<Context.Context<EffectRedis.Redis>, EffectRedis.RedisError> =>
  Effect.promise(() => import("@effect/platform-node/NodeRedis")).pipe(
    Effect.flatMap((NodeRedis) =>
      Layer.buildWithScope(
        NodeRedis.layer({
          url: Redacted.isRedacted(url) ? Redacted.value(url) : url,
          disableOfflineQueue: true,
          socket: { connectTimeout: 1_000, reconnectStrategy }
        }),
        scope
      )
    )
  )

/**
 * Runs `use` with the `Redis` service of `url` in `scope`: the pattern of both
 * users, which build their store on the connection.
 */
export const withConnection = <A, E>(
  url: Redacted.Redacted<string> | string,
  scope: Scope.Scope,
  use: Effect.Effect<A, E, EffectRedis.Redis>
): Effect.Effect<A, E | EffectRedis.RedisError> =>
  Effect.flatMap(connect(url, scope), (context) => Effect.provideContext(use, context))
