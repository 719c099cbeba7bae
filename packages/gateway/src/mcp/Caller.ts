/**
 * The identity an MCP request is served for.
 *
 * Every catalog operation receives the caller so tool visibility and
 * authorization can depend on it (SPEC "Client token ... allowed tools or
 * virtual servers"). `auth/Admission` builds callers (client token, OAuth
 * JWT, or {@link anonymous} when anonymous access is explicitly allowed) and
 * decides what they may see and call from `tools` / `virtualServers`; 2025-era
 * sessions remember the id of the caller that created them and refuse to
 * serve another caller.
 *
 * @since 0.1.0
 */

/** How a caller was authenticated. */
export type CallerKind = "anonymous" | "client_token" | "oauth"

/** @since 0.1.0 */
export interface Caller {
  /**
   * Stable identity id, also the key of the per-identity limiter, the response
   * cache and session ownership: `token:<client token id>`, `oauth:<iss>#<sub>`,
   * or `"anonymous"`. Never a bearer token.
   */
  readonly id: string
  /** Granted scopes (OAuth); tool filtering by scope is the catalog's business. */
  readonly scopes: ReadonlyArray<string>
  /** How the caller was authenticated; absent means anonymous. */
  readonly kind?: CallerKind | undefined
  /** A display name for audit and errors (the client token's name, the JWT subject); never a secret. */
  readonly name?: string | undefined
  /**
   * The tools the caller may list and call: exact names and `<connection>/*`
   * patterns. `null` or absent: unrestricted. See `auth/ToolScope.ts`.
   */
  readonly tools?: ReadonlySet<string> | null | undefined
  /** The virtual servers whose URLs the caller may use. `null` or absent: any. */
  readonly virtualServers?: ReadonlySet<string> | null | undefined
  /**
   * The virtual server whose URL (`/servers/{name}/...`) the request came
   * through: the catalog serves only that server's tools. Absent: `/mcp`.
   */
  readonly virtualServer?: string | undefined
  /** The OAuth client the access token was issued to (`client_id`, `azp`, ...), when it names one. */
  readonly clientId?: string | undefined
  /** The client token's id (`kind: "client_token"`): its streams end when it is revoked or deleted. */
  readonly tokenId?: string | undefined
  /**
   * When the credential stops being accepted (epoch ms): a client token's
   * expiry, an access token's `exp` plus the clock skew. Absent: never. Open
   * streams end then.
   */
  readonly expiresAt?: number | undefined
}

/** The caller of every request until authentication is configured. */
export const anonymous: Caller = { id: "anonymous", scopes: [], kind: "anonymous", tools: null, virtualServers: null }
