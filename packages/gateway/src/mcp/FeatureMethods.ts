/**
 * The MCP methods of resources, prompts and completion, served from
 * `Features` (the dispatcher hands them here).
 *
 * **Rules**
 *
 * - `resources/list`, `resources/templates/list` and `prompts/list` are
 *   paginated like `tools/list` (`Cursor.ts`); 2026-07-28 results carry
 *   `ttlMs: 0` and `cacheScope: "private"` (what a caller sees depends on its
 *   virtual server and token).
 * - `resources/read`, `resources/subscribe` / `unsubscribe`, `prompts/get`
 *   and `completion/complete` pass the same guard as `tools/call`: the
 *   limiter charge of a batch message, authorization of the label
 *   `<connection>/<name or uri>` (so a token's `conn/*` grants them), the
 *   concurrency cap, and one audit record with the method and one `calls`
 *   event each.
 * - An unknown prompt, resource or completion reference is an attempt like
 *   an unknown tool: it passes the same guard under the name or URI the
 *   client gave and is audited `invalid` (the caller's mistake), so probing
 *   for names leaves a trace and a batch of them costs its limiter tokens.
 *   Params of the wrong shape (a `name` or `uri` that is no string) are no
 *   attempt: Invalid Params, unaudited, as for `tools/call`.
 * - Results pass through as the upstream gave them; 2026-07-28 ones get
 *   `resultType: "complete"` and the gateway's `serverInfo` `_meta` (an
 *   upstream's `ttlMs` / `cacheScope` are kept).
 * - `prompts` and `resources` are always declared (with `listChanged`): the
 *   lists exist even while empty (an upstream may bring items at any time),
 *   and a server that answers a method must declare its capability
 *   (2026-07-28 `server/discover`); `resources.subscribe` and `completions`
 *   only when an upstream in the caller's view offers them.
 *   `completion/complete` without one is Method not found.
 * - `params.uri`, `params.name`, `params.ref.name` / `params.ref.uri`, the
 *   values of prompts/get `params.arguments` and completion/complete
 *   `params.argument.name` / `value` must be strings (any string: NUL and
 *   lone surrogates included, they are only compared and relayed):
 *   otherwise Invalid Params naming the value, before an upstream sees it
 *   (an upstream may answer a wrong type with an internal error, which the
 *   client would read as the gateway's).
 *
 * @since 0.1.0
 */
import { Effect, Option, Predicate } from "effect"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import * as ClientText from "../observability/ClientText.ts"
import * as Cursor from "./Cursor.ts"
import type { CallContext } from "./Dispatcher.ts"
import { type FeatureCapabilities, type FeatureKind, Features, type Route, ROUTED_METHODS } from "./Features.ts"
import type { McpGuard } from "./Guard.ts"
import { describeValue, ProtocolError, type ResultJson } from "./JsonRpc.ts"
import { ToolCallRefused } from "./ToolCatalog.ts"

const LISTS: Readonly<Record<string, readonly [FeatureKind, string]>> = {
  "resources/list": ["resources", "resources"],
  "resources/templates/list": ["resourceTemplates", "resourceTemplates"],
  "prompts/list": ["prompts", "prompts"]
}

/** What a refusal of the guard (limits, cap, authorization) or an upstream failure looks like to the client. */
export const refusedError = (error: ToolCallRefused): ProtocolError =>
  new ProtocolError({
    code: ErrorCode.refused,
    message: `Request for '${ClientText.echoed(error.name)}' refused (${error.reason}): ${error.detail}`,
    data: error.retryAfterMs === undefined ?
      { reason: error.reason, target: ClientText.echoed(error.name) } :
      { reason: error.reason, target: ClientText.echoed(error.name), retryAfterMs: error.retryAfterMs },
    status: 200
  })

