/**
 * The MCP methods the gateway serves, shared by every transport and revision:
 * `server/discover` (2026-07-28), `initialize` results and `ping` (2025 era),
 * `tools/list`, `tools/call`; resources, prompts and completion are
 * `FeatureMethods.ts`'s (served from `Features`, empty without it).
 * Capabilities are per caller: tools and logging always, and what the
 * `Features` of the caller's view offer.
 *
 * Spec rules this module enforces:
 * - `tools/list` is paginated with an opaque cursor; the order is the
 *   catalog's name order, and the cursor names the last tool of the previous
 *   page, so pages stay consistent while tools are added or removed. An
 *   unknown cursor is Invalid Params (-32602).
 * - 2026-07-28 results carry `resultType`, identify the server in
 *   `_meta["io.modelcontextprotocol/serverInfo"]`, and list results
 *   (`tools/list`, `prompts/list`, `resources/list`,
 *   `resources/templates/list`) and `server/discover` carry `ttlMs` and
 *   `cacheScope` (tool lists depend on the caller, so they are `private`).
 * - An `input_required` outcome (multi round-trip, 2026-07-28) needs the client
 *   capabilities of its input requests; if they were not declared in
 *   `_meta["io.modelcontextprotocol/clientCapabilities"]` the request fails with
 *   MissingRequiredClientCapability (-32021, HTTP 400) and
 *   `data.requiredCapabilities`. 2025-era clients cannot receive one: the
 *   gateway asks them itself over their session and repeats the call with the
 *   answers (`InputRequired.ts`); where it cannot ask (a JSON-RPC batch) the
 *   answer is a tool error result.
 * - Arguments the gateway judged invalid (`InvalidToolArguments` with
 *   `asToolResult`: the tool's input schema) are a tool result with
 *   `isError: true` naming the argument and what was expected (MCP
 *   2025-11-25 "Error Handling": input validation errors are tool execution
 *   errors, so a model can correct itself).
 * - Unknown tools and malformed params are Invalid Params (-32602); gateway
 *   refusals (limits, shedding, breaker, authorization) are -32000 with
 *   `data.reason`.
 * - Methods are case-sensitive; unknown ones are Method not found (-32601),
 *   HTTP 404 on 2026-07-28.
 *
 * Everything that does not depend on the request is encoded once when the
 * dispatcher is built (discover, initialize results, empty lists, the result
 * suffixes); `tools/list` pages are encoded once per catalog list instance.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option, Predicate } from "effect"
import * as Base64Url from "effect/encoding/Base64Url"
import * as Result from "effect/Result"
import * as TraceContext from "../observability/TraceContext.ts"
import type { Caller } from "./Caller.ts"
import * as FeatureMethods from "./FeatureMethods.ts"
import { Features } from "./Features.ts"
import { type AdmissionRefused, McpGuard } from "./Guard.ts"
import * as InputRequired from "./InputRequired.ts"
import { describeValue, ProtocolError, type ResultJson } from "./JsonRpc.ts"
import { ErrorCode, Meta, type StatefulVersion, SUPPORTED_VERSIONS } from "./Protocol.ts"
import { type RelayHooks, UpstreamRelay } from "./Relay.ts"
import {
  type CallToolResult,
  describeToolCallError,
  type InputRequest,
  type InvalidToolArguments,
  type ProgressReporter,
  type Tool,
  type ToolCallError,
  ToolCallRefused,
  ToolCatalog
} from "./ToolCatalog.ts"

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

/** A `x-mcp-header` annotated argument of a tool (2026-07-28 `Mcp-Param-*`). */
export interface HeaderBinding {
  /** Lower-case header name, `mcp-param-<name>`. */
  readonly header: string
  /** The header as declared, `Mcp-Param-<Name>`. */
  readonly headerName: string
  /** Property path in `arguments`. */
  readonly path: ReadonlyArray<string>
  readonly display: string
}

