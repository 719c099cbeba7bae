/**
 * The checks of a document as a whole, before anything is planned: what no
 * single item's schema can say.
 *
 * **Rules**
 *
 * - Names are unique per section (reported at the second one's `name`).
 * - Every reference resolves inside the document: an endpoint's
 *   `connection` is a rest connection of the document; a virtual server's
 *   tools are endpoints of the document or `<mcp connection>/<tool>` /
 *   `<mcp connection>/*`; a token's `allowedVirtualServers` are virtual
 *   servers of the document and its `allowedTools` endpoints, tools of its
 *   mcp connections (by their tool prefix) or `<mcp connection>/*`; every
 *   secret a connection names (`auth.secret`, `env.X.secret`) is listed
 *   under `secrets`. A document is self-contained: it never leans on
 *   something it does not name, which the next `--prune` would remove.
 * - A connection keeps its kind (storage cannot change it: its endpoints
 *   depend on it); a revoked token stays revoked. Both are refused with the
 *   path and what to do instead.
 *
 * @since 0.1.0
 */
import { ToolNamePattern } from "@janus/storage"
import { type Configuration, type Located, within } from "./Document.ts"
import type { State } from "./Items.ts"

interface Problem {
  readonly path: string
  readonly message: string
}

const duplicates = <A extends { readonly name: string }>(items: ReadonlyArray<Located<A>>): Array<Problem> => {
  const first = new Map<string, string>()
  const problems: Array<Problem> = []
  for (const item of items) {
    const earlier = first.get(item.value.name)
    if (earlier === undefined) first.set(item.value.name, item.at)
    else {
      problems.push({
        path: within(item.at, "name"),
        message: `got ${JSON.stringify(item.value.name)}, which ${earlier} already has; expected a name unique in ` +
          `its section`
      })
    }
  }
  return problems
}

/** Every check that needs the whole document (and, for kinds and revocations, what is stored). */
export const check = (doc: Configuration, state: State): Array<Problem> => {
  const problems: Array<Problem> = [
    ...duplicates(doc.secrets),
    ...duplicates(doc.connections),
    ...duplicates(doc.endpoints),
    ...duplicates(doc.virtualServers),
    ...duplicates(doc.clientTokens)
  ]
  const unknown = (path: string, what: string, value: string, expected: string) =>
    problems.push({ path, message: `refers to unknown ${what} ${JSON.stringify(value)}; expected ${expected}` })

  const secrets = new Set(doc.secrets.map((s) => s.value.name))
  const connections = new Map(doc.connections.map((c) => [c.value.name, c.value]))
  const endpoints = new Set(doc.endpoints.map((e) => e.value.name))
  const servers = new Set(doc.virtualServers.map((s) => s.value.name))
  const mcpPrefixes = doc.connections.flatMap((c) =>
    c.value.kind === "mcp" ? [{ name: c.value.name, prefix: c.value.toolPrefix ?? `${c.value.name}/` }] : []
  )

  const stored = new Map(state.connections.map((c) => [c.name, c]))
  for (const { at, value } of doc.connections) {
    const secretsUsed: Array<readonly [string, string]> = []
    if ("secret" in value.auth) secretsUsed.push(["auth.secret", value.auth.secret])
    if (value.kind === "mcp") {
      for (const [name, env] of Object.entries(value.env)) {
        if (typeof env !== "string") secretsUsed.push([`env.${name}.secret`, env.secret])
      }
    }
    for (const [field, secret] of secretsUsed) {
      if (!secrets.has(secret)) {
        unknown(within(at, field), "secret", secret, "a secret listed under secrets (by name; never its value)")
      }
    }
    const current = stored.get(value.name)
    if (current !== undefined && current.kind !== value.kind) {
      problems.push({
        path: within(at, "kind"),
        message: `got ${JSON.stringify(value.kind)}; expected ${JSON.stringify(current.kind)}: the kind of a ` +
          "connection cannot change (its endpoints depend on it); give the new connection another name and " +
          "remove this one (apply with --prune)"
      })
    }
  }

  for (const { at, value } of doc.endpoints) {
    const connection = connections.get(value.connection)
    if (connection === undefined) {
      unknown(within(at, "connection"), "connection", value.connection, "a rest connection of the document")
    } else if (connection.kind !== "rest") {
      problems.push({
        path: within(at, "connection"),
        message: `got ${JSON.stringify(value.connection)}, an mcp connection; expected a rest connection ` +
          "(mcp connections bring their own tools)"
      })
    }
  }

  const mcpConnection = (name: string) => connections.get(name)?.kind === "mcp"
  for (const { at, value } of doc.virtualServers) {
    value.tools.forEach((tool, i) => {
      if (endpoints.has(tool)) return
      const slash = tool.indexOf("/")
      const upstream = tool.slice(slash + 1)
      if (slash > 0 && mcpConnection(tool.slice(0, slash)) && (upstream === "*" || ToolNamePattern.test(upstream))) {
        return
      }
      unknown(
        within(at, `tools[${i}]`),
        "tool",
        tool,
        "an endpoint of the document, `<mcp connection>/<tool>` or `<mcp connection>/*`"
      )
    })
  }

  const revoked = new Set(state.clientTokens.filter((t) => t.revokedAt !== null).map((t) => t.name))
  for (const { at, value } of doc.clientTokens) {
    ;(value.allowedVirtualServers ?? []).forEach((server, i) => {
      if (!servers.has(server)) {
        unknown(within(at, `allowedVirtualServers[${i}]`), "virtual server", server, "a virtual server of the document")
      }
    })
    ;(value.allowedTools ?? []).forEach((tool, i) => {
      const all = tool.endsWith("/*") ? tool.slice(0, -2) : undefined
      if (
        all !== undefined
          ? mcpConnection(all)
          : endpoints.has(tool) || mcpPrefixes.some((m) => tool.startsWith(m.prefix))
      ) {
        return
      }
      unknown(
        within(at, `allowedTools[${i}]`),
        "tool",
        tool,
        "an endpoint of the document, a tool of one of its mcp connections (`<connection>/<tool>`) or " +
          "`<mcp connection>/*`"
      )
    })
    if (revoked.has(value.name) && value.revoked !== true) {
      problems.push({
        path: within(at, "revoked"),
        message: `got ${String(value.revoked ?? false)}; expected true: this token was revoked, and a revoked ` +
          "token cannot be reinstated (define a new token with another name)"
      })
    }
  }
  return problems
}
