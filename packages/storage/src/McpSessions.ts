/**
 * 2025-era MCP sessions (`Mcp-Session-Id`) and their server-to-client
 * streams, shared by every replica through the database (SPEC "Scale-out":
 * any replica serves any request; a stream resumes on another replica with
 * `Last-Event-ID`).
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
 *   the interval of `sweepEvery`. This repository has no settings.
 * - `append` is ONE statement (so one implicit transaction): it bumps the
 *   stream's `last_seq` (the row lock serializes appends to a stream across
 *   instances, so seqs are gapless and commit in seq order), inserts the
 *   message, deletes the ones beyond the newest `maxEvents`, and sends
 *   `NOTIFY janus_mcp` — delivered at commit, never for a rolled-back write.
 *   Appending to a closed, evicted or unknown stream stores nothing and
 *   returns 0.
 * - `closeStream`, `delete`, `deleteExpired`, a replacing `create` and a
 *   stream evicted by `openStream` notify too, so followers end promptly;
 *   `setLogLevel` does, so every instance drops its cached record.
 * - Notifications carry `[origin, sessionId, streamId | null]` (null: the
 *   whole session). This instance's own writes wake its watchers directly
 *   after the write; notifications it sent itself are ignored.
 * - `watch` wakes a follower on every change of its stream (or session).
 *   The LISTEN connection is taken only while someone watches (plus one
 *   idle minute), so a replica without 2025-era streams holds no extra
 *   pooled connection. When it is (re)established every watcher is woken,
 *   since notifications sent meanwhile are lost; followers should still
 *   re-read periodically as a backstop.
 * - What the client sent (`clientInfo`, capabilities) and the owner's id are
 *   stored as `Storable` makes them: U+0000 and lone surrogates become
 *   U+FFFD, so no client can make `create` fail (an owner id holding one no
 *   longer equals the caller's id, so such a caller's session is not found:
 *   a refusal, never a failure of the store).
 * - `get` hides a session whose `expiresAt` has passed, even before
 *   `deleteExpired` removes it.
 * - `get` answers from an in-process cache of session records (at most
 *   `CACHE_MAX`, oldest evicted first) so a session's requests do not each
 *   read the database. An entry is used only while this instance LISTENs (the
 *   cache holds the LISTEN connection while sessions are read, until
 *   `CACHE_HOLD` passes without a read) and is dropped on every session-level
 *   change: this instance's create, delete and expiry sweep, and any other
 *   instance's (their notifications). Losing or (re)establishing the LISTEN
 *   connection empties the cache. A read that raced a session-level change is
 *   not cached. A cached entry past its `expiresAt` is read again (another
 *   instance may have touched it); this instance's `touch` updates the entry.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Option, Queue, RcRef, Schedule, type Scope } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { isSqlError } from "effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import type { StorageError } from "./Errors.ts"
import { storageError, toDate, toNumber } from "./internal/sql.ts"
import { Notifications } from "./Notifications.ts"
import { storableJsonText, storableText } from "./Storable.ts"

export const channel = "janus_mcp"
/** Expired sessions deleted per statement by `deleteExpired`. */
const SWEEP_CHUNK = 1_000
/** Session records cached by `get` at most. */
const CACHE_MAX = 10_000
/** The cache keeps the LISTEN connection while sessions were read within this time. */
const CACHE_HOLD = Duration.minutes(1)

/** A stored session. */
export interface McpSessionRecord {
  readonly id: string
  /** The caller that created it; only that caller may use it. */
  readonly ownerId: string
  readonly protocolVersion: string
  /** The client's `clientInfo`, or null. */
  readonly clientInfo: Readonly<Record<string, unknown>> | null
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  readonly createdAt: Date
  readonly lastSeenAt: Date
  /** When the session ends unless touched again. */
  readonly expiresAt: Date
  /** The `logging/setLevel` level the client asked for; absent or null when it never did. */
  readonly logLevel?: string | null | undefined
}

/** A stored message of a stream. */
export interface McpStreamEvent {
  readonly seq: number
  /** The JSON-RPC message, as the text that was sent. */
  readonly data: string
}

