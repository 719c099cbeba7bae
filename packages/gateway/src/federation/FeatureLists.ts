/**
 * The lists of one upstream: its tools (`fetchTools`), and its resources,
 * resource templates and prompts, fetched whole (every page) with its
 * tools, so that the gateway lists them without
 * calling upstreams and pages across upstreams with one cursor
 * (`mcp/Cursor.ts`).
 *
 * **Rules**
 *
 * - A list is fetched only when the upstream announces the capability
 *   (`resources`, `prompts`); an upstream answering Method not found
 *   (-32601) for one has none. Other failures fail the listing (the upstream
 *   is then unhealthy, like a failed `tools/list`).
 * - At most 100 pages and `max` items per list; items without their key
 *   (`uri`, `uriTemplate`, `name` as a string) are dropped. Tools are
 *   returned as listed (every page until `max`), for `ToolNames.ts` to
 *   check and cap.
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Predicate } from "effect"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type { UpstreamError } from "./Errors.ts"
import { type Params } from "./upstream/Wire.ts"
import type { UpstreamSession } from "./UpstreamClient.ts"

export interface FeatureLists {
  readonly resources: ReadonlyArray<Params>
  readonly templates: ReadonlyArray<Params>
  readonly prompts: ReadonlyArray<Params>
}

export const empty: FeatureLists = { resources: [], templates: [], prompts: [] }

/** The items of every page of a list (at most 100 pages), until `max` items are kept. */
const collect = <A>(
  request: (params: Params) => Effect.Effect<Params, UpstreamError>,
  field: string,
  max: number,
  keep: (item: unknown) => item is A
): Effect.Effect<Array<A>, UpstreamError> =>
  Effect.gen(function*() {
    const items: Array<A> = []
    let cursor: string | undefined
    for (let page = 0; page < 100; page++) {
      const result = yield* request(cursor === undefined ? {} : { cursor })
      const list = result[field]
      if (Array.isArray(list)) {
        for (const item of list) if (keep(item)) items.push(item)
      }
      cursor = typeof result.nextCursor === "string" && result.nextCursor !== "" ? result.nextCursor : undefined
      if (cursor === undefined || items.length >= max) break
    }
    return items
  })

const isMethodNotFound = (error: UpstreamError) => error.kind === "rpc" && error.code === ErrorCode.methodNotFound

const fetchAll = (
  session: UpstreamSession,
  method: string,
  field: string,
  key: string,
  max: number,
  timeout: Duration.Duration
): Effect.Effect<ReadonlyArray<Params>, UpstreamError> =>
  collect(
    (params) => session.request(method, params, { timeout }),
    field,
    max,
    (item): item is Params => Predicate.isReadonlyObject(item) && typeof item[key] === "string"
  ).pipe(
    Effect.map((items) => items.slice(0, max)),
    Effect.catchIf(isMethodNotFound, () => Effect.succeed([]))
  )

/**
 * The upstream's tools as it lists them (every page, until `max`; the caller checks each). An upstream
 * without the tools capability (only resources or prompts) answering Method not found has none.
 */
export const fetchTools = (
  session: UpstreamSession,
  max: number,
  timeout: Duration.Duration
): Effect.Effect<ReadonlyArray<unknown>, UpstreamError> =>
  collect(
    (params) =>
      session.request("tools/list", params, { timeout }).pipe(
        Effect.catchIf(
          (error) => isMethodNotFound(error) && session.capabilities.tools === undefined,
          () => Effect.succeed<Params>({})
        )
      ),
    "tools",
    max,
    (_): _ is unknown => true
  )

/** The lists the upstream's capabilities announce. */
export const fetch = (
  session: UpstreamSession,
  max: number,
  timeout: Duration.Duration
): Effect.Effect<FeatureLists, UpstreamError> => {
  const caps = session.capabilities
  const none = Effect.succeed<ReadonlyArray<Params>>([])
  return Effect.all({
    resources: Predicate.isReadonlyObject(caps.resources)
      ? fetchAll(session, "resources/list", "resources", "uri", max, timeout)
      : none,
    templates: Predicate.isReadonlyObject(caps.resources)
      ? fetchAll(session, "resources/templates/list", "resourceTemplates", "uriTemplate", max, timeout)
      : none,
    prompts: Predicate.isReadonlyObject(caps.prompts)
      ? fetchAll(session, "prompts/list", "prompts", "name", max, timeout)
      : none
  }, { concurrency: "unbounded" })
}
