/**
 * The audit log (`audit_records`): one record per tools/call attempt, written
 * in batches off the hot path, and the admin query over it.
 *
 * **Rules**
 *
 * - `record` never waits for the database: it stamps `at` from the `Clock`
 *   (unless given), cleans the values so that no record can make a batch fail
 *   (text made `Storable`: U+0000 and lone surrogates become U+FFFD; text cut
 *   at 1,024 characters; numbers made finite, non-negative integers), and
 *   appends to an in-memory buffer. It never fails and never blocks.
 * - A fiber flushes the buffer every `flushInterval` (1 second), at once when
 *   `batchSize` (500) records are waiting, and once more when the scope
 *   closes. A flush writes batches of at most `batchSize` records, each with
 *   ONE multi-row INSERT (one statement, its own transaction).
 * - A batch that fails because the database failed goes back to the front
 *   of the buffer, in order, and the fiber retries with exponential backoff
 *   (200 ms doubling up to `maxBackoff`, 30 s): an outage loses nothing as
 *   long as the buffer holds. A batch write is uninterruptible, so shutdown
 *   never cuts one in half.
 * - No record can block a flush: should Postgres refuse a batch for its data
 *   (see `internal/Refusals.ts`), the batch is written again in one
 *   transaction finding the refused records by halves; those are dropped,
 *   counted in `janus.audit.dropped` and reported in one log line, the
 *   others are written.
 * - The buffer is bounded (`maxBuffered`, 100,000 records, plus at most one
 *   batch in flight). The call path must never block and memory must stay
 *   bounded, so when it is full the OLDEST record is dropped to make room
 *   (the newest are the most useful during an incident) — never silently:
 *   every dropped record is counted in the `janus.audit.dropped` counter and
 *   a warning with the count is logged at most once per `warnInterval`
 *   (10 s). Records the final flush at shutdown cannot write are counted and
 *   logged the same way.
 * - `query` pages newest first with keyset pagination on `(at desc, id desc)`;
 *   the cursor carries `at` at microsecond precision, so no record is skipped
 *   or repeated between pages. `limit` is 1..1000. Text filters are compared
 *   as `record` would have stored them, so a filter holding U+0000 finds the
 *   records of the name the client sent (and never fails the query); `from`
 *   and `to` are instants of the years 0001 to 9999 (`InvalidInput`
 *   otherwise: Postgres' timestamps do not reach JavaScript's extremes).
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Metric, Queue, Schema, Semaphore } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { InvalidInput, StorageError } from "./Errors.ts"
import * as DropReport from "./internal/DropReport.ts"
import { describeRefusals, isolate, isRefusal } from "./internal/Refusals.ts"
import { Ring } from "./internal/Ring.ts"
import { storageError, toDate, toNumber } from "./internal/sql.ts"
import { storableText } from "./Storable.ts"

// -----------------------------------------------------------------------------
// Schema
// -----------------------------------------------------------------------------

/** How a tools/call attempt ended. */
export const AuditOutcome = Schema.Literals([
  "ok",
  "error",
  "denied",
  /** The arguments did not fit the tool's input schema (or what HTTP can carry): the caller's mistake. */
  "invalid",
  "rate_limited",
  "shed",
  "breaker_open",
  "timeout"
])
export type AuditOutcome = typeof AuditOutcome.Type

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** One audit record as written: no argument or response body, ever. */
export const AuditEntry = Schema.Struct({
  /** Who called: the client token name, OAuth subject, ... */
  identity: Schema.String,
  tool: Schema.String,
  /** The MCP method: `tools/call`, `resources/read`, `prompts/get`, `completion/complete`, ... */
  method: Schema.String,
  /** The connection the tool belongs to; null when the call never resolved one. */
  connection: Schema.NullOr(Schema.String),
  outcome: AuditOutcome,
  /** The HTTP status of the downstream call or the JSON-RPC error code; null when neither applies. */
  status: Schema.NullOr(Schema.Int),
  durationMs: Count,
  bytesIn: Count,
  bytesOut: Count,
  redactions: Count,
  at: Schema.Date,
  requestId: Schema.NullOr(Schema.String),
  traceId: Schema.NullOr(Schema.String)
})
export type AuditEntry = typeof AuditEntry.Type

