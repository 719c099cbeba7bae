/**
 * How a call attempt ended: one classification for the audit record, the
 * call metrics and the span, so that `/metrics` and the audit trail never
 * disagree about the same call.
 *
 * **Rules**
 *
 * - A result is `ok`, or `error` when it is an `isError` result.
 * - A refusal by the gateway (`ToolCallRefused`) is its reason (`denied`,
 *   `rate_limited`, `shed`, `breaker_open`, `timeout`); an `unavailable` tool
 *   is an `error`: the caller did nothing wrong.
 * - The caller's mistake is `invalid`: arguments that do not fit, an unknown
 *   tool, and a `ProtocolError` with Invalid Params or Resource not found (an
 *   unknown prompt or resource, params an upstream refused). Alerts on the
 *   error ratio therefore never fire on what callers get wrong.
 * - Anything else (a defect, an interruption, another error) is `error`.
 * - A refusal before the call (admission: HTTP status) is
 *   `unauthenticated` (400, 401), `denied` (403), `rate_limited` (429) or
 *   `error` (503: the token store or the identity provider's keys are
 *   unavailable, so nobody could be authenticated; not load shedding), in the
 *   audit row and the refusal metric alike.
 *
 * @since 0.1.0
 */
import { Cause, Exit, Option } from "effect"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type { AdmissionRefused } from "../mcp/Guard.ts"
import type { CallOutcome, RefusalReason } from "../observability/Metrics.ts"

export type { CallOutcome, RefusalReason } from "../observability/Metrics.ts"

/** JSON-RPC codes of a `ProtocolError` that are the caller's mistake. */
const callerMistakes: ReadonlySet<number> = new Set([ErrorCode.invalidParams, ErrorCode.resourceNotFound])

/** The outcome of a finished call attempt. */
export const ofExit = (exit: Exit.Exit<unknown, unknown>): CallOutcome => {
  if (Exit.isSuccess(exit)) {
    const value = exit.value as { readonly isError?: unknown } | null
    return typeof value === "object" && value !== null && value.isError === true ? "error" : "ok"
  }
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isNone(error)) return "error"
  const e = error.value as { readonly _tag?: unknown; readonly reason?: unknown; readonly code?: unknown }
  switch (e._tag) {
    case "ToolCallRefused":
      return typeof e.reason !== "string" || e.reason === "unavailable" ? "error" : e.reason as CallOutcome
    case "InvalidToolArguments":
    case "ToolNotFound":
      return "invalid"
    case "ProtocolError":
      return typeof e.code === "number" && callerMistakes.has(e.code) ? "invalid" : "error"
    default:
      return "error"
  }
}

/** The outcome of a request refused at admission, by its HTTP status. */
export const ofAdmissionRefusal = (status: AdmissionRefused["status"]): RefusalReason => {
  switch (status) {
    case 400:
    case 401:
      return "unauthenticated"
    case 403:
      return "denied"
    case 429:
      return "rate_limited"
    case 503:
      return "error"
  }
}
