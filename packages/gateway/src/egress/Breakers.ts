/**
 * Circuit breakers for downstream connections, on effect's `CircuitBreaker`:
 * one circuit per connection, and one per caller on it, so that one caller
 * cannot open a connection for everyone.
 *
 * **Rules**
 *
 * - The connection circuit's key is the connection id, so its state is per
 *   connection and, with a shared store (`CircuitBreaker.layerStoreRedis`),
 *   shared by every replica. The store is this layer's requirement: memory or
 *   Redis, no code change.
 * - `CircuitBreaker` applies one policy per breaker, so one breaker is built
 *   per distinct policy (threshold, open duration) and shared by the
 *   connections that use it, all on the one store.
 * - What is a failure: a 5xx answer (its `Retry-After` can lengthen the
 *   opening), a transport failure and a timeout. What is not: 2xx-4xx answers
 *   (the server is up; 4xx are the caller's mistakes), egress refusals,
 *   oversized responses, cancellation, and a request the gateway could not
 *   send (`UnsendableRequest`: nothing reached the downstream).
 * - A failure can be one caller's doing: arguments that make the downstream
 *   answer 500, or run into the timeout. So a failure counts against the
 *   connection circuit only while at least `MIN_FAILING_CALLERS` (2) distinct
 *   callers have failed on it within `FAILING_CALLERS_WINDOW` (60 s);
 *   otherwise it is ignored there. A caller is `Caller.id`: every token of one
 *   identity is one caller. A call without one is the gateway's own (the
 *   connection check an administrator runs): its outcome counts directly
 *   against the connection circuit, with no caller circuit.
 * - Every failure counts against the caller's own circuit on the connection
 *   (same policy), so a caller whose calls keep failing gets `BreakerOpen`
 *   with scope `caller` and stops reaching the downstream, while other callers
 *   go on. With a single caller (one token, or anonymous access) its circuit
 *   does what the connection circuit would, per instance. Caller circuits live in this instance's memory
 *   (idle ones dropped after `CALLER_CIRCUIT_IDLE_TTL`), never in the shared
 *   store: they cost no Redis round trip and add no metric series.
 * - Failing callers are remembered per instance. Behind a load balancer each
 *   replica sees a spread of callers, so an outage seen by several callers
 *   still counts on every replica within a few calls.
 * - The breakers wrap the whole call, retries and total timeout inside them,
 *   so they see one outcome per call (see `CircuitBreaker` module docs).
 * - Open (and half-open with its probe in flight) fails fast with
 *   `BreakerOpen`: nothing is sent.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Duration, Effect, Exit, Layer, Option, Scope } from "effect"
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

/**
 * Distinct callers that must have failed on a connection, within
 * `FAILING_CALLERS_WINDOW`, before a failure counts against the connection
 * circuit: one caller's arguments can make any downstream fail, two unrelated
 * callers failing together is the downstream.
 */
export const MIN_FAILING_CALLERS = 2

/** How long a caller's failure is remembered for `MIN_FAILING_CALLERS`: a minute, like the rate-limit windows. */
export const FAILING_CALLERS_WINDOW: Duration.Duration = Duration.seconds(60)

/**
 * Failing callers remembered per connection, the most recent kept: enough to
 * know whether `MIN_FAILING_CALLERS` of them are within the window, bounded
 * however many callers fail.
 */
export const TRACKED_FAILING_CALLERS = 8

/** An idle caller circuit is dropped after this long (it is closed again by then, or long past its opening). */
export const CALLER_CIRCUIT_IDLE_TTL: Duration.Duration = Duration.minutes(10)

/** A connection's breaker. */
export interface Breaker {
  readonly key: string
  /**
   * Runs `caller`'s call through its own circuit and the connection's; an open
   * circuit fails with `BreakerOpen` without running it.
   */
  readonly run: <R>(
    self: Effect.Effect<DownstreamResponse, DownstreamError, R>,
    caller?: string | undefined
  ) => Effect.Effect<DownstreamResponse, DownstreamError, R>
  /** The connection circuit's state. */
  readonly state: Effect.Effect<CircuitBreaker.State, CircuitBreaker.CircuitBreakerError>
  /** `caller`'s own circuit on the connection. */
  readonly callerState: (caller: string) => Effect.Effect<CircuitBreaker.State, CircuitBreaker.CircuitBreakerError>
}

/** The callers that failed on one connection recently: caller -> time of its last failure, oldest first. */
class FailingCallers {
  private readonly last = new Map<string, number>()
  private readonly windowMillis = Duration.toMillis(FAILING_CALLERS_WINDOW)

  /** Records `caller`'s failure at `now`; whether enough distinct callers failed within the window. */
  fail(caller: string, now: number): boolean {
    this.last.delete(caller)
    this.last.set(caller, now)
    if (this.last.size > TRACKED_FAILING_CALLERS) this.last.delete(this.last.keys().next().value!)
    let recent = 0
    for (const at of this.last.values()) if (now - at < this.windowMillis) recent++
    return recent >= MIN_FAILING_CALLERS
  }
}

