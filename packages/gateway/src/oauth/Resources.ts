/**
 * The protected resources of the gateway (RFC 8707, RFC 9728): `/mcp` and
 * each virtual server's `/servers/{name}/mcp`.
 *
 * **Rules**
 *
 * - `/mcp` is the configured resource (`OAUTH_RESOURCE`, its public URL). A
 *   virtual server is a resource of its own, at the same origin and base
 *   path: `<origin><base>/servers/{name}/mcp`, where the base is the
 *   resource's path without its final `/mcp` (behind a proxy that mounts
 *   Janus under a prefix, the prefix).
 * - A request belongs to the virtual server whose `/servers/{name}/...` path
 *   it uses (`mcp`, and the legacy `sse` and `messages`), and to `/mcp`
 *   otherwise (the admin API included). Its challenge points at that
 *   resource's metadata: `<origin>/.well-known/oauth-protected-resource<path>`
 *   (RFC 9728 §3.1), built from configuration, never from the `Host` header.
 * - Audiences accepted: for `/mcp`, the resource and the issuer's additional
 *   audiences; for a virtual server, its own URL, plus the `/mcp` ones when
 *   `mcpAudienceOnVirtualServers` (default true: a token for `/mcp` already
 *   opens every tool). A token for one virtual server is accepted on no other
 *   resource, so a client that got it for one server cannot replay it at
 *   another (RFC 8707 §1, RFC 9068 §4).
 * - Audiences are compared as the exact strings listed here (RFC 7519
 *   §4.1.3): the resource as the metadata advertises it, the configured
 *   audiences as written; never after URL canonicalisation.
 *
 * @since 0.1.0
 */
import type { AuthorizationServer, OAuthSettings } from "./OAuthOptions.ts"

/** The well-known path of RFC 9728. */
export const WELL_KNOWN_PATH = "/.well-known/oauth-protected-resource"

/** A protected resource of the gateway. */
export interface ProtectedResource {
  /** The resource identifier (canonical URL). */
  readonly resource: string
  /** Its path (`""` for an origin-only resource). */
  readonly path: string
  /** The virtual server it is, if any. */
  readonly virtualServer: string | undefined
}

// The names of virtual servers (storage's ResourceName): no encoding questions in URLs.
const VIRTUAL_SERVER = /\/servers\/([A-Za-z0-9][A-Za-z0-9_.-]{0,63})\/(?:mcp|sse|messages)\/?$/

/** The path of the virtual server `name`'s MCP endpoint. */
export const virtualServerPath = (settings: OAuthSettings, name: string): string =>
  `${settings.basePath}/servers/${name}/mcp`

/** The resource `/mcp`. */
export const mcpResource = (settings: OAuthSettings): ProtectedResource => ({
  resource: settings.resource,
  path: settings.resourcePath,
  virtualServer: undefined
})

/** The resource of the virtual server `name`. */
export const virtualServerResource = (settings: OAuthSettings, name: string): ProtectedResource => {
  const path = virtualServerPath(settings, name)
  return { resource: `${settings.origin}${path}`, path, virtualServer: name }
}

/** The resource a request to `url` (a path, with or without query) is for. */
export const resourceOf = (settings: OAuthSettings, url: string | undefined): ProtectedResource => {
  if (url === undefined) return mcpResource(settings)
  const path = url.split("?")[0]!
  const name = VIRTUAL_SERVER.exec(path)?.[1]
  return name === undefined ? mcpResource(settings) : virtualServerResource(settings, name)
}

/** The RFC 9728 metadata URL of `resource`. */
export const metadataUrlOf = (settings: OAuthSettings, resource: ProtectedResource): string =>
  `${settings.origin}${WELL_KNOWN_PATH}${resource.path}`

/**
 * The metadata URL to advertise in a challenge (`resource_metadata`) for a
 * request to `requestUrl`: that of the resource the request is for.
 */
export const metadataUrl = (settings: OAuthSettings, requestUrl?: string): string =>
  metadataUrlOf(settings, resourceOf(settings, requestUrl))

/**
 * The audiences a token from `server` may carry to be accepted for
 * `resource` (canonical, as `resourceOf` gives it; default `/mcp`).
 */
export const acceptedAudiences = (
  settings: OAuthSettings,
  server: AuthorizationServer,
  resource: string | undefined
): ReadonlyArray<string> => {
  if (resource === undefined || resource === settings.resource) return server.mcpAudiences
  return settings.mcpAudienceOnVirtualServers ? [resource, ...server.mcpAudiences] : [resource]
}
