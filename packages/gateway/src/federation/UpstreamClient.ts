/**
 * The MCP client Janus uses towards one upstream server: `connect` opens an
 * `UpstreamSession` (see `upstream/Session.ts`) over the connection's
 * transport.
 *
 * Why not the SDK `Client`: a gateway must pass results through as they are
 * (the SDK validates output schemas, drops tools, auto-fulfils or rejects
 * `input_required`, and answers server requests itself), must correlate
 * progress, log messages and server requests with the call they belong to,
 * must bound every message and exchange, and must run every byte through the
 * egress guard and inside Effect's interruption (cancellation aborts the
 * request). The wire is small, so it is written here; the official SDK
 * servers are the test counterparts.
 *
 * **Modules** (`upstream/`)
 * - `Session.ts`: the session interface every transport implements.
 * - `StreamableHttp.ts` (2026-07-28 stateless and 2025 sessions, negotiated
 *   with `server/discover` then `initialize`), `LegacySse.ts` (HTTP+SSE),
 *   `Stdio.ts` (a program's stdin/stdout; `StdioProcess.ts` spawns and stops
 *   it under `stdio-supervisor.ts`).
 * - `ChangeChannel.ts`: `subscriptions/listen` and the 2025 GET stream.
 * - `Wire.ts`: JSON-RPC messages and their framings (JSON, SSE,
 *   newline-delimited JSON); `MessageRouter.ts`: which request a message
 *   belongs to; `Requests.ts`: one request from id to result;
 *   `HttpExchange.ts`: HTTP with credentials; `Handshake.ts`: `initialize`.
 *
 * @since 0.1.0
 */
import type { SecretCache } from "@janus/storage"
import type { Effect, Scope } from "effect"
import type { ChildProcessSpawner } from "effect/process/ChildProcessSpawner"
import type { UpstreamError } from "./Errors.ts"
import * as LegacySse from "./upstream/LegacySse.ts"
import type { ConnectOptions, UpstreamSession, UpstreamTarget } from "./upstream/Session.ts"
import * as Stdio from "./upstream/Stdio.ts"
import * as StreamableHttp from "./upstream/StreamableHttp.ts"
import type { UpstreamAuth } from "./UpstreamAuth.ts"
import type { UpstreamHttp } from "./UpstreamHttp.ts"

export type {
  ChannelState,
  ConnectOptions,
  Era,
  RequestOptions,
  SessionEvent,
  Transport,
  UpstreamSession,
  UpstreamTarget
} from "./upstream/Session.ts"
export { CLIENT_CAPABILITIES, LIST_CHANGED } from "./upstream/Session.ts"
export { encodeHeaderValue, paramHeaders } from "./upstream/Wire.ts"

/** Opens a session with the upstream; it lives until the scope closes. */
export const connect = (
  target: UpstreamTarget,
  options: ConnectOptions
): Effect.Effect<
  UpstreamSession,
  UpstreamError,
  UpstreamHttp | UpstreamAuth | SecretCache | ChildProcessSpawner | Scope.Scope
> =>
  target.transport === "stdio"
    ? Stdio.connect(target, options)
    : target.transport === "sse"
    ? LegacySse.connect(target, options)
    : StreamableHttp.connect(target, options)
