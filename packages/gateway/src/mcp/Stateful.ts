/**
 * The 2025-era wire of the Streamable HTTP endpoint (revisions 2025-03-26,
 * 2025-06-18, 2025-11-25): routes POST, GET and DELETE to the modules that
 * hold each concern, and answers the requests of a session.
 *
 * - sessions (`initialize`, `Mcp-Session-Id`, `MCP-Protocol-Version`):
 *   `StatefulSession.ts`;
 * - in-flight calls and their cancellation: `InFlightCalls.ts`;
 * - resumable SSE streams (event ids, `Last-Event-ID`, polling):
 *   `ResumableStreams.ts`; the standalone GET stream: `StandaloneStream.ts`;
 * - JSON-RPC batches (2025-03-26): `StatefulBatch.ts`.
 *
 * **Spec rules**
 *
 * From the specification: 2025-11-25 "Transports", "Lifecycle", "Cancellation";
 * earlier revisions where they differ.
 *
 * - What is wrong with a message (Invalid Request) is answered before what is
 *   wrong with its session; `initialize` on a session is 400.
 * - Notifications and responses are answered 202 Accepted; a response is the
 *   answer to a server-to-client request, delivered to the call waiting for
 *   it, which may run on another replica (`ClientRelay.ts`).
 * - `tools/call` runs as an in-flight call: a client disconnect never stops
 *   it, `notifications/cancelled` does (its `AbortSignal` is aborted, and no
 *   response is sent). It is answered JSON or with a resumable SSE stream
 *   carrying its `notifications/progress` (when the request had a
 *   `_meta.progressToken`).
 * - `logging/setLevel` stores the level with the session; a federated
 *   call's upstream log messages at or above it, and its upstream's
 *   server-to-client requests (when the client declared the capability), go
 *   on the call's response stream; the client's response to one may be
 *   POSTed to any replica (`ClientRelay.ts`).
 * - GET with `Last-Event-ID` resumes the stream that id belongs to; without,
 *   it opens the standalone stream (the `Accept: text/event-stream` it
 *   requires, else 406, is checked by `StreamableHttp.ts`).
 * - DELETE with the session id ends the session (204): in-flight calls are
 *   cancelled and its streams end; later requests with that id get 404.
 *
 * @since 0.1.0
 */
import { Deferred, Effect, Exit, Option, type Scope } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Caller } from "./Caller.ts"
import * as ClientRelay from "./ClientRelay.ts"
import { type CallContext, Dispatcher } from "./Dispatcher.ts"
import { Features } from "./Features.ts"
import type { AdmissionRefused } from "./Guard.ts"
import * as HttpReply from "./HttpReply.ts"
import * as InFlightCalls from "./InFlightCalls.ts"
import {
  classify,
  encodeError,
  encodeProgress,
  encodeResult,
  errorOf,
  type NotificationMessage,
  progressToken,
  ProtocolError,
  type RequestId,
  type RequestMessage
} from "./JsonRpc.ts"
import { Header, headerValue } from "./Protocol.ts"
import * as ResumableStreams from "./ResumableStreams.ts"
import { type McpSession, McpSessionStore } from "./Sessions.ts"
import * as SessionSubscriptions from "./SessionSubscriptions.ts"
import * as StandaloneStream from "./StandaloneStream.ts"
import * as StatefulBatch from "./StatefulBatch.ts"
import * as StatefulSession from "./StatefulSession.ts"
import type { ProgressReporter } from "./ToolCatalog.ts"

/** @since 0.1.0 */
export interface StatefulOptions extends Omit<ResumableStreams.ResumableStreamOptions, "ended"> {
  /** Completed when the endpoint shuts down: streams end so clients reconnect elsewhere. */
  readonly shutdown: Deferred.Deferred<void>
}