export class Breakers extends Context.Service<Breakers, {
  readonly forConnection: (connection: string, options?: BreakerOptions | undefined) => Effect.Effect<Breaker>
}>()("@janus/gateway/egress/Breakers") {
  static readonly layer: Layer.Layer<Breakers, never, CircuitBreaker.CircuitBreakerStore> = Layer.effect(
    Breakers,
    Effect.gen(function*() {
      const store = yield* CircuitBreaker.CircuitBreakerStore
      // caller circuits: this instance's memory only (no Redis round trip, no metric series)
      const callerStore = Context.get(
        yield* Layer.build(CircuitBreaker.layerStoreMemory({ idleTimeToLive: CALLER_CIRCUIT_IDLE_TTL })),
        CircuitBreaker.CircuitBreakerStore
      )
      const scope = yield* Effect.scope
      const byPolicy = new Map<string, CircuitBreaker.CircuitBreaker>()
      const callerByPolicy = new Map<string, CircuitBreaker.CircuitBreaker>()
      const failingByConnection = new Map<string, FailingCallers>()

      const policyBreaker = (
        cache: Map<string, CircuitBreaker.CircuitBreaker>,
        on: CircuitBreaker.CircuitBreakerStore["Service"],
        failures: number,
        openMillis: number
      ) => {
        const policyKey = `${failures}:${openMillis}`
        const existing = cache.get(policyKey)
        if (existing !== undefined) return Effect.succeed(existing)
        return CircuitBreaker.make({
          tripPolicy: CircuitBreaker.consecutive(failures),
          openDuration: Duration.millis(openMillis)
        }).pipe(
          Effect.provideService(CircuitBreaker.CircuitBreakerStore, on),
          Scope.provide(scope),
          Effect.tap((breaker) => Effect.sync(() => cache.set(policyKey, breaker)))
        )
      }

      return Breakers.of({
        forConnection: Effect.fnUntraced(function*(connection, options) {
          const failures = Math.max(1, Math.floor(options?.failures ?? 5))
          const openMillis = Duration.toMillis(Duration.fromInputUnsafe(options?.openDuration ?? "30 seconds"))
          const breaker = yield* policyBreaker(byPolicy, store, failures, openMillis)
          const callerBreaker = yield* policyBreaker(callerByPolicy, callerStore, failures, openMillis)
          let failing = failingByConnection.get(connection)
          if (failing === undefined) {
            failing = new FailingCallers()
            failingByConnection.set(connection, failing)
          }
          const tracker = failing
          const callerKey = (caller: string) => `${connection}\u0000${caller}`
          const rejected = (whose: "connection" | "caller") => (error: CircuitBreaker.CircuitBreakerError) =>
            toDownstreamError(connection, whose, error)
          const connectionRejected = rejected("connection")
          const callerRejected = rejected("caller")
          const gatewayOptions = { key: connection, classify }
          // Built per call with a caller: two small objects.
          const connectionOptions = (caller: string) => ({
            key: connection,
            classify: (exit: Exit.Exit<DownstreamResponse, DownstreamError>) => {
              const outcome = classify(exit)
              if (outcome._tag !== "Failure") return outcome
              return Effect.map(
                Clock.currentTimeMillis,
                (now) => tracker.fail(caller, now) ? outcome : CircuitBreaker.ignored
              )
            }
          })
          return {
            key: connection,
            run: (self, caller) => {
              if (caller === undefined) {
                return breaker.execute(self, gatewayOptions).pipe(
                  Effect.catchTag("CircuitBreakerError", connectionRejected)
                )
              }
              const throughConnection = breaker.execute(self, connectionOptions(caller)).pipe(
                Effect.catchTag("CircuitBreakerError", connectionRejected)
              )
              return callerBreaker.execute(throughConnection, { key: callerKey(caller), classify }).pipe(
                Effect.catchTag("CircuitBreakerError", callerRejected)
              )
            },
            state: breaker.state(connection),
            callerState: (caller) => callerBreaker.state(callerKey(caller))
          } satisfies Breaker
        })
      })
    })
  )
}

/** Errors made of a store failure (`toDownstreamError`), which `classify` ignores. */
const storeFailures = new WeakSet<DownstreamError>()

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
      // the connection circuit's store failing is not the downstream failing (nor the caller)
      return storeFailures.has(error.value) ? CircuitBreaker.ignored : CircuitBreaker.failure()
    case "DownstreamTimeout":
      return CircuitBreaker.failure()
    default:
      return CircuitBreaker.ignored
  }
}

const toDownstreamError = (
  connection: string,
  scope: "connection" | "caller",
  error: CircuitBreaker.CircuitBreakerError
): Effect.Effect<never, BreakerOpen | DownstreamUnavailable> => {
  switch (error.reason._tag) {
    case "CircuitOpen":
      return Effect.fail(
        new BreakerOpen({
          connection,
          retryAfterMillis: Math.ceil(Duration.toMillis(error.reason.retryAfter)),
          ...(scope === "caller" ? { scope } : {})
        })
      )
    case "CircuitHalfOpen":
      return Effect.fail(new BreakerOpen({ connection, retryAfterMillis: 0, ...(scope === "caller" ? { scope } : {}) }))
    case "CircuitBreakerStoreError": {
      const failure = new DownstreamUnavailable({
        connection,
        target: "",
        reason: "the circuit breaker store is unavailable",
        transient: false
      })
      storeFailures.add(failure)
      return Effect.fail(failure)
    }
  }
}