/** Checks the field a routed method needs, before anything is resolved. */
const checkParams = (method: string, params: Readonly<Record<string, unknown>>): ProtocolError | undefined => {
  const need = (field: string, what: string) => {
    const value = params[field]
    return typeof value === "string" ? undefined : ProtocolError.invalidParams(
      `${method} params.${field} is ${describeValue(value)}; expected ${what} (a string)`
    )
  }
  switch (method) {
    case "prompts/get": {
      const args = params.arguments
      if (args !== undefined && !Predicate.isReadonlyObject(args)) {
        return ProtocolError.invalidParams(
          `prompts/get params.arguments is ${describeValue(args)}; expected an object of string values`
        )
      }
      const notText = args === undefined ? undefined : Object.entries(args).find(([, v]) => typeof v !== "string")
      if (notText !== undefined) {
        return ProtocolError.invalidParams(
          `prompts/get params.arguments[${ClientText.json(notText[0])}] is ${
            describeValue(notText[1])
          }; expected a string (prompt arguments are strings)`
        )
      }
      return need("name", "the prompt's name")
    }
    case "completion/complete": {
      const ref = params.ref
      if (!Predicate.isReadonlyObject(ref) || (ref.type !== "ref/prompt" && ref.type !== "ref/resource")) {
        return ProtocolError.invalidParams(
          `completion/complete params.ref is ${
            describeValue(ref)
          }; expected {"type":"ref/prompt","name":…} or {"type":"ref/resource","uri":…}`
        )
      }
      const key = ref.type === "ref/prompt" ? "name" : "uri"
      if (typeof ref[key] !== "string") {
        return ProtocolError.invalidParams(
          `completion/complete params.ref.${key} is ${describeValue(ref[key])}; expected the ${
            key === "name" ? "prompt's name" : "resource template's URI"
          } (a string)`
        )
      }
      if (
        !Predicate.isReadonlyObject(params.argument) || typeof params.argument.name !== "string" ||
        typeof params.argument.value !== "string"
      ) {
        return ProtocolError.invalidParams(
          `completion/complete params.argument is ${
            describeValue(params.argument)
          }; expected {"name":…,"value":…} (two strings)`
        )
      }
      return undefined
    }
    default:
      return need("uri", "the resource's URI")
  }
}

/** What the client asked for (a prompt's name, a resource's URI, a completion's reference): audited as given. */
const requestedLabel = (method: string, params: Readonly<Record<string, unknown>>): string => {
  if (method === "prompts/get") return params.name as string
  if (method !== "completion/complete") return params.uri as string
  const ref = params.ref as Readonly<Record<string, unknown>>
  return (ref.type === "ref/prompt" ? ref.name : ref.uri) as string
}

/** The answer to a routed method when no upstream offers features at all. */
const noFeatures = (method: string, params: Readonly<Record<string, unknown>>): ProtocolError =>
  method.startsWith("prompts/")
    ? ProtocolError.invalidParams(
      `Unknown prompt ${ClientText.json(params.name)}: this server offers no prompts (prompts/list is empty)`
    )
    : method === "completion/complete"
    ? ProtocolError.invalidParams("completion/complete: this server offers no prompts or resource templates")
    : new ProtocolError({
      code: ErrorCode.invalidParams,
      message: `Resource ${
        ClientText.json(params.uri)
      } not found: this server offers no resources (resources/list is empty)`,
      data: { uri: ClientText.echoed(params.uri as string) },
      status: 200
    })

export interface FeatureMethodsOptions {
  readonly pageSize: number
  /** `,"resultType":"complete","_meta":{serverInfo}}`: the end of a 2026-07-28 result. */
  readonly completeSuffix: string
  readonly statelessMeta: Readonly<Record<string, unknown>>
}