export interface McpStreamState {
  /** The seq of the last message appended (0: none yet). */
  readonly lastSeq: number
  readonly closed: boolean
}

/** One read of a stream: its state and the kept messages after a seq, in seq order. */
export interface McpStreamPage {
  /** None: the stream does not exist (never opened, evicted, or its session deleted). */
  readonly stream: Option.Option<McpStreamState>
  readonly events: ReadonlyArray<McpStreamEvent>
}

/** Wake-ups for one stream. */
export interface McpStreamWatch {
  /**
   * Completes when the stream (or its session) changed since the previous
   * `next` returned (at once if it already did), or after `timeout`.
   */
  readonly next: (timeout: Duration.Input) => Effect.Effect<void>
}

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

interface SessionRow {
  readonly id: string
  readonly owner_id: string
  readonly protocol_version: string
  readonly client_info: unknown
  readonly capabilities: unknown
  readonly created_at: Date | string
  readonly last_seen_at: Date | string
  readonly expires_at: Date | string
  readonly log_level: string | null
}

const sessionColumns =
  "id, owner_id, protocol_version, client_info, capabilities, created_at, last_seen_at, expires_at, log_level"

const parsedJson = (value: unknown): unknown => typeof value === "string" ? JSON.parse(value) : value

const isObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const fromRow = (row: SessionRow): McpSessionRecord => {
  const info = parsedJson(row.client_info)
  const capabilities = parsedJson(row.capabilities)
  return {
    id: row.id,
    ownerId: row.owner_id,
    protocolVersion: row.protocol_version,
    clientInfo: isObject(info) ? info : null,
    clientCapabilities: isObject(capabilities) ? capabilities : {},
    createdAt: toDate(row.created_at),
    lastSeenAt: toDate(row.last_seen_at),
    expiresAt: toDate(row.expires_at),
    logLevel: row.log_level
  }
}

