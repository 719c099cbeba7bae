/**
 * Why an authentication was refused, as the audit record of the refusal
 * says it (`reason`): one machine-readable word, so an operator can count
 * expired tokens apart from tokens for another resource.
 *
 * **Rules**
 *
 * - A refused JWT carries the verifier's reason (`InvalidTokenReason`:
 *   `expired`, `wrong_audience`, `untrusted_issuer`, `bad_signature`,
 *   `sender_constrained`, `lifetime_too_long`, ...); a valid token without a
 *   required scope `insufficient_scope`; keys that cannot be fetched
 *   `keys_unavailable`.
 * - Janus's own tokens: `unknown_token` (a client or admin token that is
 *   unknown, expired or revoked: the store does not say which, and an
 *   attacker must not learn it), `wrong_token_kind` (a token of the other
 *   kind, or neither), `store_unavailable`.
 * - The request itself: `missing_token`, `multiple_credentials` (several
 *   `Authorization` values); a rate limit has no reason, its bucket says it.
 * - Never anything taken from the token.
 *
 * @since 0.1.0
 */
import type { AuthenticationError, InvalidTokenReason } from "../oauth/index.ts"

/** Every reason an authentication is refused for. */
export type RefusalReason =
  | InvalidTokenReason
  | "missing_token"
  | "multiple_credentials"
  | "insufficient_scope"
  | "keys_unavailable"
  | "unknown_token"
  | "wrong_token_kind"
  | "store_unavailable"

/** The reason of an OAuth module refusal. */
export const ofAuthenticationError = (error: AuthenticationError): RefusalReason => {
  switch (error._tag) {
    case "MissingToken":
      return "missing_token"
    case "InvalidRequest":
      return "multiple_credentials"
    case "InvalidToken":
      return error.reason
    case "InsufficientScope":
      return "insufficient_scope"
    case "JwksUnavailable":
      return "keys_unavailable"
  }
}
