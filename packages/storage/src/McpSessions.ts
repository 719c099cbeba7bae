/**
 * The MCP session store: 2025-era MCP sessions (`Mcp-Session-Id`) and their
 * server-to-client streams, shared by every replica through the database
 * (SPEC "Scale-out": any replica serves any request; a stream resumes on
 * another replica with `Last-Event-ID`). This module is the service; the SQL
 * is `McpSessionRepository`, the wake-ups `McpSessionWatch`, the record
 * cache `McpSessionCache`.
 *
 * **Tables**
 *
 * - `mcp_sessions`: id, owner, protocol version, client info and
 *   capabilities (jsonb), created / last seen / expires (`last seen + idle
 *   timeout`, computed by the caller), the client's `logging/setLevel` level.
 * - `mcp_session_streams`: one row per stream: its seq counter `last_seq`,
 *   the `closed` marker, and an `ordinal` that orders streams by age.
 * - `mcp_session_messages`: `(session, stream, seq) -> payload`, the JSON-RPC
 *   message as the exact text that was sent.
 *   Deleting a session deletes its streams and messages (cascade).
 *
 * **Rules**
 *
 * - Policy comes from the caller (the gateway's session store): `expiresAt`
 *   on create/touch, `maxStreams` on `openStream`, `maxEvents` on `append`,
 *   the interval of `sweepEvery`. This store has no settings.
 * - Every write that changes a stream or a session notifies the other
 *   instances (at commit) and wakes this instance's watchers right after it;
 *   every session-level write drops the cached record here, the
 *   notification drops it elsewhere.
 * - `get` answers from the cache while it may be trusted, else reads the
 *   database; it hides a session whose `expiresAt` has passed.
 *
 * @since 0.1.0
 */
import { Clock, Context, type Duration, Effect, Layer, Option, Schedule, type Scope } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type { StorageError } from "./Errors.ts"
import { keepListening, SessionCache } from "./McpSessionCache.ts"
import * as McpSessionRepository from "./McpSessionRepository.ts"
import type { McpSessionRecord, McpStreamPage } from "./McpSessionRepository.ts"
import * as McpSessionWatch from "./McpSessionWatch.ts"
import type { McpStreamWatch } from "./McpSessionWatch.ts"
import type { Notifications } from "./Notifications.ts"

