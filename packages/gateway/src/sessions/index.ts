/**
 * MCP session stores beyond the in-memory one: `layer` is `McpSessionStore`
 * over the database (`@janus/storage` `McpSessions`), shared by every
 * replica.
 *
 * @since 0.1.0
 */
export * as SqlCancellations from "./SqlCancellations.ts"
export { layer, make, type SqlStoreOptions } from "./SqlSessionStore.ts"
export * as SqlSessionStore from "./SqlSessionStore.ts"
