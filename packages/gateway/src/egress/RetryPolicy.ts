/**
 * When a downstream call is tried again, and how long it waits first.
 *
 * **Rules**
 *
 * - Only idempotent requests are retried: GET, HEAD, OPTIONS, PUT and DELETE,
 *   and any other method (POST, PATCH) only when its endpoint is marked
 *   idempotent. Repeating a non-idempotent request the server may already
 *   have acted on could charge a card twice.
 * - Retried: a 5xx answer, a transport failure that another attempt could
 *   cure (reset, refused, DNS failure) and a connect timeout (nothing was
 *   sent). Not retried: 4xx and other answers, headers/body timeouts (the
 *   server is slow; repeating multiplies its load), egress refusals, oversized
 *   responses and cancellation.
 * - At most `retries` retries (default 3, so at most 4 attempts), spaced by
 *   exponential backoff (`baseDelay` x 2^n, default 100 ms) with +/-20 %
 *   jitter so callers that failed together do not retry together, each delay
 *   capped at `maxDelay` (default 2 s). The connection's total timeout bounds
 *   the whole sequence.
 * - After the last retry a 5xx answer is returned as data, like any status.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schedule } from "effect"
import type { HttpMethod } from "effect/http"
import type { DownstreamError } from "./Errors.ts"
import type { DownstreamResponse } from "./Exchange.ts"

/** Per-connection retry settings. */
export interface RetryOptions {
  /** Retries after the first attempt; 0 disables retrying. Default 3. */
  readonly retries?: number | undefined
  /** First backoff delay; default 100 ms. */
  readonly baseDelay?: Duration.Input | undefined
  /** Largest backoff delay; default 2 s. */
  readonly maxDelay?: Duration.Input | undefined
}

/** Methods retried without the endpoint saying so (RFC 9110 §9.2.2). */
export const idempotentMethods: ReadonlySet<HttpMethod.HttpMethod> = new Set<HttpMethod.HttpMethod>([
  "GET",
  "HEAD",
  "OPTIONS",
  "PUT",
  "DELETE"
])

/** Whether a request may be sent more than once. */
export const mayRetry = (method: HttpMethod.HttpMethod, markedIdempotent: boolean): boolean =>
  markedIdempotent || idempotentMethods.has(method)

/**
 * A 5xx answer on an attempt that may be retried, raised so `Effect.retry`
 * sees it and turned back into data when the retries run out. Internal to
 * the egress module.
 */
export class RetryableStatus {
  readonly _tag = "RetryableStatus"
  readonly response: DownstreamResponse
  constructor(response: DownstreamResponse) {
    this.response = response
  }
}

/** Whether another attempt could succeed where this one failed. */
export const isRetryable = (error: DownstreamError | RetryableStatus): boolean => {
  switch (error._tag) {
    case "RetryableStatus":
      return true
    case "DownstreamUnavailable":
      return error.transient
    case "DownstreamTimeout":
      return error.phase === "connect"
    default:
      return false
  }
}

/** `Effect.retry` options for a connection; built once per connection, reused by every call. */
export const retryOptions = (options: RetryOptions | undefined): {
  readonly times: number
  readonly schedule: Schedule.Schedule<Duration.Duration>
  readonly while: (error: DownstreamError | RetryableStatus) => boolean
} => {
  const maxDelay = Duration.fromInputUnsafe(options?.maxDelay ?? "2 seconds")
  return {
    times: Math.max(0, Math.floor(options?.retries ?? 3)),
    schedule: Schedule.exponential(options?.baseDelay ?? "100 millis").pipe(
      Schedule.jittered,
      Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, maxDelay)))
    ),
    while: isRetryable
  }
}