/** The feature methods over `features` (absent: empty lists) behind `guard`. */
export const make = (
  features: Option.Option<Features["Service"]>,
  guard: McpGuard["Service"],
  options: FeatureMethodsOptions
) => {
  const listSuffix = `,"ttlMs":0,"cacheScope":"private"${options.completeSuffix}`

  const list = Effect.fnUntraced(function*(
    context: CallContext,
    method: string,
    params: Readonly<Record<string, unknown>> | undefined
  ) {
    const [kind, field] = LISTS[method]!
    const items = Option.isSome(features) ? yield* features.value.list(context.caller, kind) : []
    let start = 0
    const cursor = params?.cursor
    if (cursor !== undefined) {
      const last = Cursor.decode(kind, cursor)
      if (last === undefined) {
        return yield* ProtocolError.invalidParams(
          `Invalid cursor ${ClientText.json(cursor)}: it was not issued by this server's ${method}; ` +
            "omit the cursor to start from the first page"
        )
      }
      start = Cursor.after(items, last)
    }
    const end = start + options.pageSize
    const page = JSON.stringify(items.slice(start, end).map((item) => item.json))
    const next = end < items.length ?
      `,"nextCursor":${JSON.stringify(Cursor.encode(kind, items[end - 1]!.key))}` :
      ""
    return context.stateless ? `{"${field}":${page}${next}${listSuffix}` : `{"${field}":${page}${next}}`
  })

  const encode = (result: Readonly<Record<string, unknown>>, stateless: boolean): ResultJson => {
    const { resultType: _, ...rest } = result
    if (!stateless) {
      const { ttlMs: _t, cacheScope: _c, ...plain } = rest
      return JSON.stringify(plain)
    }
    const meta = Predicate.isReadonlyObject(rest._meta)
      ? { ...rest._meta, ...options.statelessMeta }
      : options.statelessMeta
    return JSON.stringify({ ...rest, resultType: "complete", _meta: meta })
  }

  const routed = Effect.fnUntraced(function*(
    context: CallContext,
    method: string,
    raw: Readonly<Record<string, unknown>> | undefined
  ) {
    const params = raw ?? {}
    const invalid = checkParams(method, params)
    if (invalid !== undefined) return yield* invalid
    // an unknown prompt, resource or completion target is an attempt like an unknown tool: audited `invalid`
    const unknown = (error: ProtocolError): Route => ({
      label: requestedLabel(method, params),
      run: Effect.fail(error)
    })
    const route = Option.isNone(features)
      ? unknown(noFeatures(method, params))
      : yield* Effect.catch(
        features.value.route(context.caller, method, params),
        (error) => Effect.succeed(unknown(error))
      )
    const admitted = context.admitted === undefined ? undefined : Effect.mapError(
      context.admitted,
      (refusal) =>
        new ToolCallRefused({
          name: route.label,
          reason: "rate_limited",
          detail: refusal.message,
          ...(refusal.retryAfterMs === undefined ? {} : { retryAfterMs: refusal.retryAfterMs })
        })
    )
    const result = yield* guard.guardCall(context.caller, route.label, route.run, admitted, method).pipe(
      Effect.mapError((error) => error._tag === "ToolCallRefused" ? refusedError(error) : error),
      Effect.catchDefect((defect) =>
        Effect.andThen(
          Effect.logError(`${method} of '${ClientText.recorded(route.label)}' failed unexpectedly`, defect),
          Effect.fail(
            new ProtocolError({
              code: ErrorCode.internalError,
              message: `Internal error during ${method} of '${
                ClientText.echoed(route.label)
              }'; the gateway logged the cause, retry or report it`,
              status: 200
            })
          )
        )
      )
    )
    return encode(result, context.stateless)
  })

  const capabilityOf = (method: string): "resources" | "prompts" | "completions" =>
    method.startsWith("resources/") ? "resources" : method.startsWith("prompts/") ? "prompts" : "completions"

  /** Runs `served` when the caller's view offers the method's capability, else Method not found. */
  const offered = (
    context: CallContext,
    method: string,
    served: Effect.Effect<ResultJson, ProtocolError>
  ): Effect.Effect<ResultJson, ProtocolError> =>
    method !== "completion/complete" ?
      served :
      Option.isNone(features) ?
      methodNotFound(context, method) :
      Effect.flatMap(
        features.value.capabilities(context.caller),
        (capabilities) => capabilities[capabilityOf(method)] === undefined ? methodNotFound(context, method) : served
      )

  const methodNotFound = (context: CallContext, method: string) =>
    Effect.fail(ProtocolError.methodNotFound(
      method,
      context.stateless ? 404 : 200,
      `is not served here: no upstream MCP server available to this caller offers ${capabilityOf(method)}`
    ))

  return {
    /** The method's result, or `undefined` when it is not one of these methods. */
    dispatch: (
      context: CallContext,
      method: string,
      params: Readonly<Record<string, unknown>> | undefined
    ): Effect.Effect<ResultJson, ProtocolError> | undefined =>
      method in LISTS ? offered(context, method, list(context, method, params)) : ROUTED_METHODS.has(method)
        ? offered(context, method, routed(context, method, params))
        : undefined,
    /** Capabilities of the caller's view (`prompts` and `resources` always, see the rules). */
    capabilities: (caller: CallContext["caller"]) =>
      Effect.map(
        Option.isSome(features) ? features.value.capabilities(caller) : Effect.succeed<FeatureCapabilities>({}),
        (offered): Record<string, unknown> => ({
          ...offered,
          prompts: { listChanged: true },
          resources: { ...offered.resources, listChanged: true }
        })
      )
  }
}
