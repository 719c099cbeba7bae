/**
 * The tool set the MCP endpoint serves, as a service the gateway implements
 * from its database (endpoints of REST connections, tools of upstream MCP
 * servers) and tests implement in memory.
 *
 * **Contract**
 *
 * - `list(caller)` returns the tools visible to `caller`, ordered by name
 *   (tools/list pagination relies on the order being deterministic). Returning
 *   the same array instance until the set changes lets the endpoint reuse the
 *   work it derives from a list (page encodings, `x-mcp-header` bindings).
 * - `call(caller, request)` runs one tool. `request.signal` is aborted when the
 *   client cancels (`notifications/cancelled`, or closing the 2026-07-28
 *   response stream); `request.progress` is present when the client asked for
 *   progress (`_meta.progressToken`). A call may answer `input_required`
 *   (multi round-trip, 2026-07-28) when an upstream server asks the client for
 *   input; `inputResponses` / `requestState` carry the client's retry.
 * - `changes` emits whenever the tool set changes (a change signal, no data);
 *   it may be run by any number of consumers.
 *
 * Wire shapes are effect/ai `McpSchema` encoded types, so results pass through
 * without being decoded and re-encoded.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option, PubSub, Schema, Stream } from "effect"
import type { McpSchema } from "effect/ai"
import * as ClientText from "../observability/ClientText.ts"
import type { Caller } from "./Caller.ts"

/** A tool definition as sent on the wire. */
export type Tool = typeof McpSchema.Tool.Encoded

/** A complete `tools/call` result as sent on the wire. */
export type CallToolResult = typeof McpSchema.CallToolResult.Encoded

/** An input request of a multi round-trip result (`sampling/createMessage`, `elicitation/create`, `roots/list`). */
export interface InputRequest {
  readonly method: string
  readonly params?: Readonly<Record<string, unknown>> | undefined
}

/** A 2026-07-28 `InputRequiredResult`, passed through from an upstream server. */
export interface InputRequiredResult {
  readonly resultType: "input_required"
  readonly inputRequests?: Readonly<Record<string, InputRequest>> | undefined
  readonly requestState?: string | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
}

/** What a tool call produces. */
export type ToolCallOutcome = CallToolResult | InputRequiredResult

/** Reports progress of a call: `progress` increases; `total` and `message` are optional. */
export type ProgressReporter = (progress: number, total?: number, message?: string) => Effect.Effect<void>

/** One `tools/call`. */
export interface ToolCallRequest {
  readonly name: string
  readonly arguments: Readonly<Record<string, unknown>>
  /**
   * For callers outside Effect: aborting it fails the call. Within Effect a
   * call is cancelled by interrupting its fiber, which already stops the
   * downstream request (and tells an upstream MCP server); `tools/call`
   * passes none, since racing a signal cost two fibers per call (#19).
   */
  readonly signal?: AbortSignal | undefined
  readonly progress: Option.Option<ProgressReporter>
  readonly inputResponses?: Readonly<Record<string, unknown>> | undefined
  readonly requestState?: string | undefined
}

/** No tool of that name is visible to the caller (JSON-RPC -32602). */
export class ToolNotFound extends Schema.TaggedError<ToolNotFound>()("ToolNotFound", {
  name: Schema.String
}) {}

/**
 * The arguments do not fit the tool: its input schema, or what the request
 * they go into can carry. Audited `invalid`.
 */
export class InvalidToolArguments extends Schema.TaggedError<InvalidToolArguments>()("InvalidToolArguments", {
  name: Schema.String,
  /** What is wrong, with which value, and what is expected. */
  detail: Schema.String,
  /**
   * `true` when the gateway judged the arguments itself: answered as a tool
   * result with `isError: true`, as MCP 2025-11-25 wants input validation
   * errors answered ("Tool Execution Errors"), so a model reads what to
   * correct. Otherwise JSON-RPC -32602 (an upstream server's own Invalid
   * params, relayed as it came).
   */
  asToolResult: Schema.optional(Schema.Boolean)
}) {}

/** Why the gateway refused to run a call. */
export const RefusalReason = Schema.Literals([
  "denied",
  "rate_limited",
  "shed",
  "breaker_open",
  "timeout",
  "unavailable"
])

/**
 * The gateway refused or could not complete the call (authorization, limits,
 * load shedding, circuit breaker, timeout). JSON-RPC -32000 with
 * `data: { reason, tool, retryAfterMs? }`.
 */
export class ToolCallRefused extends Schema.TaggedError<ToolCallRefused>()("ToolCallRefused", {
  name: Schema.String,
  reason: RefusalReason,
  /** User-visible explanation. */
  detail: Schema.String,
  retryAfterMs: Schema.optional(Schema.Number),
  /** The limiter bucket of a `rate_limited` refusal (`ip`, `identity`), for the audit record. */
  bucket: Schema.optional(Schema.String)
}) {}

