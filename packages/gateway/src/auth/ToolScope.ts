/**
 * What a caller may list and call: the "authorize the tool" step of the hot
 * path, and the tools/list filter.
 *
 * **Rules** (SPEC "Client token: ... allowed tools or virtual servers")
 *
 * - A client token with both `allowedTools` and `allowedVirtualServers` null
 *   is unrestricted. Otherwise it grants the tools named in `allowedTools`
 *   plus every tool of each virtual server in `allowedVirtualServers`; a null
 *   list grants nothing then (least privilege: a token scoped to a virtual
 *   server does not see every tool on the root `/mcp`).
 * - Tool entries are exact names or `<connection>/*` (every tool of an
 *   upstream MCP connection, whose tools are named `<connection>/<tool>`).
 * - `Caller.virtualServers` is the token's `allowedVirtualServers` as a set:
 *   which virtual-server URLs it may use (`canUseServer`); null means any.
 * - Outside the scope: `authorize` refuses with reason `denied` (JSON-RPC
 *   -32000, audited as `denied` by the guard) naming the tool and the token,
 *   never the token's secret; `canSee` is false, so tools/list hides it.
 * - OAuth and anonymous callers are unrestricted here (`tools` null); OAuth
 *   scopes are checked at authentication.
 *
 * @since 0.1.0
 */
import type { ClientToken, ConfigSnapshot } from "@janus/storage"
import { Effect } from "effect"
import type { Caller } from "../mcp/Caller.ts"
import { ToolCallRefused } from "../mcp/ToolCatalog.ts"

/** Whether `caller` may list and call `toolName`. */
export const canSee = (caller: Caller, toolName: string): boolean => {
  const tools = caller.tools
  if (tools === null || tools === undefined || tools.has(toolName)) return true
  const slash = toolName.indexOf("/")
  return slash > 0 && tools.has(`${toolName.slice(0, slash)}/*`)
}

/** Whether `caller` may use the URL of the virtual server `name`. */
export const canUseServer = (caller: Caller, name: string): boolean => {
  const servers = caller.virtualServers
  return servers === null || servers === undefined || servers.has(name)
}

const who = (caller: Caller): string =>
  caller.kind === "client_token" && caller.name !== undefined ? `the client token '${caller.name}'` : "this caller"

/** The refusal of a call outside the caller's scope. */
export const denied = (caller: Caller, toolName: string): ToolCallRefused =>
  new ToolCallRefused({
    name: toolName,
    reason: "denied",
    detail: `${who(caller)} is not allowed to call this tool: it is neither in the token's allowedTools nor in ` +
      "one of its allowed virtual servers; ask an administrator to grant it"
  })

/** Succeeds when `caller` may call `toolName`, else fails with `denied`. */
export const authorize = (caller: Caller, toolName: string): Effect.Effect<void, ToolCallRefused> =>
  canSee(caller, toolName) ? Effect.void : Effect.fail(denied(caller, toolName))

/** Whether the scope of `token` depends on the virtual servers' configuration. */
export const needsSnapshot = (token: ClientToken): boolean => token.allowedVirtualServers !== null

/**
 * The caller of a client token: `allowedTools` plus the tools of its virtual
 * servers in `snapshot` (a virtual server that no longer exists grants nothing).
 */
export const callerOfToken = (token: ClientToken, snapshot: ConfigSnapshot | undefined): Caller => {
  const servers = token.allowedVirtualServers
  let tools: Set<string> | null = null
  if (token.allowedTools !== null || servers !== null) {
    tools = new Set(token.allowedTools ?? [])
    for (const name of servers ?? []) {
      for (const tool of snapshot?.virtualServerByName.get(name)?.tools ?? []) tools.add(tool)
    }
  }
  return {
    id: `token:${token.id}`,
    scopes: [],
    kind: "client_token",
    name: token.name,
    tools,
    virtualServers: servers === null ? null : new Set(servers),
    tokenId: token.id,
    expiresAt: token.expiresAt === null ? undefined : token.expiresAt.getTime()
  }
}
