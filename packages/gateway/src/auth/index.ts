/**
 * Admission on the tools/call hot path (issue #5): per-IP limiter ->
 * authenticate -> per-identity limiter -> authorize the tool (SPEC order).
 *
 * - `Admission`: the service (`admit`, `authorize`, `canSee`, `canUseServer`).
 * - `ClientIp`: the client address behind trusted proxies; the per-IP key.
 * - `Authenticate`: client tokens (token cache) and OAuth JWTs.
 * - `RateLimits`: the token-bucket tiers (per IP, per identity, failed
 *   authentications per address) on effect `RateLimiter`, memory or Redis
 *   (fail open to memory while Redis is down).
 * - `CredentialLifetime`: open streams end when the credential that opened
 *   them is revoked, deleted (on any replica) or expires.
 * - `ToolScope`: what a caller may list and call.
 * - `Headers`: 401/429/503 headers (`WWW-Authenticate`, `RateLimit*`).
 * - `Hardening`: Node server limits, JSON depth, error bodies without internals.
 *
 * Wiring (lead): provide `Admission.layer(options)` over the storage (and
 * `OAuthLayer` when OAuth is on); in `CallGuard` use `admission.admit` as
 * `McpGuard.admit` and run `admission.authorize(caller, toolName)` first in
 * `guardCall`, inside the audit, before the concurrency permit; filter
 * tools/list with `admission.canSee`.
 *
 * @since 0.1.0
 */
export { Admission, AdmissionConfigError, type AdmissionOptions } from "./Admission.ts"
export * as Authenticate from "./Authenticate.ts"
export * as ClientIp from "./ClientIp.ts"
export { CredentialLifetime } from "./CredentialLifetime.ts"
export * as AuthHeaders from "./Headers.ts"
export * as RateLimits from "./RateLimits.ts"
export * as ToolScope from "./ToolScope.ts"