/** Every way a call can fail before producing an outcome. */
export type ToolCallError = ToolNotFound | InvalidToolArguments | ToolCallRefused

/** The user-visible sentence for a call error: what was wrong, with which value, what is expected. */
export const describeToolCallError = (error: ToolCallError): string => {
  switch (error._tag) {
    case "ToolNotFound":
      return `Unknown tool '${
        ClientText.echoed(error.name)
      }': no tool of that name is available to this caller; call tools/list for the available tools`
    case "InvalidToolArguments":
      return `Invalid arguments for tool '${ClientText.echoed(error.name)}': ${error.detail}`
    case "ToolCallRefused":
      return `Call to tool '${ClientText.echoed(error.name)}' refused (${error.reason}): ${error.detail}`
  }
}

/** @since 0.1.0 */
export class ToolCatalog extends Context.Service<ToolCatalog, {
  readonly list: (caller: Caller) => Effect.Effect<ReadonlyArray<Tool>>
  readonly call: (caller: Caller, request: ToolCallRequest) => Effect.Effect<ToolCallOutcome, ToolCallError>
  readonly changes: Stream.Stream<void>
}>()("@janus/gateway/mcp/ToolCatalog") {
  /**
   * An in-memory catalog seeded with `tools`; also provides
   * {@link InMemoryToolCatalog} to change the set at runtime.
   */
  static readonly layerMemory = (
    tools: ReadonlyArray<MemoryTool>,
    options?: { readonly visible?: ((caller: Caller, tool: Tool) => boolean) | undefined }
  ): Layer.Layer<ToolCatalog | InMemoryToolCatalog> => Layer.effectContext(makeMemory(tools, options))
}

// ---------------------------------------------------------------------------
// In-memory implementation
// ---------------------------------------------------------------------------

/** What an in-memory tool handler receives. */
export interface MemoryToolCall extends ToolCallRequest {
  readonly caller: Caller
}

/** A tool definition plus the handler that runs it. */
export interface MemoryTool {
  readonly tool: Tool
  readonly handler: (call: MemoryToolCall) => Effect.Effect<ToolCallOutcome, ToolCallError>
}

/** Runtime control of the in-memory catalog (tests, fixtures). */
export class InMemoryToolCatalog extends Context.Service<InMemoryToolCatalog, {
  /** Adds or replaces tools (by name) and signals one change. */
  readonly upsert: (...tools: ReadonlyArray<MemoryTool>) => Effect.Effect<void>
  /** Removes tools by name and signals one change. */
  readonly remove: (...names: ReadonlyArray<string>) => Effect.Effect<void>
}>()("@janus/gateway/mcp/InMemoryToolCatalog") {}

const byName = (a: Tool, b: Tool): number => a.name < b.name ? -1 : a.name > b.name ? 1 : 0

const makeMemory = Effect.fnUntraced(function*(
  initial: ReadonlyArray<MemoryTool>,
  options?: { readonly visible?: ((caller: Caller, tool: Tool) => boolean) | undefined }
) {
  const entries = new Map<string, MemoryTool>()
  for (const entry of initial) entries.set(entry.tool.name, entry)
  let sorted: ReadonlyArray<Tool> = []
  const resort = () => {
    sorted = Array.from(entries.values(), (entry) => entry.tool).sort(byName)
  }
  resort()
  const changes = yield* PubSub.unbounded<void>()
  const visible = options?.visible

  const catalog = ToolCatalog.of({
    list: (caller) =>
      Effect.sync(() => visible === undefined ? sorted : sorted.filter((tool) => visible(caller, tool))),
    call: (caller, request) =>
      Effect.suspend(() => {
        const entry = entries.get(request.name)
        if (entry === undefined || (visible !== undefined && !visible(caller, entry.tool))) {
          return Effect.fail(new ToolNotFound({ name: request.name }))
        }
        return entry.handler({ ...request, caller })
      }),
    changes: Stream.fromPubSub(changes)
  })
  const control = InMemoryToolCatalog.of({
    upsert: (...tools) =>
      Effect.suspend(() => {
        for (const entry of tools) entries.set(entry.tool.name, entry)
        resort()
        return PubSub.publish(changes, undefined)
      }).pipe(Effect.asVoid),
    remove: (...names) =>
      Effect.suspend(() => {
        for (const name of names) entries.delete(name)
        resort()
        return PubSub.publish(changes, undefined)
      }).pipe(Effect.asVoid)
  })
  return Context.make(ToolCatalog, catalog).pipe(Context.add(InMemoryToolCatalog, control))
})
