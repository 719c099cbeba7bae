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
 * @since 0.1.0
 */
import type { ConfigSnapshot, VirtualServer } from "@janus/storage"
import type { Tool } from "../mcp/ToolCatalog.ts"
import { ORIGIN_META, type ToolOrigin } from "./FederatedCatalog.ts"

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