const isConstraintError = (error: unknown): boolean => isSqlError(error) && error.reason._tag === "ConstraintError"

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const notifications = yield* Notifications
  const origin = randomUUID()

  // --- wake-ups ----------------------------------------------------------------
  // session id -> stream id -> the sliding(1) queues of its watchers
  const watchers = new Map<string, Map<string, Set<Queue.Queue<void>>>>()

  const wake = (sessionId: string, streamId: string | null): void => {
    const streams = watchers.get(sessionId)
    if (streams === undefined) return
    const targets = streamId === null ? Array.from(streams.values()) : [streams.get(streamId)]
    for (const queues of targets) {
      if (queues !== undefined) { for (const queue of queues) Queue.offerUnsafe(queue, undefined) }
    }
  }
  const wakeAll = (): void => {
    for (const sessionId of watchers.keys()) wake(sessionId, null)
  }

  // --- session cache (see the rules) ---------------------------------------------
  const cache = new Map<string, McpSessionRecord>()
  /** True while the LISTEN connection is up: only then can a change by another instance reach the cache. */
  let cacheLive = false
  /** Bumped on every session-level change; a read that saw it move is not cached. */
  let epoch = 0
  const invalidate = (sessionId: string): void => {
    epoch++
    cache.delete(sessionId)
  }
  const setCacheLive = (live: boolean): void => {
    epoch++
    cache.clear()
    cacheLive = live
  }
  const remember = (record: McpSessionRecord, readAt: number): void => {
    if (!cacheLive || epoch !== readAt) return
    cache.delete(record.id)
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
    cache.set(record.id, record)
  }

  const payload = (sessionId: string, streamId: string | null) => JSON.stringify([origin, sessionId, streamId])

  const dispatch = (text: string): void => {
    try {
      const value = JSON.parse(text) as unknown
      if (!Array.isArray(value) || value[0] === origin || typeof value[1] !== "string") return
      const streamId = typeof value[2] === "string" ? value[2] : null
      if (streamId === null) invalidate(value[1])
      wake(value[1], streamId)
    } catch {
      // not ours
    }
  }

  // One LISTEN while anyone watches (kept one idle minute); re-listens every second when the connection is lost.
  const listening = Effect.scoped(Effect.gen(function*() {
    const queue = yield* notifications.listen(channel)
    yield* Effect.addFinalizer(() => Effect.sync(() => setCacheLive(false)))
    // whatever was sent while nobody listened
    setCacheLive(true)
    wakeAll()
    while (true) dispatch(yield* Queue.take(queue))
  }))
  const listener = yield* RcRef.make({
    acquire: listening.pipe(
      Effect.tapError((error) => Effect.logWarning("mcp sessions: LISTEN connection lost; re-listening", error)),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped,
      Effect.asVoid
    ),
    idleTimeToLive: "1 minute"
  })

  // The cache holds the listener while sessions are read: a fiber in the layer's scope that lets go after
  // a CACHE_HOLD without a read (so between one and two CACHE_HOLDs after the last one).
  const layerScope = yield* Effect.scope
  let holding = false
  let reads = 0
  const hold: Effect.Effect<void> = Effect.scoped(Effect.gen(function*() {
    yield* RcRef.get(listener)
    do {
      reads = 0
      yield* Effect.sleep(CACHE_HOLD)
    } while (reads > 0)
  })).pipe(Effect.ensuring(Effect.sync(() => {
    holding = false
  })))
  const keepListening = (): Effect.Effect<void> => {
    reads++
    if (holding) return Effect.void
    holding = true
    return Effect.asVoid(Effect.forkIn(hold, layerScope))
  }

  const watch = (sessionId: string, streamId: string) =>
    Effect.gen(function*() {
      yield* RcRef.get(listener)
      const queue = yield* Queue.sliding<void>(1)
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          let streams = watchers.get(sessionId)
          if (streams === undefined) watchers.set(sessionId, streams = new Map())
          let queues = streams.get(streamId)
          if (queues === undefined) streams.set(streamId, queues = new Set())
          queues.add(queue)
        }),
        () =>
          Effect.sync(() => {
            const streams = watchers.get(sessionId)
            const queues = streams?.get(streamId)
            queues?.delete(queue)
            if (queues !== undefined && queues.size === 0) streams!.delete(streamId)
            if (streams !== undefined && streams.size === 0) watchers.delete(sessionId)
          })
      )
      return {
        next: (timeout: Duration.Input) => Effect.asVoid(Effect.timeoutOption(Queue.take(queue), timeout))
      } satisfies McpStreamWatch
    })

  // --- sessions ----------------------------------------------------------------
  const create = (session: McpSessionRecord) =>
    sql.withTransaction(Effect.gen(function*() {
      const replaced = yield* sql`
        WITH gone AS (DELETE FROM mcp_sessions WHERE id = ${session.id} RETURNING id)
        SELECT pg_notify(${channel}, ${payload(session.id, null)}) FROM gone`
      yield* sql`
        INSERT INTO mcp_sessions (id, owner_id, protocol_version, client_info, capabilities,
          created_at, last_seen_at, expires_at, log_level)
        VALUES (${session.id}, ${storableText(session.ownerId)}, ${storableText(session.protocolVersion)},
          ${session.clientInfo === null ? null : storableJsonText(session.clientInfo) ?? null}::jsonb,
          ${storableJsonText(session.clientCapabilities) ?? "{}"}::jsonb, ${session.createdAt}::timestamptz,
          ${session.lastSeenAt}::timestamptz, ${session.expiresAt}::timestamptz, ${session.logLevel ?? null})`
      return replaced.length > 0
    })).pipe(
      Effect.tap((replaced) =>
        Effect.sync(() => {
          if (replaced) wake(session.id, null)
          invalidate(session.id)
        })
      ),
      Effect.asVoid,
      storageError("mcpSessions.create")
    )

  const readSession = (id: string, now: Date) =>
    Effect.suspend(() => {
      const readAt = epoch
      return sql<SessionRow>`
        SELECT ${sql.literal(sessionColumns)} FROM mcp_sessions
        WHERE id = ${id} AND expires_at >= ${now}::timestamptz`.pipe(
        Effect.map((rows) => {
          const row = rows[0]
          if (row === undefined) return Option.none<McpSessionRecord>()
          const record = fromRow(row)
          remember(record, readAt)
          return Option.some(record)
        }),
        storageError("mcpSessions.get")
      )
    })

  const get = (id: string, now: Date) =>
    Effect.suspend(() => {
      const hit = cacheLive ? cache.get(id) : undefined
      const held = keepListening()
      if (hit !== undefined && hit.expiresAt.getTime() >= now.getTime()) return Effect.as(held, Option.some(hit))
      return Effect.andThen(held, readSession(id, now))
    })

  const touch = (id: string, lastSeenAt: Date, expiresAt: Date) =>
    sql`
      UPDATE mcp_sessions SET last_seen_at = ${lastSeenAt}::timestamptz, expires_at = ${expiresAt}::timestamptz
      WHERE id = ${id}`.pipe(
      Effect.tap(() =>
        Effect.sync(() => {
          const cached = cache.get(id)
          if (cached !== undefined) cache.set(id, { ...cached, lastSeenAt, expiresAt })
        })
      ),
      Effect.asVoid,
      storageError("mcpSessions.touch")
    )

  // A session-level change: every instance's cached record of it is dropped (here at once, elsewhere by
  // the notification), or calls would keep relaying at the old level.
  const setLogLevel = (id: string, level: string) =>
    sql<{ id: string }>`
      WITH changed AS (UPDATE mcp_sessions SET log_level = ${level} WHERE id = ${id} RETURNING id)
      SELECT id, pg_notify(${channel}, ${payload(id, null)}) FROM changed`.pipe(
      Effect.map((rows) => {
        invalidate(id)
        return rows.length > 0
      }),
      storageError("mcpSessions.setLogLevel")
    )

  const remove = (id: string) =>
    sql`
      WITH gone AS (DELETE FROM mcp_sessions WHERE id = ${id} RETURNING id)
      SELECT pg_notify(${channel}, ${payload(id, null)}) FROM gone`.pipe(
      Effect.map((rows) => {
        invalidate(id)
        if (rows.length > 0) wake(id, null)
        return rows.length > 0
      }),
      storageError("mcpSessions.delete")
    )

  const deleteExpired = (now: Date) =>
    Effect.gen(function*() {
      let total = 0
      while (true) {
        const rows = yield* sql<{ id: string }>`
          WITH gone AS (
            DELETE FROM mcp_sessions WHERE id IN (
              SELECT id FROM mcp_sessions WHERE expires_at < ${now}::timestamptz LIMIT ${SWEEP_CHUNK})
            RETURNING id)
          SELECT id, pg_notify(${channel}, json_build_array(${origin}::text, id, NULL)::text) FROM gone`
        for (const row of rows) {
          invalidate(row.id)
          wake(row.id, null)
        }
        total += rows.length
        if (rows.length < SWEEP_CHUNK) return total
      }
    }).pipe(storageError("mcpSessions.deleteExpired"))

  const sweepEvery = (interval: Duration.Input) =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => deleteExpired(new Date(now))),
      Effect.catch((error) => Effect.logWarning("mcp sessions: deleting expired sessions failed", error)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped,
      Effect.asVoid
    )

  // --- streams -------------------------------------------------------------------
  const openStream = (sessionId: string, streamId: string, options: { readonly maxStreams: number }) =>
    sql.withTransaction(Effect.gen(function*() {
      const inserted = yield* sql<{ last_seq: number | bigint }>`
        INSERT INTO mcp_session_streams (session_id, stream_id)
        SELECT ${sessionId}, ${streamId} WHERE EXISTS (SELECT 1 FROM mcp_sessions WHERE id = ${sessionId})
        ON CONFLICT (session_id, stream_id) DO NOTHING
        RETURNING last_seq`
      if (inserted.length === 0) {
        const existing = yield* sql<{ last_seq: number | bigint }>`
          SELECT last_seq FROM mcp_session_streams WHERE session_id = ${sessionId} AND stream_id = ${streamId}`
        return { lastSeq: existing.length === 0 ? 0 : toNumber(existing[0]!.last_seq), evicted: [] }
      }
      // Keep the newest `maxStreams` streams of the session (the new one included).
      const evicted = yield* sql<{ stream_id: string }>`
        WITH gone AS (
          DELETE FROM mcp_session_streams
          WHERE session_id = ${sessionId} AND ordinal < (
            SELECT min(ordinal) FROM (
              SELECT ordinal FROM mcp_session_streams WHERE session_id = ${sessionId}
              ORDER BY ordinal DESC LIMIT ${Math.max(1, options.maxStreams)}) AS newest)
          RETURNING stream_id)
        SELECT stream_id, pg_notify(${channel}, json_build_array(${origin}::text, ${sessionId}::text, stream_id)::text)
        FROM gone`
      return { lastSeq: 0, evicted: evicted.map((row) => row.stream_id) }
    })).pipe(
      Effect.map(({ evicted, lastSeq }) => {
        for (const stream of evicted) wake(sessionId, stream)
        return lastSeq
      }),
      // The session was deleted by another instance between the check and the insert.
      Effect.catchIf(isConstraintError, () => Effect.succeed(0)),
      storageError("mcpSessions.openStream")
    )

  const append = (sessionId: string, streamId: string, data: string, options: { readonly maxEvents: number }) =>
    sql<{ seq: number | bigint }>`
      WITH stream AS (
        UPDATE mcp_session_streams SET last_seq = last_seq + 1
        WHERE session_id = ${sessionId} AND stream_id = ${streamId} AND NOT closed
        RETURNING last_seq
      ), added AS (
        INSERT INTO mcp_session_messages (session_id, stream_id, event_seq, payload)
        SELECT ${sessionId}::text, ${streamId}::text, last_seq, ${data}::text FROM stream
        RETURNING event_seq
      ), trimmed AS (
        DELETE FROM mcp_session_messages
        WHERE session_id = ${sessionId} AND stream_id = ${streamId}
          AND event_seq <= (SELECT last_seq FROM stream) - ${Math.max(1, options.maxEvents)}::bigint
      )
      SELECT event_seq AS seq, pg_notify(${channel}, ${payload(sessionId, streamId)}) FROM added`.pipe(
      Effect.map((rows) => {
        if (rows.length === 0) return 0
        wake(sessionId, streamId)
        return toNumber(rows[0]!.seq)
      }),
      storageError("mcpSessions.append")
    )

  const closeStream = (sessionId: string, streamId: string) =>
    sql`
      WITH closing AS (
        UPDATE mcp_session_streams SET closed = true
        WHERE session_id = ${sessionId} AND stream_id = ${streamId} AND NOT closed
        RETURNING stream_id)
      SELECT pg_notify(${channel}, ${payload(sessionId, streamId)}) FROM closing`.pipe(
      Effect.map((rows) => {
        if (rows.length > 0) wake(sessionId, streamId)
      }),
      storageError("mcpSessions.closeStream")
    )

  const read = (sessionId: string, streamId: string, afterSeq: number, limit: number) =>
    sql<{
      readonly last_seq: number | bigint
      readonly closed: boolean
      readonly event_seq: number | bigint | null
      readonly payload: string | null
    }>`
      SELECT s.last_seq, s.closed, m.event_seq, m.payload
      FROM mcp_session_streams s
      LEFT JOIN LATERAL (
        SELECT event_seq, payload FROM mcp_session_messages
        WHERE session_id = s.session_id AND stream_id = s.stream_id AND event_seq > ${afterSeq}::bigint
        ORDER BY event_seq
        LIMIT ${Math.max(1, limit)}
      ) m ON true
      WHERE s.session_id = ${sessionId} AND s.stream_id = ${streamId}
      ORDER BY m.event_seq`.pipe(
      Effect.map((rows): McpStreamPage => {
        const first = rows[0]
        if (first === undefined) return { stream: Option.none(), events: [] }
        return {
          stream: Option.some({ lastSeq: toNumber(first.last_seq), closed: first.closed }),
          events: rows.flatMap((row) =>
            row.event_seq === null ? [] : [{ seq: toNumber(row.event_seq), data: row.payload ?? "" }]
          )
        }
      }),
      storageError("mcpSessions.read")
    )

  return McpSessions.of({
    create,
    get,
    setLogLevel,
    touch,
    delete: remove,
    deleteExpired,
    sweepEvery,
    openStream,
    append,
    closeStream,
    read,
    watch
  })
})