export class McpSessions extends Context.Service<McpSessions, {
  /** Stores a session; one with the same id is replaced (and its streams dropped). */
  readonly create: (session: McpSessionRecord) => Effect.Effect<void, StorageError>
  /** The session, unless missing or expired at `now`. */
  readonly get: (id: string, now: Date) => Effect.Effect<Option.Option<McpSessionRecord>, StorageError>
  /** Records the client's `logging/setLevel` level; false when the session does not exist. */
  readonly setLogLevel: (id: string, level: string) => Effect.Effect<boolean, StorageError>
  /** Records activity. */
  readonly touch: (id: string, lastSeenAt: Date, expiresAt: Date) => Effect.Effect<void, StorageError>
  /** Deletes the session, its streams and messages; true when it existed. */
  readonly delete: (id: string) => Effect.Effect<boolean, StorageError>
  /** Deletes the sessions expired at `now`; returns how many. */
  readonly deleteExpired: (now: Date) => Effect.Effect<number, StorageError>
  /** Runs `deleteExpired` (at the `Clock`'s now) at once and then every `interval`, until the scope closes. */
  readonly sweepEvery: (interval: Duration.Input) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Registers a stream (idempotent) and returns its last seq (0 when new, or
   * when the session does not exist). Keeps the newest `maxStreams` streams
   * of the session, deleting older ones.
   */
  readonly openStream: (
    sessionId: string,
    streamId: string,
    options: { readonly maxStreams: number }
  ) => Effect.Effect<number, StorageError>
  /** Appends a message and returns its seq (0 when the stream is closed or unknown); keeps the newest `maxEvents`. */
  readonly append: (
    sessionId: string,
    streamId: string,
    data: string,
    options: { readonly maxEvents: number }
  ) => Effect.Effect<number, StorageError>
  /** Marks the stream closed (idempotent). */
  readonly closeStream: (sessionId: string, streamId: string) => Effect.Effect<void, StorageError>
  /** The stream's state and up to `limit` kept messages with a seq above `afterSeq` (one snapshot). */
  readonly read: (
    sessionId: string,
    streamId: string,
    afterSeq: number,
    limit: number
  ) => Effect.Effect<McpStreamPage, StorageError>
  /** Wake-ups for changes of the stream by any instance, until the scope closes. */
  readonly watch: (sessionId: string, streamId: string) => Effect.Effect<McpStreamWatch, never, Scope.Scope>
}>()("@janus/storage/McpSessions") {
  static readonly layer: Layer.Layer<McpSessions, never, SqlClient.SqlClient | Notifications> = Layer.effect(
    McpSessions,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function*() {
  const cache = new SessionCache()
  const signals = yield* McpSessionWatch.make({
    onListening: (live) => cache.setLive(live),
    onSessionChanged: (id) => cache.invalidate(id)
  })
  const repository = yield* McpSessionRepository.make(signals.origin)
  const readingSessions = yield* keepListening(signals.listen)

  /** This instance changed the whole session: drop its cached record and, when it went away, wake its followers. */
  const sessionChanged = (id: string, gone: boolean): void => {
    cache.invalidate(id)
    if (gone) signals.wake(id, null)
  }

  const get = (id: string, now: Date) =>
    Effect.suspend(() => {
      const hit = cache.lookup(id, now)
      const held = readingSessions()
      if (hit !== undefined) return Effect.as(held, Option.some(hit))
      return Effect.andThen(held, cache.readThrough(repository.get(id, now)))
    })

  const deleteExpired = (now: Date) =>
    repository.deleteExpired(now, (ids) => {
      for (const id of ids) sessionChanged(id, true)
    })

  return McpSessions.of({
    create: (session) => Effect.map(repository.create(session), (replaced) => sessionChanged(session.id, replaced)),
    get,
    // A session-level change: every instance's cached record of it is dropped (here at once, elsewhere by
    // the notification), or calls would keep relaying at the old level.
    setLogLevel: (id, level) =>
      Effect.map(repository.setLogLevel(id, level), (existed) => {
        sessionChanged(id, false)
        return existed
      }),
    touch: (id, lastSeenAt, expiresAt) =>
      Effect.map(repository.touch(id, lastSeenAt, expiresAt), () => cache.touched(id, lastSeenAt, expiresAt)),
    delete: (id) =>
      Effect.map(repository.delete(id), (existed) => {
        sessionChanged(id, existed)
        return existed
      }),
    deleteExpired,
    sweepEvery: (interval) =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) => deleteExpired(new Date(now))),
        Effect.catch((error) => Effect.logWarning("mcp sessions: deleting expired sessions failed", error)),
        Effect.repeat(Schedule.spaced(interval)),
        Effect.forkScoped,
        Effect.asVoid
      ),
    openStream: (sessionId, streamId, options) =>
      Effect.map(repository.openStream(sessionId, streamId, options), ({ evicted, lastSeq }) => {
        for (const stream of evicted) signals.wake(sessionId, stream)
        return lastSeq
      }),
    append: (sessionId, streamId, data, options) =>
      Effect.map(repository.append(sessionId, streamId, data, options), (seq) => {
        if (seq > 0) signals.wake(sessionId, streamId)
        return seq
      }),
    closeStream: (sessionId, streamId) =>
      Effect.map(repository.closeStream(sessionId, streamId), (closed) => {
        if (closed) signals.wake(sessionId, streamId)
      }),
    read: repository.read,
    watch: signals.watch
  })
})
