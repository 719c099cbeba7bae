/**
 * Why a request was not authenticated by the OAuth resource server.
 *
 * **Rules**
 *
 * - No error ever carries the token, a part of it, or a claim value taken from
 *   it: messages are fixed sentences chosen by the verifier, so they are safe
 *   in logs, in audit records and in a `WWW-Authenticate` `error_description`
 *   (RFC 6750 §3: no quote or backslash).
 * - `MissingToken` maps to 401 without an error code (RFC 6750 §3.1: a request
 *   without credentials gets no error), `InvalidRequest` (more than one
 *   credential) to 400 `invalid_request`, `InvalidToken` to 401
 *   `invalid_token`, `InsufficientScope` to 403 `insufficient_scope` (step-up,
 *   MCP authorization "Scope Challenge Handling"), `JwksUnavailable` to 503:
 *   the token may be fine, the keys to check it are not at hand.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** The request carries no bearer token in its `Authorization` header. */
export class MissingToken extends Schema.TaggedError<MissingToken>()("MissingToken", {}) {
  override get message(): string {
    return "A bearer token is required"
  }
}

/**
 * The request's credentials cannot be read as one credential: two
 * `Authorization` headers, or one carrying several credentials separated by
 * a comma (RFC 6750 §3.1 `invalid_request`).
 */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String
}) {}

/** What was wrong with a token that was presented. */
export const InvalidTokenReason = Schema.Literals([
  "malformed",
  "too_large",
  "algorithm_not_allowed",
  "untrusted_issuer",
  "wrong_audience",
  "expired",
  "not_yet_valid",
  "issued_in_future",
  "bad_signature",
  "unknown_key",
  "key_mismatch",
  "missing_claim",
  "invalid_claim",
  "wrong_type",
  /** The token is bound to a key or certificate (`cnf`, RFC 9449 / RFC 8705) but came as a bearer token. */
  "sender_constrained",
  /** `Authorization: DPoP`: a proof-of-possession scheme this server does not implement. */
  "unsupported_scheme",
  /** `exp` lies further after `iat` (or now) than the longest lifetime accepted. */
  "lifetime_too_long"
])
export type InvalidTokenReason = typeof InvalidTokenReason.Type

/** A token was presented but rejected; `message` is a fixed, token-free sentence. */
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", {
  reason: InvalidTokenReason,
  message: Schema.String
}) {}

/** The token is valid but lacks scopes the operation needs. */
export class InsufficientScope extends Schema.TaggedError<InsufficientScope>()("InsufficientScope", {
  /** Every scope the operation requires (what the client should request). */
  required: Schema.Array(Schema.String),
  /** The required scopes the token lacks. */
  missing: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `Missing scope ${this.missing.join(" ")}`
  }
}

/** The issuer's signing keys could not be fetched, so the token cannot be checked now. */
export class JwksUnavailable extends Schema.TaggedError<JwksUnavailable>()("JwksUnavailable", {
  issuer: Schema.String,
  message: Schema.String,
  /** When the keys may be fetched again (the 503's `Retry-After`). */
  retryAfterMs: Schema.optionalKey(Schema.Number)
}) {}

/** Every way authentication can fail. */
export type AuthenticationError = MissingToken | InvalidRequest | InvalidToken | InsufficientScope | JwksUnavailable
