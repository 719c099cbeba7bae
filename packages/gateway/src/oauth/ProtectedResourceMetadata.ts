/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for the gateway, which is
 * how MCP clients find the authorization servers to get a token from.
 *
 * **Rules**
 *
 * - Served at `/.well-known/oauth-protected-resource` (root form) and, for
 *   each resource path, at `/.well-known/oauth-protected-resource<path>` (RFC
 *   9728 §3.1: the well-known suffix goes between host and path), e.g.
 *   `/.well-known/oauth-protected-resource/mcp`. MCP clients try the path form
 *   first, then the root form.
 * - The document's `resource` is the resource identifier the client used
 *   (RFC 9728 §3.3): origin of the configured resource plus the path. The root
 *   form answers the configured canonical resource. The origin always comes
 *   from configuration, never from the request's `Host` header.
 * - Fields: `resource`, `authorization_servers` (the trusted issuers),
 *   `scopes_supported`, `bearer_methods_supported: ["header"]` (tokens in the
 *   query or body are not accepted), and `resource_name` /
 *   `resource_documentation` when configured.
 * - Public, cacheable, and readable cross-origin (browser-based MCP clients),
 *   like the MCP SDK's metadata handler. `GET` and `OPTIONS` only.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { OAuthConfig, type OAuthSettings } from "./OAuthOptions.ts"

/** The well-known path of RFC 9728. */
export const WELL_KNOWN_PATH = "/.well-known/oauth-protected-resource"

/** An RFC 9728 metadata document. */
export interface ProtectedResourceMetadataDocument {
  readonly resource: string
  readonly authorization_servers: ReadonlyArray<string>
  readonly scopes_supported: ReadonlyArray<string>
  readonly bearer_methods_supported: ReadonlyArray<"header">
  readonly resource_name?: string
  readonly resource_documentation?: string
}

/** The metadata document describing `resource`. */
export const documentFor = (settings: OAuthSettings, resource: string): ProtectedResourceMetadataDocument => ({
  resource,
  authorization_servers: settings.issuers,
  scopes_supported: settings.scopesSupported,
  bearer_methods_supported: ["header"],
  ...(settings.resourceName === undefined ? {} : { resource_name: settings.resourceName }),
  ...(settings.resourceDocumentation === undefined ? {} : { resource_documentation: settings.resourceDocumentation })
})

/**
 * The configured resource path that covers `requestPath` (exactly, or by a
 * `/*` prefix), or `undefined` when none does.
 */
export const resourcePathFor = (settings: OAuthSettings, requestPath: string): string | undefined => {
  const path = requestPath.split("?")[0]!.replace(/\/+$/, "")
  for (const entry of settings.resourcePaths) {
    if (!entry.prefix && entry.path === path) return path
  }
  for (const entry of settings.resourcePaths) {
    if (entry.prefix && path.startsWith(`${entry.path}/`)) return path
  }
  return undefined
}

/**
 * The metadata URL to advertise in a challenge (`resource_metadata`) for a
 * request to `requestPath`: the path form when the path is a configured
 * resource, else the root form. Built from the configured origin.
 */
export const metadataUrl = (settings: OAuthSettings, requestPath?: string): string => {
  const path = requestPath === undefined ? settings.resourcePath : resourcePathFor(settings, requestPath) ?? ""
  return `${settings.origin}${WELL_KNOWN_PATH}${path}`
}

const headers = {
  "cache-control": "public, max-age=300",
  "access-control-allow-origin": "*"
}

const preflight = HttpServerResponse.empty({
  status: 204,
  headers: {
    ...headers,
    "access-control-allow-methods": "GET, OPTIONS",
    "access-control-allow-headers": "*",
    "access-control-max-age": "86400"
  }
})

const documentResponse = (settings: OAuthSettings, resource: string) =>
  HttpServerResponse.jsonUnsafe(documentFor(settings, resource), { headers })

/**
 * Mounts the metadata routes on the `HttpRouter`: the root form, and the path
 * form of every configured resource path (a `/*` entry covers its sub-paths).
 */
export const ProtectedResourceMetadataRoutes: Layer.Layer<never, never, HttpRouter.HttpRouter | OAuthConfig> =
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    const settings = yield* OAuthConfig
    yield* router.add("GET", WELL_KNOWN_PATH, documentResponse(settings, settings.resource))
    yield* router.add("OPTIONS", WELL_KNOWN_PATH, preflight)
    for (const entry of settings.resourcePaths) {
      if (entry.prefix) {
        const route = `${WELL_KNOWN_PATH}${entry.path}/*` as const
        yield* router.add("GET", route, (request: HttpServerRequest.HttpServerRequest) => {
          const path = request.url.split("?")[0]!.slice(WELL_KNOWN_PATH.length).replace(/\/+$/, "")
          return Effect.succeed(
            resourcePathFor(settings, path) === undefined || /[^A-Za-z0-9\-._~/%!$&'()*+,;=:@]/.test(path)
              ? HttpServerResponse.empty({ status: 404 })
              : documentResponse(settings, `${settings.origin}${path}`)
          )
        })
        yield* router.add("OPTIONS", route, preflight)
      } else {
        const route = `${WELL_KNOWN_PATH}${entry.path}` as const
        yield* router.add("GET", route, documentResponse(settings, `${settings.origin}${entry.path}`))
        yield* router.add("OPTIONS", route, preflight)
      }
    }
  }))
