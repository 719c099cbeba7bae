/**
 * The session of a 2025-era request (`Stateful.ts`): `initialize` starts one
 * in {@link McpSessionStore}, every later request names it in
 * `Mcp-Session-Id` and is checked against it.
 *
 * **Spec rules**
 *
 * From the specification: 2025-11-25 "Transports", "Lifecycle"; earlier
 * revisions where they differ.
 *
 * - `initialize` creates the session and returns its id in `Mcp-Session-Id`;
 *   an `initialize` carrying a session id is 400. The server answers with the
 *   client's revision if it speaks it, else with its latest.
 * - Every later request must carry `Mcp-Session-Id`: missing is 400, an id that
 *   names no live session (ended, expired, created by another caller, or a
 *   record of the store that is not a 2025-era session) is 404.
 * - `MCP-Protocol-Version` may be absent (the negotiated revision applies, as
 *   2025-03-26 clients never send it); a value that is not a 2025-era revision
 *   is 400 UnsupportedProtocolVersion. Any 2025-era value is accepted (clients
 *   in the wild send their default one) and the negotiated revision governs.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Exit, Option, Predicate } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import * as ClientText from "../observability/ClientText.ts"
import type { Caller } from "./Caller.ts"
import { Dispatcher } from "./Dispatcher.ts"
import * as HttpReply from "./HttpReply.ts"
import { encodeResult, ProtocolError, type RequestMessage } from "./JsonRpc.ts"
import { Header, headerValue, isStatefulVersion, LATEST_STATEFUL_VERSION, STATEFUL_VERSIONS } from "./Protocol.ts"
import { type McpSession, McpSessionStore, newSessionId } from "./Sessions.ts"

// the store's `lastSeenAt` drives expiry; writing it on every request would cost a round trip each
const TOUCH_EVERY_MS = 30_000

/** 503: the session store did not answer. */
export const storeUnavailable = new ProtocolError({
  code: ErrorCode.internalError,
  message: "The session store is unavailable; retry the request shortly",
  status: 503
})

/** The headers every response of a session carries. */
export const sessionHeaders = (session: McpSession): Readonly<Record<string, string>> => ({
  [Header.sessionId]: session.id
})

/** @since 0.1.0 */
export interface StatefulSessions {
  /** The session named by `Mcp-Session-Id`, checked against the caller and the version header. */
  readonly load: (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller
  ) => Effect.Effect<McpSession, ProtocolError>
  /** `initialize`: a new session, and the response that names it. */
  readonly initialize: (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller,
    message: RequestMessage
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}

/** @since 0.1.0 */
export const make: Effect.Effect<StatefulSessions, never, McpSessionStore | Dispatcher> = Effect.gen(function*() {
  const store = yield* McpSessionStore
  const dispatcher = yield* Dispatcher

  const load = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, caller: Caller) {
    const id = headerValue(request.headers, Header.sessionId)
    if (id === undefined) {
      return yield* ProtocolError.invalidRequest(
        "Mcp-Session-Id header is missing; send initialize first to start a session, or use protocol 2026-07-28 (MCP-Protocol-Version header and params._meta) without one"
      )
    }
    const found = yield* store.get(id).pipe(Effect.mapError(() => storeUnavailable))
    // the store also keeps held calls (2026-07-28, `federation/HeldCalls.ts`): never a session
    if (Option.isNone(found) || found.value.ownerId !== caller.id || !isStatefulVersion(found.value.protocolVersion)) {
      return yield* new ProtocolError({
        code: ErrorCode.sessionNotFound,
        message: "The Mcp-Session-Id names no live session (it ended or expired); start a new session with initialize",
        status: 404
      })
    }
    const session = found.value
    const version = headerValue(request.headers, Header.protocolVersion)
    if (version !== undefined && version !== session.protocolVersion && !isStatefulVersion(version)) {
      return yield* new ProtocolError({
        code: ErrorCode.unsupportedProtocolVersion,
        message: `Unsupported MCP-Protocol-Version '${ClientText.echoed(version)}' for a session; supported: ${
          STATEFUL_VERSIONS.join(", ")
        } (this session negotiated ${session.protocolVersion})`,
        data: { supported: STATEFUL_VERSIONS, requested: ClientText.echoed(version) },
        status: 400
      })
    }
    const now = yield* Clock.currentTimeMillis
    if (now - session.lastSeenAt > TOUCH_EVERY_MS) yield* Effect.ignore(store.touch(session.id, now))
    return session
  })

  const initialize = Effect.fnUntraced(function*(
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller,
    message: RequestMessage
  ) {
    if (headerValue(request.headers, Header.sessionId) !== undefined) {
      return HttpReply.error(
        message.id,
        ProtocolError.invalidRequest(
          "initialize must not carry an Mcp-Session-Id header: it starts a new session; drop the header"
        )
      )
    }
    const params = message.params
    const requested = params?.protocolVersion
    if (typeof requested !== "string") {
      return HttpReply.error(
        message.id,
        ProtocolError.invalidParams(
          `initialize requires params.protocolVersion (a string such as "${LATEST_STATEFUL_VERSION}"), got ${
            JSON.stringify(requested) ?? "nothing"
          }`,
          400
        )
      )
    }
    const capabilities = params?.capabilities
    const clientInfo = params?.clientInfo
    const version = isStatefulVersion(requested) ? requested : LATEST_STATEFUL_VERSION
    const now = yield* Clock.currentTimeMillis
    const session: McpSession = {
      id: newSessionId(),
      ownerId: caller.id,
      protocolVersion: version,
      clientInfo: Predicate.isReadonlyObject(clientInfo) ? clientInfo : undefined,
      clientCapabilities: Predicate.isReadonlyObject(capabilities) ? capabilities : {},
      createdAt: now,
      lastSeenAt: now
    }
    const created = yield* Effect.exit(store.create(session))
    if (Exit.isFailure(created)) return HttpReply.error(message.id, storeUnavailable)
    const result = yield* dispatcher.initializeResult(version, caller)
    return HttpReply.json(encodeResult(message.id, result), 200, sessionHeaders(session))
  })

  return { load, initialize }
})
