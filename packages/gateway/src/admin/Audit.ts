/**
 * `GET /api/v1/audit`: the audit records (calls, admin changes, refused
 * authentications), newest first, and their export.
 *
 * **Rules**
 *
 * - Filters: `kind` (call, admin, auth), `from`, `to` (RFC 3339 date-times
 *   or dates that exist on the calendar: `2030-02-30` is 400, never read as
 *   2 March; see storage's `Instants`),
 *   `tool`, `outcome`, `identity` (the stored identity or the caller's name,
 *   exactly), `caller` (a substring of the identity, the caller's name,
 *   subject or client, case-insensitive), `connection`, `requestId`,
 *   `traceId`, `action`, `resourceKind`, `resourceId`; each given at most
 *   once. `limit` (1..500, default 50) and the opaque `cursor` page as every
 *   list does.
 * - `format=csv` or `format=ndjson` exports every record the filters match
 *   (newest first, at most `EXPORT_MAX`, 100,000: narrow with `from`/`to`
 *   past that; `X-Janus-Truncated: true` says it was reached) as an
 *   attachment; `format=json` (the default) is the page.
 * - A bad filter is a 400 naming the parameter and what is expected; nothing
 *   else is read. `from` and `to` name instants of the years 0001 to 9999.
 * - Text filters match what the audit log stored: a value holding U+0000 is
 *   compared as stored (U+FFFD in its place), never an error.
 * - Records hold no argument or response bodies and no credential: only
 *   sizes, counts, fingerprints and "changed".
 *
 * @since 0.1.0
 */
import {
  AUDIT_MAX_PAGE,
  AuditChain,
  AuditKind,
  AuditLog,
  AuditOutcome,
  type AuditRecord,
  Instants,
  MasterKey
} from "@janus/storage"
import { Effect, Layer, Option, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import { AdminRouter } from "./AdminRouter.ts"
import * as Pagination from "./Pagination.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"

/** Records one export holds at most. */
export const EXPORT_MAX = 100_000

const Text = Schema.optional(Schema.String)
/** `from`, `to`: a date-time or a date that exists on the calendar (`Instants.parseInstant`). */
const InstantText = Schema.String.check(Schema.makeFilter((text: string) => {
  const parsed = Instants.parseInstant(text)
  return Instants.isRefusal(parsed)
    ? `${Instants.describeRefusal(text, parsed)}; expected ${Instants.INSTANT_EXPECTED}`
    : true
}))
/** `name: Date` for a decoded (so valid) `InstantText`, nothing when absent. */
const instant = <K extends string>(name: K, text: string | undefined): { readonly [k in K]?: Date } =>
  text === undefined ? {} : { [name]: Instants.parseInstant(text) as Date } as { readonly [k in K]?: Date }
const Filters = Schema.Struct({
  kind: Schema.optional(AuditKind),
  from: Schema.optional(InstantText),
  to: Schema.optional(InstantText),
  tool: Text,
  outcome: Schema.optional(AuditOutcome),
  identity: Text,
  caller: Text,
  connection: Text,
  requestId: Text,
  traceId: Text,
  action: Text,
  resourceKind: Text,
  resourceId: Text,
  format: Schema.optional(Schema.Literals(["json", "csv", "ndjson"])),
  cursor: Text,
  limit: Schema.optional(Schema.FiniteFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 500 })))
})
const decodeFilters = Schema.decodeUnknownEffect(Filters, { errors: "all" })
const names = Object.keys(Filters.fields)

const present = (r: AuditRecord) => ({ ...r, at: r.at.toISOString() })

