/**
 * `notifications/cancelled` between replicas: with no sticky sessions the
 * cancellation of a 2025-era request may reach a replica other than the one
 * running the request (SPEC "Scale-out").
 *
 * **Rules**
 *
 * - A replica that receives a cancellation for a request it does not run
 *   publishes it (session id, request id); every replica interrupts the
 *   request if it runs it, exactly as a local cancellation does (no response
 *   is sent). The session's owner was checked before publishing.
 * - Best effort, like cancellation itself ("the receiver MAY ignore it"): a
 *   cancellation published while a replica has lost its subscription is not
 *   replayed to it.
 * - A call is open to relayed cancellations only while it runs: it is
 *   registered under its session and request for that time.
 * - One follower per relay reads the service's cancellations and interrupts
 *   the registered calls they name. It runs while calls are in flight and
 *   `FOLLOW_IDLE` (one minute, as the LISTEN's own idle minute) after the
 *   last one ends, so the service's subscription (a LISTEN) is not held by an
 *   idle gateway. A subscription per call cost every 2025-era tools/call a
 *   fiber, a scope and a stream: 125 of its ~470 effect steps (#19).
 * - Without the service (a single instance), cancellation stays local.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Fiber, Option, type Scope, Stream } from "effect"

/** A cancellation relayed from another replica: the session and the request (`typeof:id`). */
export interface RelayedCancellation {
  readonly sessionId: string
  readonly requestKey: string
}

/** @since 0.1.0 */
export class CallCancellations extends Context.Service<CallCancellations, {
  readonly publish: (cancellation: RelayedCancellation) => Effect.Effect<void>
  /** Every cancellation published by any replica (this one's included). */
  readonly received: Stream.Stream<RelayedCancellation>
}>()("@janus/gateway/mcp/CallCancellations") {}

/** How `Stateful.ts` takes part: relay a cancellation, and run a call open to relayed ones. */
export interface Relay {
  readonly publish: (cancellation: RelayedCancellation) => Effect.Effect<void>
  /** Runs `call`, handing the relayed cancellations of (`sessionId`, `requestKey`) to `interrupt` meanwhile. */
  readonly during: (
    sessionId: string,
    requestKey: string,
    interrupt: Effect.Effect<void>,
    call: Effect.Effect<void>
  ) => Effect.Effect<void>
}

const none: Relay = { publish: () => Effect.void, during: (_s, _k, _i, call) => call }

/** How long the follower keeps following after the last call here ended. */
export const FOLLOW_IDLE: Duration.Duration = Duration.minutes(1)
const FOLLOW_IDLE_MILLIS = Duration.toMillis(FOLLOW_IDLE)

// session ids are base64url, so a space cannot occur in one
const keyOf = (sessionId: string, requestKey: string): string => `${sessionId} ${requestKey}`

/** The relay of `service`, its follower living in the current scope. */
const following = (service: CallCancellations["Service"]) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    // the calls running here that relayed cancellations may name: how many under a key, and how to interrupt them
    const running = new Map<string, { readonly interrupt: Effect.Effect<void>; calls: number }>()
    let inFlight = 0
    let idleSince = 0
    // the follower's generation: a follower that ends (stopped or failed) is started again by the next call
    let generation = 0
    let follower: Fiber.Fiber<void> | "starting" | undefined
    let stopping = false

    const follow = (own: number) =>
      service.received.pipe(
        Stream.runForEach((c) => running.get(keyOf(c.sessionId, c.requestKey))?.interrupt ?? Effect.void),
        Effect.ensuring(Effect.sync(() => {
          if (generation === own) follower = undefined
        }))
      )

    const start = Effect.suspend(() => {
      if (follower !== undefined) return Effect.void
      follower = "starting"
      const own = ++generation
      return Effect.map(Effect.forkIn(follow(own), scope), (fiber) => {
        if (generation === own) follower = fiber
      })
    })

    // at most one at a time: stops the follower once nothing has run here for FOLLOW_IDLE
    const stopWhenIdle: Effect.Effect<void> = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (inFlight > 0) {
        stopping = false
        return Effect.void
      }
      const left = idleSince + FOLLOW_IDLE_MILLIS - now
      if (left > 0) return Effect.andThen(Effect.sleep(Duration.millis(left)), stopWhenIdle)
      stopping = false
      const stopped = follower
      follower = undefined
      generation++
      return Fiber.isFiber(stopped) ? Fiber.interrupt(stopped) : Effect.void
    })

    const leave = (key: string) =>
      Effect.clockWith((clock) => {
        const entry = running.get(key)
        if (entry !== undefined && --entry.calls === 0) running.delete(key)
        if (--inFlight > 0) return Effect.void
        idleSince = clock.currentTimeMillisUnsafe()
        if (stopping) return Effect.void
        stopping = true
        return Effect.asVoid(Effect.forkIn(stopWhenIdle, scope))
      })

    return {
      publish: service.publish,
      // registered, the follower started and left uninterruptibly: a registration is always undone, and a
      // follower is never left "starting"
      during: (sessionId, requestKey, interrupt, call) =>
        Effect.uninterruptibleMask((restore) => {
          const key = keyOf(sessionId, requestKey)
          const entry = running.get(key)
          if (entry === undefined) running.set(key, { interrupt, calls: 1 })
          else entry.calls++
          inFlight++
          return Effect.andThen(start, restore(call)).pipe(Effect.ensuring(leave(key)))
        })
    } satisfies Relay
  })

/** The relay of the `CallCancellations` in context (its follower lives in the scope); without one, cancellation stays local. */
export const relay: Effect.Effect<Relay, never, Scope.Scope> = Effect.flatMap(
  Effect.serviceOption(CallCancellations),
  Option.match({
    onNone: () => Effect.succeed(none),
    onSome: following
  })
)
