/**
 * The one error type of the upstream MCP client, and how it becomes a
 * `ToolCallRefused` / `InvalidToolArguments` for the catalog.
 *
 * **Rules**
 *
 * - `kind` says what went wrong and decides the refusal reason:
 *   `unavailable` (refused or reset connection, bad HTTP status, malformed
 *   message, stream ended early), `timeout`, `refused` (the egress policy
 *   refused the address, a secret is missing, the upstream rejected Janus's
 *   credentials), `rpc` (the upstream answered with a JSON-RPC error),
 *   `session_expired` (a 2025-era session answered 404: re-established by the
 *   client, never seen by callers), `cancelled`.
 * - No error carries a credential, a request body or a raw transport error:
 *   messages are sentences built here, safe for logs, audit and Studio.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import { InvalidToolArguments, ToolCallRefused } from "../mcp/ToolCatalog.ts"

export const UpstreamErrorKind = Schema.Literals([
  "unavailable",
  "timeout",
  "refused",
  "rpc",
  "session_expired",
  "cancelled"
])
export type UpstreamErrorKind = typeof UpstreamErrorKind.Type

/** Something went wrong talking to an upstream MCP server. */
export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", {
  /** The connection's name. */
  connection: Schema.String,
  kind: UpstreamErrorKind,
  /** One sentence: what failed and why. */
  detail: Schema.String,
  /** The JSON-RPC error of `rpc` errors. */
  code: Schema.optional(Schema.Number),
  data: Schema.optional(Schema.Unknown),
  /** The HTTP status when one was received. */
  status: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    return `upstream ${this.connection}: ${this.detail}`
  }
}

export const unavailable = (connection: string, detail: string, status?: number): UpstreamError =>
  new UpstreamError({ connection, kind: "unavailable", detail, ...(status === undefined ? {} : { status }) })

/** JSON-RPC Invalid Params: the upstream judged the arguments. */

/** The catalog error for a failed upstream call. */
export const toCallError = (tool: string, error: UpstreamError): ToolCallRefused | InvalidToolArguments => {
  switch (error.kind) {
    case "rpc":
      if (error.code === ErrorCode.invalidParams) return new InvalidToolArguments({ name: tool, detail: error.detail })
      return new ToolCallRefused({ name: tool, reason: "unavailable", detail: error.message })
    case "timeout":
      return new ToolCallRefused({ name: tool, reason: "timeout", detail: error.message })
    case "refused":
      return new ToolCallRefused({ name: tool, reason: "denied", detail: error.message })
    default:
      return new ToolCallRefused({ name: tool, reason: "unavailable", detail: error.message })
  }
}
