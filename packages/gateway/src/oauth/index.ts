/**
 * The OAuth 2.1 resource server of Janus (issue #5, `OAUTH_ENABLED=true`).
 *
 * Janus accepts bearer JWT access tokens issued by trusted authorization
 * servers for its own resource identifier, alongside its opaque client tokens.
 *
 * - `OAuthOptions` / `OAuthConfig`: trusted issuers, resource (RFC 8707),
 *   scopes, algorithms, skew.
 * - `AuthorizationServerMetadata`: RFC 8414 / OpenID discovery of `jwks_uri`.
 * - `JwksCache`: per-instance JWKS cache, periodic and rate-limited refresh.
 * - `JwtVerifier`: RFC 9068 / RFC 8725 token validation.
 * - `ProtectedResourceMetadata`: RFC 9728 documents and routes.
 * - `Challenge`, `BearerAuth`: RFC 6750 challenges, 401/403 step-up, 503.
 * - `DownstreamHeaders`: client tokens are never passed downstream.
 *
 * Wiring (lead): provide `OAuthLayer(options)` with an `HttpClient` (a plain
 * one: issuer and JWKS URLs are operator-configured, so not the SSRF-guarded
 * downstream client), with `Layer.provideMerge` into the served app so request
 * handlers see `JwtVerifier` and `OAuthConfig`; mount
 * `ProtectedResourceMetadataRoutes` on the router; in the auth middleware send
 * tokens for which `looksLikeJwt` holds to `authenticate` (or
 * `JwtVerifier.verify` + `challenge`), others to the client-token lookup.
 * Never forward the incoming `Authorization` header downstream
 * (`withoutClientCredentials`).
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import type { HttpClient } from "effect/http"
import { JwksCache } from "./JwksCache.ts"
import { JwtVerifier } from "./JwtVerifier.ts"
import { OAuthConfig, type OAuthConfigError, type OAuthOptions } from "./OAuthOptions.ts"

export {
  AuthorizationServerMetadata,
  discover,
  DiscoveryError,
  type DiscoveryUrl,
  discoveryUrls
} from "./AuthorizationServerMetadata.ts"
export { authenticate, OAuthRejection } from "./BearerAuth.ts"
export { fromHeaders as bearerTokenFromHeaders, looksLikeJwt } from "./BearerToken.ts"
export {
  type ChallengeContext,
  type ChallengeParams,
  challengeResponse,
  respond as challenge,
  wwwAuthenticate
} from "./Challenge.ts"
export { NOT_FORWARDED_HEADERS, withoutClientCredentials } from "./DownstreamHeaders.ts"
export { isPublicSigningKey, JwksCache, type JwksSnapshot, type JwksStatus } from "./JwksCache.ts"
export { JwtVerifier, type OAuthIdentity, scopesOf, type TokenRequirement } from "./JwtVerifier.ts"
export {
  type AuthenticationError,
  InsufficientScope,
  InvalidToken,
  InvalidTokenReason,
  JwksUnavailable,
  MissingToken
} from "./OAuthErrors.ts"
export {
  type AuthorizationServer,
  type AuthorizationServerOptions,
  canonicalResource,
  DEFAULT_ADMIN_SCOPES,
  DEFAULT_ALGORITHMS,
  DEFAULT_TOOL_SCOPES,
  isLoopbackHost,
  OAuthConfig,
  OAuthConfigError,
  type OAuthOptions,
  type OAuthSettings,
  resolve as resolveOAuthOptions,
  type ResourcePath,
  sameResource,
  type SigningAlgorithm,
  SUPPORTED_ALGORITHMS
} from "./OAuthOptions.ts"
export {
  documentFor,
  metadataUrl,
  type ProtectedResourceMetadataDocument,
  ProtectedResourceMetadataRoutes,
  resourcePathFor,
  WELL_KNOWN_PATH
} from "./ProtectedResourceMetadata.ts"

/**
 * Everything the resource server needs at run time: the validated settings,
 * the JWKS cache (its background refresh lives as long as the layer) and the
 * verifier. Fails at build with every configuration mistake.
 */
export const OAuthLayer = (
  options: OAuthOptions
): Layer.Layer<OAuthConfig | JwksCache | JwtVerifier, OAuthConfigError, HttpClient.HttpClient> =>
  JwtVerifier.layer.pipe(
    Layer.provideMerge(JwksCache.layer),
    Layer.provideMerge(OAuthConfig.layer(options))
  )
