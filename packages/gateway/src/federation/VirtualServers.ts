/**
 * Which tools a virtual server serves.
 *
 * A member is an endpoint name (a REST tool, exactly), `<connection>/<tool>`
 * (one upstream tool of an mcp connection, by its upstream name) or
 * `<connection>/*` (every tool of that upstream). Federated tools are matched
 * through their origin (`_meta["janus/upstream"]`, set by the federated
 * catalog), so operator prefixes and sanitised names do not break members;
 * a tool without that origin matches only its exact name. Members naming
 * nothing (a deleted endpoint, an upstream that is down) match nothing.
 * The result keeps `allTools`' order (sorted by name).
 *
 * Served at `/servers/{name}/mcp` (and `/servers/{name}/sse` + `/messages`):
 * {@link scopeCaller} resolves the server from the route (unknown: 404, not
 * allowed to the caller: 403) and marks the caller with it; {@link layerCatalog}
 * then lists and calls only that server's tools (a call outside it is an
 * unknown tool). A server with `bareNames` serves its upstream tools under
 * their upstream names where no other member would share the name (see
 * {@link withBareNames}); a call by that name reaches the same tool.
 *
 * @since 0.1.0
 */
import { ConfigCache, type ConfigSnapshot, type VirtualServer } from "@janus/storage"
import { Context, Effect, Layer } from "effect"
import { Admission } from "../auth/index.ts"
import { quoteUri } from "../http/RequestFraming.ts"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type { Caller } from "../mcp/Caller.ts"
import { ProtocolError } from "../mcp/JsonRpc.ts"
import { type Tool, ToolCallRefused, ToolCatalog, ToolNotFound } from "../mcp/ToolCatalog.ts"
import { exposedName, ORIGIN_META, type ToolOrigin } from "./FederatedCatalog.ts"

const originOf = (tool: Tool): ToolOrigin | undefined => {
  const origin = (tool._meta as Readonly<Record<string, unknown>> | undefined)?.[ORIGIN_META]
  if (typeof origin !== "object" || origin === null) return undefined
  const { connection, tool: name } = origin as Record<string, unknown>
  return typeof connection === "string" && typeof name === "string" ? { connection, tool: name } : undefined
}

/** The tools of `allTools` that are members of `vs`. */
export const toolsOfVirtualServer = (
  snapshot: ConfigSnapshot,
  vs: VirtualServer,
  allTools: ReadonlyArray<Tool>
): ReadonlyArray<Tool> => {
  const exact = new Set<string>()
  const wholeConnections = new Set<string>()
  const upstreamTools = new Set<string>()
  for (const member of vs.tools) {
    exact.add(member)
    const slash = member.indexOf("/")
    if (slash <= 0) continue
    const connectionName = member.slice(0, slash)
    const connection = snapshot.connectionByName.get(connectionName)
    if (connection === undefined || connection.kind !== "mcp") continue
    const rest = member.slice(slash + 1)
    if (rest === "*") wholeConnections.add(connectionName)
    else upstreamTools.add(`${connectionName}\u0000${rest}`)
  }
  return allTools.filter((tool) => {
    const origin = originOf(tool)
    if (origin === undefined) {
      return exact.has(tool.name) && snapshot.endpointByName.has(tool.name) || exact.has(tool.name)
    }
    return wholeConnections.has(origin.connection) || upstreamTools.has(`${origin.connection}\u0000${origin.tool}`)
  })
}

/**
 * A `bareNames` server's tools: an upstream tool is served under its upstream
 * name (sanitised like any exposed name) when no other tool of the server
 * would be served under that name; otherwise it keeps its prefixed name.
 * Same order and length as `tools` (the dispatcher sorts what it serves).
 */
export const withBareNames = (tools: ReadonlyArray<Tool>): ReadonlyArray<Tool> => {
  const bare = tools.map((tool) => {
    const origin = originOf(tool)
    return origin === undefined ? undefined : exposedName("", origin.tool)
  })
  const counts = new Map<string, number>()
  for (const name of bare) if (name !== undefined) counts.set(name, (counts.get(name) ?? 0) + 1)
  // names that stay: endpoints, and upstream tools whose bare name is shared
  const kept = new Set<string>()
  tools.forEach((tool, i) => {
    const name = bare[i]
    if (name === undefined || counts.get(name)! > 1) kept.add(tool.name)
  })
  return tools.map((tool, i) => {
    const name = bare[i]
    return name === undefined || counts.get(name)! > 1 || kept.has(name) ? tool : { ...tool, name }
  })
}

