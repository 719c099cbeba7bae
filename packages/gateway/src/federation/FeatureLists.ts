/**
 * The resources, resource templates and prompts of one upstream, fetched
 * whole (every page) with its tools, so that the gateway lists them without
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
 *   (`uri`, `uriTemplate`, `name` as a string) are dropped.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { UpstreamError } from "./Errors.ts"
import { isObject, type Params } from "./upstream/Wire.ts"
import type { UpstreamSession } from "./UpstreamClient.ts"

export interface FeatureLists {
  readonly resources: ReadonlyArray<Params>
  readonly templates: ReadonlyArray<Params>
  readonly prompts: ReadonlyArray<Params>
}

export const empty: FeatureLists = { resources: [], templates: [], prompts: [] }

const METHOD_NOT_FOUND = -32601

const fetchAll = (
  session: UpstreamSession,
  method: string,
  field: string,
  key: string,
  max: number,
  timeout: import("effect").Duration.Duration
): Effect.Effect<ReadonlyArray<Params>, UpstreamError> =>
  Effect.gen(function*() {
    const items: Array<Params> = []
    let cursor: string | undefined
    for (let page = 0; page < 100; page++) {
      const result = yield* session.request(method, cursor === undefined ? {} : { cursor }, { timeout })
      const list = result[field]
      if (Array.isArray(list)) {
        for (const item of list) if (isObject(item) && typeof item[key] === "string") items.push(item)
      }
      cursor = typeof result.nextCursor === "string" && result.nextCursor !== "" ? result.nextCursor : undefined
      if (cursor === undefined || items.length >= max) break
    }
    return items.slice(0, max)
  }).pipe(
    Effect.catchIf(
      (error) => error.kind === "rpc" && error.code === METHOD_NOT_FOUND,
      () => Effect.succeed([])
    )
  )

/** The lists the upstream's capabilities announce. */
export const fetch = (
  session: UpstreamSession,
  max: number,
  timeout: import("effect").Duration.Duration
): Effect.Effect<FeatureLists, UpstreamError> => {
  const caps = session.capabilities
  const none = Effect.succeed<ReadonlyArray<Params>>([])
  return Effect.all({
    resources: isObject(caps.resources) ? fetchAll(session, "resources/list", "resources", "uri", max, timeout) : none,
    templates: isObject(caps.resources)
      ? fetchAll(session, "resources/templates/list", "resourceTemplates", "uriTemplate", max, timeout)
      : none,
    prompts: isObject(caps.prompts) ? fetchAll(session, "prompts/list", "prompts", "name", max, timeout) : none
  }, { concurrency: "unbounded" })
}
