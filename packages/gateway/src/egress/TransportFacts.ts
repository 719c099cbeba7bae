/**
 * The facts worth reporting about a transport failure: the egress refusal
 * that caused it, or the Node/undici error code and message.
 *
 * Only codes and Node/undici messages are kept: the HttpClientError itself
 * holds the request, credential included, so it is never rendered.
 *
 * @since 0.1.0
 */
import { EgressRefused } from "./Errors.ts"

export interface CauseFacts {
  refused?: EgressRefused
  code?: string
  message?: string
}

/** Walks a transport error (and its `cause` / AggregateError members), at most 5 deep. */
export const facts = (cause: unknown, out: CauseFacts = {}, depth = 0): CauseFacts => {
  if (depth > 5 || typeof cause !== "object" || cause === null) return out
  if (cause instanceof EgressRefused) {
    out.refused = cause
    return out
  }
  const record = cause as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; _tag?: unknown }
  if (out.code === undefined && typeof record.code === "string") {
    out.code = record.code
    if (typeof record.message === "string") out.message = record.message
  }
  if (Array.isArray(record.errors)) { for (const error of record.errors) facts(error, out, depth + 1) }
  if (record.cause !== undefined) facts(record.cause, out, depth + 1)
  return out
}
