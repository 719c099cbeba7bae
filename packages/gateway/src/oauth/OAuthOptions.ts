/**
 * Options of the OAuth 2.1 resource server (`OAUTH_ENABLED=true`) and the
 * validated settings every other OAuth module reads (`OAuthConfig`).
 *
 * **Rules**
 *
 * - Trusted authorization servers are listed by issuer identifier (RFC 8414
 *   §2): an absolute `https` URL without query or fragment. A token's `iss`
 *   must equal one of them exactly (RFC 7519 §4.1.1, RFC 9068 §4).
 * - Each issuer's JWKS URI is either given or discovered through its RFC 8414
 *   metadata (`/.well-known/oauth-authorization-server`), falling back to
 *   OpenID Connect Discovery (`/.well-known/openid-configuration`).
 * - The resource identifier of this gateway is its canonical URI (RFC 8707 §2,
 *   MCP authorization "Canonical Server URI"): absolute, no fragment, lowercase
 *   scheme and host, no trailing slash. Tokens must carry it in `aud`.
 * - Only asymmetric JWS algorithms may be allowed (RFC 8725 §3.1, §3.2): `none`
 *   and the HMAC family (`HS*`) are refused at start, so a public key can never
 *   be used as an HMAC secret.
 * - Scope values follow the scope-token syntax of RFC 6749 §3.3, which also
 *   keeps them safe inside a `WWW-Authenticate` quoted-string (RFC 6750 §3).
 * - Plain `http` is accepted for issuers, JWKS URIs and the resource only on a
 *   loopback host (127.0.0.0/8, ::1, localhost), or everywhere with
 *   `allowInsecureHttp` (for a cluster-internal authorization server).
 *
 * Every mistake is reported at once, one line each, in `OAuthConfigError`.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"

/** Every JWS algorithm the resource server can accept; all asymmetric. */
export const SUPPORTED_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519"
] as const

/** One asymmetric JWS algorithm (RFC 7518 §3.1, RFC 8037, RFC 9864). */
export type SigningAlgorithm = typeof SUPPORTED_ALGORITHMS[number]

/** The default allow-list: all of `SUPPORTED_ALGORITHMS`. */
export const DEFAULT_ALGORITHMS: ReadonlyArray<SigningAlgorithm> = SUPPORTED_ALGORITHMS

/** The scope a token needs to list and call tools. */
export const DEFAULT_TOOL_SCOPES: ReadonlyArray<string> = ["mcp:tools"]

/** The scope a token needs for the admin API (`/api/v1`). */
export const DEFAULT_ADMIN_SCOPES: ReadonlyArray<string> = ["janus:admin"]

/** One trusted authorization server. */
export interface AuthorizationServerOptions {
  /** Issuer identifier, compared exactly with a token's `iss`. */
  readonly issuer: string
  /** JWKS URI; when absent it is discovered from the issuer's metadata (RFC 8414, then OpenID Discovery). */
  readonly jwksUri?: string | undefined
  /** Narrows the global algorithm allow-list for this issuer. */
  readonly algorithms?: ReadonlyArray<string> | undefined
}

