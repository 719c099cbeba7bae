/**
 * Change signals: what a write changed, for caches and for list-changed
 * notifications, on this instance and on every other.
 *
 * **Rules**
 *
 * - `publish` is called inside the write's transaction. It sends
 *   `pg_notify('janus_change', ...)` on that transaction, so other instances
 *   hear of the change at commit and never of a rolled-back one, and it
 *   registers an after-commit hook that runs this instance's invalidators
 *   before `withTransaction` returns: a local write purges local caches at once.
 * - Every instance LISTENs on `janus_change`; notifications it sent itself are
 *   dropped (it already delivered them). PGlite is one process, so the
 *   embedded mode is the same code with only local deliveries.
 * - When the LISTEN connection is lost the feed re-listens every second and,
 *   once back, signals every kind with no ids ("anything may have changed"),
 *   since notifications sent meanwhile are lost. Cache TTLs stay as the last
 *   resort.
 * - A payload has to fit Postgres' 8000-byte NOTIFY limit; when the ids do
 *   not, they are left out (an empty `ids` means "some or all of this kind").
 *
 * @since 0.1.0
 */
import { Context, Deferred, Effect, Layer, PubSub, Queue, Schedule, type Scope, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import { type Change, ChangeKind } from "./Domain.ts"
import { Notifications } from "./Notifications.ts"

export const channel = "janus_change"
const MAX_PAYLOAD_BYTES = 7_900
const kinds: ReadonlyArray<ChangeKind> = ChangeKind.literals

export type Invalidator = (change: Change) => Effect.Effect<void>

export class ChangeFeed extends Context.Service<ChangeFeed, {
  /** Signals `change`: to other instances at commit (NOTIFY), and to this one right after commit. */
  readonly publish: (change: Change) => Effect.Effect<void, SqlError>
  /** Every change, local and remote, as it is delivered. */
  readonly changes: Stream.Stream<Change>
  /**
   * Only the changes this instance wrote, after they committed: what one
   * instance (and only one) should announce, e.g. to the event log.
   */
  readonly local: Stream.Stream<Change>
  /**
   * Runs `invalidate` for every change before it appears on `changes`, and
   * for local writes before the write returns. Removed when the scope closes.
   */
  readonly register: (invalidate: Invalidator) => Effect.Effect<void, never, Scope.Scope>
}>()("@janus/storage/ChangeFeed") {
  static readonly layer: Layer.Layer<ChangeFeed, never, SqlClient.SqlClient | Notifications> = Layer.effect(
    ChangeFeed,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const notifications = yield* Notifications
      const origin = randomUUID()
      const hub = yield* PubSub.unbounded<Change>()
      const localHub = yield* PubSub.unbounded<Change>()
      const invalidators = new Set<Invalidator>()

      const deliver = (change: Change) =>
        Effect.andThen(
          Effect.forEach(Array.from(invalidators), (invalidate) => invalidate(change), { discard: true }),
          PubSub.publish(hub, change)
        )

      const encode = (change: Change): string => {
        const full = JSON.stringify({ o: origin, k: change.kind, i: change.ids })
        return Buffer.byteLength(full) <= MAX_PAYLOAD_BYTES
          ? full
          : JSON.stringify({ o: origin, k: change.kind, i: [] })
      }

      const decode = (payload: string): { readonly origin: string; readonly change: Change } | undefined => {
        try {
          const value = JSON.parse(payload) as { o?: unknown; k?: unknown; i?: unknown }
          if (typeof value.o !== "string" || !kinds.includes(value.k as ChangeKind) || !Array.isArray(value.i)) {
            return undefined
          }
          return { origin: value.o, change: { kind: value.k as ChangeKind, ids: value.i.map(String) } }
        } catch {
          return undefined
        }
      }

      const publish = (change: Change) =>
        Effect.andThen(
          sql`SELECT pg_notify(${channel}, ${encode(change)})`,
          sql.afterCommit(Effect.andThen(deliver(change), PubSub.publish(localHub, change)))
        )

      // One listening session; ends with the SqlError when its connection is lost.
      const listening = yield* Deferred.make<void>()
      let connectedBefore = false
      const listenOnce = Effect.scoped(Effect.gen(function*() {
        const queue = yield* notifications.listen(channel)
        if (connectedBefore) {
          yield* Effect.forEach(kinds, (kind) => deliver({ kind, ids: [] }), { discard: true })
        }
        connectedBefore = true
        yield* Deferred.succeed(listening, undefined)
        while (true) {
          const decoded = decode(yield* Queue.take(queue))
          if (decoded !== undefined && decoded.origin !== origin) yield* deliver(decoded.change)
        }
      }))
      yield* listenOnce.pipe(
        Effect.tapError((error) => Effect.logWarning("change feed lost its LISTEN connection; re-listening", error)),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped
      )
      // Do not hand out the service before LISTEN is active, or an early remote write could be missed.
      yield* Deferred.await(listening)

      return ChangeFeed.of({
        publish,
        changes: Stream.fromPubSub(hub),
        local: Stream.fromPubSub(localHub),
        register: (invalidate) =>
          Effect.acquireRelease(
            Effect.sync(() => invalidators.add(invalidate)),
            () => Effect.sync(() => invalidators.delete(invalidate))
          ).pipe(Effect.asVoid)
      })
    })
  )
}
