/**
 * What one tools/call did, filled in along the hot path and audited once at
 * its end: the guard creates the record, the catalog adds what only it knows
 * (connection, downstream status, bytes, redactions), and `CallAudit` writes
 * it.
 *
 * The record is a plain mutable object passed through the fiber's context:
 * one allocation per call, no Ref, no lookups.
 *
 * @since 0.1.0
 */
import { Context } from "effect"
import type { Caller } from "../mcp/Caller.ts"

export interface CallRecord {
  readonly identity: string
  /** Who, by name, as it was when the call was made (the caller is immutable per token version). */
  readonly caller: Caller
  /** The tool, or `<connection>/<prompt or resource>` for the other methods. */
  readonly tool: string
  /** The MCP method: `tools/call`, `resources/read`, `prompts/get`, `completion/complete`, ... */
  readonly method: string
  readonly startedAt: number
  connection: string | null
  /**
   * The catalog name the call resolved to (the tool, the listed resource or
   * template, the prompt), set by whoever resolves it: what metrics may label
   * the call with. `null` (unknown, unlisted, refused before it resolved):
   * labelled `other`, never with the client's string.
   */
  metricName: string | null
  /** The limiter bucket that refused the call (`ip`, `identity`), when one did. */
  bucket: string | null
  /** The downstream HTTP status, or the JSON-RPC error code of a refusal. */
  status: number | null
  /** Bytes the call carried in: its arguments as JSON. */
  bytesIn: number
  /** Bytes of the answer: the downstream body, or the result as JSON (measured by the guard when unset). */
  bytesOut: number
  redactions: number
  /** A cached response answered the call: no downstream request was made. */
  cached: boolean
}

/** The record of the call the current fiber serves. */
export class CurrentCall extends Context.Service<CurrentCall, CallRecord>()("@janus/gateway/calls/CurrentCall") {}

export const make = (caller: Caller, tool: string, startedAt: number, method = "tools/call"): CallRecord => ({
  identity: caller.id,
  caller,
  bucket: null,
  tool,
  method,
  startedAt,
  connection: null,
  metricName: null,
  status: null,
  bytesIn: 0,
  bytesOut: 0,
  redactions: 0,
  cached: false
})