/** What the operator configures (the lead maps `OAUTH_*` variables onto this). */
export interface OAuthOptions {
  /** Canonical URI of this gateway as a protected resource (RFC 8707), e.g. `https://janus.example.com/mcp`. */
  readonly resource: string
  /** Trusted authorization servers; at least one. */
  readonly authorizationServers: ReadonlyArray<AuthorizationServerOptions>
  /** Scopes required for MCP traffic (tools/list, tools/call). Default `["mcp:tools"]`. */
  readonly toolScopes?: ReadonlyArray<string> | undefined
  /** Scopes required for the admin API. Default `["janus:admin"]`. */
  readonly adminScopes?: ReadonlyArray<string> | undefined
  /** `scopes_supported` of the RFC 9728 metadata. Default: tool scopes then admin scopes. */
  readonly scopesSupported?: ReadonlyArray<string> | undefined
  /** Other audiences accepted besides `resource` (e.g. virtual-server URIs). */
  readonly additionalAudiences?: ReadonlyArray<string> | undefined
  /**
   * Resource paths that get a path-form metadata document
   * (`/.well-known/oauth-protected-resource<path>`). The path of `resource`
   * is always included. A path ending in `/*` matches any sub-path.
   */
  readonly resourcePaths?: ReadonlyArray<string> | undefined
  /** `resource_name` of the RFC 9728 metadata. */
  readonly resourceName?: string | undefined
  /** `resource_documentation` of the RFC 9728 metadata. */
  readonly resourceDocumentation?: string | undefined
  /** Allowed JWS algorithms. Default `DEFAULT_ALGORITHMS`. */
  readonly algorithms?: ReadonlyArray<string> | undefined
  /** Tolerance for `exp`, `nbf` and `iat`. Default 60 seconds. */
  readonly clockSkew?: Duration.Input | undefined
  /** Periodic JWKS refresh. Default 10 minutes. */
  readonly jwksRefreshInterval?: Duration.Input | undefined
  /** At most one on-demand JWKS fetch per issuer within this window. Default 30 seconds. */
  readonly jwksMinRefreshInterval?: Duration.Input | undefined
  /** Timeout of one metadata or JWKS fetch. Default 5 seconds. */
  readonly httpTimeout?: Duration.Input | undefined
  /** Longest token accepted, in characters. Default 8192. */
  readonly maxTokenLength?: number | undefined
  /** When set, the JWT `typ` header must equal it, e.g. `at+jwt` (RFC 9068 §2.1). */
  readonly requiredTokenType?: string | undefined
  /** Accept `http` issuer, JWKS and resource URIs on non-loopback hosts. Default false. */
  readonly allowInsecureHttp?: boolean | undefined
}

/** A trusted authorization server after validation. */
export interface AuthorizationServer {
  readonly issuer: string
  readonly jwksUri: string | undefined
  readonly algorithms: ReadonlyArray<SigningAlgorithm>
}

/** A resource path with a path-form metadata document. */
export interface ResourcePath {
  /** The path, without the trailing `/*` of a prefix. */
  readonly path: string
  /** True when every sub-path of `path` is a resource too. */
  readonly prefix: boolean
}

/** The validated settings. */
export interface OAuthSettings {
  /** Canonical resource identifier (no trailing slash). */
  readonly resource: string
  /** Origin of `resource`; metadata URLs are built from it, never from the request's Host. */
  readonly origin: string
  /** Path of `resource` (`""` for the origin itself). */
  readonly resourcePath: string
  /** Canonical audiences accepted by default: `resource` and `additionalAudiences`. */
  readonly audiences: ReadonlyArray<string>
  readonly authorizationServers: ReadonlyMap<string, AuthorizationServer>
  readonly issuers: ReadonlyArray<string>
  readonly toolScopes: ReadonlyArray<string>
  readonly adminScopes: ReadonlyArray<string>
  readonly scopesSupported: ReadonlyArray<string>
  readonly resourcePaths: ReadonlyArray<ResourcePath>
  readonly resourceName: string | undefined
  readonly resourceDocumentation: string | undefined
  readonly algorithms: ReadonlyArray<SigningAlgorithm>
  readonly clockSkew: Duration.Duration
  readonly jwksRefreshInterval: Duration.Duration
  readonly jwksMinRefreshInterval: Duration.Duration
  readonly httpTimeout: Duration.Duration
  readonly maxTokenLength: number
  readonly requiredTokenType: string | undefined
  readonly allowInsecureHttp: boolean
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

const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

/** True for `localhost`, `127.0.0.0/8` and `::1`. */
export const isLoopbackHost = (hostname: string): boolean =>
  hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" ||
  /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)

/**
 * The canonical form of a resource identifier or audience (RFC 8707 §2, RFC
 * 3986 §6): lowercase scheme and host, default port dropped, no fragment, no
 * trailing slash. Values that are not http(s) URLs are returned unchanged, so
 * they compare exactly.
 */
export const canonicalResource = (value: string): string => {
  if (!/^https?:\/\//i.test(value)) return value
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return value
  }
  const path = url.pathname.endsWith("/") ? url.pathname.slice(0, -1) : url.pathname
  return `${url.origin}${path}${url.search}`
}

/** Two resource identifiers name the same resource once both are canonical. */
export const sameResource = (a: string, b: string): boolean => canonicalResource(a) === canonicalResource(b)

