/**
 * Per-identity caps on the long-lived streams a caller holds open: the MCP
 * endpoint's listen streams (`McpGuard.holdStream`, set by
 * `MCP_MAX_STREAMS_PER_CALLER`) and Studio's event stream (`GET
 * /api/v1/events`, {@link MAX_EVENT_STREAMS_PER_ADMIN}).
 *
 * **Rules**
 *
 * - A permit is keyed by the authenticated identity (`Caller.id`, or the admin
 *   principal's `admin:<token id>` / `oauth:<iss>#<sub>`), never by the bearer
 *   string: a key per presented string would let one credential mint a fresh
 *   allowance per spelling, and other callers never share a count.
 * - Taking a permit is one synchronous check-and-increment, so any number of
 *   concurrent opens never take more than `max` permits of a key.
 * - A permit belongs to a scope (the request's, which closes when the response
 *   has been written or the client went away): it is given back when the
 *   stream ends for any reason (client disconnect, credential revoked or
 *   expired, session deleted, shutdown) and can never leak.
 * - Counts are per instance: a caller may hold `max` streams on each replica.
 *
 * @since 0.1.0
 */
import { Data, Effect, type Scope } from "effect"

/**
 * Studio's event streams one admin identity may hold open at once. Studio
 * opens one per browser tab; each subscriber may hold up to 1 MiB of queued
 * frames (the sse package's `MAX_QUEUED_BYTES`), so 16 bounds what one admin
 * identity can make the hub hold at 16 MiB while leaving room for a dozen
 * tabs and their reconnects. A constant, like the hub's own limits: it
 * bounds Studio's memory, and an operator has no better value to give.
 */
export const MAX_EVENT_STREAMS_PER_ADMIN = 16

/** `key` already holds `max` streams. */
export class StreamCapReached extends Data.TaggedError("StreamCapReached")<{
  readonly key: string
  readonly held: number
  readonly max: number
}> {}

/** @since 0.1.0 */
export interface StreamPermits {
  /** The most permits one key may hold. */
  readonly max: number
  /** One permit of `key` for the life of the current scope; fails at once when `key` holds `max`. */
  readonly hold: (key: string) => Effect.Effect<void, StreamCapReached, Scope.Scope>
  /** The permits `key` holds now. */
  readonly held: (key: string) => number
}

/** Permits of at most `max` (at least 1) per key, in this instance's memory. */
export const make = (max: number): StreamPermits => {
  const cap = Math.max(1, Math.floor(max))
  const counts = new Map<string, number>()
  const release = (key: string) =>
    Effect.sync(() => {
      const left = (counts.get(key) ?? 1) - 1
      if (left <= 0) counts.delete(key)
      else counts.set(key, left)
    })
  const hold = (key: string) =>
    Effect.acquireRelease(
      Effect.suspend(() => {
        const held = counts.get(key) ?? 0
        if (held >= cap) return Effect.fail(new StreamCapReached({ key, held, max: cap }))
        counts.set(key, held + 1)
        return Effect.void
      }),
      () => release(key)
    )
  return { max: cap, hold, held: (key) => counts.get(key) ?? 0 }
}

/**
 * A permit coming back depends on the caller closing a stream, so no time is
 * sure; `Retry-After` paces clients that reconnect on their own.
 */
export const RETRY_AFTER_SECONDS = 5
