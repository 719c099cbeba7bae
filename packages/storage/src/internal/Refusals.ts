/**
 * Telling the rows Postgres refuses apart from a database that failed, and
 * finding those rows in a batch, so that one bad record never blocks the
 * batch it came in (the batched writers, `AuditLog` and `EventLog`).
 *
 * **Rules**
 *
 * - A refusal is an error about the data of the statement: SQLSTATE class
 *   22 (data exception: a NUL byte, an invalid escape, a value out of
 *   range), 23 (integrity constraint violation) or 54 (program limit
 *   exceeded: a value too large or too deep). Sending the same rows again
 *   fails the same way. Anything else (a lost connection, a timeout, a
 *   missing table) may pass on a retry and is not a refusal.
 * - `isolate` writes a batch by halves until each refused row stands alone:
 *   it costs one statement per half on the way down (about 2 log2(n) for one
 *   bad row), and only after the whole batch was refused. Each attempt runs
 *   in a savepoint (`sql.withTransaction` inside a transaction), so a refused
 *   half leaves nothing behind and the transaction goes on. Run it inside a
 *   transaction: all or nothing of it commits, so a failure that is not a
 *   refusal can be retried with the whole batch without writing a row twice.
 *
 * @internal
 */
import { Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"

/** The SQLSTATE of a database error, when the driver kept it. */
export const sqlState = (error: unknown): string | undefined => {
  if (!isSqlError(error)) return undefined
  const cause = error.reason.cause as { readonly code?: unknown } | null | undefined
  return typeof cause?.code === "string" ? cause.code : undefined
}

/** True when Postgres refused the data of the statement (see the rules), not when the database failed. */
export const isRefusal = (error: unknown): boolean => {
  const state = sqlState(error)
  return state !== undefined && /^(22|23|54)/.test(state)
}

/** One row Postgres refused, with why. */
export interface Refused<Row> {
  readonly row: Row
  readonly error: SqlError
}

/** What `isolate` wrote (in row order) and the rows Postgres refused. */
export interface Isolated<Row, A> {
  readonly written: ReadonlyArray<A>
  readonly refused: ReadonlyArray<Refused<Row>>
}

/**
 * Writes `rows` with `write` (each call in a savepoint), halving every part
 * that Postgres refuses until the refused rows stand alone; fails at once on
 * any error that is not a refusal. Run inside a transaction (see the rules).
 */
export const isolate = <Row, A>(
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<Row>,
  write: (rows: ReadonlyArray<Row>) => Effect.Effect<ReadonlyArray<A>, SqlError>
): Effect.Effect<Isolated<Row, A>, SqlError> =>
  Effect.suspend(() => {
    const written: Array<A> = []
    const refused: Array<Refused<Row>> = []
    const go = (part: ReadonlyArray<Row>): Effect.Effect<void, SqlError> =>
      part.length === 0 ? Effect.void : sql.withTransaction(write(part)).pipe(
        Effect.flatMap((results) => Effect.sync(() => void written.push(...results))),
        Effect.catchIf(isRefusal, (error) => {
          if (part.length === 1) return Effect.sync(() => void refused.push({ row: part[0]!, error }))
          const half = Math.ceil(part.length / 2)
          return Effect.andThen(go(part.slice(0, half)), go(part.slice(half)))
        })
      )
    return Effect.as(go(rows), { written, refused })
  })

/** One line about refused rows: how many, and the first reason (the database's message and SQLSTATE). */
export const describeRefusals = (refused: ReadonlyArray<Refused<unknown>>): string => {
  const first = refused[0]
  if (first === undefined) return "none"
  const cause = first.error.reason.cause as { readonly message?: unknown } | null | undefined
  const message = typeof cause?.message === "string" ? cause.message : first.error.message
  return `${message} (SQLSTATE ${sqlState(first.error) ?? "unknown"})`
}
