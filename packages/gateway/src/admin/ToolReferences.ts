/**
 * The tools a client token's `allowedTools` names must exist, as a virtual
 * server's tools must (`admin/VirtualServers.ts`): a misspelt name (`demo_tim`)
 * would otherwise be saved and silently grant nothing.
 *
 * **Rules**
 *
 * - A name is an endpoint, `<mcp connection>/*`, or a tool of an mcp
 *   connection under its tool prefix (`<name>/` unless set; one with an empty
 *   prefix may serve any name, so it admits any name: the upstream's list is
 *   not known here).
 * - A name that is not a well-formed tool name is left to storage, which
 *   answers 400 `invalid_tool_name` with its path.
 * - The first unknown name is 422 `unknown_reference`, at `allowedTools.<i>`.
 *
 * @since 0.1.0
 */
import { type Connections, type Endpoints, ToolNamePattern } from "@janus/storage"
import { Effect } from "effect"
import * as Problem from "./Problem.ts"

const EXPECTED = "an endpoint name, a tool of an mcp connection (`<connection>/<tool>`) or `<mcp connection>/*`"

/** Fails with 422 naming the first tool of `tools` that does not exist. */
export const checkAllowedTools = (
  services: { readonly endpoints: Endpoints["Service"]; readonly connections: Connections["Service"] },
  tools: unknown
) =>
  Effect.gen(function*() {
    if (!Array.isArray(tools) || tools.length === 0) return
    if (!tools.every((t) => typeof t === "string" && (ToolNamePattern.test(t) || /^[^/]+\/\*$/.test(t)))) return
    const endpoints = new Set((yield* services.endpoints.list()).map((e) => e.name))
    const mcp = (yield* services.connections.list).filter((c) => c.kind === "mcp")
    const prefixes = mcp.map((c) => ("toolPrefix" in c ? c.toolPrefix : null) ?? `${c.name}/`)
    const known = (tool: string) =>
      tool.endsWith("/*")
        ? mcp.some((c) => c.name === tool.slice(0, -2))
        : endpoints.has(tool) || prefixes.some((p) => tool.startsWith(p) && tool.length > p.length)
    const index = (tools as Array<string>).findIndex((t) => !known(t))
    if (index === -1) return
    const tool = tools[index] as string
    return yield* Effect.fail(
      Problem.make(
        422,
        "unknown_reference",
        `allowedTools refers to unknown tool ${JSON.stringify(tool)}: expected ${EXPECTED}`,
        {
          fields: [{
            path: `allowedTools.${index}`,
            message: `No tool is named ${JSON.stringify(tool)}; expected ${EXPECTED}`
          }]
        }
      )
    )
  }).pipe(Effect.catchTag("StorageError", (e) => Effect.fail(Problem.fromStorage(e))))
