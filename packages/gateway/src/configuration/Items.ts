/**
 * One canonical form per resource, for comparing what a document says with
 * what is stored, and for writing what is stored as a document.
 *
 * **Rules**
 *
 * - A resource has one full form (every field, defaults filled in, plain
 *   JSON, fixed key order), made the same way from a stored resource and
 *   from a document item: two resources are equal when their full forms
 *   are, field by field, with object keys compared in any order (JSONB
 *   reorders them).
 * - The written form (`janus export`) leaves out every field at its default,
 *   and the defaults are storage's own: what decoding a minimal input gives.
 *   Items are sorted by name, so an export is the same text whatever order
 *   things were created in.
 * - Nothing here holds a secret value or a token value: stored resources
 *   have none, and a document's `valueFrom` only names where a value is.
 *
 * @since 0.1.0
 */
import {
  type ClientToken,
  type Connection,
  ConnectionInput,
  type Endpoint,
  idempotentMethods,
  type SecretInfo,
  type VirtualServer,
  VirtualServerInput
} from "@janus/storage"
import { Schema } from "effect"
import { canonical } from "../openapi/Plan.ts"
import {
  API_VERSION,
  type ClientTokenItem,
  type ConnectionItem,
  type EndpointItem,
  KIND,
  type SecretItem,
  type Section,
  type VirtualServerItem
} from "./Document.ts"

/** A resource in its full form: plain JSON. */
export type Full = Readonly<Record<string, unknown>>

/** What is stored, read in one go. */
export interface State {
  readonly secrets: ReadonlyArray<SecretInfo>
  readonly connections: ReadonlyArray<Connection>
  readonly endpoints: ReadonlyArray<Endpoint>
  readonly virtualServers: ReadonlyArray<VirtualServer>
  readonly clientTokens: ReadonlyArray<ClientToken>
}

const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

const AUTH_ORDER = ["scheme", "header", "username", "tokenUrl", "clientId", "scope", "audience", "secret"]

const ordered = (value: Readonly<Record<string, unknown>>, order: ReadonlyArray<string>) =>
  Object.fromEntries(
    Object.entries(value).sort(([a], [b]) =>
      (order.indexOf(a) + 1 || order.length + 1) - (order.indexOf(b) + 1 || order.length + 1)
    )
  )

// -----------------------------------------------------------------------------
// Full forms
// -----------------------------------------------------------------------------

/** A connection as the decoded input storage takes; from a document item or a stored connection. */
export const connectionFull = (input: ConnectionItem): Full => {
  const common = {
    description: input.description,
    auth: ordered(input.auth, AUTH_ORDER),
    timeoutMs: input.timeoutMs,
    breaker: { consecutiveFailures: input.breaker.consecutiveFailures, openMs: input.breaker.openMs },
    egressAllowList: input.egressAllowList === null ? null : [...input.egressAllowList]
  }
  if (input.kind === "rest") {
    return plain({
      name: input.name,
      kind: "rest",
      baseUrl: input.baseUrl,
      ...common,
      retry: {
        maxAttempts: input.retry.maxAttempts,
        initialDelayMs: input.retry.initialDelayMs,
        maxDelayMs: input.retry.maxDelayMs
      }
    }) as Full
  }
  const program = input.transport === "stdio"
    ? { command: input.command, args: input.args, env: input.env, cwd: input.cwd }
    : { url: input.url }
  return plain({
    name: input.name,
    kind: "mcp",
    transport: input.transport,
    ...program,
    ...common,
    toolPrefix: input.toolPrefix,
    pollIntervalMs: input.pollIntervalMs
  }) as Full
}

/** A stored connection as the input that would make it. */
export const connectionInput = (c: Connection): ConnectionItem => {
  const common = {
    name: c.name,
    description: c.description,
    timeoutMs: c.timeoutMs,
    breaker: c.breaker,
    egressAllowList: c.egressAllowList
  }
  if (c.kind === "rest") return { kind: "rest", ...common, auth: c.auth, baseUrl: c.baseUrl, retry: c.retry }
  return {
    kind: "mcp",
    ...common,
    auth: c.auth,
    transport: c.transport,
    ...(c.url === null ? {} : { url: c.url }),
    ...(c.stdio === null ? { args: [], env: {}, cwd: null } : c.stdio),
    toolPrefix: c.toolPrefix,
    pollIntervalMs: c.pollIntervalMs
  }
}

export const endpointFull = (item: EndpointItem): Full =>
  plain({
    name: item.name,
    connection: item.connection,
    description: item.description,
    method: item.method,
    pathTemplate: item.pathTemplate,
    arguments: item.arguments,
    inputSchema: item.inputSchema,
    outputSchema: item.outputSchema ?? null,
    idempotent: item.idempotent ?? idempotentMethods.has(item.method)
  }) as Full

/**
 * What an endpoint does, apart from its name, its connection and where it is stored: the fields a document item
 * and the admin API's representation share, in their order (`outputSchema` is `null` when there is none).
 */
export const endpointDefinition = (e: Endpoint) => ({
  description: e.description,
  method: e.method,
  pathTemplate: e.pathTemplate,
  arguments: e.arguments,
  inputSchema: e.inputSchema,
  outputSchema: e.outputSchema ?? null,
  idempotent: e.idempotent
})