/** A stored audit record. */
export const AuditRecord = Schema.Struct({ id: Schema.Number, ...AuditEntry.fields })
export type AuditRecord = typeof AuditRecord.Type

/** What `record` takes: an `AuditEntry` whose optional parts default to null / 0 and `at` to now. */
export interface AuditInput {
  readonly identity: string
  readonly tool: string
  /** Default `tools/call`. */
  readonly method?: string | undefined
  readonly outcome: AuditOutcome
  readonly durationMs: number
  readonly connection?: string | null | undefined
  readonly status?: number | null | undefined
  readonly bytesIn?: number | undefined
  readonly bytesOut?: number | undefined
  readonly redactions?: number | undefined
  readonly at?: Date | undefined
  readonly requestId?: string | null | undefined
  readonly traceId?: string | null | undefined
}

export const MAX_PAGE = 1_000

/** The admin query: every filter optional; `from` inclusive, `to` exclusive; `cursor` from the previous page. */
export const AuditQuery = Schema.Struct({
  from: Schema.optional(Schema.Date),
  to: Schema.optional(Schema.Date),
  tool: Schema.optional(Schema.String),
  outcome: Schema.optional(AuditOutcome),
  identity: Schema.optional(Schema.String),
  connection: Schema.optional(Schema.String),
  cursor: Schema.optional(Schema.String),
  limit: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_PAGE }))
})
export type AuditQuery = typeof AuditQuery.Type

export interface AuditPage {
  readonly items: ReadonlyArray<AuditRecord>
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  readonly nextCursor: string | null
}

/** Records dropped because the buffer was full, Postgres refused them, or the final flush failed. */
export const dropped = Metric.counter("janus.audit.dropped", {
  description: "Audit records dropped because the in-memory buffer was full, Postgres refused them, or the final " +
    "flush at shutdown failed",
  incremental: true
})

export interface AuditLogOptions {
  /** Flush period (default 1 second). */
  readonly flushInterval?: Duration.Input | undefined
  /** Records per INSERT, and the backlog that triggers an early flush (default 500). */
  readonly batchSize?: number | undefined
  /** Records kept waiting at most; beyond, the oldest are dropped and counted (default 100,000). */
  readonly maxBuffered?: number | undefined
  /** At most one "dropped" warning per this period (default 10 seconds). */
  readonly warnInterval?: Duration.Input | undefined
  /** Longest wait between retries of a failing flush (default 30 seconds). */
  readonly maxBackoff?: Duration.Input | undefined
}

export class AuditLog extends Context.Service<AuditLog, {
  /** Buffers a record for the next flush; never fails, never waits for the database. */
  readonly record: (entry: AuditInput) => Effect.Effect<void>
  /** Writes every record buffered now (batch by batch); on failure the unwritten ones stay buffered. */
  readonly flush: Effect.Effect<void, StorageError>
  /** Records waiting to be written. */
  readonly buffered: Effect.Effect<number>
  /** A page of records, newest first. */
  readonly query: (query: AuditQuery) => Effect.Effect<AuditPage, InvalidInput | StorageError>
}>()("@janus/storage/AuditLog") {
  /** The audit log with the given limits. */
  static readonly layerWith = (options: AuditLogOptions = {}): Layer.Layer<AuditLog, never, SqlClient.SqlClient> =>
    Layer.effect(AuditLog, Effect.suspend(() => make(options)))

  /** The audit log with the default limits (1 s, 500 per batch, 100,000 buffered). */
  static readonly layer: Layer.Layer<AuditLog, never, SqlClient.SqlClient> = AuditLog.layerWith()
}

// -----------------------------------------------------------------------------
// Rows
// -----------------------------------------------------------------------------

