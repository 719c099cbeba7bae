/**
 * One circuit breaker per downstream connection, on effect's `CircuitBreaker`.
 *
 * **Rules**
 *
 * - The circuit key is the connection id, so the state is per connection and,
 *   with a shared store (`CircuitBreaker.layerStoreRedis`), shared by every
 *   replica. The store is this layer's requirement: memory now, Redis later,
 *   no code change.
 * - `CircuitBreaker` applies one policy per breaker, so one breaker is built
 *   per distinct policy (threshold, open duration) and shared by the
 *   connections that use it, all on the one store.
 * - What counts against a connection: a 5xx answer (its `Retry-After` can
 *   lengthen the opening), a transport failure and a timeout. What does not:
 *   2xx-4xx answers (the server is up; 4xx are the caller's mistakes), egress
 *   refusals, oversized responses, cancellation, and a request the gateway
 *   could not send (`UnsendableRequest`: nothing reached the downstream).
 * - The breaker wraps the whole call, retries and total timeout inside it, so
 *   it sees one outcome per call (see `CircuitBreaker` module docs).
 * - Open (and half-open with its probe in flight) fails fast with
 *   `BreakerOpen`: nothing is sent.
 *
 * @since 0.1.0
 */
import { Cause, Context, Duration, Effect, Exit, Layer, Option, Scope } from "effect"
import { CircuitBreaker } from "effect/persistence"
import { BreakerOpen, type DownstreamError, DownstreamUnavailable } from "./Errors.ts"
import type { DownstreamResponse } from "./Exchange.ts"

/** Per-connection breaker settings. */
export interface BreakerOptions {
  /** Consecutive failed calls that open the circuit; default 5. */
  readonly failures?: number | undefined
  /** How long it stays open before one probe is let through; default 30 s. */
  readonly openDuration?: Duration.Input | undefined
}

/** A connection's breaker. */
export interface Breaker {
  readonly key: string
  /** Runs the call through the circuit; an open circuit fails with `BreakerOpen` without running it. */
  readonly run: <R>(
    self: Effect.Effect<DownstreamResponse, DownstreamError, R>
  ) => Effect.Effect<DownstreamResponse, DownstreamError, R>
  readonly state: Effect.Effect<CircuitBreaker.State, CircuitBreaker.CircuitBreakerError>
}

export class Breakers extends Context.Service<Breakers, {
  readonly forConnection: (connection: string, options?: BreakerOptions | undefined) => Effect.Effect<Breaker>
}>()("@janus/gateway/egress/Breakers") {
  static readonly layer: Layer.Layer<Breakers, never, CircuitBreaker.CircuitBreakerStore> = Layer.effect(
    Breakers,
    Effect.gen(function*() {
      const store = yield* CircuitBreaker.CircuitBreakerStore
      const scope = yield* Effect.scope
      const byPolicy = new Map<string, CircuitBreaker.CircuitBreaker>()

      const policyBreaker = (failures: number, openMillis: number) => {
        const policyKey = `${failures}:${openMillis}`
        const existing = byPolicy.get(policyKey)
        if (existing !== undefined) return Effect.succeed(existing)
        return CircuitBreaker.make({
          tripPolicy: CircuitBreaker.consecutive(failures),
          openDuration: Duration.millis(openMillis)
        }).pipe(
          Effect.provideService(CircuitBreaker.CircuitBreakerStore, store),
          Scope.provide(scope),
          Effect.tap((breaker) => Effect.sync(() => byPolicy.set(policyKey, breaker)))
        )
      }

      return Breakers.of({
        forConnection: (connection, options) =>
          Effect.map(
            policyBreaker(
              Math.max(1, Math.floor(options?.failures ?? 5)),
              Duration.toMillis(Duration.fromInputUnsafe(options?.openDuration ?? "30 seconds"))
            ),
            (breaker): Breaker => {
              // Built once per connection, so each call allocates nothing here.
              const executeOptions = { key: connection, classify }
              const rejected = (error: CircuitBreaker.CircuitBreakerError) => toDownstreamError(connection, error)
              return {
                key: connection,
                run: (self) =>
                  breaker.execute(self, executeOptions).pipe(
                    Effect.catchTag("CircuitBreakerError", rejected)
                  ),
                state: breaker.state(connection)
              }
            }
          )
      })
    })
  )
}

const retryAfter = (response: DownstreamResponse): Duration.Duration | undefined => {
  const header = response.headers["retry-after"]
  const seconds = header === undefined ? Number.NaN : Number(header)
  return Number.isFinite(seconds) && seconds > 0 ? Duration.seconds(seconds) : undefined
}

const classify = (exit: Exit.Exit<DownstreamResponse, DownstreamError>): CircuitBreaker.Outcome => {
  if (Exit.isSuccess(exit)) {
    return exit.value.status >= 500
      ? CircuitBreaker.failure({ retryAfter: retryAfter(exit.value) })
      : CircuitBreaker.success
  }
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isNone(error)) return CircuitBreaker.failure()
  switch (error.value._tag) {
    case "DownstreamUnavailable":
    case "DownstreamTimeout":
      return CircuitBreaker.failure()
    default:
      return CircuitBreaker.ignored
  }
}

const toDownstreamError = (
  connection: string,
  error: CircuitBreaker.CircuitBreakerError
): Effect.Effect<never, BreakerOpen | DownstreamUnavailable> => {
  switch (error.reason._tag) {
    case "CircuitOpen":
      return Effect.fail(
        new BreakerOpen({ connection, retryAfterMillis: Math.ceil(Duration.toMillis(error.reason.retryAfter)) })
      )
    case "CircuitHalfOpen":
      return Effect.fail(new BreakerOpen({ connection, retryAfterMillis: 0 }))
    case "CircuitBreakerStoreError":
      return Effect.fail(
        new DownstreamUnavailable({
          connection,
          target: "",
          reason: "the circuit breaker store is unavailable",
          transient: false
        })
      )
  }
}
