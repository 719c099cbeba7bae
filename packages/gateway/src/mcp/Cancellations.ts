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
 * - A call follows the relayed cancellations only while it runs, so the
 *   service's subscription (a LISTEN) is held only while calls are in flight.
 * - Without the service (a single instance), cancellation stays local.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option, Stream } from "effect"

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

/** The relay of the `CallCancellations` in context; without one, cancellation stays local. */
export const relay: Effect.Effect<Relay> = Effect.map(
  Effect.serviceOption(CallCancellations),
  Option.match({
    onNone: () => none,
    onSome: (service): Relay => ({
      publish: service.publish,
      during: (sessionId, requestKey, interrupt, call) =>
        Effect.scoped(Effect.gen(function*() {
          yield* service.received.pipe(
            Stream.filter((c) => c.sessionId === sessionId && c.requestKey === requestKey),
            Stream.runForEach(() => interrupt),
            Effect.forkScoped
          )
          yield* call
        }))
    })
  })
)