/** What the gateway derives once from one catalog list instance. */
export interface PreparedTools {
  readonly tools: ReadonlyArray<Tool>
  readonly names: ReadonlyArray<string>
  readonly headerBindings: ReadonlyMap<string, ReadonlyArray<HeaderBinding>>
  readonly pages: Map<number, string>
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
  readonly prepared: (caller: Caller) => Effect.Effect<PreparedTools>
  /** The encoded `serverInfo`, for results built by transports. */
  readonly serverInfoJson: string
}>()("@janus/gateway/mcp/Dispatcher") {
  /** @since 0.1.0 */
  static readonly layer = (options: DispatcherOptions): Layer.Layer<Dispatcher, never, ToolCatalog | McpGuard> =>
    Layer.effect(Dispatcher, make(options))
}

const byName = (a: Tool, b: Tool): number => a.name < b.name ? -1 : a.name > b.name ? 1 : 0

/** `x-mcp-header` annotations reachable from the schema root through `properties` only. */
export const headerBindingsOf = (inputSchema: unknown): ReadonlyArray<HeaderBinding> => {
  const bindings: Array<HeaderBinding> = []
  const visit = (schema: unknown, path: ReadonlyArray<string>) => {
    if (typeof schema !== "object" || schema === null) return
    const record = schema as Record<string, unknown>
    const annotation = record["x-mcp-header"]
    if (typeof annotation === "string" && path.length > 0 && /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(annotation)) {
      bindings.push({
        header: `mcp-param-${annotation.toLowerCase()}`,
        headerName: `Mcp-Param-${annotation}`,
        path,
        display: path.join(".")
      })
    }
    const properties = record.properties
    if (typeof properties === "object" && properties !== null) {
      for (const [key, child] of Object.entries(properties)) visit(child, [...path, key])
    }
  }
  visit(inputSchema, [])
  return bindings
}

const encodeCursor = (lastName: string): string => Base64Url.encode(`t:${lastName}`)

const decodeCursor = (cursor: string): string | undefined => {
  const decoded = Base64Url.decodeString(cursor)
  if (Result.isFailure(decoded) || !decoded.success.startsWith("t:")) return undefined
  return decoded.success.slice(2)
}