/** Builds the handlers of 2025-era POST, GET and DELETE. */
export const make = Effect.fnUntraced(function*(options: StatefulOptions) {
  const store = yield* McpSessionStore
  const dispatcher = yield* Dispatcher
  const features = yield* Effect.serviceOption(Features)
  const ended = Deferred.await(options.shutdown)
  const sessions = yield* StatefulSession.make
  const calls = yield* InFlightCalls.make
  const subscribed = yield* SessionSubscriptions.make(features, {
    alive: (id) => Effect.map(store.get(id), Option.isSome)
  })
  const streams = yield* ResumableStreams.make({ ...options, ended })
  const standalone = yield* StandaloneStream.make({
    streams,
    subscribed,
    features,
    retryMs: options.retryMs,
    ended
  })
  const { sessionHeaders } = StatefulSession

  const endSession = (sessionId: string) =>
    Effect.andThen(
      Effect.andThen(subscribed.end(sessionId), standalone.end(sessionId)),
      calls.cancelAll(sessionId)
    )

  // -------------------------------------------------------------------------
  // Requests
  // -------------------------------------------------------------------------

  const contextFor = (session: McpSession, caller: Caller, progress: CallContext["progress"]): CallContext => ({
    stateless: false,
    caller,
    clientCapabilities: session.clientCapabilities,
    progress
  })

  /** Upstream log messages (at the session's level) and server-to-client requests, on the call's stream. */
  const relayFor = (session: McpSession, emit: (json: string) => Effect.Effect<void>): CallContext["relay"] => ({
    log: ClientRelay.logHook(session.logLevel, emit),
    request: ClientRelay.requestHook(store, session.id, emit),
    logLevel: session.logLevel
  })

  /**
   * `tools/call`. The call is an in-flight call, so it outlives the
   * connection; its answer is JSON or a resumable stream (`ResumableStreams.ts`).
   */
  const callTool = (session: McpSession, caller: Caller, message: RequestMessage) =>
    streams.answer(session, {
      run: (emit) => {
        const token = progressToken(message)
        const progress: CallContext["progress"] = token === undefined ?
          Option.none() :
          Option.some<ProgressReporter>((value, total, text) => emit(encodeProgress(token, value, total, text)))
        return dispatcher.dispatch(
          { ...contextFor(session, caller, progress), relay: relayFor(session, emit) },
          message.method,
          message.params
        ).pipe(
          Effect.exit,
          Effect.map((exit) =>
            Exit.isSuccess(exit) ? encodeResult(message.id, exit.value) : encodeError(message.id, errorOf(exit))
          )
        )
      },
      fork: (run) => calls.run(session.id, message.id, run)
    })

  /** Methods answered with the session itself rather than by the dispatcher. */
  const sessionMethod = (
    session: McpSession,
    caller: Caller,
    message: RequestMessage,
    admitted?: Effect.Effect<void, AdmissionRefused>
  ) =>
    message.method === "logging/setLevel" ?
      ClientRelay.setLevel(store, session.id, message.params) :
      dispatcher.dispatch(
        admitted === undefined ? contextFor(session, caller, Option.none()) : {
          ...contextFor(session, caller, Option.none()),
          admitted
        },
        message.method,
        message.params
      )

  const handleRequest = (session: McpSession, caller: Caller, message: RequestMessage) => {
    if (message.method === "tools/call") return callTool(session, caller, message)
    if (message.method === "initialize") {
      return Effect.succeed(HttpReply.error(
        message.id,
        ProtocolError.invalidRequest(
          "initialize was already done for this session; start a new session without Mcp-Session-Id"
        )
      ))
    }
    return Effect.flatMap(
      Effect.exit(sessionMethod(session, caller, message)),
      (exit) =>
        Exit.isSuccess(exit) ?
          Effect.as(
            subscribed.record(session.id, caller, message.method, message.params?.uri),
            HttpReply.json(encodeResult(message.id, exit.value), 200, sessionHeaders(session))
          ) :
          Effect.succeed(HttpReply.error(message.id, errorOf(exit), sessionHeaders(session)))
    )
  }

  const notification = (session: McpSession, message: NotificationMessage) =>
    message.method === "notifications/cancelled" ? calls.cancel(session.id, message.params) : Effect.void

  const batch = yield* StatefulBatch.make({ calls, request: sessionMethod, notification })

  /** POST with a parsed body. */
  const post = (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller,
    body: unknown
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope> =>
    Effect.gen(function*() {
      if (Array.isArray(body)) {
        const session = yield* sessions.load(request, caller)
        return yield* batch(request, session, caller, body)
      }
      const message = classify(body)
      if (message._tag === "Request" && message.method === "initialize") {
        return yield* sessions.initialize(request, caller, message)
      }
      // what is wrong with the message comes before what is wrong with the session
      if (message._tag === "Invalid") {
        return HttpReply.error(message.id, ProtocolError.invalidRequest(`Invalid Request: ${message.reason}`))
      }
      const session = yield* sessions.load(request, caller)
      switch (message._tag) {
        case "Response":
          // the answer to a server-to-client request; its call may wait on another replica
          yield* ClientRelay.deliverReply(store, session.id, body)
          return HttpReply.accepted
        case "Notification":
          yield* notification(session, message)
          return HttpReply.accepted
        case "Request":
          return yield* handleRequest(session, caller, message)
      }
    }).pipe(
      Effect.catchTag("ProtocolError", (error) => {
        const id = Array.isArray(body) ? null : (classify(body) as { id?: RequestId | null }).id ?? null
        return Effect.succeed(HttpReply.error(id, error))
      })
    )

  // -------------------------------------------------------------------------
  // GET and DELETE
  // -------------------------------------------------------------------------

  const get = (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope> =>
    Effect.gen(function*() {
      const session = yield* sessions.load(request, caller)
      const lastEventId = headerValue(request.headers, Header.lastEventId)
      if (lastEventId === undefined) return yield* standalone.open(session, caller, undefined)
      const { seq, streamId } = yield* streams.parseLastEventId(lastEventId)
      if (streamId === StandaloneStream.STANDALONE_STREAM) return yield* standalone.open(session, caller, seq)
      return yield* streams.resume(session, lastEventId, streamId, seq)
    }).pipe(Effect.catchTag("ProtocolError", (error) => Effect.succeed(HttpReply.error(null, error))))

  const del = (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller
  ): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
    Effect.gen(function*() {
      const session = yield* sessions.load(request, caller)
      yield* store.delete(session.id).pipe(Effect.mapError(() => StatefulSession.storeUnavailable))
      yield* endSession(session.id)
      return HttpReply.noContent
    }).pipe(Effect.catchTag("ProtocolError", (error) => Effect.succeed(HttpReply.error(null, error))))

  return { post, get, delete: del } as const
})
