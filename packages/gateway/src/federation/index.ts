/**
 * Federation of upstream MCP servers (issue #7): the federated catalog, its
 * health, the upstream client, the composite catalog and virtual-server
 * membership.
 *
 * @since 0.1.0
 */
export { type RelayHooks, RelayRefused, UpstreamRelay } from "../mcp/Relay.ts"
export * as CompositeCatalog from "./CompositeCatalog.ts"
export * from "./Errors.ts"
export {
  type ConnectionOverrides,
  exposedName,
  FederatedCatalog,
  type FederationOptions,
  ORIGIN_META,
  type ToolOrigin,
  UpstreamHealth,
  upstreamHealthy,
  type UpstreamState,
  type UpstreamStatus
} from "./FederatedCatalog.ts"
export { HeldCalls } from "./HeldCalls.ts"
export { type OAuthClientCredentials, UpstreamAuth, type UpstreamAuthConfig } from "./UpstreamAuth.ts"
export * as UpstreamClient from "./UpstreamClient.ts"
export { UpstreamHttp } from "./UpstreamHttp.ts"
export * as VirtualServers from "./VirtualServers.ts"
export { toolsOfVirtualServer } from "./VirtualServers.ts"
