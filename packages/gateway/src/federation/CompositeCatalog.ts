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
 * - `call` asks the catalogs in order and moves on only on `ToolNotFound`.
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
  // Per caller id: the lists last merged and their merge.
  const memo = new Map<
    string,
    { readonly parts: ReadonlyArray<ReadonlyArray<Tool>>; readonly merged: ReadonlyArray<Tool> }
  >()
  const merge = (caller: Caller, parts: ReadonlyArray<ReadonlyArray<Tool>>): ReadonlyArray<Tool> => {
    const last = memo.get(caller.id)
    if (last !== undefined && last.parts.length === parts.length && last.parts.every((p, i) => p === parts[i])) {
      return last.merged
    }
    let merged: ReadonlyArray<Tool>
    const nonEmpty = parts.filter((p) => p.length > 0)
    if (nonEmpty.length <= 1) {
      merged = nonEmpty[0] ?? []
    } else {
      const seen = new Set<string>()
      const out: Array<Tool> = []
      for (const part of parts) {
        for (const tool of part) {
          if (seen.has(tool.name)) continue
          seen.add(tool.name)
          out.push(tool)
        }
      }
      merged = out.sort(byName)
    }
    if (memo.size > 10_000) memo.clear()
    memo.set(caller.id, { parts, merged })
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
      return catalogs.length === 0
        ? Effect.die(new Error("CompositeCatalog.make needs at least one catalog"))
        : attempt(0)
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
