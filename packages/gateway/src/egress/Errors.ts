/**
 * The tagged errors of the egress side of `tools/call`.
 *
 * **Rules**
 *
 * - No error carries a secret, a request header, a request body or a raw
 *   transport error (an `HttpClientError` holds the request, and so the
 *   injected credential): fields are host names, addresses, codes and fixed
 *   sentences chosen here, so every error is safe in logs and audit records.
 * - Only what the downstream or the network did is a `DownstreamUnavailable`
 *   or `DownstreamTimeout` (what its circuit breaker counts); a request the
 *   gateway could not send is an `UnsendableRequest`.
 * - HTTP statuses are not errors: a 4xx or 5xx answer is returned as data and
 *   the caller maps it to an `isError` result.
 * - `target` names an origin (`scheme://host:port`), never a path or query,
 *   because arguments can travel in both.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** Where the egress check refused the call. */
export const RefusalPhase = Schema.Literals(["url", "connect", "redirect"])
export type RefusalPhase = typeof RefusalPhase.Type

/**
 * The address policy refused a destination.
 *
 * `address` is the IP address or host name that was refused and `reason` says
 * what it is, e.g. `169.254.169.254` and `link-local (cloud metadata)`.
 */
export class EgressRefused extends Schema.TaggedError<EgressRefused>()("EgressRefused", {
  address: Schema.String,
  reason: Schema.String,
  phase: RefusalPhase
}) {
  override get message(): string {
    return `Egress refused: ${this.address} is ${this.reason}`
  }
}

/** Which timeout fired. `total` is the connection's budget for the whole call, retries included. */
export const TimeoutPhase = Schema.Literals(["connect", "headers", "body", "total"])
export type TimeoutPhase = typeof TimeoutPhase.Type

/** The downstream did not answer in time. */
export class DownstreamTimeout extends Schema.TaggedError<DownstreamTimeout>()("DownstreamTimeout", {
  connection: Schema.String,
  target: Schema.String,
  phase: TimeoutPhase,
  timeoutMillis: Schema.Number
}) {
  override get message(): string {
    return `${this.target} did not answer in time (${this.phase} timeout, ${this.timeoutMillis} ms)`
  }
}

/**
 * The downstream could not be reached or broke the exchange (refused or reset
 * connection, DNS failure, malformed response, too many redirects).
 *
 * `transient` says whether another attempt could succeed; only transient
 * failures are retried.
 */
export class DownstreamUnavailable extends Schema.TaggedError<DownstreamUnavailable>()("DownstreamUnavailable", {
  connection: Schema.String,
  target: Schema.String,
  reason: Schema.String,
  transient: Schema.Boolean
}) {
  override get message(): string {
    return `${this.target} is unavailable: ${this.reason}`
  }
}

/** The connection's circuit breaker is open (or half-open with its probe in flight): failed fast, nothing sent. */
export class BreakerOpen extends Schema.TaggedError<BreakerOpen>()("BreakerOpen", {
  connection: Schema.String,
  retryAfterMillis: Schema.Number,
  /** Whose circuit is open: the connection's (every caller) or only this caller's own calls on it. */
  scope: Schema.optionalKey(Schema.Literals(["connection", "caller"]))
}) {
  override get message(): string {
    return this.scope === "caller" ?
      `Circuit open for this caller's calls to connection ${this.connection} (its recent calls failed repeatedly; other callers are unaffected); retry after ${this.retryAfterMillis} ms` :
      `Circuit open for connection ${this.connection}; retry after ${this.retryAfterMillis} ms`
  }
}

/** The response body is larger than the connection's limit; reading stopped and the request was aborted. */
export class ResponseTooLarge extends Schema.TaggedError<ResponseTooLarge>()("ResponseTooLarge", {
  connection: Schema.String,
  target: Schema.String,
  limitBytes: Schema.Number
}) {
  override get message(): string {
    return `${this.target} sent a response larger than ${this.limitBytes} bytes`
  }
}

/** The caller's `AbortSignal` fired; the downstream request was aborted. */
export class DownstreamCancelled extends Schema.TaggedError<DownstreamCancelled>()("DownstreamCancelled", {
  connection: Schema.String
}) {
  override get message(): string {
    return `Call to connection ${this.connection} was cancelled`
  }
}

/**
 * The HTTP client refused to send the request as it was built (a header
 * value, the method or the URL holds characters HTTP cannot carry): nothing
 * left the gateway, so the downstream did nothing wrong and this never counts
 * against its circuit breaker. `reason` is a fixed sentence, never a value.
 */
export class UnsendableRequest extends Schema.TaggedError<UnsendableRequest>()("UnsendableRequest", {
  connection: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `The request to connection ${this.connection} could not be sent: ${this.reason}`
  }
}

/** A connection's egress settings are unusable (bad base URL, allow-list entry, auth header name, secret). */
export class InvalidEgressConfig extends Schema.TaggedError<InvalidEgressConfig>()("InvalidEgressConfig", {
  connection: Schema.String,
  message: Schema.String
}) {}

/** Every way a downstream call can fail. */
export type DownstreamError =
  | EgressRefused
  | DownstreamTimeout
  | DownstreamUnavailable
  | BreakerOpen
  | ResponseTooLarge
  | DownstreamCancelled
  | InvalidEgressConfig
  | UnsendableRequest
