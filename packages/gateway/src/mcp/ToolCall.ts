/**
 * `tools/call` (`Dispatcher.ts`): checks the params, runs the call through the
 * catalog inside the caller's guard, and turns its outcome into a result or a
 * protocol error.
 *
 * **Spec rules**
 *
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
 *   `data.reason`; a defect is an Internal error that names no internals.
 * - 2026-07-28 results carry `resultType` and the server's `_meta`.
 * - Cancellation (`notifications/cancelled`, a closed stream) interrupts the
 *   call's fiber, which stops the downstream request or tells the upstream;
 *   no `AbortSignal` is raced on the way (two fibers per call, #19).
 *
 * @since 0.1.0
 */
import { Effect, Predicate } from "effect"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import * as ClientText from "../observability/ClientText.ts"
import * as TraceContext from "../observability/TraceContext.ts"
import type { CallContext } from "./Dispatcher.ts"
import type { McpGuard } from "./Guard.ts"
import * as InputRequired from "./InputRequired.ts"
import { describeValue, ProtocolError, type ResultJson } from "./JsonRpc.ts"
import { Meta } from "./Protocol.ts"
import { UpstreamRelay } from "./Relay.ts"
import {
  type CallToolResult,
  describeToolCallError,
  type InputRequest,
  type InvalidToolArguments,
  type ToolCallError,
  ToolCallRefused,
  type ToolCatalog
} from "./ToolCatalog.ts"

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
          { reason: error.reason, tool: ClientText.echoed(error.name) } :
          { reason: error.reason, tool: ClientText.echoed(error.name), retryAfterMs: error.retryAfterMs },
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
    message: `Internal error while calling tool '${
      ClientText.echoed(name)
    }'; the gateway logged the cause, retry or report it`,
    status: 200
  })

/** `tools/call` through `catalog`, guarded by `guard`; `statelessMeta` is the `_meta` of 2026-07-28 results. */
export const make = (
  catalog: ToolCatalog["Service"],
  guard: McpGuard["Service"],
  statelessMeta: Readonly<Record<string, unknown>>
) => {
  const encodeComplete = (result: CallToolResult, stateless: boolean): ResultJson => {
    if (!stateless) return JSON.stringify(result)
    const meta = result._meta === undefined ? statelessMeta : { ...result._meta, ...statelessMeta }
    return JSON.stringify({ ...result, resultType: "complete", _meta: meta })
  }

  return Effect.fnUntraced(function*(
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
      // one combinator for both: an input error the gateway judged is a result, the rest protocol errors
      Effect.catch((error) =>
        error._tag === "InvalidToolArguments" && error.asToolResult === true ?
          Effect.succeed(inputErrorResult(error)) :
          Effect.fail(toProtocolError(error))
      ),
      Effect.catchDefect((defect) =>
        Effect.andThen(
          Effect.logError(`tools/call of '${ClientText.recorded(name)}' failed unexpectedly`, defect),
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
}
