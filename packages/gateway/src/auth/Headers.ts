/**
 * The response headers of admission refusals.
 *
 * **Rules**
 *
 * - 429 (IETF draft-ietf-httpapi-ratelimit-headers, the `limit/remaining/reset`
 *   form): `Retry-After: <s>`, `RateLimit: limit=<burst>, remaining=0,
 *   reset=<s>` and `RateLimit-Policy: <burst>;w=<burst/rate>` (a token bucket
 *   of `burst` refilled at `rate`/s lets exactly `burst` requests through per
 *   `burst/rate` seconds). When `burst/rate` is not whole, the policy is
 *   `<rate>;w=1;burst=<burst>`. Seconds are whole and at least 1.
 * - 401 without OAuth: `WWW-Authenticate: Bearer realm="<realm>"`, with
 *   `error="invalid_token"` when a token was presented (RFC 6750 §3); 400
 *   `error="invalid_request"` for more than one credential. With
 *   OAuth the challenge is the OAuth module's (RFC 9728 `resource_metadata`).
 * - 503 (credentials cannot be checked): `Retry-After: 1`.
 * - Values never contain a token or anything read from one.
 *
 * @since 0.1.0
 */
import type { RatePolicy } from "./RateLimits.ts"

/** `RateLimit-Policy` of a token bucket. */
export const ratePolicy = (policy: RatePolicy): string => {
  const window = policy.burst / policy.rate
  return Number.isInteger(window) ? `${policy.burst};w=${window}` : `${policy.rate};w=1;burst=${policy.burst}`
}

/** Whole seconds, at least 1, of a delay in milliseconds. */
export const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1_000))

/** The headers of a 429 from a bucket of `policy`; `policyHeader` is `ratePolicy(policy)`, precomputed. */
export const tooManyRequests = (
  policy: RatePolicy,
  policyHeader: string,
  retryAfterMs: number
): Record<string, string> => {
  const s = seconds(retryAfterMs)
  return {
    "retry-after": String(s),
    "ratelimit": `limit=${policy.burst}, remaining=0, reset=${s}`,
    "ratelimit-policy": policyHeader
  }
}

/** Keeps only the characters RFC 6750 §3 allows in a quoted value. */
const quoted = (value: string): string => `"${value.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, "")}"`

/** `WWW-Authenticate` of a 401 (400 for `invalid_request`) when OAuth is off. */
export const bearerChallenge = (
  realm: string,
  description?: string,
  error: "invalid_token" | "invalid_request" = "invalid_token"
): string =>
  description === undefined
    ? `Bearer realm=${quoted(realm)}`
    : `Bearer realm=${quoted(realm)}, error="${error}", error_description=${quoted(description)}`

/** Headers of a 503 while credentials cannot be checked. */
export const unavailable: Readonly<Record<string, string>> = { "retry-after": "1" }