/**
 * `inner` seen through virtual servers: a caller with `virtualServer` set
 * lists and calls only that server's members; other callers get `inner` as
 * is. A server's list is computed once per inner list and snapshot.
 */
export const layerCatalog = <E, R>(
  inner: Layer.Layer<ToolCatalog, E, R>
): Layer.Layer<ToolCatalog, E, R | ConfigCache> =>
  Layer.effect(
    ToolCatalog,
    Effect.gen(function*() {
      const catalog = Context.get(yield* Layer.build(inner), ToolCatalog)
      const config = yield* ConfigCache
      interface Served {
        readonly snapshot: ConfigSnapshot
        readonly tools: ReadonlyArray<Tool>
        /** Served name -> the inner catalog's name. */
        readonly names: ReadonlyMap<string, string>
      }
      const memo = new WeakMap<ReadonlyArray<Tool>, Map<string, Served>>()
      const members = (all: ReadonlyArray<Tool>, snapshot: ConfigSnapshot, name: string): Served => {
        let byServer = memo.get(all)
        if (byServer === undefined) {
          byServer = new Map()
          memo.set(all, byServer)
        }
        const last = byServer.get(name)
        if (last !== undefined && last.snapshot === snapshot) return last
        const vs = snapshot.virtualServerByName.get(name)
        const members = vs === undefined ? [] : toolsOfVirtualServer(snapshot, vs, all)
        const tools = vs?.bareNames === true ? withBareNames(members) : members
        const served: Served = {
          snapshot,
          tools,
          names: new Map(tools.map((tool, i) => [tool.name, members[i]!.name]))
        }
        byServer.set(name, served)
        return served
      }
      const served = (caller: Caller, name: string) =>
        Effect.flatMap(config.snapshot, (snapshot) =>
          Effect.map(catalog.list(caller), (all) => members(all, snapshot, name)))
      return ToolCatalog.of({
        list: (caller) => {
          if (caller.virtualServer === undefined) {
            return catalog.list(caller)
          }
          return served(caller, caller.virtualServer).pipe(
            Effect.map((s) =>
              s.tools
            ),
            Effect.orDie
          )
        },
        call: (caller, request) => {
          if (caller.virtualServer === undefined) return catalog.call(caller, request)
          return served(caller, caller.virtualServer).pipe(
            Effect.mapError((error) =>
              new ToolCallRefused({ name: request.name, reason: "unavailable", detail: error.message })
            ),
            Effect.flatMap((s) => {
              const inner = s.names.get(request.name)
              if (inner === undefined) return Effect.fail(new ToolNotFound({ name: request.name }))
              return catalog.call(caller, inner === request.name ? request : { ...request, name: inner })
            })
          )
        },
        changes: catalog.changes
      })
    })
  )

/**
 * The `scopeCaller` of the MCP transport mounted at `/servers/:name/...`:
 * the server `name` must exist (404) and the caller may use it (403); the
 * caller is then marked with it.
 */
export const scopeCaller = Effect.gen(function*() {
  const config = yield* ConfigCache
  const admission = yield* Admission
  return (
    caller: Caller,
    params: Readonly<Record<string, string | undefined>>
  ): Effect.Effect<Caller, ProtocolError> => {
    const name = params.name ?? ""
    return config.snapshot.pipe(
      Effect.mapError(() =>
        new ProtocolError({
          code: ErrorCode.refused,
          status: 503,
          message: "The gateway's configuration cannot be read right now; retry shortly"
        })
      ),
      Effect.flatMap((snapshot) => {
        if (!snapshot.virtualServerByName.has(name)) {
          return Effect.fail(
            new ProtocolError({
              code: ErrorCode.refused,
              status: 404,
              message: `No virtual server is named ${
                JSON.stringify(quoteUri(name))
              }; the MCP URL of a virtual server is /servers/{name}/mcp with the name of an existing one`
            })
          )
        }
        if (!admission.canUseServer(caller, name)) {
          return Effect.fail(
            new ProtocolError({
              code: ErrorCode.refused,
              status: 403,
              message: `${
                caller.kind === "client_token" && caller.name !== undefined
                  ? `The client token '${caller.name}'`
                  : "This caller"
              } may not use the virtual server '${name}': it is not among the token's allowed virtual servers`
            })
          )
        }
        return Effect.succeed<Caller>({ ...caller, virtualServer: name })
      })
    )
  }
})
