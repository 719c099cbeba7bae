/**
 * tools/list shows a caller only the tools it may call.
 *
 * **Rules**
 *
 * - One place filters every catalog (REST endpoints and federated tools alike)
 *   with `Admission.canSee`; calls are authorized separately, by the guard,
 *   so a hidden tool is also refused when called by name.
 * - An unrestricted caller gets the inner list as is (the same array
 *   instance, so the transport's page encodings are reused); a restricted
 *   one gets a filtered list computed once per inner list and caller.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { Admission } from "../auth/index.ts"
import type { Caller } from "../mcp/Caller.ts"
import { type Tool, ToolCatalog } from "../mcp/ToolCatalog.ts"

const unrestricted = (caller: Caller): boolean =>
  (caller.tools ?? null) === null && (caller.virtualServers ?? null) === null

export const layer = <E, R>(inner: Layer.Layer<ToolCatalog, E, R>): Layer.Layer<ToolCatalog, E, R | Admission> =>
  Layer.effect(
    ToolCatalog,
    Effect.gen(function*() {
      const catalog = Context.get(yield* Layer.build(inner), ToolCatalog)
      const admission = yield* Admission
      const filtered = new WeakMap<ReadonlyArray<Tool>, Map<string, ReadonlyArray<Tool>>>()
      const visible = (tools: ReadonlyArray<Tool>, caller: Caller): ReadonlyArray<Tool> => {
        if (unrestricted(caller)) return tools
        let byCaller = filtered.get(tools)
        if (byCaller === undefined) {
          byCaller = new Map()
          filtered.set(tools, byCaller)
        }
        let list = byCaller.get(caller.id)
        if (list === undefined) {
          list = tools.filter((tool) => admission.canSee(caller, tool.name))
          byCaller.set(caller.id, list)
        }
        return list
      }
      return ToolCatalog.of({
        ...catalog,
        list: (caller) => Effect.map(catalog.list(caller), (tools) => visible(tools, caller))
      })
    })
  )