const checkUrl = (
  label: string,
  value: string,
  problems: Array<string>,
  allowInsecureHttp: boolean,
  options: { readonly query: boolean }
): URL | undefined => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    problems.push(`${label} ${JSON.stringify(value)}: expected an absolute URL`)
    return undefined
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    problems.push(`${label} ${JSON.stringify(value)}: expected an https URL`)
    return undefined
  }
  if (url.protocol === "http:" && !allowInsecureHttp && !isLoopbackHost(url.hostname)) {
    problems.push(`${label} ${JSON.stringify(value)}: expected https (http only on a loopback host)`)
  }
  if (url.hash !== "" || value.includes("#")) {
    problems.push(`${label} ${JSON.stringify(value)}: must not have a fragment`)
  }
  if (!options.query && url.search !== "") problems.push(`${label} ${JSON.stringify(value)}: must not have a query`)
  if (url.username !== "" || url.password !== "") {
    problems.push(`${label}: must not carry credentials`)
  }
  return url
}

const checkScopes = (label: string, scopes: ReadonlyArray<string>, problems: Array<string>): ReadonlyArray<string> => {
  for (const scope of scopes) {
    if (!SCOPE_TOKEN.test(scope)) {
      problems.push(
        `${label} ${
          JSON.stringify(scope)
        }: expected a scope token (RFC 6749 §3.3: printable ASCII, no space, quote or backslash)`
      )
    }
  }
  return [...new Set(scopes)]
}

const checkAlgorithms = (label: string, algorithms: ReadonlyArray<string>, problems: Array<string>) => {
  const result: Array<SigningAlgorithm> = []
  for (const alg of algorithms) {
    if ((SUPPORTED_ALGORITHMS as ReadonlyArray<string>).includes(alg)) {
      if (!result.includes(alg as SigningAlgorithm)) result.push(alg as SigningAlgorithm)
    } else if (alg.toLowerCase() === "none") {
      problems.push(`${label} "none": unsigned tokens are never accepted`)
    } else if (/^HS/i.test(alg)) {
      problems.push(`${label} ${JSON.stringify(alg)}: HMAC algorithms are never accepted by a resource server`)
    } else {
      problems.push(`${label} ${JSON.stringify(alg)}: expected one of ${SUPPORTED_ALGORITHMS.join(", ")}`)
    }
  }
  if (algorithms.length === 0) problems.push(`${label}: at least one algorithm is required`)
  return result
}

const checkDuration = (
  label: string,
  input: Duration.Input | undefined,
  fallback: Duration.Duration,
  problems: Array<string>
): Duration.Duration => {
  if (input === undefined) return fallback
  let duration: Duration.Duration
  try {
    duration = Duration.fromInputUnsafe(input)
  } catch {
    problems.push(`${label}: expected a duration`)
    return fallback
  }
  const millis = Duration.toMillis(duration)
  if (!Number.isFinite(millis)) problems.push(`${label}: expected a finite duration`)
  else if (label === "clockSkew" ? millis < 0 : millis <= 0) {
    problems.push(`${label}: expected a ${label === "clockSkew" ? "non-negative" : "positive"} duration`)
  }
  return duration
}

