/**
 * One upstream MCP server as Janus uses it, whatever its transport
 * (Streamable HTTP, HTTP+SSE, stdio) and protocol revision: the upstream
 * session interface every transport module implements.
 *
 * **Rules**
 *
 * - `request(method, params, options)` sends any MCP request and resolves to
 *   its `result` object, passed through as the upstream gave it (a
 *   2026-07-28 `input_required` result included). A JSON-RPC error is an
 *   `UpstreamError` of kind `rpc` with its code and data. Interrupting the
 *   effect cancels the request upstream (the exchange is aborted; 2025-era
 *   sessions and stdio also get `notifications/cancelled`).
 * - While a request runs, what the upstream sends about it goes to its
 *   `options`: `notifications/progress` for its progress token to
 *   `onProgress`, `notifications/message` to `relay.log`, and server-to-client
 *   requests (2025 era: `elicitation/create`, `sampling/createMessage`,
 *   `roots/list`) to `relay.request` when the calling client declared the
 *   capability (see `mcp/Relay.ts`); `ping` is answered by the session.
 * - Everything else the upstream sends outside a request (list-changed
 *   notifications of every kind, `notifications/resources/updated`, log
 *   messages) is published on `events` as `Notification`; the change
 *   channel's state is published there as `Channel` (see `ChangeChannel.ts`).
 * - `lost` fails when the session can no longer serve (the HTTP+SSE stream
 *   ended, the stdio child exited, a 2025 session could not be
 *   re-established); the owner then closes the session's scope and connects
 *   anew. A change channel failing never loses the session.
 * - The session lives until its scope closes: 2025 sessions are then ended
 *   with DELETE, streams aborted, a stdio child's process group stopped.
 *
 * @since 0.1.0
 */
import type { StdioCommand } from "@janus/storage"
import type { Duration, Effect, Scope, Stream } from "effect"
import type { AllowList } from "../../egress/EgressPolicy.ts"
import type { RelayHooks } from "../../mcp/Relay.ts"
import type { UpstreamError } from "../Errors.ts"
import type { UpstreamAuthConfig } from "../UpstreamAuth.ts"
import type { Params } from "./Wire.ts"

/**
 * The protocol revision family a session negotiated: `stateless` is
 * 2026-07-28 (`server/discover`, no session, `_meta` on every request),
 * `stateful` the 2025 revisions and 2024-11-05 (`initialize`, a session).
 * The same words as `mcp/Protocol.ts` (`STATELESS_VERSION`,
 * `STATEFUL_VERSIONS`).
 */
export type Era = "stateless" | "stateful"

/** How Janus reaches an upstream. */
export type Transport = "streamable-http" | "sse" | "stdio"

/** One upstream, as the client needs it. */
export interface UpstreamTarget {
  readonly id: string
  readonly name: string
  readonly transport: Transport
  /** The MCP endpoint (`streamable-http`) or the SSE endpoint (`sse`); unused for `stdio`. */
  readonly url: string
  /** The program and its environment (`stdio`). */
  readonly command?: StdioCommand | undefined
  readonly allow: AllowList
  readonly auth: UpstreamAuthConfig
}

/** How every transport opens a session; it lives until the scope closes. */
export type Connect<R> = (
  target: UpstreamTarget,
  options: ConnectOptions
) => Effect.Effect<UpstreamSession, UpstreamError, R | Scope.Scope>

export interface ConnectOptions {
  readonly clientInfo: { readonly name: string; readonly version: string }
  /** Bound of `server/discover`, `initialize`, and of requests without their own `timeout`. */
  readonly requestTimeout: Duration.Duration
  /** Largest JSON body, SSE event or line accepted. */
  readonly maxMessageBytes: number
  /** First delay before a failed change channel is opened again (doubling, jittered). Default 1 s. */
  readonly channelRetry?: Duration.Duration | undefined
  /** Largest delay between attempts to open a failed change channel. Default 5 minutes. */
  readonly channelRetryMax?: Duration.Duration | undefined
}

/** What one request may report back while it runs, and how it is sent. */
export interface RequestOptions {
  readonly onProgress?: ((params: Params) => Effect.Effect<void>) | undefined
  readonly relay?: RelayHooks | undefined
  /** Extra request headers (2026-07-28 `Mcp-Param-*`); HTTP only. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Bound of the request; default `ConnectOptions.requestTimeout`. */
  readonly timeout?: Duration.Duration | undefined
}

/** The state of the session's change channel (`subscriptions/listen`, the 2025 GET stream, the session stream). */
export type ChannelState =
  /** Being opened for the first time. */
  | { readonly _tag: "Opening" }
  /** Open: the upstream's list-changed notifications arrive on it. */
  | { readonly _tag: "Open" }
  /** None or failed: lists must be re-fetched on an interval to see changes. */
  | { readonly _tag: "Closed"; readonly reason: string }

/** Something the upstream sent, or the change channel did, outside any request. */
export type SessionEvent =
  | { readonly _tag: "Notification"; readonly method: string; readonly params: Params }
  | { readonly _tag: "Channel"; readonly state: ChannelState }

/** What a session knows about its server once negotiated (`initialize`, or `server/discover`). */
export interface Negotiated {
  readonly protocolVersion: string
  readonly capabilities: Params
  readonly serverInfo: Params | undefined
  readonly instructions: string | undefined
}

export interface UpstreamSession extends Negotiated {
  readonly transport: Transport
  readonly era: Era
  /** One request; resolves to its `result` object. */
  readonly request: (method: string, params: Params, options?: RequestOptions) => Effect.Effect<Params, UpstreamError>
  /** One notification to the upstream (e.g. `notifications/roots/list_changed`). */
  readonly notify: (method: string, params: Params) => Effect.Effect<void, UpstreamError>
  /** Notifications outside any request, and change-channel states; subscribe before reading `channel`. */
  readonly events: Stream.Stream<SessionEvent>
  /** The change channel's state now. */
  readonly channel: ChannelState
  /** Fails when the session can no longer serve. */
  readonly lost: Effect.Effect<never, UpstreamError>
  /**
   * 2026-07-28 streamable HTTP: asks the upstream for `uri`'s
   * `notifications/resources/updated` (a `subscriptions/listen` with
   * `resourceSubscriptions`, reopened like the change channel) until the
   * scope closes; they arrive on `events`.
   */
  readonly watch?: ((uri: string) => Effect.Effect<void, never, Scope.Scope>) | undefined
  /** The program's pid (stdio). */
  readonly pid?: (() => number | undefined) | undefined
}

/** What Janus offers upstream: input requests are passed to (and checked against) the real client. */
export const CLIENT_CAPABILITIES = {
  elicitation: { form: {}, url: {} },
  sampling: {},
  roots: {}
} as const

/** The list-changed notifications of every kind. */
export const LIST_CHANGED: ReadonlyArray<string> = [
  "notifications/tools/list_changed",
  "notifications/prompts/list_changed",
  "notifications/resources/list_changed"
]
