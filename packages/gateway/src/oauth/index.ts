/**
 * The OAuth 2.1 resource server of Janus (issue #5, `OAUTH_ENABLED=true`).
 *
 * Janus accepts bearer JWT access tokens issued by trusted authorization
 * servers for its own resource identifier, alongside its opaque client tokens.
 *
 * - `OAuthOptions` / `OAuthConfig`: trusted issuers and their per-issuer
 *   settings, resource (RFC 8707), scopes, algorithms, skew.
 * - `Issuers`: matching `iss` (trailing slash, multi-tenant templates).
 * - `Scopes`: reading scopes from `scope`/`scp`/`roles`/`permissions`/…
 * - `Resources`: `/mcp` and the virtual servers as protected resources.
 * - `AuthorizationServerMetadata`: RFC 8414 / OpenID discovery of `jwks_uri`.
 * - `JwksCache`: per-instance JWKS cache, periodic and rate-limited refresh.
 * - `Diagnostics`: what `janus doctor` finds at each issuer.
 * - `JwtVerifier`: RFC 9068 / RFC 8725 token validation.
 * - `ProtectedResourceMetadata`: RFC 9728 documents and routes.
 * - `Challenge`, `BearerAuth`: RFC 6750 challenges, 401/403 step-up, 503.
 * - `DownstreamHeaders`: client tokens are never passed downstream.
 *
 * Wiring: `Security.layerOAuth` builds `OAuthLayer` from the `OAUTH_*`
 * variables with a plain `HttpClient` (issuer and JWKS URLs are
 * operator-configured, so not the SSRF-guarded downstream client);
 * `Security.layerProtectedResourceMetadata` mounts the metadata routes;
 * admission sends tokens for which `looksLikeJwt` holds to `JwtVerifier`,
 * others to the client-token lookup. Never forward the incoming
 * `Authorization` header downstream (`withoutClientCredentials`).
 *
 * @since 0.1.0
 */
export { isLoopbackHost, normalizeIssuer } from "../config/Urls.ts"
export {
  AuthorizationServerMetadata,
  discover,
  type DiscoveredMetadata,
  DiscoveryError,
  type DiscoveryUrl,
  discoveryUrls
} from "./AuthorizationServerMetadata.ts"
export { authenticate, OAuthRejection } from "./BearerAuth.ts"
export { bearerTokenFromHeaders, looksLikeJwt } from "./BearerToken.ts"
export {
  challenge,
  type ChallengeContext,
  type ChallengeParams,
  challengeResponse,
  wwwAuthenticate
} from "./Challenge.ts"
export { diagnose, type IssuerDiagnosis } from "./Diagnostics.ts"
export { NOT_FORWARDED_HEADERS, withoutClientCredentials } from "./DownstreamHeaders.ts"
export { advertisedIssuer, type IssuerTemplate, parseTemplate } from "./Issuers.ts"
export {
  type FetchedKeySet,
  fetchKeySet,
  isPublicSigningKey,
  JwksCache,
  type JwksSnapshot,
  type JwksStatus,
  jwksUriOf
} from "./JwksCache.ts"
export { JwtVerifier, type OAuthIdentity, type TokenRequirement } from "./JwtVerifier.ts"
export {
  type AuthenticationError,
  InsufficientScope,
  InvalidRequest,
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
  OAuthConfig,
  OAuthConfigError,
  type OAuthOptions,
  type OAuthSettings,
  resolveOAuthOptions,
  sameResource,
  type SigningAlgorithm,
  SUPPORTED_ALGORITHMS
} from "./OAuthOptions.ts"
export {
  documentFor,
  makeProtectedResourceMetadataRoutes,
  type MetadataRoutesOptions,
  type ProtectedResourceMetadataDocument,
  ProtectedResourceMetadataRoutes
} from "./ProtectedResourceMetadata.ts"
export {
  acceptedAudiences,
  mcpResource,
  metadataUrl,
  metadataUrlOf,
  type ProtectedResource,
  resourceOf,
  virtualServerResource,
  WELL_KNOWN_PATH
} from "./Resources.ts"
export { OAuthLayer } from "./ResourceServer.ts"
export { advertiseScopes, claimValue, DEFAULT_SCOPE_CLAIMS, scopesOf } from "./Scopes.ts"
