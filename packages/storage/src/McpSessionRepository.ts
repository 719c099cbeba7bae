/**
 * The SQL of the MCP session store (`McpSessions`): sessions, their streams
 * and the streams' messages, and the `janus_mcp` notifications each write
 * sends. It says what changed; waking watchers and the cache is the
 * caller's.
 *
 * **Rules**
 *
 * - Policy comes from the caller: `expiresAt` on create/touch, `maxStreams`
 *   on `openStream`, `maxEvents` on `append`. No settings here.
 * - `append` is ONE statement (so one implicit transaction): it bumps the
 *   stream's `last_seq` (the row lock serializes appends to a stream across
 *   instances, so seqs are gapless and commit in seq order), inserts the
 *   message, deletes the ones beyond the newest `maxEvents`, and sends
 *   `NOTIFY janus_mcp`, delivered at commit, never for a rolled-back write.
 *   Appending to a closed, evicted or unknown stream stores nothing and
 *   returns 0.
 * - `closeStream`, `delete`, `deleteExpired`, a replacing `create` and a
 *   stream evicted by `openStream` notify too, so followers end promptly;
 *   `setLogLevel` does, so every instance drops its cached record.
 * - What the client sent (`clientInfo`, capabilities) and the owner's id are
 *   stored as `Storable` makes them: U+0000 and lone surrogates become
 *   U+FFFD, so no client can make `create` fail (an owner id holding one no
 *   longer equals the caller's id, so such a caller's session is not found:
 *   a refusal, never a failure of the store).
 * - `get` hides a session whose `expiresAt` has passed, even before
 *   `deleteExpired` removes it.
 *
 * @internal
 */
import { Effect, Option, Predicate } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { isSqlError } from "effect/sql/SqlError"
import { storageError, toDate, toNumber } from "./internal/sql.ts"
import { channel, notice } from "./McpSessionWatch.ts"
import { storableJsonText, storableText } from "./Storable.ts"

/** Expired sessions deleted per statement by `deleteExpired`. */
const SWEEP_CHUNK = 1_000

/** A JSON object the client sent. */
type ClientObject = Readonly<Record<string, unknown>>

/** A stored session. */
export interface McpSessionRecord {
  readonly id: string
  /** The caller that created it; only that caller may use it. */
  readonly ownerId: string
  readonly protocolVersion: string
  /** The client's `clientInfo`, or null. */
  readonly clientInfo: ClientObject | null
  readonly clientCapabilities: ClientObject
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

const fromRow = (row: SessionRow): McpSessionRecord => {
  const info = parsedJson(row.client_info)
  const capabilities = parsedJson(row.capabilities)
  return {
    id: row.id,
    ownerId: row.owner_id,
    protocolVersion: row.protocol_version,
    clientInfo: Predicate.isReadonlyObject(info) ? info : null,
    clientCapabilities: Predicate.isReadonlyObject(capabilities) ? capabilities : {},
    createdAt: toDate(row.created_at),
    lastSeenAt: toDate(row.last_seen_at),
    expiresAt: toDate(row.expires_at),
    logLevel: row.log_level
  }
}

const isConstraintError = (error: unknown): boolean => isSqlError(error) && error.reason._tag === "ConstraintError"

/** The repository of the instance whose notifications carry `origin`. */
export const make = (origin: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const payload = (sessionId: string, streamId: string | null) => notice(origin, sessionId, streamId)

    // --- sessions ----------------------------------------------------------------
    /** Stores the session; true when it replaced one with the same id. */
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
      })).pipe(storageError("mcpSessions.create"))

    const get = (id: string, now: Date) =>
      sql<SessionRow>`
        SELECT ${sql.literal(sessionColumns)} FROM mcp_sessions
        WHERE id = ${id} AND expires_at >= ${now}::timestamptz`.pipe(
        Effect.map((rows) => rows[0] === undefined ? Option.none<McpSessionRecord>() : Option.some(fromRow(rows[0]))),
        storageError("mcpSessions.get")
      )

    const touch = (id: string, lastSeenAt: Date, expiresAt: Date) =>
      sql`
        UPDATE mcp_sessions SET last_seen_at = ${lastSeenAt}::timestamptz, expires_at = ${expiresAt}::timestamptz
        WHERE id = ${id}`.pipe(Effect.asVoid, storageError("mcpSessions.touch"))

    /** True when the session exists. */
    const setLogLevel = (id: string, level: string) =>
      sql<{ id: string }>`
        WITH changed AS (UPDATE mcp_sessions SET log_level = ${level} WHERE id = ${id} RETURNING id)
        SELECT id, pg_notify(${channel}, ${payload(id, null)}) FROM changed`.pipe(
        Effect.map((rows) => rows.length > 0),
        storageError("mcpSessions.setLogLevel")
      )

    /** True when the session existed. */
    const remove = (id: string) =>
      sql`
        WITH gone AS (DELETE FROM mcp_sessions WHERE id = ${id} RETURNING id)
        SELECT pg_notify(${channel}, ${payload(id, null)}) FROM gone`.pipe(
        Effect.map((rows) => rows.length > 0),
        storageError("mcpSessions.delete")
      )

    /** Deletes the sessions expired at `now`, `SWEEP_CHUNK` per statement, telling `deleted` after each. */
    const deleteExpired = (now: Date, deleted: (ids: ReadonlyArray<string>) => void) =>
      Effect.gen(function*() {
        let total = 0
        while (true) {
          // the payload is `notice`'s array, built in SQL for each deleted row
          const rows = yield* sql<{ id: string }>`
            WITH gone AS (
              DELETE FROM mcp_sessions WHERE id IN (
                SELECT id FROM mcp_sessions WHERE expires_at < ${now}::timestamptz LIMIT ${SWEEP_CHUNK})
              RETURNING id)
            SELECT id, pg_notify(${channel}, json_build_array(${origin}::text, id, NULL)::text) FROM gone`
          deleted(rows.map((row) => row.id))
          total += rows.length
          if (rows.length < SWEEP_CHUNK) return total
        }
      }).pipe(storageError("mcpSessions.deleteExpired"))

    // --- streams -------------------------------------------------------------------
    /** Registers the stream: its last seq (0 when new or the session is gone) and the streams evicted. */
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
        // The session was deleted by another instance between the check and the insert.
        Effect.catchIf(isConstraintError, () => Effect.succeed({ lastSeq: 0, evicted: [] })),
        storageError("mcpSessions.openStream")
      )

    /** The message's seq, or 0 when the stream is closed or unknown. */
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
        Effect.map((rows) => rows.length === 0 ? 0 : toNumber(rows[0]!.seq)),
        storageError("mcpSessions.append")
      )

    /** True when the stream was open. */
    const closeStream = (sessionId: string, streamId: string) =>
      sql`
        WITH closing AS (
          UPDATE mcp_session_streams SET closed = true
          WHERE session_id = ${sessionId} AND stream_id = ${streamId} AND NOT closed
          RETURNING stream_id)
        SELECT pg_notify(${channel}, ${payload(sessionId, streamId)}) FROM closing`.pipe(
        Effect.map((rows) => rows.length > 0),
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

    return { create, get, touch, setLogLevel, delete: remove, deleteExpired, openStream, append, closeStream, read }
  })

export type McpSessionRepository = Effect.Success<ReturnType<typeof make>>
