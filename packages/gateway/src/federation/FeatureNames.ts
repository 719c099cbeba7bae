/**
 * How upstream resources, resource templates and prompts are named in one
 * caller's view (the root `/mcp`, or one virtual server), and which items a
 * view holds.
 *
 * **Selection** (the same patterns as tools): a virtual server member
 * `<connection>/*` selects everything of that connection, and
 * `<connection>/<name>` one prompt (by its upstream name), one resource (by
 * its URI) or one template (by its URI template). A client token's
 * `allowedTools` (and the members of its virtual servers) restrict a view the
 * same way. Only healthy upstreams are in a view.
 *
 * **Prompts** take the connection's tool prefix like tools
 * (`<connection>/<name>` by default; `ToolNames.exposedName`). In a virtual
 * server with `bareNames` a prompt is served under its upstream name when no
 * other prompt of the server shares it. A name still shared by two upstreams
 * (e.g. both with prefix `""`) is served as `<connection>/<name>` for each.
 *
 * **Resources and templates** are served with the URI (template) the
 * upstream gives whenever it is unambiguous in the view, so a URI a tool
 * result mentions is readable as is. When two upstreams of one view expose
 * the same URI (or the same template), the connection whose name sorts first
 * keeps it, and every other one is served as
 * `janus://<connection>/<upstream URI>` (templates likewise); reading either
 * form reaches its upstream, so both stay reachable. The collision is
 * reported per connection in `/api/v1/upstreams` (`collisions`).
 *
 * **Reading an unlisted URI** (a resource a tool result or a template
 * produced): the first template of the view whose pattern matches it
 * decides; otherwise the upstreams of the view offering resources are asked
 * in connection-name order until one answers.
 *
 * @since 0.1.0
 */
import type { Params } from "./upstream/Wire.ts"

/** The scheme of a URI qualified with its connection. */
export const QUALIFIED = "janus://"

/** `janus://<connection>/<uri>`. */
export const qualify = (connection: string, uri: string): string => `${QUALIFIED}${connection}/${uri}`

/** The connection and upstream URI of a qualified URI. */
export const unqualify = (uri: string): { readonly connection: string; readonly uri: string } | undefined => {
  if (!uri.startsWith(QUALIFIED)) return undefined
  const rest = uri.slice(QUALIFIED.length)
  const slash = rest.indexOf("/")
  return slash <= 0 ? undefined : { connection: rest.slice(0, slash), uri: rest.slice(slash + 1) }
}

/**
 * The pattern of an RFC 6570 URI template, for routing: literal text matches
 * itself, `{var}` one path segment, `{+var}` / `{#var}` anything, and
 * `{?…}` / `{&…}` / `{/…}` / `{.…}` / `{;…}` optional expansions.
 */
export const templatePattern = (template: string): RegExp | undefined => {
  if (template.length > 2_048) return undefined
  let source = "^"
  let i = 0
  while (i < template.length) {
    const open = template.indexOf("{", i)
    if (open === -1) {
      source += escape(template.slice(i))
      break
    }
    source += escape(template.slice(i, open))
    const close = template.indexOf("}", open)
    if (close === -1) return undefined
    const operator = template[open + 1]
    source += operator === "+" || operator === "#"
      ? ".*"
      : operator === "?" || operator === "&" || operator === "/" || operator === "." || operator === ";"
      ? "(?:[?&/.;][^#]*)?"
      : "[^/?#]+"
    i = close + 1
  }
  try {
    return new RegExp(`${source}$`, "s")
  } catch {
    return undefined
  }
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Whether a membership (virtual server members or token tools) selects `item` of `connection`. */
export const selects = (
  members: ReadonlySet<string> | null,
  connection: string,
  item: string
): boolean => members === null || members.has(`${connection}/*`) || members.has(`${connection}/${item}`)

/** Whether a membership selects anything of `connection`. */
export const selectsAny = (members: ReadonlySet<string> | null, connection: string): boolean => {
  if (members === null) return true
  const prefix = `${connection}/`
  for (const member of members) if (member.startsWith(prefix)) return true
  return false
}

/** One item of a view, before naming: its upstream name and the connection. */
export interface Candidate {
  readonly connection: string
  readonly original: string
  readonly item: Params
}

/**
 * Served keys for `candidates` (sorted by connection name): the original
 * where it is unique, else the first connection keeps it and the others get
 * `rename(connection, original)`. Returns the keys (same order) and the
 * collisions (original -> connections).
 */
export const disambiguate = (
  candidates: ReadonlyArray<Candidate>,
  served: (candidate: Candidate) => string,
  rename: (candidate: Candidate) => string,
  keepFirst: boolean
): { readonly keys: ReadonlyArray<string>; readonly collisions: ReadonlyMap<string, ReadonlyArray<string>> } => {
  const wanted = candidates.map(served)
  const owners = new Map<string, Array<string>>()
  wanted.forEach((key, i) => {
    const list = owners.get(key)
    if (list === undefined) owners.set(key, [candidates[i]!.connection])
    else list.push(candidates[i]!.connection)
  })
  const collisions = new Map<string, ReadonlyArray<string>>()
  for (const [key, connections] of owners) if (connections.length > 1) collisions.set(key, connections)
  const keys = wanted.map((key, i) => {
    const connections = owners.get(key)!
    if (connections.length === 1) return key
    if (keepFirst && connections[0] === candidates[i]!.connection) return key
    return rename(candidates[i]!)
  })
  return { keys, collisions }
}
