/**
 * The MCP protocol layer of the gateway.
 *
 * Mount it with `McpHttp.layer(options)` (or `McpHttp.layerMemory(options)` for
 * a single instance) on the gateway's `HttpRouter`, and provide a
 * `ToolCatalog`; see the modules for the spec rules each one enforces.
 *
 * @since 0.1.0
 */
export * as Caller from "./Caller.ts"
export * as Dispatcher from "./Dispatcher.ts"
export * as Guard from "./Guard.ts"
export * as JsonRpc from "./JsonRpc.ts"
export * as ListChanged from "./ListChanged.ts"
export * as Origin from "./Origin.ts"
export * as Protocol from "./Protocol.ts"
export * as Sessions from "./Sessions.ts"
export * as McpHttp from "./StreamableHttp.ts"
export * as ToolCatalog from "./ToolCatalog.ts"