/** A stored endpoint as a document item (its connection by name). */
export const endpointItem = (e: Endpoint, connection: string): EndpointItem => ({
  name: e.name,
  connection,
  ...endpointDefinition(e)
})

export const virtualServerFull = (item: VirtualServerItem): Full =>
  plain({ name: item.name, description: item.description, tools: item.tools, bareNames: item.bareNames }) as Full

/** A token's definition; `expiresAt` as an instant (document and database may write it differently). */
export const clientTokenFull = (item: ClientTokenItem): Full =>
  plain({
    name: item.name,
    allowedTools: item.allowedTools,
    allowedVirtualServers: item.allowedVirtualServers,
    expiresAt: item.expiresAt === undefined || item.expiresAt === null
      ? null
      : new Date(item.expiresAt).toISOString(),
    revoked: item.revoked ?? false
  }) as Full

export const clientTokenItem = (t: ClientToken): ClientTokenItem => ({
  name: t.name,
  allowedTools: t.allowedTools,
  allowedVirtualServers: t.allowedVirtualServers,
  expiresAt: t.expiresAt === null ? null : t.expiresAt.toISOString(),
  revoked: t.revokedAt !== null
})

export const secretFull = (item: SecretItem): Full => ({ name: item.name })

/** The fields in which `next` differs from `current` (both full forms of one section). */
export const changedFields = (current: Full, next: Full): ReadonlyArray<string> => {
  const keys = [...new Set([...Object.keys(current), ...Object.keys(next)])]
  return keys.filter((key) => canonical(current[key]) !== canonical(next[key]))
}

// -----------------------------------------------------------------------------
// The written form
// -----------------------------------------------------------------------------

/** Fields written even when equal to the default: what identifies the resource, or what it cannot do without. */
const ALWAYS: Readonly<Record<Section, ReadonlyArray<string>>> = {
  secrets: ["name"],
  connections: ["name", "kind", "baseUrl", "url", "command"],
  endpoints: ["name", "connection", "method", "pathTemplate", "inputSchema"],
  virtualServers: ["name", "tools"],
  clientTokens: ["name"]
}

// Storage's defaults: the full form of the smallest valid input.
const decodeConnection = Schema.decodeUnknownSync(ConnectionInput)
const DEFAULTS: Readonly<Record<string, Full>> = {
  rest: connectionFull(decodeConnection({ kind: "rest", name: "x", baseUrl: "http://x" })),
  "mcp:streamable-http": connectionFull(decodeConnection({ kind: "mcp", name: "x", url: "http://x" })),
  "mcp:stdio": connectionFull(decodeConnection({ kind: "mcp", name: "x", transport: "stdio", command: "x" })),
  virtualServers: virtualServerFull(Schema.decodeUnknownSync(VirtualServerInput)({ name: "x", tools: [] })),
  clientTokens: clientTokenFull({ name: "x", allowedTools: null, allowedVirtualServers: null })
}

const defaultsOf = (section: Section, full: Full): Full => {
  switch (section) {
    case "connections":
      // a transport is written unless it is the default one (stdio's defaults are those of its program)
      return full.kind === "rest" ? DEFAULTS.rest! : full.transport === "stdio"
        ? { ...DEFAULTS["mcp:stdio"]!, transport: "streamable-http" }
        : DEFAULTS["mcp:streamable-http"]!
    case "endpoints":
      return {
        description: "",
        arguments: {},
        outputSchema: null,
        idempotent: idempotentMethods.has(full.method as Endpoint["method"])
      }
    case "virtualServers":
      return DEFAULTS.virtualServers!
    case "clientTokens":
      return DEFAULTS.clientTokens!
    case "secrets":
      return {}
  }
}

/** `full` without the fields at their defaults. */
export const written = (section: Section, full: Full): Full => {
  const defaults = defaultsOf(section, full)
  return Object.fromEntries(
    Object.entries(full).filter(([key, value]) =>
      ALWAYS[section].includes(key) || !(key in defaults) || canonical(value) !== canonical(defaults[key])
    )
  )
}

const byName = (a: Full, b: Full) => {
  const x = String(a.name)
  const y = String(b.name)
  return x < y ? -1 : x > y ? 1 : 0
}

/** What is stored, as a document: sections in order, items by name, fields at their defaults left out. */
export const exportDocument = (state: State): Readonly<Record<string, unknown>> => {
  const connectionNames = new Map(state.connections.map((c) => [c.id, c.name]))
  const sections: Record<Section, Array<Full>> = {
    secrets: state.secrets.map((s) => secretFull({ name: s.name })),
    connections: state.connections.map((c) => connectionFull(connectionInput(c))),
    endpoints: state.endpoints.map((e) => endpointFull(endpointItem(e, connectionNames.get(e.connectionId) ?? ""))),
    virtualServers: state.virtualServers.map((s) =>
      virtualServerFull({ name: s.name, description: s.description, tools: s.tools, bareNames: s.bareNames })
    ),
    clientTokens: state.clientTokens.map((t) => clientTokenFull(clientTokenItem(t)))
  }
  const document: Record<string, unknown> = { apiVersion: API_VERSION, kind: KIND }
  for (const [section, items] of Object.entries(sections) as Array<[Section, Array<Full>]>) {
    if (items.length > 0) document[section] = items.sort(byName).map((item) => written(section, item))
  }
  return document
}
