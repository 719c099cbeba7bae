/**
 * `tools/list` (`Dispatcher.ts`): the caller's tools in name order, in pages,
 * with what the gateway derives once from each catalog list (the sorted order,
 * the `x-mcp-header` bindings of the 2026-07-28 `Mcp-Param-*` headers, the
 * encoded pages).
 *
 * **Spec rules**
 *
 * - `tools/list` is paginated with an opaque cursor; the order is the
 *   catalog's name order, and the cursor names the last tool of the previous
 *   page, so pages stay consistent while tools are added or removed. An
 *   unknown cursor is Invalid Params (-32602).
 * - 2026-07-28 results carry `ttlMs` and `cacheScope` (tool lists depend on
 *   the caller, so they are `private`), `resultType` and the server's
 *   `_meta`.
 * - An `x-mcp-header` annotation counts only on a property reachable from the
 *   schema root through `properties`, and only with a header-token name.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as Base64Url from "effect/encoding/Base64Url"
import * as Result from "effect/Result"
import type { Caller } from "./Caller.ts"
import { ProtocolError, type ResultJson } from "./JsonRpc.ts"
import type { Tool, ToolCatalog } from "./ToolCatalog.ts"

/** A `x-mcp-header` annotated argument of a tool (2026-07-28 `Mcp-Param-*`). */
export interface HeaderBinding {
  /** Lower-case header name, `mcp-param-<name>`. */
  readonly header: string
  /** The header as declared, `Mcp-Param-<Name>`. */
  readonly headerName: string
  /** Property path in `arguments`. */
  readonly path: ReadonlyArray<string>
  readonly display: string
}

/** What the gateway derives once from one catalog list instance. */
export interface PreparedTools {
  readonly tools: ReadonlyArray<Tool>
  readonly names: ReadonlyArray<string>
  readonly headerBindings: ReadonlyMap<string, ReadonlyArray<HeaderBinding>>
  readonly pages: Map<number, string>
}

const byName = (a: Tool, b: Tool): number => a.name < b.name ? -1 : a.name > b.name ? 1 : 0

/** `x-mcp-header` annotations reachable from the schema root through `properties` only. */
export const headerBindingsOf = (inputSchema: unknown): ReadonlyArray<HeaderBinding> => {
  const bindings: Array<HeaderBinding> = []
  const visit = (schema: unknown, path: ReadonlyArray<string>) => {
    if (typeof schema !== "object" || schema === null) return
    const record = schema as Record<string, unknown>
    const annotation = record["x-mcp-header"]
    if (typeof annotation === "string" && path.length > 0 && /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(annotation)) {
      bindings.push({
        header: `mcp-param-${annotation.toLowerCase()}`,
        headerName: `Mcp-Param-${annotation}`,
        path,
        display: path.join(".")
      })
    }
    const properties = record.properties
    if (typeof properties === "object" && properties !== null) {
      for (const [key, child] of Object.entries(properties)) visit(child, [...path, key])
    }
  }
  visit(inputSchema, [])
  return bindings
}

const encodeCursor = (lastName: string): string => Base64Url.encode(`t:${lastName}`)

const decodeCursor = (cursor: string): string | undefined => {
  const decoded = Base64Url.decodeString(cursor)
  if (Result.isFailure(decoded) || !decoded.success.startsWith("t:")) return undefined
  return decoded.success.slice(2)
}

/** Index of the first name greater than `name` in a sorted array. */
const upperBound = (names: ReadonlyArray<string>, name: string): number => {
  let lo = 0
  let hi = names.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (names[mid]! <= name) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** @since 0.1.0 */
export interface ToolListOptions {
  readonly pageSize: number
  /** What closes a 2026-07-28 result after its `tools` (and `nextCursor`): `ttlMs`, `cacheScope`, `_meta`. */
  readonly statelessSuffix: string
}

/** The caller's prepared tools, and its `tools/list` pages. */
export const make = (catalog: ToolCatalog["Service"], options: ToolListOptions) => {
  const { pageSize } = options
  // keyed by the catalog's list instance: a new list (a change) is prepared anew, the old one collected
  const preparedCache = new WeakMap<ReadonlyArray<Tool>, PreparedTools>()
  const prepare = (list: ReadonlyArray<Tool>): PreparedTools => {
    let prepared = preparedCache.get(list)
    if (prepared !== undefined) return prepared
    let tools = list
    for (let i = 1; i < list.length; i++) {
      if (list[i - 1]!.name > list[i]!.name) {
        tools = [...list].sort(byName)
        break
      }
    }
    const headerBindings = new Map<string, ReadonlyArray<HeaderBinding>>()
    for (const tool of tools) {
      const bindings = headerBindingsOf(tool.inputSchema)
      if (bindings.length > 0) headerBindings.set(tool.name, bindings)
    }
    prepared = { tools, names: tools.map((tool) => tool.name), headerBindings, pages: new Map() }
    preparedCache.set(list, prepared)
    return prepared
  }
  const prepared = (caller: Caller): Effect.Effect<PreparedTools> => Effect.map(catalog.list(caller), prepare)

  const list = Effect.fnUntraced(function*(
    caller: Caller,
    stateless: boolean,
    params: Readonly<Record<string, unknown>> | undefined
  ) {
    const tools = yield* prepared(caller)
    const cursor = params?.cursor
    let start = 0
    if (cursor !== undefined) {
      const after = typeof cursor === "string" ? decodeCursor(cursor) : undefined
      if (after === undefined) {
        return yield* ProtocolError.invalidParams(
          `Invalid cursor ${
            JSON.stringify(cursor)
          }: it was not issued by this server's tools/list; omit the cursor to start from the first page`
        )
      }
      start = upperBound(tools.names, after)
    }
    let page = tools.pages.get(start)
    if (page === undefined) {
      page = JSON.stringify(tools.tools.slice(start, start + pageSize))
      tools.pages.set(start, page)
    }
    const end = start + pageSize
    const next = end < tools.tools.length ? `,"nextCursor":${JSON.stringify(encodeCursor(tools.names[end - 1]!))}` : ""
    return (stateless ? `{"tools":${page}${next}${options.statelessSuffix}` : `{"tools":${page}${next}}`) as ResultJson
  })

  return { prepared, list } as const
}
