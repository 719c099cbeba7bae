/**
 * What an upstream call may send back to the calling client while it runs,
 * besides progress (which `ToolCallRequest.progress` carries): log messages
 * and, on 2025-era upstream sessions, server-to-client requests.
 *
 * The `ToolCatalog` interface has no channel for these, so the transport that
 * serves the call provides them per call with
 * `Effect.provideService(UpstreamRelay, hooks)` around `catalog.call`; the
 * default (no hooks) is what a call gets until a transport does.
 *
 * **Rules**
 *
 * - Log messages (`notifications/message`) that arrive on the call's own
 *   response stream go to `log`; without `log` they are logged by the gateway
 *   at debug level with the connection name.
 * - `elicitation/create`, `sampling/createMessage` and `roots/list` from a
 *   2025-era upstream session go to `request` when the calling client
 *   declared the matching capability (`clientCapabilities`); otherwise the
 *   upstream gets an answer without the client being asked
 *   ({@link answerWithoutClient}): elicitation is declined
 *   (`{"action":"decline"}`), `roots/list` gets no roots (`{"roots":[]}`: the
 *   gateway vouches for no directory of its own, and outside a call there is
 *   no client whose roots could be given), sampling is refused with JSON-RPC
 *   -32601 (nothing can stand in for a model).
 * - A 2026-07-28 client (`stateless`) cannot receive server-to-client
 *   requests: its `request` hook is the held call's (`federation/HeldCalls.ts`),
 *   which answers the client with `input_required` and the upstream with the
 *   client's `inputResponses` when it calls again.
 * - On 2026-07-28 upstreams there are no server-to-client requests: input is
 *   asked for with an `input_required` result, passed through to a 2026-07-28
 *   client and fulfilled over the session for a 2025-era one
 *   (`InputRequired.ts`).
 *
 * @since 0.1.0
 */
import { Context, type Effect, Schema } from "effect"

/** The client could not or would not answer a relayed request. */
export class RelayRefused extends Schema.TaggedError<RelayRefused>()("RelayRefused", {
  code: Schema.Number,
  message: Schema.String
}) {}

export interface RelayHooks {
  /** Forwards an upstream `notifications/message` (its params) to the calling client. */
  readonly log?: ((params: Readonly<Record<string, unknown>>) => Effect.Effect<void>) | undefined
  /** Forwards a server-to-client request of a 2025-era upstream to the calling client; its `result`. */
  readonly request?:
    | ((
      method: string,
      params: Readonly<Record<string, unknown>> | undefined
    ) => Effect.Effect<Readonly<Record<string, unknown>>, RelayRefused>)
    | undefined
  /** The calling client's declared capabilities (2025 `initialize`, 2026 `_meta`). */
  readonly clientCapabilities?: Readonly<Record<string, unknown>> | undefined
  /** `io.modelcontextprotocol/logLevel` for 2026-07-28 upstream calls (the client's wish), if any. */
  readonly logLevel?: string | undefined
  /** The calling client speaks 2026-07-28: it is asked for input with `input_required` results only. */
  readonly stateless?: boolean | undefined
}

/** The capability a client must declare to be asked `method`, if `method` is an input request. */
export const capabilityOf = (method: string): "elicitation" | "sampling" | "roots" | undefined =>
  method === "elicitation/create" ?
    "elicitation" :
    method === "sampling/createMessage" ?
    "sampling" :
    method === "roots/list" ?
    "roots" :
    undefined

/**
 * The answer to an input request no client is asked (the calling client did
 * not declare the capability, or there is no calling client), or `undefined`
 * when only a client could answer it (sampling).
 */
export const answerWithoutClient = (method: string): Readonly<Record<string, unknown>> | undefined =>
  method === "elicitation/create" ? { action: "decline" } : method === "roots/list" ? { roots: [] } : undefined

/** Per-call relay hooks; empty by default. */
export const UpstreamRelay = Context.Reference<RelayHooks>("@janus/gateway/mcp/UpstreamRelay", {
  defaultValue: () => ({})
})