const checkResourcePath = (raw: string, problems: Array<string>): ResourcePath | undefined => {
  const prefix = raw.endsWith("/*")
  const path = prefix ? raw.slice(0, -2) : raw.replace(/\/$/, "")
  if (!raw.startsWith("/") || /[?#*\s:]/.test(path) || path.includes("//")) {
    problems.push(`resourcePaths ${JSON.stringify(raw)}: expected an absolute path such as /mcp or /mcp/servers/*`)
    return undefined
  }
  return { path, prefix }
}

/**
 * Validates options, reporting every problem at once.
 */
export const resolve = (options: OAuthOptions): Effect.Effect<OAuthSettings, OAuthConfigError> =>
  Effect.suspend(() => {
    const problems: Array<string> = []
    const allowInsecureHttp = options.allowInsecureHttp === true
    const resourceUrl = checkUrl("resource", options.resource, problems, allowInsecureHttp, { query: true })
    const resource = canonicalResource(options.resource)
    const origin = resourceUrl?.origin ?? ""
    const resourcePath = resourceUrl ? new URL(resource).pathname : "/"
    const normalizedPath = resourcePath === "/" ? "" : resourcePath

    const algorithms = checkAlgorithms("algorithms", options.algorithms ?? DEFAULT_ALGORITHMS, problems)
    const servers = new Map<string, AuthorizationServer>()
    if (options.authorizationServers.length === 0) {
      problems.push("authorizationServers: at least one issuer is required")
    }
    for (const server of options.authorizationServers) {
      checkUrl("issuer", server.issuer, problems, allowInsecureHttp, { query: false })
      if (server.jwksUri !== undefined) {
        checkUrl(`jwksUri of ${server.issuer}`, server.jwksUri, problems, allowInsecureHttp, { query: true })
      }
      const own = server.algorithms === undefined
        ? algorithms
        : checkAlgorithms(`algorithms of ${server.issuer}`, server.algorithms, problems)
      const outside = own.filter((alg) => !algorithms.includes(alg))
      if (outside.length > 0) {
        problems.push(`algorithms of ${server.issuer}: ${outside.join(", ")} not in the global allow-list`)
      }
      if (servers.has(server.issuer)) problems.push(`issuer ${JSON.stringify(server.issuer)}: listed twice`)
      servers.set(server.issuer, { issuer: server.issuer, jwksUri: server.jwksUri, algorithms: own })
    }

    const toolScopes = checkScopes("toolScopes", options.toolScopes ?? DEFAULT_TOOL_SCOPES, problems)
    const adminScopes = checkScopes("adminScopes", options.adminScopes ?? DEFAULT_ADMIN_SCOPES, problems)
    const scopesSupported = options.scopesSupported === undefined
      ? [...new Set([...toolScopes, ...adminScopes])]
      : checkScopes("scopesSupported", options.scopesSupported, problems)
    const audiences = [...new Set([resource, ...(options.additionalAudiences ?? []).map(canonicalResource)])]

    const resourcePaths: Array<ResourcePath> = []
    const seen = new Set<string>()
    const addPath = (p: ResourcePath | undefined) => {
      if (p === undefined || p.path === "" && !p.prefix) return
      const key = `${p.path}${p.prefix ? "/*" : ""}`
      if (!seen.has(key)) {
        seen.add(key)
        resourcePaths.push(p)
      }
    }
    if (normalizedPath !== "") addPath({ path: normalizedPath, prefix: false })
    for (const raw of options.resourcePaths ?? []) addPath(checkResourcePath(raw, problems))

    if (options.resourceDocumentation !== undefined) {
      checkUrl("resourceDocumentation", options.resourceDocumentation, problems, true, { query: true })
    }

    const clockSkew = checkDuration("clockSkew", options.clockSkew, Duration.seconds(60), problems)
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
    if (Duration.isGreaterThan(jwksMinRefreshInterval, jwksRefreshInterval)) {
      problems.push("jwksMinRefreshInterval: must not exceed jwksRefreshInterval")
    }
    const maxTokenLength = options.maxTokenLength ?? 8192
    if (!Number.isInteger(maxTokenLength) || maxTokenLength < 256) {
      problems.push(`maxTokenLength ${maxTokenLength}: expected an integer of at least 256`)
    }

    if (problems.length > 0) return Effect.fail(new OAuthConfigError({ problems }))
    return Effect.succeed<OAuthSettings>({
      resource,
      origin,
      resourcePath: normalizedPath,
      audiences,
      authorizationServers: servers,
      issuers: [...servers.keys()],
      toolScopes,
      adminScopes,
      scopesSupported,
      resourcePaths,
      resourceName: options.resourceName,
      resourceDocumentation: options.resourceDocumentation,
      algorithms,
      clockSkew,
      jwksRefreshInterval,
      jwksMinRefreshInterval,
      httpTimeout,
      maxTokenLength,
      requiredTokenType: options.requiredTokenType,
      allowInsecureHttp
    })
  })

/** The validated OAuth settings as a service. */
export class OAuthConfig extends Context.Service<OAuthConfig, OAuthSettings>()("@janus/gateway/oauth/OAuthConfig") {
  /** Validates `options`; fails with every problem at once. */
  static readonly layer = (options: OAuthOptions): Layer.Layer<OAuthConfig, OAuthConfigError> =>
    Layer.effect(OAuthConfig, Effect.map(resolve(options), OAuthConfig.of))
}