/** Index of the first name greater than `name` in a sorted array. */
const upperBound = (names: ReadonlyArray<string>, name: string): number => {
  let lo = 0
  let hi = names.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (names[mid]! <= name) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The client capabilities an input request needs that `declared` lacks. */
export const missingCapabilities = (
  inputRequests: Readonly<Record<string, InputRequest>> | undefined,
  declared: Readonly<Record<string, unknown>>
): Record<string, Record<string, unknown>> => {
  const missing: Record<string, Record<string, unknown>> = {}
  for (const request of Object.values(inputRequests ?? {})) {
    switch (request.method) {
      case "sampling/createMessage": {
        const sampling = declared.sampling
        if (!Predicate.isReadonlyObject(sampling)) missing.sampling = {}
        else if (request.params?.tools !== undefined && !Predicate.isReadonlyObject(sampling.tools)) {
          missing.sampling = { ...missing.sampling, tools: {} }
        }
        break
      }
      case "elicitation/create": {
        const elicitation = declared.elicitation
        const mode = request.params?.mode === "url" ? "url" : "form"
        const ok = Predicate.isReadonlyObject(elicitation) &&
          (mode === "url"
            ? Predicate.isReadonlyObject(elicitation.url)
            : Predicate.isReadonlyObject(elicitation.form) || Object.keys(elicitation).length === 0)
        if (!ok) missing.elicitation = { ...missing.elicitation, [mode]: {} }
        break
      }
      case "roots/list":
        if (!Predicate.isReadonlyObject(declared.roots)) missing.roots = {}
        break
    }
  }
  return missing
}

const toProtocolError = (error: ToolCallError): ProtocolError => {
  switch (error._tag) {
    case "ToolNotFound":
    case "InvalidToolArguments":
      return ProtocolError.invalidParams(describeToolCallError(error))
    case "ToolCallRefused":
      return new ProtocolError({
        code: ErrorCode.refused,
        message: describeToolCallError(error),
        data: error.retryAfterMs === undefined ?
          { reason: error.reason, tool: error.name } :
          { reason: error.reason, tool: error.name, retryAfterMs: error.retryAfterMs },
        status: 200
      })
  }
}

/** An input validation error as MCP 2025-11-25 answers it: a tool result with `isError`, for the model to read. */
const inputErrorResult = (error: InvalidToolArguments): CallToolResult => ({
  content: [{ type: "text", text: describeToolCallError(error) }],
  isError: true
})

/** What the client sees of a defect: no internals. */
const internalError = (name: string): ProtocolError =>
  new ProtocolError({
    code: ErrorCode.internalError,
    message: `Internal error while calling tool '${name}'; the gateway logged the cause, retry or report it`,
    status: 200
  })

/** Methods of the 2025 era answered with "not supported" rather than routed. */
const statefulMethods: ReadonlySet<string> = new Set([
  "ping",
  "logging/setLevel",
  "tools/list",
  "tools/call",
  "prompts/list",
  "prompts/get",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "resources/subscribe",
  "resources/unsubscribe",
  "completion/complete"
])
const statelessMethods: ReadonlySet<string> = new Set([
  "server/discover",
  "tools/list",
  "tools/call",
  "prompts/list",
  "prompts/get",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "completion/complete"
])

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

  const preparedCache = new WeakMap<ReadonlyArray<Tool>, PreparedTools>()
  const prepare = (list: ReadonlyArray<Tool>): PreparedTools => {
    let prepared = preparedCache.get(list)
    if (prepared !== undefined) return prepared
    let tools = list
    for (let i = 1; i < list.length; i++) {
      if (list[i - 1]!.name > list[i]!.name) {
        tools = [...list].sort(byName)
        break
      }
    }
    const headerBindings = new Map<string, ReadonlyArray<HeaderBinding>>()
    for (const tool of tools) {
      const bindings = headerBindingsOf(tool.inputSchema)
      if (bindings.length > 0) headerBindings.set(tool.name, bindings)
    }
    prepared = { tools, names: tools.map((tool) => tool.name), headerBindings, pages: new Map() }
    preparedCache.set(list, prepared)
    return prepared
  }
  const prepared = (caller: Caller) => Effect.map(catalog.list(caller), prepare)

  const listTools = Effect.fnUntraced(function*(
    context: CallContext,
    params: Readonly<Record<string, unknown>> | undefined
  ) {
    const tools = yield* prepared(context.caller)
    const cursor = params?.cursor
    let start = 0
    if (cursor !== undefined) {
      const after = typeof cursor === "string" ? decodeCursor(cursor) : undefined
      if (after === undefined) {
        return yield* ProtocolError.invalidParams(
          `Invalid cursor ${
            JSON.stringify(cursor)
          }: it was not issued by this server's tools/list; omit the cursor to start from the first page`
        )
      }
      start = upperBound(tools.names, after)
    }
    let page = tools.pages.get(start)
    if (page === undefined) {
      page = JSON.stringify(tools.tools.slice(start, start + pageSize))
      tools.pages.set(start, page)
    }
    const end = start + pageSize
    const next = end < tools.tools.length ? `,"nextCursor":${JSON.stringify(encodeCursor(tools.names[end - 1]!))}` : ""
    return context.stateless ? `{"tools":${page}${next}${toolsListSuffix}` : `{"tools":${page}${next}}`
  })

  const encodeComplete = (result: CallToolResult, stateless: boolean): ResultJson => {
    if (!stateless) return JSON.stringify(result)
    const meta = result._meta === undefined ? statelessMeta : { ...result._meta, ...statelessMeta }
    return JSON.stringify({ ...result, resultType: "complete", _meta: meta })
  }

  const callTool = Effect.fnUntraced(function*(
    context: CallContext,
    params: Readonly<Record<string, unknown>> | undefined
  ) {
    const name = params?.name
    if (typeof name !== "string") {
      return yield* ProtocolError.invalidParams(
        `tools/call params.name is ${describeValue(name)}; expected the tool's name (a string)`
      )
    }
    const args = params?.arguments
    if (args !== undefined && !Predicate.isReadonlyObject(args)) {
      return yield* ProtocolError.invalidParams(
        `tools/call params.arguments is ${describeValue(args)}; expected an object (or no arguments at all)`
      )
    }
    const inputResponses = params?.inputResponses
    const requestState = params?.requestState
    if (inputResponses !== undefined && !Predicate.isReadonlyObject(inputResponses)) {
      return yield* ProtocolError.invalidParams("tools/call params.inputResponses must be an object")
    }
    if (requestState !== undefined && typeof requestState !== "string") {
      return yield* ProtocolError.invalidParams("tools/call params.requestState must be a string")
    }
    const abort = new AbortController()
    const admitted = context.admitted === undefined ? undefined : Effect.mapError(
      context.admitted,
      (refusal) =>
        new ToolCallRefused({
          name,
          reason: "rate_limited",
          detail: refusal.message,
          ...(refusal.retryAfterMs === undefined ? {} : { retryAfterMs: refusal.retryAfterMs }),
          ...(refusal.bucket === undefined ? {} : { bucket: refusal.bucket })
        })
    )
    // the caller's capabilities go upstream (2026-07-28 `_meta`, 2025 server-request relaying)
    const relay = { ...context.relay, clientCapabilities: context.clientCapabilities, stateless: context.stateless }
    const run = (
      responses: Readonly<Record<string, unknown>> | undefined,
      state: string | undefined
    ) =>
      catalog.call(context.caller, {
        name,
        arguments: args ?? {},
        signal: abort.signal,
        progress: context.progress,
        inputResponses: responses,
        requestState: state
      }).pipe(Effect.provideService(UpstreamRelay, relay))
    // a 2025-era client is asked for an upstream's input over its session, within the one guarded call
    const settled = context.stateless || relay.request === undefined ?
      run(inputResponses, requestState) :
      Effect.flatMap(
        run(inputResponses, requestState),
        (first) =>
          InputRequired.isInputRequired(first) ? InputRequired.fulfil(name, first, run, relay) : Effect.succeed(first)
      )
    const outcome = yield* guard.guardCall(context.caller, name, settled, admitted).pipe(
      // a client's _meta.traceparent is the parent of the tools/call span
      TraceContext.withMetaParent(params?._meta),
      Effect.onInterrupt(() => Effect.sync(() => abort.abort())),
      // one combinator for both: an input error the gateway judged is a result, the rest protocol errors
      Effect.catch((error) =>
        error._tag === "InvalidToolArguments" && error.asToolResult === true ?
          Effect.succeed(inputErrorResult(error)) :
          Effect.fail(toProtocolError(error))
      ),
      Effect.catchDefect((defect) =>
        Effect.andThen(
          Effect.logError(`tools/call of '${name}' failed unexpectedly`, defect),
          Effect.fail(internalError(name))
        )
      )
    )
    if (!InputRequired.isInputRequired(outcome)) return encodeComplete(outcome, context.stateless)
    if (!context.stateless) {
      return JSON.stringify(InputRequired.toolError(
        `Tool '${name}' needs input from the client (multi round-trip), which the gateway cannot ask for within a JSON-RPC batch; send the call on its own`
      ))
    }
    const missing = missingCapabilities(outcome.inputRequests, context.clientCapabilities)
    if (Object.keys(missing).length > 0) {
      return yield* new ProtocolError({
        code: ErrorCode.missingRequiredClientCapability,
        message: `Tool '${name}' needs client capabilities the request did not declare (${
          Object.keys(missing).join(", ")
        }); declare them in _meta["${Meta.clientCapabilities}"]`,
        data: { requiredCapabilities: missing },
        status: 400
      })
    }
    const meta = outcome._meta === undefined ? statelessMeta : { ...outcome._meta, ...statelessMeta }
    return JSON.stringify({ ...outcome, _meta: meta })
  })

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
        return listTools(context, params)
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

  return Dispatcher.of({ dispatch, initializeResult, prepared, serverInfoJson })
})
