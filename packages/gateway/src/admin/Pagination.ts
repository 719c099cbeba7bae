/**
 * Pagination of every admin list.
 *
 * **Rules**
 *
 * - `?limit=` is an integer in 1..`MAX_LIMIT` (500), default `DEFAULT_LIMIT`
 *   (50); `?cursor=` is the `nextCursor` of the previous page, opaque to
 *   clients. Either one malformed, or given twice, is a 400 naming it.
 * - Order is deterministic: by name, then id, compared by UTF-16 code units
 *   (never by locale), so pages neither skip nor repeat items while nothing
 *   changes, and an item added or removed between pages moves nothing else.
 * - A cursor is the (name, id) of the last item returned; the next page
 *   starts strictly after it, so it stays valid if that item is deleted.
 * - The body is `{ "items": [...], "nextCursor": string | null }`; `null`
 *   means this was the last page.
 * - Storage lists return everything (configuration data is small); the page
 *   is cut here, in this one helper.
 *
 * @since 0.1.0
 */
import { Validation } from "@janus/storage"
import { Effect, Schema, SchemaIssue } from "effect"
import type { HttpServerRequest } from "effect/http"
import * as Problem from "./Problem.ts"

export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 500

/** The sort key of an item: name, then id. */
export type SortKey = readonly [name: string, id: string]

export interface PageRequest {
  readonly limit: number
  readonly after: SortKey | undefined
}

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly nextCursor: string | null
}

const Query = Schema.Struct({
  limit: Schema.optionalKey(
    Schema.NumberFromString.check(
      Schema.isInt({ expected: "an integer" }),
      Schema.isBetween({ minimum: 1, maximum: MAX_LIMIT }, { expected: `an integer from 1 to ${MAX_LIMIT}` })
    )
  ),
  cursor: Schema.optionalKey(Schema.String)
})

const decodeQuery = Schema.decodeUnknownEffect(Query, { errors: "all" })
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Field errors from a Schema failure: the first issue of each path, naming the path and what is expected;
 * an unknown field (decoded with `onExcessProperty: "error"`) names the closest known one.
 */
export const fieldErrors = (error: Schema.SchemaError): Array<Problem.FieldError> => {
  const unknown = Validation.unknownField(error.issue)
  if (unknown !== undefined) {
    return [{ path: unknown.path.map(String).join("."), message: `Expected ${unknown.expected}` }]
  }
  const byPath = new Map<string, string>()
  for (const issue of formatIssues(error.issue).issues) {
    const path = (issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
      .join(".")
    if (!byPath.has(path)) byPath.set(path, issue.message)
  }
  return Array.from(byPath, ([path, message]) => ({ path, message }))
}

/** The page asked for by the query string. */
export const fromQuery = (
  params: HttpServerRequest.ParsedSearchParams["Service"]
): Effect.Effect<PageRequest, Problem.ApiProblem> =>
  Effect.gen(function*() {
    const given = Object.fromEntries(
      ["limit", "cursor"].filter((key) => key in params).map((key) => [key, params[key]])
    )
    const { cursor, limit = DEFAULT_LIMIT } = yield* decodeQuery(given).pipe(
      Effect.mapError((error) => Problem.invalidFields(fieldErrors(error)))
    )
    if (cursor === undefined) return { limit, after: undefined }
    const after = decodeCursor(cursor)
    if (after === undefined) {
      return yield* Problem.invalidFields([{
        path: "cursor",
        message: "Expected the nextCursor of a previous page of this list"
      }])
    }
    return { limit, after }
  })

const compare = (a: SortKey, b: SortKey): number =>
  a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0

/** One page of `all` in (name, id) order. */
export const paginate = <A>(
  all: ReadonlyArray<A>,
  keyOf: (item: A) => SortKey,
  request: PageRequest
): Page<A> => {
  const sorted = all.map((item) => ({ item, key: keyOf(item) })).sort((a, b) => compare(a.key, b.key))
  const start = request.after === undefined
    ? 0
    : sorted.findIndex((entry) => compare(entry.key, request.after!) > 0)
  const rest = start === -1 ? [] : sorted.slice(start)
  const page = rest.slice(0, request.limit)
  const last = page.at(-1)
  return {
    items: page.map((entry) => entry.item),
    nextCursor: rest.length > request.limit && last !== undefined ? encodeCursor(last.key) : null
  }
}

const encodeCursor = (key: SortKey): string => Buffer.from(JSON.stringify(key), "utf8").toString("base64url")

const decodeCursor = (cursor: string): SortKey | undefined => {
  if (!/^[A-Za-z0-9_-]{1,2048}$/.test(cursor)) return undefined
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    return Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "string"
      ? [value[0], value[1]]
      : undefined
  } catch {
    return undefined
  }
}
