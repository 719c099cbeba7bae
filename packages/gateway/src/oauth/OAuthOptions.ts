/**
 * Options of the OAuth 2.1 resource server (`OAUTH_ENABLED=true`) and the
 * validated settings every other OAuth module reads (`OAuthConfig`).
 *
 * **Rules**
 *
 * - Trusted authorization servers are listed by issuer identifier (RFC 8414
 *   §2): an absolute `https` URL without query or fragment, compared with a
 *   token's `iss` up to one trailing slash, or a multi-tenant template
 *   (`Issuers.ts`).
 * - Each issuer's JWKS URI is either given or discovered through its RFC 8414
 *   metadata (`/.well-known/oauth-authorization-server`), falling back to
 *   OpenID Connect Discovery (`/.well-known/openid-configuration`); or the
 *   operator gives its keys, inline or in a file (`LocalKeySet.ts`), checked
 *   at start. One source per issuer.
 * - Per issuer, because identity providers differ: the tool scopes, the
 *   audiences accepted besides the resource, the claims scopes are read from
 *   and a scope prefix (`Scopes.ts`), plain http, clock tolerance and refresh
 *   interval; the global values are the defaults.
 * - A token is held to the tool scopes of its own issuer. What a client is
 *   told before it has a token (the `scope` of a challenge, `scopes_supported`
 *   of the metadata) is the first issuer's tool scopes with its prefix: MCP
 *   clients ask the first of `authorization_servers`, and a scope another
 *   issuer defines could make that request fail. A 403 `insufficient_scope`
 *   names the scopes of the token's issuer.
 * - The resource identifier of this gateway is its canonical URI (RFC 8707 §2,
 *   MCP authorization "Canonical Server URI"): absolute, no fragment, lowercase
 *   scheme and host, no trailing slash; the public URL of `/mcp`. Virtual
 *   servers are resources of their own under the same base (`Resources.ts`).
 * - Only asymmetric JWS algorithms may be allowed (RFC 8725 §3.1, §3.2): `none`
 *   and the HMAC family (`HS*`) are refused at start, so a public key can never
 *   be used as an HMAC secret.
 * - Scope values follow the scope-token syntax of RFC 6749 §3.3, which also
 *   keeps them safe inside a `WWW-Authenticate` quoted-string (RFC 6750 §3).
 * - Plain `http` is accepted for issuers, JWKS URIs and the resource only on a
 *   loopback host (127.0.0.0/8, ::1, localhost), or with `allowInsecureHttp`
 *   (for one issuer, or for all: a cluster-internal authorization server).
 * - Audiences besides the resource (`audiences`, `additionalAudiences`) are
 *   kept as written: a token's `aud` must equal one of them exactly.
 * - `scopes_supported` of `/mcp`'s metadata is the tool scopes only: the
 *   admin scopes are for `/api/v1`, not something an MCP client should ask
 *   for.
 * - `maxTokenLifetime` (24 hours) bounds how long a token may live (`exp`
 *   after `iat`, or after now without `iat`), so a token minted for years is
 *   refused rather than trusted until then.
 * - The on-demand JWKS refetch window (`jwksMinRefreshInterval`, 30 s) is
 *   not longer than any issuer's refresh interval.
 *
 * Every mistake is reported at once, one line each, in `OAuthConfigError`.
 *
 * Over 450 lines: every OAuth setting is checked here, once, with the
 * message that names it; splitting the checks would split one table.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { checkKeySources, type PublicJwk } from "../config/LocalKeySet.ts"
import { normalizeIssuer } from "../config/Urls.ts"
import {
  canonicalResource,
  checkAlgorithms,
  checkDuration,
  checkScopes,
  checkUrl,
  DEFAULT_ALGORITHMS,
  SCOPE_TOKEN,
  type SigningAlgorithm
} from "./internal/checks.ts"
import { advertisedIssuer, type IssuerTemplate, matcher, parseTemplate } from "./Issuers.ts"
import { advertiseScopes, DEFAULT_SCOPE_CLAIMS } from "./Scopes.ts"

export {
  canonicalResource,
  DEFAULT_ALGORITHMS,
  sameResource,
  type SigningAlgorithm,
  SUPPORTED_ALGORITHMS
} from "./internal/checks.ts"

/**
 * Longest access token accepted by default, in characters. Why 16 KiB: a
 * Keycloak token listing many realm and client roles passes 8 KiB, and the
 * HTTP server refuses a header block beyond 16 KiB anyway
 * (`http/Hardening.ts`), so no token that reached the verifier is refused for
 * its length alone; the bound still keeps a direct caller from having a
 * megabyte decoded.
 */
