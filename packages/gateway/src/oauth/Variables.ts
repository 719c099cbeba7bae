/**
 * The OAuth module's options from the `OAUTH_*` variables of `JanusConfig`.
 *
 * **Rules**
 *
 * - Per-issuer variables (`<issuer>=<value>`) are resolved for each issuer of
 *   `OAUTH_ISSUERS`; an issuer listed in `OAUTH_HTTP_ISSUERS` (compared
 *   without a trailing slash) may use plain http.
 * - The variables are taken as valid: `config/OAuthVariables.problems` has
 *   refused the combinations that are not, and `OAuthOptions.resolve` checks
 *   the rest when the module starts.
 *
 * @since 0.1.0
 */
import { Option } from "effect"
import type { JanusSettings } from "../config/JanusConfig.ts"
import { normalizeIssuer } from "../config/Urls.ts"
import type { OAuthOptions } from "./OAuthOptions.ts"

/** The OAuth module's options from the `OAUTH_*` variables (valid per `config/OAuthVariables.problems`; OAuth enabled). */
export const options = (config: JanusSettings): OAuthOptions => {
  const httpAllowed = new Set(config.OAUTH_HTTP_ISSUERS.map(normalizeIssuer))
  return {
    resource: Option.getOrElse(config.OAUTH_RESOURCE, () => ""),
    toolScopes: config.OAUTH_TOOL_SCOPES.all,
    adminScopes: config.OAUTH_ADMIN_SCOPES,
    mcpAudienceOnVirtualServers: config.OAUTH_VIRTUAL_SERVERS_ACCEPT_MCP_TOKENS,
    requiredTokenType: Option.getOrUndefined(config.OAUTH_REQUIRED_TOKEN_TYPE),
    maxTokenLength: config.OAUTH_MAX_TOKEN_LENGTH,
    resourceName: Option.getOrUndefined(config.OAUTH_RESOURCE_NAME),
    resourceDocumentation: Option.getOrUndefined(config.OAUTH_RESOURCE_DOCUMENTATION),
    maxTokenLifetime: config.OAUTH_MAX_TOKEN_LIFETIME,
    authorizationServers: config.OAUTH_ISSUERS.map((issuer) => ({
      issuer,
      jwksUri: config.OAUTH_JWKS_URL.for(issuer),
      jwks: config.OAUTH_JWKS.for(issuer),
      jwksFile: config.OAUTH_JWKS_FILE.for(issuer),
      toolScopes: config.OAUTH_TOOL_SCOPES.for(issuer),
      audiences: config.OAUTH_AUDIENCES.for(issuer),
      scopeClaims: config.OAUTH_SCOPE_CLAIMS.for(issuer),
      scopePrefix: config.OAUTH_SCOPE_PREFIX.for(issuer),
      tenants: config.OAUTH_TENANTS.for(issuer),
      allowInsecureHttp: httpAllowed.has(normalizeIssuer(issuer)),
      clockSkew: config.OAUTH_CLOCK_TOLERANCE.for(issuer),
      jwksRefreshInterval: config.OAUTH_JWKS_REFRESH.for(issuer)
    }))
  }
}
