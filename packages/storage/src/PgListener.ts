/**
 * `Notifications` on Postgres: every LISTEN of the process over one
 * connection of its own, outside the pool.
 *
 * **Rules**
 *
 * - One connection carries every channel and every listener (`@effect/sql-pg`
 *   keeps a queue per listener and runs `LISTEN` / `UNLISTEN` per channel on
 *   it). It opens on the first `listen` and closes when the last listener's
 *   scope closes, so a process nobody listens in holds none.
 * - It is not a pooled connection. A pooled LISTEN holds its connection for
 *   as long as it listens: the change feed, the event-log reader, the MCP
 *   session watch and the relayed cancellations each took one, which on a
 *   small pool left queries waiting behind listeners. The deploy budget
 *   counts this one connection beside the pool
 *   (`replicas x (DB_MAX_OPEN_CONNS + 1)`, deploy/README.md).
 * - When the connection is lost, every listener's queue fails with the
 *   `SqlError` (callers re-listen, as before) and the connection is marked
 *   lost: the next `listen` opens a new one, while the lost one closes once
 *   its last listener has left.
 *
 * @since 0.1.0
 */
import type * as PgConnection from "@effect/sql-pg/PgConnection"
import { Effect, Exit, Queue, Scope, Semaphore } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { Notifications } from "./Notifications.ts"

interface Shared {
  /** The connection, pinned for as long as it is shared (a pin is reentrant: every `listen` runs on it at once). */
  readonly pinned: PgConnection.PgConnection
  readonly scope: Scope.Closeable
  listeners: number
  lost: boolean
}

/** `Notifications` over connections from `connect`, one at a time; it lives in the enclosing scope. */
export const make = (
  connect: Effect.Effect<PgConnection.PgConnection, SqlError, Scope.Scope>
): Effect.Effect<Notifications["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const lock = yield* Semaphore.make(1)
    let current: Shared | undefined

    const open = Effect.gen(function*() {
      const scope = yield* Scope.make()
      const pinned = yield* Effect.flatMap(connect, (connection) => connection.pin).pipe(
        Scope.provide(scope),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      return { pinned, scope, listeners: 0, lost: false } satisfies Shared
    })
    const join = lock.withPermit(Effect.gen(function*() {
      if (current === undefined || current.lost) current = yield* open
      current.listeners++
      return current
    }))
    const leave = (shared: Shared) =>
      lock.withPermit(Effect.suspend(() => {
        shared.listeners--
        if (shared.listeners > 0) return Effect.void
        if (current === shared) current = undefined
        return Scope.close(shared.scope, Exit.void)
      }))
    const markLost = (shared: Shared) => Effect.sync(() => (shared.lost = true))

    // the process's own scope closing closes a connection still shared
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => current === undefined ? Effect.void : Scope.close(current.scope, Exit.void))
    )

    return Notifications.of({
      listen: (channel) =>
        Effect.gen(function*() {
          const shared = yield* Effect.acquireRelease(join, leave)
          const source = yield* shared.pinned.listen(channel).pipe(Effect.tapError(() => markLost(shared)))
          // Keep only the payloads; the source queue's failure (a lost connection) is passed on.
          const queue = yield* Queue.unbounded<string, SqlError>()
          yield* Queue.take(source).pipe(
            Effect.flatMap((n) => Queue.offer(queue, n.payload)),
            Effect.forever,
            Effect.catch((error) => Effect.andThen(markLost(shared), Queue.fail(queue, error))),
            Effect.forkScoped
          )
          return queue as Queue.Dequeue<string, SqlError>
        })
    })
  })