interface InsertRow {
  readonly at: Date
  readonly identity: string
  readonly tool: string
  readonly method: string
  readonly connection: string | null
  readonly outcome: AuditOutcome
  readonly status: number | null
  readonly duration_ms: number
  readonly bytes_in: number
  readonly bytes_out: number
  readonly redactions: number
  readonly request_id: string | null
  readonly trace_id: string | null
}

const INT4_MAX = 2_147_483_647
const outcomes: ReadonlySet<string> = new Set(AuditOutcome.literals)

/** Text as stored: `Storable` (see the rules); very long values are cut (they are names and ids, not bodies). */
const text = (value: string): string => storableText(value.length > 1_024 ? value.slice(0, 1_024) : value)
const textOrNull = (value: string | null | undefined): string | null =>
  value === null || value === undefined ? null : text(String(value))
const count = (value: number | undefined, max: number): number =>
  value === undefined || !Number.isFinite(value) ? 0 : Math.min(max, Math.max(0, Math.round(value)))

const toInsertRow = (input: AuditInput, at: Date): InsertRow => ({
  at,
  identity: text(String(input.identity)),
  tool: text(String(input.tool)),
  method: text(String(input.method ?? "tools/call")),
  connection: textOrNull(input.connection),
  outcome: outcomes.has(input.outcome) ? input.outcome : "error",
  status: input.status === null || input.status === undefined || !Number.isFinite(input.status)
    ? null
    : Math.max(-INT4_MAX, Math.min(INT4_MAX, Math.trunc(input.status))),
  duration_ms: count(input.durationMs, INT4_MAX),
  bytes_in: count(input.bytesIn, Number.MAX_SAFE_INTEGER),
  bytes_out: count(input.bytesOut, Number.MAX_SAFE_INTEGER),
  redactions: count(input.redactions, INT4_MAX),
  request_id: textOrNull(input.requestId),
  trace_id: textOrNull(input.traceId)
})

interface SelectRow {
  readonly id: number | bigint | string
  readonly at: Date | string
  readonly at_key: string
  readonly identity: string
  readonly tool: string
  readonly method: string
  readonly connection: string | null
  readonly outcome: AuditOutcome
  readonly status: number | null
  readonly duration_ms: number
  readonly bytes_in: number | bigint | string
  readonly bytes_out: number | bigint | string
  readonly redactions: number
  readonly request_id: string | null
  readonly trace_id: string | null
}

const fromRow = (row: SelectRow): AuditRecord => ({
  id: toNumber(row.id),
  at: toDate(row.at),
  identity: row.identity,
  tool: row.tool,
  method: row.method,
  connection: row.connection,
  outcome: row.outcome,
  status: row.status === null ? null : toNumber(row.status),
  durationMs: toNumber(row.duration_ms),
  bytesIn: toNumber(row.bytes_in),
  bytesOut: toNumber(row.bytes_out),
  redactions: toNumber(row.redactions),
  requestId: row.request_id,
  traceId: row.trace_id
})

// Cursor: base64url("<at as UTC ISO with microseconds>|<id>").
const CURSOR_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const encodeCursor = (row: SelectRow): string =>
  Buffer.from(`${row.at_key}|${toNumber(row.id)}`, "utf8").toString("base64url")
const decodeCursor = (cursor: string): { readonly at: string; readonly id: number } | undefined => {
  const [at, id, ...rest] = Buffer.from(cursor, "base64url").toString("utf8").split("|")
  if (rest.length > 0 || at === undefined || id === undefined) return undefined
  if (!CURSOR_AT.test(at) || !/^\d{1,15}$/.test(id)) return undefined
  return { at, id: Number(id) }
}

/** The instants a query may name: years 0001 to 9999 (what ISO 8601 writes with four digits). */
const MIN_INSTANT = new Date("0001-01-01T00:00:00Z").getTime()
const MAX_INSTANT = new Date("9999-12-31T23:59:59.999Z").getTime()

