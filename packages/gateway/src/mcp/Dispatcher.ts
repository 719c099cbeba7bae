/**
 * The MCP methods the gateway serves, shared by every transport and revision:
 * `server/discover` (2026-07-28), `initialize` results and `ping` (2025 era),
 * `tools/list`, `tools/call`; resources, prompts and completion are
 * `FeatureMethods.ts`'s (served from `Features`, empty without it).
 * Capabilities are per caller: tools and logging always, and what the
 * `Features` of the caller's view offer.
 *
 * **Spec rules**
 *
 * From the specification: those of `tools/list` and `tools/call` are
 * `ToolList.ts`'s and `ToolCall.ts`'s.
 *
 * - 2026-07-28 results carry `resultType`, identify the server in
 *   `_meta["io.modelcontextprotocol/serverInfo"]`, and list results
 *   (`tools/list`, `prompts/list`, `resources/list`,
 *   `resources/templates/list`) and `server/discover` carry `ttlMs` and
 *   `cacheScope` (`server/discover` depends on the caller's view, so it is
 *   `private`).
 * - Each wire serves its own methods: `ping` and `logging/setLevel` (and
 *   resource subscriptions) on the 2025 era, `server/discover` on 2026-07-28.
 * - Methods are case-sensitive; unknown ones are Method not found (-32601),
 *   HTTP 404 on 2026-07-28.
 *
 * Everything that does not depend on the request is encoded once when the
 * dispatcher is built (discover, initialize results, empty lists, the result
 * suffixes); `tools/list` pages are encoded once per catalog list instance.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, type Option } from "effect"
import type { Caller } from "./Caller.ts"
import * as FeatureMethods from "./FeatureMethods.ts"
import { Features } from "./Features.ts"
import { type AdmissionRefused, McpGuard } from "./Guard.ts"
import { ProtocolError, type ResultJson } from "./JsonRpc.ts"
import { Meta, type StatefulVersion, SUPPORTED_VERSIONS } from "./Protocol.ts"
import type { RelayHooks } from "./Relay.ts"
import * as ToolCall from "./ToolCall.ts"
import { type ProgressReporter, ToolCatalog } from "./ToolCatalog.ts"
import * as ToolList from "./ToolList.ts"

/** Server identity (`serverInfo`). */
export interface ServerInfo {
  readonly name: string
  readonly version: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  readonly websiteUrl?: string | undefined
}

/** @since 0.1.0 */
export interface DispatcherOptions {
  readonly serverInfo: ServerInfo
  readonly instructions?: string | undefined
  /** Tools per `tools/list` page. Default 100. */
  readonly pageSize?: number | undefined
  /** `ttlMs` of 2026-07-28 `tools/list` results. Default 0 (immediately stale). */
  readonly toolsListTtlMs?: number | undefined
  /** `ttlMs` of 2026-07-28 `server/discover` results. Default 0. */
  readonly discoverTtlMs?: number | undefined
}

/** Per-request facts the methods need. */
export interface CallContext {
  /** `true` on the 2026-07-28 wire. */
  readonly stateless: boolean
  readonly caller: Caller
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  /** Present when the request carried `_meta.progressToken` and the transport can stream. */
  readonly progress: Option.Option<ProgressReporter>
  /**
   * What the transport relays to the client of a federated call besides
   * progress (log messages, 2025-era server-to-client requests; see
   * `ClientRelay.ts`). `clientCapabilities` is added from this context.
   */
  readonly relay?: RelayHooks | undefined
  /**
   * The limiter charge of this message when it is not the first of its HTTP
   * request (a JSON-RPC batch): a tools/call runs it inside its audited guard.
   */
  readonly admitted?: Effect.Effect<void, AdmissionRefused> | undefined
}

/** @since 0.1.0 */
export class Dispatcher extends Context.Service<Dispatcher, {
  /** Runs a request method; resolves to the encoded `result`. */
  readonly dispatch: (
    context: CallContext,
    method: string,
    params: Readonly<Record<string, unknown>> | undefined
  ) => Effect.Effect<ResultJson, ProtocolError>
  /** The encoded `initialize` result for a negotiated 2025-era revision, with the caller's capabilities. */
  readonly initializeResult: (version: StatefulVersion, caller: Caller) => Effect.Effect<ResultJson>
  /** The caller's tool list with its derived data. */
  readonly prepared: (caller: Caller) => Effect.Effect<ToolList.PreparedTools>
  /** The encoded `serverInfo`, for results built by transports. */
  readonly serverInfoJson: string
}>()("@janus/gateway/mcp/Dispatcher") {
  /** @since 0.1.0 */
  static readonly layer = (options: DispatcherOptions): Layer.Layer<Dispatcher, never, ToolCatalog | McpGuard> =>
    Layer.effect(Dispatcher, make(options))
}

