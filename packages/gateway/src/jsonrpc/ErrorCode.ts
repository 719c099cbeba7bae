/**
 * Every JSON-RPC error code the gateway sends or interprets, by name: the
 * one table, so no module writes a code as a number.
 *
 * - JSON-RPC 2.0's own: parse error, invalid request, method not found,
 *   invalid params, internal error.
 * - MCP's: `-32002` Resource not found, `-32020` HeaderMismatch, `-32021`
 *   MissingRequiredClientCapability, `-32022` UnsupportedProtocolVersion.
 * - The gateway's, in the implementation-defined server range: `-32000` a
 *   refusal (limits, shedding, breaker, authorization, draining; the reason
 *   is in `data.reason`), `-32001` an unknown session.
 *
 * A module of its own, below `mcp/`, `http/` and `observability/`, because
 * all of them answer in JSON-RPC.
 *
 * @since 0.1.0
 */
// a deep import: the `effect/ai` index also loads the language-model modules
import * as McpSchema from "effect/ai/McpSchema"

/** @since 0.1.0 */
export const ErrorCode = {
  parseError: McpSchema.PARSE_ERROR_CODE,
  invalidRequest: McpSchema.INVALID_REQUEST_ERROR_CODE,
  methodNotFound: McpSchema.METHOD_NOT_FOUND_ERROR_CODE,
  invalidParams: McpSchema.INVALID_PARAMS_ERROR_CODE,
  internalError: McpSchema.INTERNAL_ERROR_CODE,
  headerMismatch: McpSchema.HEADER_MISMATCH_ERROR_CODE,
  missingRequiredClientCapability: -32021,
  unsupportedProtocolVersion: McpSchema.UNSUPPORTED_PROTOCOL_VERSION_ERROR_CODE,
  /** Implementation-defined (JSON-RPC server error range): the gateway refused the call. */
  refused: -32000,
  /** Implementation-defined: the `Mcp-Session-Id` names no live session (used with HTTP 404). */
  sessionNotFound: -32001,
  /** MCP: `resources/read` of a URI no server has. */
  resourceNotFound: -32002
} as const