const invalid = (field: string, value: unknown, expected: string) =>
  new InvalidInput({ entity: "audit_query", field, value: String(value), expected })

// -----------------------------------------------------------------------------
// Service
// -----------------------------------------------------------------------------

const make = Effect.fnUntraced(function*(options: AuditLogOptions) {
  const sql = yield* SqlClient.SqlClient
  const flushInterval = Duration.fromInputUnsafe(options.flushInterval ?? "1 second")
  const batchSize = Math.max(1, options.batchSize ?? 500)
  const maxBuffered = Math.max(1, options.maxBuffered ?? 100_000)
  const warnEveryMs = Duration.toMillis(Duration.fromInputUnsafe(options.warnInterval ?? "10 seconds"))
  const maxBackoffMs = Duration.toMillis(Duration.fromInputUnsafe(options.maxBackoff ?? "30 seconds"))
  const earlyFlushAt = Math.min(batchSize, maxBuffered)

  const buffer = new Ring<InsertRow>(maxBuffered)
  const wake = yield* Queue.sliding<void>(1)
  const writing = yield* Semaphore.make(1)

  const drops = DropReport.make({
    metric: dropped,
    warnEveryMs,
    message: (n) =>
      `audit log: buffer full (${maxBuffered} records waiting for the database); dropped the ${n} oldest ` +
      `(counted in janus.audit.dropped)`
  })

  // --- writer --------------------------------------------------------------------
  const push = (input: AuditInput, at: Date) =>
    Effect.suspend(() => {
      const droppedOne = buffer.push(toInsertRow(input, at))
      if (buffer.size >= earlyFlushAt) Queue.offerUnsafe(wake, undefined)
      return droppedOne ? drops.note(1) : Effect.void
    })

  const record = (input: AuditInput): Effect.Effect<void> =>
    input.at instanceof Date && !Number.isNaN(input.at.getTime())
      ? push(input, input.at)
      : Effect.flatMap(Clock.currentTimeMillis, (now) => push(input, new Date(now)))

  const insert = (rows: ReadonlyArray<InsertRow>) =>
    Effect.as(sql`INSERT INTO audit_records ${sql.insert(rows as unknown as [Record<string, unknown>])}`, rows)

  /** Writes `batch` in one transaction, leaving out (and reporting) the records Postgres refuses. */
  const writeIsolating = (batch: ReadonlyArray<InsertRow>) =>
    sql.withTransaction(isolate(sql, batch, insert)).pipe(
      Effect.flatMap(({ refused }) =>
        refused.length === 0 ? Effect.void : Effect.andThen(
          Metric.update(dropped, refused.length),
          Effect.logWarning(
            `audit log: Postgres refused ${refused.length} of ${batch.length} records (${
              describeRefusals(refused)
            }); wrote the others, dropped those (counted in janus.audit.dropped)`
          )
        )
      )
    )

  /**
   * Takes one batch and writes it with one INSERT (by halves when Postgres refuses some record); when the
   * database fails puts it back in front. Never interrupted midway.
   */
  const writeBatch = (size: number) =>
    Effect.uninterruptible(Effect.suspend(() => {
      const batch = buffer.take(size)
      if (batch.length === 0) return Effect.void
      return insert(batch).pipe(
        Effect.asVoid,
        Effect.catchIf(isRefusal, () => writeIsolating(batch)),
        Effect.tapCause(() =>
          Effect.suspend(() => {
            const lost = buffer.unshiftAll(batch)
            return lost > 0 ? drops.note(lost) : Effect.void
          })
        )
      )
    }))

  const flush: Effect.Effect<void, StorageError> = writing.withPermit(Effect.suspend(() => {
    let remaining = buffer.size
    const next: Effect.Effect<void, SqlError> = Effect.suspend(() => {
      if (remaining <= 0) return Effect.void
      const size = Math.min(batchSize, remaining)
      remaining -= size
      return Effect.andThen(writeBatch(size), next)
    })
    return next
  })).pipe(storageError("auditLog.flush"))

  // Final flush when the scope closes (registered first, so it runs after the flusher is interrupted).
  yield* Effect.addFinalizer(() =>
    DropReport.finalFlush({
      flush,
      drops,
      metric: dropped,
      discardAll: () => buffer.take(buffer.size).length,
      writer: "audit log",
      noun: "records",
      metricName: "janus.audit.dropped"
    })
  )

  const backoff = (failures: number): Duration.Duration =>
    Duration.millis(Math.min(maxBackoffMs, 200 * 2 ** Math.min(failures - 1, 20)))

  yield* Effect.gen(function*() {
    let failures = 0
    while (true) {
      if (failures === 0) yield* Effect.timeoutOption(Queue.take(wake), flushInterval)
      else yield* Effect.sleep(backoff(failures))
      yield* drops.report()
      const result = yield* Effect.result(flush)
      if (result._tag === "Failure") {
        failures++
        yield* Effect.logWarning(
          `audit log: flush failed (attempt ${failures}); ${buffer.size} records kept, retrying in ${
            Duration.format(backoff(failures))
          }`,
          result.failure
        )
      } else if (failures > 0) {
        yield* Effect.logInfo(`audit log: flush recovered after ${failures} failed attempts`)
        failures = 0
      }
    }
  }).pipe(Effect.forkScoped)

  // --- reader ----------------------------------------------------------------------
  const query = Effect.fnUntraced(function*(q: AuditQuery) {
    if (!Number.isInteger(q.limit) || q.limit < 1 || q.limit > MAX_PAGE) {
      return yield* invalid("limit", q.limit, `an integer from 1 to ${MAX_PAGE}`)
    }
    const clauses = []
    for (const [field, value] of [["from", q.from], ["to", q.to]] as const) {
      if (value !== undefined && !(value instanceof Date && !Number.isNaN(value.getTime()))) {
        return yield* invalid(field, value, "a valid date")
      }
      if (value !== undefined && (value.getTime() < MIN_INSTANT || value.getTime() > MAX_INSTANT)) {
        return yield* invalid(
          field,
          value.toISOString(),
          "an instant from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"
        )
      }
    }
    if (q.from !== undefined) clauses.push(sql`at >= ${q.from}`)
    if (q.to !== undefined) clauses.push(sql`at < ${q.to}`)
    if (q.tool !== undefined) clauses.push(sql`tool = ${text(q.tool)}`)
    if (q.outcome !== undefined) {
      if (!outcomes.has(q.outcome)) return yield* invalid("outcome", q.outcome, AuditOutcome.literals.join(" | "))
      clauses.push(sql`outcome = ${q.outcome}`)
    }
    if (q.identity !== undefined) clauses.push(sql`identity = ${text(q.identity)}`)
    if (q.connection !== undefined) clauses.push(sql`connection = ${text(q.connection)}`)
    if (q.cursor !== undefined) {
      const after = decodeCursor(q.cursor)
      if (after === undefined) return yield* invalid("cursor", q.cursor, "a nextCursor returned by a previous page")
      clauses.push(sql`(at, id) < (${after.at}::timestamptz, ${after.id})`)
    }
    const rows = yield* sql<SelectRow>`
      SELECT id, at, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at_key,
        identity, tool, method, connection, outcome, status, duration_ms, bytes_in, bytes_out, redactions,
        request_id, trace_id
      FROM audit_records
      WHERE ${sql.and(clauses)}
      ORDER BY at DESC, id DESC
      LIMIT ${q.limit + 1}`.pipe(storageError("auditLog.query"))
    const page = rows.slice(0, q.limit)
    return {
      items: page.map(fromRow),
      nextCursor: rows.length > q.limit ? encodeCursor(page[page.length - 1]!) : null
    } satisfies AuditPage
  })

  return AuditLog.of({
    record,
    flush,
    buffered: Effect.sync(() => buffer.size),
    query
  })
})

export type { StorageError }