/** Methods both wires serve. */
const sharedMethods = [
  "tools/list",
  "tools/call",
  "prompts/list",
  "prompts/get",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "completion/complete"
]
/** Methods of the 2025 era answered with "not supported" rather than routed. */
const statefulMethods: ReadonlySet<string> = new Set([
  "ping",
  "logging/setLevel",
  ...sharedMethods,
  "resources/subscribe",
  "resources/unsubscribe"
])
const statelessMethods: ReadonlySet<string> = new Set(["server/discover", ...sharedMethods])

/** Whether a method is served on a wire (`subscriptions/listen` is the transport's). */
export const isKnownMethod = (stateless: boolean, method: string): boolean =>
  stateless ? statelessMethods.has(method) || method === "subscriptions/listen" : statefulMethods.has(method)

const make = Effect.fnUntraced(function*(options: DispatcherOptions) {
  const catalog = yield* ToolCatalog
  const guard = yield* McpGuard
  const features = yield* Effect.serviceOption(Features)
  const pageSize = Math.max(1, options.pageSize ?? 100)
  const toolsTtl = Math.max(0, Math.floor(options.toolsListTtlMs ?? 0))
  const discoverTtl = Math.max(0, Math.floor(options.discoverTtlMs ?? 0))
  const serverInfo = { ...options.serverInfo }
  const serverInfoJson = JSON.stringify(serverInfo)
  const statelessMeta = { [Meta.serverInfo]: serverInfo }
  const statelessMetaJson = `"_meta":{${JSON.stringify(Meta.serverInfo)}:${serverInfoJson}}`
  const completeSuffix = `,"resultType":"complete",${statelessMetaJson}}`
  // logging: upstream log messages are relayed (levels: `logging/setLevel`, 2026-07-28 `_meta` logLevel)
  const featureMethods = FeatureMethods.make(features, guard, { pageSize, completeSuffix, statelessMeta })
  const capabilitiesOf = (caller: Caller) =>
    Effect.map(featureMethods.capabilities(caller), (offered) => ({
      tools: { listChanged: true },
      ...offered,
      logging: {}
    }))

  // discover depends on the caller's view (capabilities), so it is `private`
  const discover = (caller: Caller) =>
    Effect.map(capabilitiesOf(caller), (capabilities) =>
      JSON.stringify({
        supportedVersions: SUPPORTED_VERSIONS,
        capabilities,
        ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
        ttlMs: discoverTtl,
        cacheScope: "private",
        resultType: "complete",
        _meta: statelessMeta
      }))
  const initializeResult = (version: StatefulVersion, caller: Caller): Effect.Effect<ResultJson> =>
    Effect.map(capabilitiesOf(caller), (capabilities) =>
      JSON.stringify({
        protocolVersion: version,
        capabilities,
        serverInfo,
        ...(options.instructions === undefined ? {} : { instructions: options.instructions })
      }))
  const toolsListSuffix = `,"ttlMs":${toolsTtl},"cacheScope":"private"${completeSuffix}`

  const tools = ToolList.make(catalog, { pageSize, statelessSuffix: toolsListSuffix })
  const callTool = ToolCall.make(catalog, guard, statelessMeta)

  const dispatch = (
    context: CallContext,
    method: string,
    params: Readonly<Record<string, unknown>> | undefined
  ): Effect.Effect<ResultJson, ProtocolError> => {
    const served = featureMethods.dispatch(context, method, params)
    if (served !== undefined && isKnownMethod(context.stateless, method)) return served
    switch (method) {
      case "tools/call":
        return callTool(context, params)
      case "tools/list":
        return tools.list(context.caller, context.stateless, params)
      case "server/discover":
        if (context.stateless) return discover(context.caller)
        break
      case "ping":
        if (!context.stateless) return Effect.succeed("{}")
        break
    }
    return Effect.fail(
      ProtocolError.methodNotFound(
        method,
        context.stateless ? 404 : 200,
        context.stateless ?
          "is not a 2026-07-28 method served by this endpoint" :
          "is not served by this endpoint"
      )
    )
  }

  return Dispatcher.of({ dispatch, initializeResult, prepared: tools.prepared, serverInfoJson })
})
