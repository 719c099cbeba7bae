/**
 * MCP protocol revisions, header names and `_meta` keys, and the
 * small pure rules that depend only on them.
 *
 * **Spec rules**
 *
 * - Revisions: `2026-07-28` is stateless (no `initialize`, no session; version,
 *   client capabilities and client info travel in every request's `_meta`).
 *   `2025-11-25`, `2025-06-18`, `2025-03-26` (and `2024-11-05`, which old
 *   HTTP+SSE clients still send) use `initialize` and `Mcp-Session-Id`.
 * - JSON-RPC batches exist only in `2025-03-26`.
 * - SSE priming events (an event id with empty data) are sent only to
 *   `2025-11-25` clients; older clients cannot parse empty data.
 * - `Mcp-Name` mirrors `params.name` (`tools/call`, `prompts/get`) or
 *   `params.uri` (`resources/read`); `Mcp-Name` and `Mcp-Param-*` values may
 *   use the `=?base64?…?=` sentinel, decoded before comparison (2026-07-28,
 *   "Value Encoding"); header values are compared after removing optional
 *   whitespace (RFC 9110 §5.5) and case-sensitively.
 * - Error codes are `jsonrpc/ErrorCode.ts`'s table.
 *
 * @since 0.1.0
 */
// a deep import: the `effect/ai` index also loads the language-model modules (about 30 more at start-up)
import * as McpServer from "effect/ai/McpServer"

/** The current, stateless revision. */
export const STATELESS_VERSION = "2026-07-28" as const

/** Revisions negotiated with `initialize`, newest first. */
export const STATEFUL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] as const

/** A revision negotiated with `initialize`. */
export type StatefulVersion = typeof STATEFUL_VERSIONS[number]

/** The revision offered to `initialize` requests asking for one this server does not speak. */
export const LATEST_STATEFUL_VERSION: StatefulVersion = "2025-11-25"

/** Every revision this server speaks, newest first (`server/discover` `supportedVersions`). */
export const SUPPORTED_VERSIONS: ReadonlyArray<string> = [STATELESS_VERSION, ...STATEFUL_VERSIONS]

const statefulSet: ReadonlySet<string> = new Set(STATEFUL_VERSIONS)
const supportedSet: ReadonlySet<string> = new Set(SUPPORTED_VERSIONS)

/** @since 0.1.0 */
export const isStatefulVersion = (version: unknown): version is StatefulVersion =>
  typeof version === "string" && statefulSet.has(version)

/** @since 0.1.0 */
export const isSupportedVersion = (version: string): boolean => supportedSet.has(version)

/** SSE priming events (id + empty data) only for `2025-11-25` and later clients. */
export const supportsPriming = (version: string): boolean => version >= "2025-11-25"

/** JSON-RPC batches are part of `2025-03-26` only. */
export const acceptsBatches = (version: string): boolean => version === "2025-03-26"

// ---------------------------------------------------------------------------
// Headers (Node lower-cases incoming header names)
// ---------------------------------------------------------------------------

/** @since 0.1.0 */
export const Header = {
  protocolVersion: "mcp-protocol-version",
  sessionId: "mcp-session-id",
  method: "mcp-method",
  name: "mcp-name",
  lastEventId: "last-event-id",
  paramPrefix: "mcp-param-",
  origin: "origin",
  accept: "accept",
  contentType: "content-type"
} as const

// ---------------------------------------------------------------------------
// _meta keys
// ---------------------------------------------------------------------------

/** @since 0.1.0 */
export const Meta = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  serverInfo: "io.modelcontextprotocol/serverInfo",
  subscriptionId: "io.modelcontextprotocol/subscriptionId",
  logLevel: "io.modelcontextprotocol/logLevel"
} as const

// ---------------------------------------------------------------------------
// Routing headers
// ---------------------------------------------------------------------------

/** The body field mirrored by `Mcp-Name` for a method, if any. */
export const routingNameKey = (method: string): "name" | "uri" | undefined => {
  switch (method) {
    case "tools/call":
    case "prompts/get":
      return "name"
    case "resources/read":
      return "uri"
    default:
      return undefined
  }
}

/**
 * Decodes an `Mcp-Name` / `Mcp-Param-*` header value: trims optional
 * whitespace, decodes the `=?base64?…?=` sentinel, and returns `undefined` for
 * a value with invalid characters or invalid Base64.
 */
export const decodeHeaderValue = (raw: string): string | undefined => McpServer.decodeNameHeader(raw.trim())

// ---------------------------------------------------------------------------
// Headers and media types
// ---------------------------------------------------------------------------

/** A request header's value without surrounding whitespace (RFC 9110 §5.5); `name` is lower-case. */
export const headerValue = (
  headers: Readonly<Record<string, string | undefined>>,
  name: string
): string | undefined => headers[name]?.trim()

/** The `type/subtype` of a `Content-Type`, lower-cased, without parameters. */
export const mediaTypeEssence = (value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  const semi = value.indexOf(";")
  return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase()
}

/** Whether an `Accept` header admits `type` (exact, `type/*` or `* / *`, q > 0). */
export const accepts = (accept: string | undefined, type: string): boolean => {
  if (accept === undefined) return false
  const slash = type.indexOf("/")
  const major = type.slice(0, slash)
  for (const part of accept.split(",")) {
    const [range, ...params] = part.split(";")
    const value = range!.trim().toLowerCase()
    if (value === type || value === "*/*" || value === `${major}/*`) {
      const q = params.find((p) => p.trim().startsWith("q="))
      if (q === undefined || Number(q.trim().slice(2)) > 0) return true
    }
  }
  return false
}