const COLUMNS: ReadonlyArray<keyof ReturnType<typeof present>> = [
  "id",
  "at",
  "kind",
  "identity",
  "callerName",
  "callerSubject",
  "callerClient",
  "tool",
  "method",
  "connection",
  "outcome",
  "status",
  "durationMs",
  "bytesIn",
  "bytesOut",
  "redactions",
  "requestId",
  "traceId",
  "credentialKind",
  "credentialFingerprint",
  "bucket",
  "reason",
  "path",
  "clientIp",
  "repeats",
  "action",
  "resourceKind",
  "resourceId",
  "resourceName",
  "versionBefore",
  "versionAfter",
  "changes",
  "interface",
  "chain",
  "seq",
  "hash"
]

/** One CSV field (RFC 4180); a leading `=`, `+`, `-` or `@` is quoted with `'` so spreadsheets do not run it. */
const csvField = (value: unknown): string => {
  if (value === null || value === undefined) return ""
  let text = String(value)
  if (/^[=+\-@]/.test(text) && typeof value === "string") text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll("\"", "\"\"")}"` : text
}

export const AuditRoutes: Layer.Layer<
  never,
  never,
  AdminRouter | AuditLog | SqlClient.SqlClient | MasterKey
> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const audit = yield* AuditLog
    const sql = yield* SqlClient.SqlClient
    const keys = yield* MasterKey
    // what `janus audit verify` prints, for a running embedded instance whose database the CLI cannot open
    yield* router.add(
      "GET",
      "/audit/verify",
      Effect.gen(function*() {
        const query = yield* HttpServerRequest.ParsedSearchParams
        const raw = yield* Resource.singleQuery(query, "since")
        const parsed = Option.isSome(raw) ? Instants.parseInstant(raw.value) : undefined
        if (parsed !== undefined && Instants.isRefusal(parsed)) {
          return yield* Problem.invalidFields([{
            path: "since",
            message: `${
              Instants.describeRefusal(Option.getOrThrow(raw), parsed)
            }; expected ${Instants.INSTANT_EXPECTED}`
          }])
        }
        const since = parsed
        // the records of calls already answered first (journaled ones are written in the background)
        yield* Effect.ignore(audit.flush)
        const report = yield* AuditChain.verify({ since }).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.provideService(MasterKey, keys),
          Effect.mapError(Problem.fromStorage)
        )
        return HttpServerResponse.jsonUnsafe({ ok: report.problems.length === 0, ...report })
      })
    )
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
        const { format, from, to, ...rest } = yield* decodeFilters(raw).pipe(
          Effect.mapError((error) => Problem.invalidFields(Pagination.fieldErrors(error)))
        )
        const filters = { ...rest, ...instant("from", from), ...instant("to", to) }
        const read = (cursor: string | undefined, limit: number) =>
          audit.query({ ...filters, limit, ...(cursor === undefined ? {} : { cursor }) }).pipe(
            Effect.mapError((error) =>
              error._tag === "InvalidInput" ?
                Problem.invalidFields([{ path: error.field, message: error.message }]) :
                Problem.fromStorage(error)
            )
          )
        if (format === undefined || format === "json") {
          const page = yield* read(filters.cursor, filters.limit ?? 50)
          return HttpServerResponse.jsonUnsafe({ items: page.items.map(present), nextCursor: page.nextCursor })
        }
        const lines: Array<string> = format === "csv" ? [COLUMNS.join(",")] : []
        let cursor = filters.cursor
        let count = 0
        let truncated = false
        while (true) {
          const page = yield* read(cursor, AUDIT_MAX_PAGE)
          for (const record of page.items) {
            const row = present(record)
            lines.push(format === "csv" ? COLUMNS.map((c) => csvField(row[c])).join(",") : JSON.stringify(row))
          }
          count += page.items.length
          if (page.nextCursor === null) break
          if (count >= EXPORT_MAX) {
            truncated = true
            break
          }
          cursor = page.nextCursor
        }
        return HttpServerResponse.text(lines.join("\n") + "\n", {
          contentType: format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
          headers: {
            "content-disposition": `attachment; filename="janus-audit.${format}"`,
            "x-janus-truncated": String(truncated)
          }
        })
      })
    )
  })
)
