/**
 * One `ToolCatalog` out of several: the lead's REST catalog and the federated
 * upstream tools, merged.
 *
 * **Rules**
 *
 * - `list` merges the lists, sorted by name. On a name that two catalogs
 *   both offer, the earlier catalog wins (REST endpoints before federated
 *   tools) and the later one's tool is hidden; the same precedence decides
 *   `call`, so a listed tool is always the one called.
 * - The merged array is reused until one of the underlying lists changes
 *   (the endpoint caches work derived from it by array identity).
 * - `call` goes straight to the catalog that listed the name in the caller's
 *   last merged list (tools/call reads the list first, for its header
 *   bindings). A name that list does not have asks the catalogs in order,
 *   moving on only on `ToolNotFound`. Routing by the list spares every call
 *   to a later catalog the earlier ones' misses: a `ToolNotFound` built (an
 *   `Error`, with its stack) and thrown away per federated call (#19).
 * - The lists are read one after the other, not concurrently: they are
 *   cache reads once warm, and a fiber per catalog per call was a cost on
 *   every tools/call.
 * - `changes` is the merge of every catalog's `changes`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Stream } from "effect"
import type { Caller } from "../mcp/Caller.ts"
import { type Tool, ToolCatalog } from "../mcp/ToolCatalog.ts"
import { FederatedCatalog, type FederationOptions, type UpstreamHealth } from "./FederatedCatalog.ts"

type Catalog = ToolCatalog["Service"]

const byName = (a: Tool, b: Tool): number => a.name < b.name ? -1 : a.name > b.name ? 1 : 0

/** Merges `catalogs` (earlier ones win on a name both offer). */
export const make = (catalogs: ReadonlyArray<Catalog>): Catalog => {
  // Per caller id: the lists last merged, their merge, and which catalog each merged name comes from.
  const memo = new Map<
    string,
    {
      readonly parts: ReadonlyArray<ReadonlyArray<Tool>>
      readonly merged: ReadonlyArray<Tool>
      readonly owner: (name: string) => number | undefined
    }
  >()
  const merge = (caller: Caller, parts: ReadonlyArray<ReadonlyArray<Tool>>): ReadonlyArray<Tool> => {
    const last = memo.get(caller.id)
    if (last !== undefined && last.parts.length === parts.length && last.parts.every((p, i) => p === parts[i])) {
      return last.merged
    }
    let merged: ReadonlyArray<Tool>
    let owner: (name: string) => number | undefined
    const nonEmpty = parts.filter((p) => p.length > 0)
    if (nonEmpty.length <= 1) {
      merged = nonEmpty[0] ?? []
      const index = parts.indexOf(merged)
      let names: ReadonlySet<string> | undefined
      owner = (name) => (names ??= new Set(merged.map((tool) => tool.name))).has(name) ? index : undefined
    } else {
      const owners = new Map<string, number>()
      const out: Array<Tool> = []
      parts.forEach((part, index) => {
        for (const tool of part) {
          if (owners.has(tool.name)) continue
          owners.set(tool.name, index)
          out.push(tool)
        }
      })
      merged = out.sort(byName)
      owner = (name) => owners.get(name)
    }
    if (memo.size > 10_000) memo.clear()
    memo.set(caller.id, { parts, merged, owner })
    return merged
  }
  return ToolCatalog.of({
    // One after the other: every call reads the list (tools/call checks its header bindings), and each part is a
    // cache read once warm, so running them concurrently only forked a fiber per catalog per call (#19). Cold, the
    // wait is the REST catalog's first read plus the federated first-list wait, each bounded on its own.
    list: (caller) =>
      Effect.map(
        Effect.forEach(catalogs, (catalog) => catalog.list(caller)),
        (parts) => merge(caller, parts)
      ),
    call: (caller, request) => {
      const attempt = (index: number): ReturnType<Catalog["call"]> => {
        const catalog = catalogs[index]!
        if (index === catalogs.length - 1) return catalog.call(caller, request)
        return catalog.call(caller, request).pipe(Effect.catchTag("ToolNotFound", () => attempt(index + 1)))
      }
      if (catalogs.length === 0) return Effect.die(new Error("CompositeCatalog.make needs at least one catalog"))
      const listed = memo.get(caller.id)?.owner(request.name)
      return listed === undefined ? attempt(0) : catalogs[listed]!.call(caller, request)
    },
    changes: Stream.mergeAll(catalogs.map((catalog) => catalog.changes), { concurrency: "unbounded" })
  })
}

/**
 * `ToolCatalog` = the catalog `rest` builds (e.g. `RestCatalog.layer`) merged
 * with the `FederatedCatalog` in context.
 */
export const layer = <E, R>(
  rest: Layer.Layer<ToolCatalog, E, R>
): Layer.Layer<ToolCatalog, E, R | FederatedCatalog> =>
  Layer.effect(
    ToolCatalog,
    Effect.gen(function*() {
      const restCatalog = Context.get(yield* Layer.build(rest), ToolCatalog)
      const federated = yield* FederatedCatalog
      return make([restCatalog, federated])
    })
  )

/**
 * `layer(rest)` with the federation built in: provides `ToolCatalog`, and
 * `FederatedCatalog` / `UpstreamHealth` for Studio and metrics.
 */
export const layerWithFederation = <E, R>(
  rest: Layer.Layer<ToolCatalog, E, R>,
  options?: FederationOptions
) => layer(rest).pipe(Layer.provideMerge(FederatedCatalog.layer(options)))

export type { UpstreamHealth }
