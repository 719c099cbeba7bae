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
 *   upstream gets an answer without the client being asked: elicitation is
 *   declined (`{"action":"decline"}`), sampling and roots are refused with
 *   JSON-RPC -32601.
 * - On 2026-07-28 upstreams there are no server-to-client requests: input is
 *   asked for with an `input_required` result, passed through to the client.
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
}

/** Per-call relay hooks; empty by default. */
export const UpstreamRelay = Context.Reference<RelayHooks>("@janus/gateway/mcp/UpstreamRelay", {
  defaultValue: () => ({})
})
