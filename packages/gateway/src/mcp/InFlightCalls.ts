/**
 * The in-flight requests of the 2025-era sessions (`Stateful.ts`), held on an
 * effect `FiberMap` keyed by session and JSON-RPC request id, so that they can
 * be cancelled one by one or a session at a time.
 *
 * **Spec rules**
 *
 * From the specification: 2025-11-25 "Cancellation", "Transports".
 *
 * - A client disconnect never stops a call: calls are forked into the
 *   endpoint's scope, not the HTTP request's.
 * - `notifications/cancelled` interrupts the request it names (its
 *   `AbortSignal` is aborted, and no response is sent); when this replica does
 *   not run it, the cancellation is relayed to the others (`Cancellations.ts`).
 *   A cancellation naming no running request is ignored.
 * - DELETE of the session cancels every call it has in flight.
 *
 * **Gotchas**
 *
 * - Request ids must be unique per session; a request reusing the id of one
 *   still running runs too, but only the first is cancellable by that id (a
 *   `FiberMap` would interrupt the first one if the second took its key).
 *
 * @since 0.1.0
 */
import { Effect, type Fiber, FiberMap, FiberSet, type Scope } from "effect"
import * as Cancellations from "./Cancellations.ts"
import type { RequestId } from "./JsonRpc.ts"

/** @since 0.1.0 */
export interface InFlightCalls {
  /** Runs a call outliving the HTTP request, cancellable by its request id until it ends. */
  readonly run: (sessionId: string, id: RequestId, call: Effect.Effect<void>) => Effect.Effect<Fiber.Fiber<void>>
  /** `notifications/cancelled` with these params, on this replica or relayed to the one running the call. */
  readonly cancel: (sessionId: string, params: Readonly<Record<string, unknown>> | undefined) => Effect.Effect<void>
  /** Interrupts every call of the session running here, and waits for them to end. */
  readonly cancelAll: (sessionId: string) => Effect.Effect<void>
}

/** The key of a request relayed between replicas (`Cancellations.ts`): `typeof:id`. */
const requestKey = (id: RequestId): string => `${typeof id}:${id}`

// session ids are base64url, so a space cannot occur in one
const callKey = (sessionId: string, key: string): string => `${sessionId} ${key}`

/** The in-flight calls of an endpoint; closing the scope interrupts them all. */
export const make: Effect.Effect<InFlightCalls, never, Scope.Scope> = Effect.gen(function*() {
  const calls = yield* FiberMap.make<string, void, never>()
  // a reused request id: the call still runs, but not under the key its namesake holds
  const untracked = yield* FiberSet.make<void, never>()
  const relay = yield* Cancellations.relay

  /** Interrupts the call if this instance runs it (without waiting); false when it does not. */
  const interruptLocal = (sessionId: string, key: string): Effect.Effect<boolean> =>
    Effect.suspend(() =>
      FiberMap.hasUnsafe(calls, callKey(sessionId, key)) ?
        Effect.as(Effect.forkDetach(FiberMap.remove(calls, callKey(sessionId, key))), true) :
        Effect.succeed(false)
    )

  const run = (sessionId: string, id: RequestId, call: Effect.Effect<void>) =>
    Effect.suspend(() => {
      const key = requestKey(id)
      // cancellable from other replicas too while it runs
      const relayed = relay.during(sessionId, key, Effect.asVoid(interruptLocal(sessionId, key)), call)
      return FiberMap.hasUnsafe(calls, callKey(sessionId, key)) ?
        FiberSet.run(untracked, relayed) :
        FiberMap.run(calls, callKey(sessionId, key), relayed)
    })

  const cancel = (sessionId: string, params: Readonly<Record<string, unknown>> | undefined) =>
    Effect.suspend(() => {
      const id = params?.requestId
      if (typeof id !== "string" && typeof id !== "number") return Effect.void
      const key = requestKey(id)
      return Effect.flatMap(
        interruptLocal(sessionId, key),
        // without sticky sessions the call may run on another replica (Cancellations.ts)
        (interrupted) => interrupted ? Effect.void : relay.publish({ sessionId, requestKey: key })
      )
    })

  const cancelAll = (sessionId: string) =>
    Effect.suspend(() => {
      const prefix = callKey(sessionId, "")
      const running = Array.from(calls).filter(([key]) => key.startsWith(prefix))
      return Effect.forEach(running, ([key]) => FiberMap.remove(calls, key), { discard: true })
    })

  return { run, cancel, cancelAll }
})
