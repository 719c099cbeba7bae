/**
 * The circuit breakers' store for a cluster: circuit state in Redis
 * (effect's `CircuitBreaker.layerStoreRedis`), so every replica sees the
 * same circuit, with the rate limits' fallback when Redis is away.
 *
 * **Rules** (SPEC "Scale-out": breaker state shared with Redis)
 *
 * - With Redis, failures counted on any replica open the circuit on all of
 *   them, and one replica at a time runs the half-open probe.
 * - Redis away (a command fails, or does not answer within `timeout`:
 *   `REDIS_TIMEOUT`, as for the rate limits, default 250 ms; a disconnected client fails at once): the replica decides in its own memory store for
 *   `retryAfter` (default 1 s), then tries Redis again. A call never fails
 *   because the store is unavailable. The switch is logged once each way.
 * - An admission is recorded in the store that gave it: memory generations
 *   are handed out negated (Redis' are positive). An outcome Redis cannot
 *   take is dropped: the call has already run.
 * - Start-up never waits for Redis: the connection (`redis/Redis.ts`:
 *   reconnecting forever, backoff up to 2 s) is made in the background and
 *   memory decides until it is up.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { CircuitBreaker } from "effect/persistence"
import { JanusConfig } from "../config/JanusConfig.ts"
import * as Redis from "../redis/Redis.ts"

/** @since 0.1.0 */
export interface SharedBreakerStoreOptions {
  readonly url: string
  /** Key prefix; default `janus:breaker:`. */
  readonly prefix?: string | undefined
  readonly timeout?: Duration.Input | undefined
  readonly retryAfter?: Duration.Input | undefined
}

/** Memory generations are negated (and shifted off 0) so `record` knows where an admission came from. */
const toMemory = (generation: number) => -(generation + 1)
const fromMemory = (generation: number) => -generation - 1

/** @since 0.1.0 */
export const layer = (
  options: SharedBreakerStoreOptions
): Layer.Layer<CircuitBreaker.CircuitBreakerStore> =>
  Layer.effect(
    CircuitBreaker.CircuitBreakerStore,
    Effect.gen(function*() {
      const memory = Context.get(
        yield* Layer.build(CircuitBreaker.layerStoreMemory()),
        CircuitBreaker.CircuitBreakerStore
      )
      const scope = yield* Effect.scope
      let redis: CircuitBreaker.CircuitBreakerStore["Service"] | undefined
      yield* Redis.withConnection(
        options.url,
        scope,
        Layer.buildWithScope(
          CircuitBreaker.layerStoreRedis({ prefix: options.prefix ?? `${Redis.KEY_PREFIX}breaker:` }),
          scope
        )
      ).pipe(
        Effect.tap((context) =>
          Effect.sync(() => {
            redis = Context.get(context, CircuitBreaker.CircuitBreakerStore)
          })
        ),
        // the reconnect strategy retries forever, so this is a configuration error (e.g. a bad URL)
        Effect.tapError((error) =>
          Effect.logWarning("Circuit breakers: Redis is not usable; deciding per instance", error)
        ),
        Effect.ignore,
        Effect.forkIn(scope)
      )
      const timeout = Duration.fromInputUnsafe(options.timeout ?? "250 millis")
      const retryAfterMs = Duration.toMillis(Duration.fromInputUnsafe(options.retryAfter ?? "1 second"))
      let downUntil = 0
      let down = false

      const available = Effect.map(
        Clock.currentTimeMillis,
        (now) => redis !== undefined && now >= downUntil ? redis : undefined
      )
      const markDown = (reason: unknown) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          downUntil = now + retryAfterMs
          if (down) return Effect.void
          down = true
          return Effect.logWarning(
            "Circuit breakers: the Redis store is unavailable; deciding per instance until it answers again",
            reason
          )
        })
      const markUp = Effect.suspend(() => {
        if (!down) return Effect.void
        down = false
        return Effect.logInfo("Circuit breakers: the Redis store answers again; circuits are shared again")
      })
      /**
       * `run` on Redis within the timeout; `undefined` (and memory for a while) when Redis fails or is
       * slow. A decision of the circuit itself (open, half-open) is passed on: that is Redis answering.
       */
      const onRedis = <A, R>(
        run: (
          store: CircuitBreaker.CircuitBreakerStore["Service"]
        ) => Effect.Effect<A, CircuitBreaker.CircuitBreakerError, R>
      ): Effect.Effect<{ readonly value: A } | undefined, CircuitBreaker.CircuitBreakerError, R> =>
        Effect.flatMap(available, (store) =>
          store === undefined ? Effect.succeed(undefined) : run(store).pipe(
            Effect.timeoutOption(timeout),
            Effect.matchCauseEffect({
              onSuccess: (answer) =>
                Option.isSome(answer) ?
                  Effect.as(markUp, { value: answer.value }) :
                  Effect.as(markDown(`no answer within ${Duration.format(timeout)}`), undefined),
              onFailure: (cause) => {
                if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
                const error = Cause.findErrorOption(cause)
                return Option.isSome(error) && error.value.reason._tag !== "CircuitBreakerStoreError" ?
                  Effect.fail(error.value) :
                  Effect.as(markDown(cause), undefined)
              }
            })
          ))

      return CircuitBreaker.CircuitBreakerStore.of({
        admit: (key) =>
          Effect.flatMap(onRedis((store) => store.admit(key)), (shared) =>
            shared !== undefined ?
              Effect.succeed(shared.value) :
              Effect.map(memory.admit(key), (admission) => ({
                ...admission,
                generation: toMemory(admission.generation)
              }))),
        record: (input) =>
          input.generation < 0 ?
            memory.record({ ...input, generation: fromMemory(input.generation) }) :
            Effect.map(onRedis((store) => store.record(input)), (shared) => shared?.value),
        state: (key) =>
          Effect.flatMap(
            onRedis((store) => store.state(key)),
            (shared) => shared !== undefined ? Effect.succeed(shared.value) : memory.state(key)
          )
      })
    })
  )

/**
 * The store the configuration asks for: `layer` on `REDIS_URL` with
 * `REDIS_TIMEOUT`, or one in memory without Redis.
 *
 * @since 0.1.0
 */
export const layerConfig: Layer.Layer<CircuitBreaker.CircuitBreakerStore, never, JanusConfig> = Layer.unwrap(
  Effect.map(Effect.service(JanusConfig), (config) =>
    Option.match(config.REDIS_URL, {
      onNone: () => CircuitBreaker.layerStoreMemory(),
      onSome: (url) => layer({ url: Redacted.value(url), timeout: config.REDIS_TIMEOUT })
    }))
)
