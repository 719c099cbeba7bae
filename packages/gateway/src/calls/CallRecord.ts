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

/** Every outcome an audit record can have (SPEC "Audit record"). */
export type Outcome = "ok" | "error" | "denied" | "invalid" | "rate_limited" | "shed" | "breaker_open" | "timeout"

export interface CallRecord {
  readonly identity: string
  /** The tool, or `<connection>/<prompt or resource>` for the other methods. */
  readonly tool: string
  /** The MCP method: `tools/call`, `resources/read`, `prompts/get`, `completion/complete`, ... */
  readonly method: string
  readonly startedAt: number
  connection: string | null
  /** The downstream HTTP status, or the JSON-RPC error code of a refusal. */
  status: number | null
  bytesIn: number
  bytesOut: number
  redactions: number
  /** A cached response answered the call: no downstream request was made. */
  cached: boolean
}

/** The record of the call the current fiber serves. */
export class CurrentCall extends Context.Service<CurrentCall, CallRecord>()("@janus/gateway/calls/CurrentCall") {}

export const make = (identity: string, tool: string, startedAt: number, method = "tools/call"): CallRecord => ({
  identity,
  tool,
  method,
  startedAt,
  connection: null,
  status: null,
  bytesIn: 0,
  bytesOut: 0,
  redactions: 0,
  cached: false
})
