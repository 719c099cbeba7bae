/**
 * How an upstream's tools are named in Janus.
 *
 * **Rules**
 *
 * - A tool is exposed as `<connection name>/<upstream tool name>`; the
 *   connection's stored `toolPrefix` (or `ConnectionOverrides.toolPrefix`)
 *   replaces `<connection name>/`, `""` for none. Names outside
 *   `^[A-Za-z0-9_./-]{1,64}$` have other characters replaced by `_` and, when
 *   too long, are cut with a hash suffix, so two upstream names never share
 *   an exposed name. The call goes upstream under the original name.
 * - Each exposed tool carries `_meta["janus/upstream"] = { connection, tool }`
 *   (virtual servers and Studio resolve members with it).
 * - Tools without a name or an object `inputSchema` are dropped, as are
 *   later tools whose exposed name repeats an earlier one; at most `max` are
 *   kept.
 *
 * @since 0.1.0
 */
import { ToolNamePattern } from "@janus/storage"
import { Predicate } from "effect"
import { createHash } from "node:crypto"
import type { Tool } from "../mcp/ToolCatalog.ts"

/** Where an exposed tool comes from. */
export interface ToolOrigin {
  readonly connection: string
  readonly tool: string
}

/** The `_meta` key naming a federated tool's origin. */
export const ORIGIN_META = "janus/upstream"

const shortHash = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 8)

/** The exposed name of an upstream tool under `prefix`. */
export const exposedName = (prefix: string, upstreamName: string): string => {
  const plain = `${prefix}${upstreamName}`
  if (ToolNamePattern.test(plain)) return plain
  const cleaned = plain.replace(/[^A-Za-z0-9_./-]/g, "_")
  const hashed = cleaned.length <= 64 && cleaned !== plain
    ? `${cleaned.slice(0, 55)}_${shortHash(upstreamName)}`
    : cleaned
  return hashed.length <= 64 ? hashed : `${hashed.slice(0, 55)}_${shortHash(upstreamName)}`
}

/** One upstream tool as exposed. */
export interface ExposedTool {
  readonly tool: Tool
  readonly upstreamName: string
  readonly inputSchema: unknown
}

/** The tools of `tools/list` pages as exposed under `prefix`. */
export const expose = (
  connection: string,
  prefix: string,
  tools: ReadonlyArray<unknown>,
  max: number
): ReadonlyArray<ExposedTool> => {
  const out: Array<ExposedTool> = []
  const seen = new Set<string>()
  for (const raw of tools) {
    if (
      !Predicate.isReadonlyObject(raw) || typeof raw.name !== "string" || raw.name === "" ||
      !Predicate.isReadonlyObject(raw.inputSchema)
    ) continue
    const name = exposedName(prefix, raw.name)
    if (seen.has(name)) continue
    seen.add(name)
    const meta = Predicate.isReadonlyObject(raw._meta) ? raw._meta : {}
    out.push({
      tool: { ...raw, name, _meta: { ...meta, [ORIGIN_META]: { connection, tool: raw.name } } } as unknown as Tool,
      upstreamName: raw.name,
      inputSchema: raw.inputSchema
    })
    if (out.length >= max) break
  }
  return out
}
