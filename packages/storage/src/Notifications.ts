/**
 * Postgres LISTEN for both database drivers.
 *
 * **Rules**
 *
 * - `listen` resolves once the database has confirmed `LISTEN`, so nothing
 *   committed after that is missed; the queue fails with the `SqlError` when
 *   the listening connection is lost (callers re-listen and treat the gap as
 *   "everything may have changed").
 * - Sending is plain SQL, `SELECT pg_notify(channel, payload)`, run on the
 *   writer's own transaction so the notification is delivered at commit and
 *   dropped on rollback. Both PGlite and Postgres deliver a session's own
 *   notifications to itself.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Queue, type Scope } from "effect"
import type { SqlError } from "effect/sql/SqlError"

export class Notifications extends Context.Service<Notifications, {
  readonly listen: (channel: string) => Effect.Effect<Queue.Dequeue<string, SqlError>, SqlError, Scope.Scope>
}>()("@janus/storage/Notifications") {}