export const DEFAULT_MAX_TOKEN_LENGTH = 16 * 1024

/** Shortest `maxTokenLength` accepted: no signed JWT with `iss`, `sub`, `aud` and `exp` is shorter. */
export const MIN_TOKEN_LENGTH = 256

// a JOSE `typ` value: a media type without its `application/` prefix (RFC 7515 §4.1.9)
const TOKEN_TYPE = /^[A-Za-z0-9!#$&^_.+-]+(?:\/[A-Za-z0-9!#$&^_.+-]+)?$/

/** The scope a token needs to list and call tools. */
export const DEFAULT_TOOL_SCOPES: ReadonlyArray<string> = ["mcp:tools"]

/** The scope a token needs for the admin API (`/api/v1`). */
export const DEFAULT_ADMIN_SCOPES: ReadonlyArray<string> = ["janus:admin"]

/** One trusted authorization server and how its tokens are read. */
export interface AuthorizationServerOptions {
  /**
   * Issuer identifier, compared with a token's `iss` up to one trailing
   * slash; may hold one placeholder path segment such as `{tenantid}` for a
   * multi-tenant issuer (see `Issuers.ts`).
   */
  readonly issuer: string
  /** JWKS URI; when absent it is discovered from the issuer's metadata (RFC 8414, then OpenID Discovery). */
  readonly jwksUri?: string | undefined
  /** The issuer's public keys as a JWK Set (JSON text or parsed), instead of fetching them (`LocalKeySet.ts`). */
  readonly jwks?: unknown
  /** A file holding the issuer's JWK Set, read at start and again on every refresh, instead of fetching it. */
  readonly jwksFile?: string | undefined
  /** Scopes a token from this issuer needs for MCP traffic. Default: the global `toolScopes`. */
  readonly toolScopes?: ReadonlyArray<string> | undefined
  /** Narrows the global algorithm allow-list for this issuer. */
  readonly algorithms?: ReadonlyArray<string> | undefined
  /** Audiences accepted from this issuer besides the resource (Entra `api://…` or app id, Auth0 API identifier). */
  readonly audiences?: ReadonlyArray<string> | undefined
  /** Claims the scopes are read from. Default `scope`, `scp`. */
  readonly scopeClaims?: ReadonlyArray<string> | undefined
  /** Prefix stripped from granted scopes and put before Janus's scopes in challenges (Entra: `api://janus/`). */
  readonly scopePrefix?: string | undefined
  /** Tenants a multi-tenant issuer may name; empty or absent: any. */
  readonly tenants?: ReadonlyArray<string> | undefined
  /** Accept `http` for this issuer and its JWKS URI on a non-loopback host. Default false. */
  readonly allowInsecureHttp?: boolean | undefined
  /** Tolerance for `exp`, `nbf` and `iat`. Default: the global `clockSkew`. */
  readonly clockSkew?: Duration.Input | undefined
  /** Periodic JWKS refresh. Default: the global `jwksRefreshInterval`. */
  readonly jwksRefreshInterval?: Duration.Input | undefined
}

/** What the operator configures (`config/OAuthVariables.ts` maps the `OAUTH_*` variables onto this). */
export interface OAuthOptions {
  /** Canonical URI of this gateway as a protected resource (RFC 8707), e.g. `https://janus.example.com/mcp`. */
  readonly resource: string
  /** Trusted authorization servers; at least one. */
  readonly authorizationServers: ReadonlyArray<AuthorizationServerOptions>
  /** Scopes required for MCP traffic (tools/list, tools/call). Default `["mcp:tools"]`. */
  readonly toolScopes?: ReadonlyArray<string> | undefined
  /** Scopes required for the admin API. Default `["janus:admin"]`. */
  readonly adminScopes?: ReadonlyArray<string> | undefined
  /** `scopes_supported` of `/mcp`'s RFC 9728 metadata. Default: the tool scopes (advertised form). */
  readonly scopesSupported?: ReadonlyArray<string> | undefined
  /** Other audiences accepted from every issuer besides `resource`. */
  readonly additionalAudiences?: ReadonlyArray<string> | undefined
  /**
   * Whether a virtual server (`/servers/{name}/mcp`) also accepts tokens for
   * `resource` and the additional audiences, besides tokens for its own URL.
   * Default true: such a token opens every tool anyway.
   */
  readonly mcpAudienceOnVirtualServers?: boolean | undefined
  /** `resource_name` of the RFC 9728 metadata. */
  readonly resourceName?: string | undefined
  /** `resource_documentation` of the RFC 9728 metadata. */
  readonly resourceDocumentation?: string | undefined
  /** Allowed JWS algorithms. Default `DEFAULT_ALGORITHMS`. */
  readonly algorithms?: ReadonlyArray<string> | undefined
  /** Tolerance for `exp`, `nbf` and `iat` (each issuer may override it). Default 60 seconds. */
  readonly clockSkew?: Duration.Input | undefined
  /** Periodic JWKS refresh (each issuer may override it). Default 10 minutes. */
  readonly jwksRefreshInterval?: Duration.Input | undefined
  /** At most one on-demand JWKS fetch per issuer within this window. Default 30 seconds. */
  readonly jwksMinRefreshInterval?: Duration.Input | undefined
  /** Timeout of one metadata or JWKS fetch. Default 5 seconds. */
  readonly httpTimeout?: Duration.Input | undefined
  /** Longest token accepted, in characters. Default `DEFAULT_MAX_TOKEN_LENGTH` (16 KiB). */
  readonly maxTokenLength?: number | undefined
  /** Longest lifetime accepted: `exp - iat` (`exp - now` without `iat`). Default 24 hours. */
  readonly maxTokenLifetime?: Duration.Input | undefined
  /** When set, the JWT `typ` header must equal it, e.g. `at+jwt` (RFC 9068 §2.1). */
  readonly requiredTokenType?: string | undefined
  /** Accept `http` issuer, JWKS and resource URIs on non-loopback hosts, for every issuer. Default false. */
  readonly allowInsecureHttp?: boolean | undefined
}

/** A trusted authorization server after validation. */
export interface AuthorizationServer {
  /** The issuer as configured, without a trailing slash: the key of its keys and state. */
  readonly issuer: string
  /** What `authorization_servers` advertises and where metadata is discovered. */
  readonly advertised: string
  readonly template: IssuerTemplate | undefined
  readonly tenants: ReadonlyArray<string>
  readonly jwksUri: string | undefined
  /** The operator's own key set (checked at start), used instead of fetching. */
  readonly jwks: ReadonlyArray<PublicJwk> | undefined
  /** A key-set file (checked at start), re-read on every refresh instead of fetching. */
  readonly jwksFile: string | undefined
  readonly algorithms: ReadonlyArray<SigningAlgorithm>
  /** Scopes a token from this issuer needs for MCP traffic (its own, or the global ones), without prefix. */
  readonly toolScopes: ReadonlyArray<string>
  /** Audiences accepted besides the resource, as configured: the global ones, then the issuer's. */
  readonly audiences: ReadonlyArray<string>
  /** What a token for `/mcp` may carry: the resource, then `audiences`. */
  readonly mcpAudiences: ReadonlyArray<string>
  readonly scopeClaims: ReadonlyArray<string>
  readonly scopePrefix: string | undefined
  readonly allowInsecureHttp: boolean
  readonly clockSkew: Duration.Duration
  readonly jwksRefreshInterval: Duration.Duration
}

/** The validated settings. */
export interface OAuthSettings {
  /** Canonical resource identifier (no trailing slash). */
  readonly resource: string
  /** Origin of `resource`; metadata URLs are built from it, never from the request's Host. */
  readonly origin: string
  /** Path of `resource` (`""` for the origin itself). */
  readonly resourcePath: string
  /** Path under which virtual servers live: `resourcePath` without its final `/mcp`. */
  readonly basePath: string
  readonly authorizationServers: ReadonlyMap<string, AuthorizationServer>
  /** The trusted issuer a token's `iss` names (see `Issuers.ts`). */
  readonly issuerOf: (iss: string) => AuthorizationServer | undefined
  /** `authorization_servers` of the metadata, in configuration order (clients use the first). */
  readonly issuers: ReadonlyArray<string>
  /** The global tool scopes: those of every issuer without its own (`AuthorizationServer.toolScopes`). */
  readonly toolScopes: ReadonlyArray<string>
  readonly adminScopes: ReadonlyArray<string>
  /** The first issuer's tool scopes and the admin scopes as clients request them (its scope prefix), for challenges. */
  readonly advertisedToolScopes: ReadonlyArray<string>
  readonly advertisedAdminScopes: ReadonlyArray<string>
  /** The scope prefix of challenges and metadata: the first issuer's. */
  readonly advertisedScopePrefix: string | undefined
  readonly scopesSupported: ReadonlyArray<string>
  readonly mcpAudienceOnVirtualServers: boolean
  readonly resourceName: string | undefined
  readonly resourceDocumentation: string | undefined
  readonly algorithms: ReadonlyArray<SigningAlgorithm>
  readonly jwksMinRefreshInterval: Duration.Duration
  readonly httpTimeout: Duration.Duration
  readonly maxTokenLength: number
  readonly maxTokenLifetime: Duration.Duration
  readonly requiredTokenType: string | undefined
}

/** The OAuth options are invalid; the message lists every problem. */
export class OAuthConfigError extends Schema.TaggedError<OAuthConfigError>()("OAuthConfigError", {
  problems: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `Invalid OAuth configuration (${this.problems.length} problem${this.problems.length === 1 ? "" : "s"}):\n` +
      this.problems.map((p) => `  - ${p}`).join("\n")
  }
}

const CLAIM_NAME = /^[^\s,]+$/

/** One trusted issuer with the global settings as its defaults; its problems go to `problems`. */
const checkServer = (
  options: AuthorizationServerOptions,
  defaults: {
    readonly algorithms: ReadonlyArray<SigningAlgorithm>
    readonly toolScopes: ReadonlyArray<string>
    readonly resource: string
    readonly audiences: ReadonlyArray<string>
    readonly allowInsecureHttp: boolean
    readonly clockSkew: Duration.Duration
    readonly jwksRefreshInterval: Duration.Duration
  },
  problems: Array<string>
): AuthorizationServer => {
  const configured = options.issuer
  const label = (what: string) => `${what} of ${configured}`
  const allowInsecureHttp = defaults.allowInsecureHttp || options.allowInsecureHttp === true
  const parsed = parseTemplate(configured)
  const template = typeof parsed === "string" ? undefined : parsed
  if (typeof parsed === "string") problems.push(`issuer ${JSON.stringify(configured)}: ${parsed}`)
  // a placeholder is not a valid URL character: check the URL with a sample tenant in its place
  checkUrl(
    "issuer",
    template === undefined ? configured : advertisedIssuer(configured, template, ["tenant"]),
    problems,
    allowInsecureHttp,
    {
      query: false
    }
  )
  if (options.jwksUri !== undefined) {
    checkUrl(label("jwksUri"), options.jwksUri, problems, allowInsecureHttp, { query: true })
  }
  const jwks = checkKeySources(options, label, problems)
  const algorithms = options.algorithms === undefined
    ? defaults.algorithms
    : checkAlgorithms(label("algorithms"), options.algorithms, problems)
  const outside = algorithms.filter((alg) => !defaults.algorithms.includes(alg))
  if (outside.length > 0) problems.push(`${label("algorithms")}: ${outside.join(", ")} not in the global allow-list`)
  const toolScopes = options.toolScopes === undefined
    ? defaults.toolScopes
    : checkScopes(label("toolScopes"), options.toolScopes, problems)
  const scopeClaims = [...new Set(options.scopeClaims ?? DEFAULT_SCOPE_CLAIMS)]
  if (scopeClaims.length === 0) problems.push(`${label("scopeClaims")}: at least one claim is required`)
  for (const claim of scopeClaims) {
    if (!CLAIM_NAME.test(claim)) {
      problems.push(
        `${label("scopeClaims")} ${JSON.stringify(claim)}: expected a claim name such as scp or realm_access.roles`
      )
    }
  }
  const scopePrefix = options.scopePrefix === "" ? undefined : options.scopePrefix
  if (scopePrefix !== undefined && !SCOPE_TOKEN.test(scopePrefix)) {
    problems.push(
      `${label("scopePrefix")} ${
        JSON.stringify(scopePrefix)
      }: expected the start of a scope token (no space, quote or backslash)`
    )
  }
  const tenants = [...new Set(options.tenants ?? [])]
  if (tenants.length > 0 && template === undefined) {
    problems.push(`${label("tenants")}: only a multi-tenant issuer (with a placeholder such as {tenantid}) has tenants`)
  }
  for (const tenant of tenants) {
    if (!/^[A-Za-z0-9._~-]+$/.test(tenant)) {
      problems.push(
        `${label("tenants")} ${JSON.stringify(tenant)}: expected one path segment (letters, digits, . _ ~ -)`
      )
    }
  }
  const audiences = [...new Set([...defaults.audiences, ...(options.audiences ?? [])])]
  for (const audience of options.audiences ?? []) {
    if (audience.trim() === "" || /\s/.test(audience)) {
      problems.push(`${label("audiences")} ${JSON.stringify(audience)}: expected an audience value without spaces`)
    }
  }
  return {
    issuer: normalizeIssuer(configured),
    advertised: advertisedIssuer(configured, template, tenants),
    template,
    tenants,
    jwksUri: options.jwksUri,
    jwks,
    jwksFile: options.jwksFile,
    algorithms,
    toolScopes,
    audiences,
    mcpAudiences: [...new Set([defaults.resource, ...audiences])],
    scopeClaims,
    scopePrefix,
    allowInsecureHttp,
    clockSkew: checkDuration(label("clockSkew"), options.clockSkew, defaults.clockSkew, problems, { zero: true }),
    jwksRefreshInterval: checkDuration(
      label("jwksRefreshInterval"),
      options.jwksRefreshInterval,
      defaults.jwksRefreshInterval,
      problems
    )
  }
}

/**
 * Validates options, reporting every problem at once.
 */
export const resolveOAuthOptions = (options: OAuthOptions): Effect.Effect<OAuthSettings, OAuthConfigError> =>
  Effect.suspend(() => {
    const problems: Array<string> = []
    const allowInsecureHttp = options.allowInsecureHttp === true
    const resourceUrl = checkUrl("resource", options.resource, problems, allowInsecureHttp, { query: true })
    const resource = canonicalResource(options.resource)
    const origin = resourceUrl?.origin ?? ""
    const resourcePath = resourceUrl ? new URL(resource).pathname : "/"
    const normalizedPath = resourcePath === "/" ? "" : resourcePath

    const algorithms = checkAlgorithms("algorithms", options.algorithms ?? DEFAULT_ALGORITHMS, problems)
    const clockSkew = checkDuration("clockSkew", options.clockSkew, Duration.seconds(60), problems, { zero: true })
    const jwksRefreshInterval = checkDuration(
      "jwksRefreshInterval",
      options.jwksRefreshInterval,
      Duration.minutes(10),
      problems
    )
    const jwksMinRefreshInterval = checkDuration(
      "jwksMinRefreshInterval",
      options.jwksMinRefreshInterval,
      Duration.seconds(30),
      problems
    )
    const httpTimeout = checkDuration("httpTimeout", options.httpTimeout, Duration.seconds(5), problems)
    const globalAudiences = options.additionalAudiences ?? []
    if (Duration.isGreaterThan(jwksMinRefreshInterval, jwksRefreshInterval)) {
      problems.push("jwksMinRefreshInterval: must not exceed jwksRefreshInterval")
    }

    const toolScopes = checkScopes("toolScopes", options.toolScopes ?? DEFAULT_TOOL_SCOPES, problems)
    if (options.authorizationServers.length === 0) {
      problems.push("authorizationServers: at least one issuer is required")
    }
    const servers = new Map<string, AuthorizationServer>()
    for (const raw of options.authorizationServers) {
      const server = checkServer(raw, {
        resource,
        algorithms,
        toolScopes,
        audiences: globalAudiences,
        allowInsecureHttp,
        clockSkew,
        jwksRefreshInterval
      }, problems)
      if (servers.has(server.issuer)) problems.push(`issuer ${JSON.stringify(raw.issuer)}: listed twice`)
      servers.set(server.issuer, server)
      if (
        raw.jwksRefreshInterval !== undefined &&
        Duration.isGreaterThan(jwksMinRefreshInterval, server.jwksRefreshInterval)
      ) {
        problems.push(
          `jwksRefreshInterval of ${raw.issuer}: must not be shorter than jwksMinRefreshInterval (${
            Duration.format(jwksMinRefreshInterval)
          })`
        )
      }
    }

    const adminScopes = checkScopes("adminScopes", options.adminScopes ?? DEFAULT_ADMIN_SCOPES, problems)
    const first = [...servers.values()][0]
    const firstPrefix = first?.scopePrefix
    const advertisedToolScopes = advertiseScopes(first?.toolScopes ?? toolScopes, firstPrefix)
    const advertisedAdminScopes = advertiseScopes(adminScopes, firstPrefix)
    const scopesSupported = options.scopesSupported === undefined
      ? advertisedToolScopes
      : checkScopes("scopesSupported", options.scopesSupported, problems)

    if (options.resourceDocumentation !== undefined) {
      checkUrl("resourceDocumentation", options.resourceDocumentation, problems, true, { query: true })
    }
    const maxTokenLength = options.maxTokenLength ?? DEFAULT_MAX_TOKEN_LENGTH
    if (!Number.isInteger(maxTokenLength) || maxTokenLength < MIN_TOKEN_LENGTH) {
      problems.push(`maxTokenLength ${maxTokenLength}: expected an integer of at least ${MIN_TOKEN_LENGTH}`)
    }
    if (options.requiredTokenType !== undefined && !TOKEN_TYPE.test(options.requiredTokenType)) {
      problems.push(
        `requiredTokenType ${
          JSON.stringify(options.requiredTokenType)
        }: expected a media type without spaces, such as at+jwt`
      )
    }

    const maxTokenLifetime = checkDuration("maxTokenLifetime", options.maxTokenLifetime, Duration.hours(24), problems)

    if (problems.length > 0) return Effect.fail(new OAuthConfigError({ problems }))
    const list = [...servers.values()]
    return Effect.succeed<OAuthSettings>({
      resource,
      origin,
      resourcePath: normalizedPath,
      basePath: normalizedPath.replace(/\/mcp$/, ""),
      authorizationServers: servers,
      issuerOf: matcher(list),
      issuers: list.map((server) => server.advertised),
      toolScopes,
      adminScopes,
      advertisedToolScopes,
      advertisedAdminScopes,
      advertisedScopePrefix: firstPrefix,
      scopesSupported,
      mcpAudienceOnVirtualServers: options.mcpAudienceOnVirtualServers ?? true,
      resourceName: options.resourceName,
      resourceDocumentation: options.resourceDocumentation,
      algorithms,
      jwksMinRefreshInterval,
      httpTimeout,
      maxTokenLength,
      maxTokenLifetime,
      requiredTokenType: options.requiredTokenType
    })
  })

/** The validated OAuth settings as a service. */
export class OAuthConfig extends Context.Service<OAuthConfig, OAuthSettings>()("@janus/gateway/oauth/OAuthConfig") {
  /** Validates `options`; fails with every problem at once. */
  static readonly layer = (options: OAuthOptions): Layer.Layer<OAuthConfig, OAuthConfigError> =>
    Layer.effect(OAuthConfig, Effect.map(resolveOAuthOptions(options), OAuthConfig.of))
}
