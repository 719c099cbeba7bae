/**
 * `GET /api/v1/audit`: the audit records of tools/call attempts, newest first.
 *
 * **Rules**
 *
 * - Filters: `from`, `to` (ISO 8601 instants), `tool`, `outcome` (ok, error,
 *   denied, invalid, rate_limited, shed, breaker_open, timeout), `identity`,
 *   `connection`; each given at most once. `limit` (1..500, default 50) and
 *   the opaque `cursor` page as every list does.
 * - A bad filter is a 400 naming the parameter and what is expected; nothing
 *   else is read. `from` and `to` name instants of the years 0001 to 9999.
 * - Text filters match what the audit log stored: a value holding U+0000 is
 *   compared as stored (U+FFFD in its place), never an error.
 * - Records hold no argument or response bodies: only sizes and counts.
 *
 * @since 0.1.0
 */
import { AuditLog, AuditQuery } from "@janus/storage"
import { Effect, Layer, Option, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { AdminRouter } from "./AdminRouter.ts"
import * as Pagination from "./Pagination.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"

const Filters = Schema.Struct({
  from: Schema.optional(Schema.DateFromString),
  to: Schema.optional(Schema.DateFromString),
  tool: Schema.optional(Schema.String),
  outcome: Schema.optional(AuditQuery.fields.outcome),
  identity: Schema.optional(Schema.String),
  connection: Schema.optional(Schema.String),
  cursor: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.FiniteFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 500 })))
})
const decodeFilters = Schema.decodeUnknownEffect(Filters, { errors: "all" })
const names = Object.keys(Filters.fields)

export const AuditRoutes: Layer.Layer<never, never, AdminRouter | AuditLog> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const audit = yield* AuditLog
    yield* router.add(
      "GET",
      "/audit",
      Effect.gen(function*() {
        const query = yield* HttpServerRequest.ParsedSearchParams
        const raw: Record<string, string> = {}
        for (const name of names) {
          const value = yield* Resource.singleQuery(query, name)
          if (Option.isSome(value)) raw[name] = value.value
        }
        const filters = yield* decodeFilters(raw).pipe(
          Effect.mapError((error) => Problem.invalidFields(Pagination.fieldErrors(error)))
        )
        const page = yield* audit.query({ ...filters, limit: filters.limit ?? 50 }).pipe(
          Effect.mapError((error) =>
            error._tag === "InvalidInput" ?
              Problem.invalidFields([{ path: error.field, message: error.message }]) :
              Problem.fromStorage(error)
          )
        )
        return HttpServerResponse.jsonUnsafe({
          items: page.items.map((r) => ({ ...r, at: r.at.toISOString() })),
          nextCursor: page.nextCursor
        })
      })
    )
  })
)
