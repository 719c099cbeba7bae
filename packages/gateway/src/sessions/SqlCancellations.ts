/**
 * `CallCancellations` over Postgres LISTEN/NOTIFY (channel
 * `janus_mcp_cancel`): a 2025-era `notifications/cancelled` that lands on a
 * replica which does not run the request reaches the one that does (see
 * `../mcp/Cancellations.ts`).
 *
 * **Rules**
 *
 * - The payload is the session id and the request key, nothing else. It is
 *   sent outside any transaction, so it is delivered at once.
 * - The LISTEN holds a pooled connection, so it is taken only while someone
 *   follows `received` (a 2025-era call is in flight here) and kept one idle
 *   minute after, like the session store's watchers; `received` starts once
 *   the database has confirmed it.
 * - When the LISTEN connection is lost, the layer re-listens every second;
 *   cancellations published meanwhile are not replayed (best effort).
 * - A payload that is not ours is ignored.
 *
 * @since 0.1.0
 */
import { Notifications } from "@janus/storage"
import { Deferred, Effect, Layer, PubSub, Queue, RcRef, Schedule, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { CallCancellations, type RelayedCancellation } from "../mcp/Cancellations.ts"

export const channel = "janus_mcp_cancel"

const decode = (raw: string): RelayedCancellation | undefined => {
  try {
    const value = JSON.parse(raw) as Partial<RelayedCancellation>
    return typeof value.sessionId === "string" && typeof value.requestKey === "string" ?
      { sessionId: value.sessionId, requestKey: value.requestKey } :
      undefined
  } catch {
    return undefined
  }
}

/** @since 0.1.0 */
export const layer: Layer.Layer<CallCancellations, never, SqlClient.SqlClient | Notifications> = Layer.effect(
  CallCancellations,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const notifications = yield* Notifications
    // a slow follower loses old cancellations rather than growing memory
    const hub = yield* PubSub.sliding<RelayedCancellation>(1024)
    // One LISTEN (re-established every second when lost) while anyone follows, kept one idle minute.
    const listener = yield* RcRef.make({
      acquire: Effect.gen(function*() {
        const listening = yield* Deferred.make<void>()
        const listenOnce = Effect.scoped(Effect.gen(function*() {
          const queue = yield* notifications.listen(channel)
          yield* Deferred.succeed(listening, undefined)
          while (true) {
            const cancellation = decode(yield* Queue.take(queue))
            if (cancellation !== undefined) yield* PubSub.publish(hub, cancellation)
          }
        }))
        yield* listenOnce.pipe(
          Effect.tapError((error) =>
            Effect.logWarning("call cancellations lost their LISTEN connection; re-listening", error)
          ),
          Effect.retry(Schedule.spaced("1 second")),
          Effect.forkScoped
        )
        // a database that is down must not hold the call back: follow without the relay until it is up
        yield* Effect.ignore(Effect.timeout(Deferred.await(listening), "1 second"))
      }),
      idleTimeToLive: "1 minute"
    })
    return CallCancellations.of({
      publish: (cancellation) =>
        sql`SELECT pg_notify(${channel}, ${JSON.stringify(cancellation)})`.pipe(
          Effect.tapError((error) => Effect.logWarning("a cancellation could not be relayed to other replicas", error)),
          Effect.ignore
        ),
      received: Stream.unwrap(Effect.as(RcRef.get(listener), Stream.fromPubSub(hub)))
    })
  })
)
