/**
 * The admin query over the audit log.
 *
 * **Rules**
 *
 * - Pages newest first with keyset pagination on `(at desc, id desc)`; the
 *   cursor carries `at` at microsecond precision, so no record is skipped or
 *   repeated between pages. `limit` is 1..1000.
 * - Exact filters: `kind`, `tool`, `method`, `outcome`, `connection`, `requestId`,
 *   `traceId`, `action`, `resourceKind`, `resourceId`; `identity` matches the
 *   stored identity or the caller's name exactly. `caller` matches a
 *   substring (case-insensitive, `%` and `_` taken literally) of the
 *   identity, the caller's name, subject or client: "what did the tokens
 *   called ci-* do" is one query.
 * - Text filters are compared as `record` would have stored them, so a
 *   filter holding U+0000 finds the records of the name the client sent (and
 *   never fails the query); `from` (inclusive) and `to` (exclusive) are
 *   instants of the years 0001 to 9999 (`InvalidInput` otherwise: Postgres'
 *   timestamps do not reach JavaScript's extremes).
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import {
  AuditKind,
  AuditOutcome,
  type AuditRecord,
  COLUMNS,
  fromRow,
  isOutcome,
  type SelectRow,
  text
} from "./AuditRows.ts"
import { InvalidInput } from "./Errors.ts"
import { storageError, toNumber } from "./internal/sql.ts"

export const AUDIT_MAX_PAGE = 1_000

/** The admin query: every filter optional; `cursor` from the previous page. */
export const AuditQuery = Schema.Struct({
  from: Schema.optional(Schema.Date),
  to: Schema.optional(Schema.Date),
  kind: Schema.optional(AuditKind),
  tool: Schema.optional(Schema.String),
  method: Schema.optional(Schema.String),
  outcome: Schema.optional(AuditOutcome),
  identity: Schema.optional(Schema.String),
  caller: Schema.optional(Schema.String),
  connection: Schema.optional(Schema.String),
  requestId: Schema.optional(Schema.String),
  traceId: Schema.optional(Schema.String),
  action: Schema.optional(Schema.String),
  resourceKind: Schema.optional(Schema.String),
  resourceId: Schema.optional(Schema.String),
  cursor: Schema.optional(Schema.String),
  limit: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: AUDIT_MAX_PAGE }))
})
export type AuditQuery = typeof AuditQuery.Type

export interface AuditPage {
  readonly items: ReadonlyArray<AuditRecord>
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  readonly nextCursor: string | null
}

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

const likePattern = (value: string): string => `%${text(value).replace(/[\\%_]/g, (c) => `\\${c}`)}%`

const EXACT = [
  ["tool", "tool"],
  ["method", "method"],
  ["connection", "connection"],
  ["requestId", "request_id"],
  ["traceId", "trace_id"],
  ["action", "action"],
  ["resourceKind", "resource_kind"],
  ["resourceId", "resource_id"]
] as const

/** The query of `AuditLog.query`, over `sql`. */
export const makeQuery = (sql: SqlClient.SqlClient) =>
  Effect.fnUntraced(function*(q: AuditQuery) {
    if (!Number.isInteger(q.limit) || q.limit < 1 || q.limit > AUDIT_MAX_PAGE) {
      return yield* invalid("limit", q.limit, `an integer from 1 to ${AUDIT_MAX_PAGE}`)
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
    if (q.kind !== undefined) {
      if (!AuditKind.literals.includes(q.kind)) return yield* invalid("kind", q.kind, AuditKind.literals.join(" | "))
      clauses.push(sql`kind = ${q.kind}`)
    }
    if (q.outcome !== undefined) {
      if (!isOutcome(q.outcome)) return yield* invalid("outcome", q.outcome, AuditOutcome.literals.join(" | "))
      clauses.push(sql`outcome = ${q.outcome}`)
    }
    for (const [field, column] of EXACT) {
      const value = q[field]
      if (value !== undefined) clauses.push(sql`${sql(column)} = ${text(value)}`)
    }
    if (q.identity !== undefined) {
      clauses.push(sql`(identity = ${text(q.identity)} OR caller_name = ${text(q.identity)})`)
    }
    if (q.caller !== undefined) {
      const like = likePattern(q.caller)
      clauses.push(sql`(identity ILIKE ${like} OR caller_name ILIKE ${like} OR caller_subject ILIKE ${like}
        OR caller_client ILIKE ${like})`)
    }
    if (q.cursor !== undefined) {
      const after = decodeCursor(q.cursor)
      if (after === undefined) return yield* invalid("cursor", q.cursor, "a nextCursor returned by a previous page")
      clauses.push(sql`(at, id) < (${after.at}::timestamptz, ${after.id})`)
    }
    const rows = yield* sql<SelectRow>`
      SELECT ${sql.literal(COLUMNS)}, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at_key
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
