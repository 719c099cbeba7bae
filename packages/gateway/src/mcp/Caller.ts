/**
 * The identity an MCP request is served for.
 *
 * Every catalog operation receives the caller so tool visibility and
 * authorization can depend on it (SPEC "Client token ... allowed tools or
 * virtual servers"). Until authentication lands the gateway serves every
 * request as {@link anonymous}; 2025-era sessions remember the id of the caller
 * that created them and refuse to serve another caller.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export interface Caller {
  /** Stable identity id (client token id, JWT subject, ...); `"anonymous"` before auth exists. */
  readonly id: string
  /** Granted scopes; tool filtering by scope is the catalog's business. */
  readonly scopes: ReadonlyArray<string>
}

/** The caller of every request until authentication is configured. */
export const anonymous: Caller = { id: "anonymous", scopes: [] }
