/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for the gateway, which is
 * how MCP clients find the authorization servers to get a token from.
 *
 * **Rules**
 *
 * - Served at `/.well-known/oauth-protected-resource` (root form) and
 *   `/.well-known/oauth-protected-resource/mcp` for `/mcp`, and at
 *   `/.well-known/oauth-protected-resource/servers/{name}/mcp` for each
 *   virtual server (RFC 9728 §3.1: the well-known suffix goes between host
 *   and path; `Resources.ts` says which resources there are). MCP clients try
 *   the path form first, then the root form, which describes `/mcp`.
 * - The document's `resource` is the resource the URL names (RFC 9728 §3.3:
 *   the client checks it against the URL it used). The origin always comes
 *   from configuration, never from the request's `Host` header, so every
 *   replica answers the same document; an unknown virtual server is 404.
 * - Fields: `resource`, `authorization_servers` (the trusted issuers),
 *   `scopes_supported` (the tool scopes: the admin scopes belong to the admin
 *   API, which no MCP client should be led to ask for),
 *   `bearer_methods_supported: ["header"]` (tokens in the
 *   query or body are not accepted), and `resource_name` /
 *   `resource_documentation` when configured.
 * - Public, cacheable, and readable cross-origin (browser-based MCP clients),
 *   like the MCP SDK's metadata handler. `GET` and `OPTIONS` only.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { OAuthConfig, type OAuthSettings } from "./OAuthOptions.ts"
import {
  mcpResource,
  type ProtectedResource,
  virtualServerPath,
  virtualServerResource,
  WELL_KNOWN_PATH
} from "./Resources.ts"

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

const notFound = HttpServerResponse.empty({ status: 404, headers: { "cache-control": "no-store" } })

const documentResponse = (settings: OAuthSettings, resource: ProtectedResource) =>
  HttpServerResponse.jsonUnsafe(documentFor(settings, resource.resource), { headers })

/** How the routes learn which virtual servers exist. */
export interface MetadataRoutesOptions {
  /**
   * Whether the virtual server `name` exists; a server that does not gets a
   * 404. Absent, or failing (the configuration cannot be read): every name
   * is answered, since the document depends on the name only.
   */
  readonly virtualServerExists?: ((name: string) => Effect.Effect<boolean, unknown>) | undefined
}

/**
 * Mounts the metadata routes on the `HttpRouter`: the root form and the path
 * form of `/mcp`, and the path form of every virtual server.
 */
export const makeProtectedResourceMetadataRoutes = (
  options: MetadataRoutesOptions = {}
): Layer.Layer<never, never, HttpRouter.HttpRouter | OAuthConfig> =>
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    const settings = yield* OAuthConfig
    const mcp = documentResponse(settings, mcpResource(settings))
    yield* router.add("GET", WELL_KNOWN_PATH, mcp)
    yield* router.add("OPTIONS", WELL_KNOWN_PATH, preflight)
    if (settings.resourcePath !== "") {
      yield* router.add("GET", `${WELL_KNOWN_PATH}${settings.resourcePath}`, mcp)
      yield* router.add("OPTIONS", `${WELL_KNOWN_PATH}${settings.resourcePath}`, preflight)
    }
    const route = `${WELL_KNOWN_PATH}${virtualServerPath(settings, ":name")}` as const
    const exists = options.virtualServerExists
    yield* router.add(
      "GET",
      route,
      Effect.gen(function*() {
        const name = (yield* HttpRouter.params).name ?? ""
        if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) return notFound
        if (exists !== undefined && !(yield* Effect.orElseSucceed(exists(name), () => true))) return notFound
        return documentResponse(settings, virtualServerResource(settings, name))
      })
    )
    yield* router.add("OPTIONS", route, preflight)
  }))

/** The metadata routes, answering for any well-formed virtual-server name. */
export const ProtectedResourceMetadataRoutes: Layer.Layer<never, never, HttpRouter.HttpRouter | OAuthConfig> =
  makeProtectedResourceMetadataRoutes()
