/**
 * The deprecated HTTP+SSE transport of protocol 2024-11-05, for old clients:
 * `GET /sse` opens the server-to-client stream and announces, in an `endpoint`
 * event, the URL to POST messages to (`/messages?sessionId=…`); every POST is
 * answered `202 Accepted` and its response travels on the stream as a
 * `message` event.
 *
 * Spec rules (2024-11-05 "Transports", "HTTP with SSE"): the first event is
 * `endpoint`; server messages are `message` events whose data is the JSON-RPC
 * message; the same `Origin` validation (403) applies. A POST for an unknown
 * or closed stream is 404, one without `sessionId` 400. Requests run while the
 * stream is open: closing it cancels them, and `notifications/cancelled`
 * cancels one. The stream also carries coalesced
 * `notifications/tools/list_changed`, a federated call's upstream log
 * messages (at the level of `logging/setLevel`) and its upstream's
 * server-to-client requests, whose responses the client POSTs like any
 * message (see `ClientRelay.ts`).
 *
 * Both routes share the Streamable HTTP endpoint's gate (`guarded`: Origin,
 * admission, CORS for allowed browser origins, and the stream's end when its
 * credential is revoked or expires); CORS preflights are answered on both.
 * Opening the stream takes one of the caller's open-stream permits
 * (`MCP_MAX_STREAMS_PER_CALLER`, 429 without one), given back when it ends.
 *
 * The session lives with its SSE connection, so it is local to the instance
 * that holds the connection (this transport cannot move between replicas).
 *
 * @since 0.1.0
 */
import {
  Cause,
  Deferred,
  type Duration,
  Effect,
  Fiber,
  FiberSet,
  Option,
  Predicate,
  Queue,
  type Scope,
  Stream
} from "effect"
import { HttpRouter, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type { Caller } from "./Caller.ts"
import * as ClientRelay from "./ClientRelay.ts"
import { type CallContext, Dispatcher } from "./Dispatcher.ts"
import { Features } from "./Features.ts"
import * as HttpReply from "./HttpReply.ts"
import { isParsedBody, type ParsedBody } from "./HttpReply.ts"
import {
  classify,
  encodeError,
  encodeNotification,
  encodeProgress,
  encodeResult,
  internalError,
  progressToken,
  ProtocolError
} from "./JsonRpc.ts"
import { ListChangedSignals } from "./ListChanged.ts"
import { accepts, Header, isStatefulVersion, LATEST_STATEFUL_VERSION } from "./Protocol.ts"
import { newSessionId } from "./Sessions.ts"
import * as SessionSubscriptions from "./SessionSubscriptions.ts"
import * as Sse from "./Sse.ts"
import type { ProgressReporter } from "./ToolCatalog.ts"

type Handler<R> = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>

/** What the Streamable HTTP module shares with this transport. */
export interface LegacyOptions {
  readonly ssePath: HttpRouter.PathInput
  readonly messagesPath: HttpRouter.PathInput
  /** A handler for an admitted caller, behind the endpoint's gate (Origin, admission, CORS, stream lifetime). */
  readonly guarded: <R>(
    handle: (
      request: HttpServerRequest.HttpServerRequest,
      caller: Caller
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
  ) => Handler<R>
  /** `OPTIONS`: a CORS preflight is answered, anything else goes to `otherwise`. */
  readonly preflightOr: <R>(otherwise: Handler<R>) => Handler<R>
  readonly readBody: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<ParsedBody | HttpServerResponse.HttpServerResponse>
  /** One of the caller's open-stream permits for the request's scope, or the 429 that refuses the stream. */
  readonly holdStream: (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse | undefined, never, Scope.Scope>
  readonly keepAlive: Duration.Duration
  readonly shutdown: Deferred.Deferred<void>
}

interface LegacySession {
  readonly caller: Caller
  readonly outbound: Queue.Queue<string, Cause.Done>
  readonly fibers: FiberSet.FiberSet<void, never>
  readonly inflight: Map<string, Fiber.Fiber<void>>
  clientCapabilities: Readonly<Record<string, unknown>>
  logLevel: string | undefined
  /** Server-to-client requests awaiting the client's response, by id. */
  readonly asked: Map<string, Deferred.Deferred<unknown>>
  /** The resources the client subscribed to (one session, key `""`), held while the stream is open. */
  readonly subscribed: SessionSubscriptions.SessionSubscriptions
}

/** Adds the two legacy routes. */
export const mount = Effect.fnUntraced(function*(options: LegacyOptions) {
  const router = yield* HttpRouter.HttpRouter
  const dispatcher = yield* Dispatcher
  const signals = yield* ListChangedSignals
  const features = yield* Effect.serviceOption(Features)
  const sessions = new Map<string, LegacySession>()
  const listChanged = Sse.named("message", encodeNotification("notifications/tools/list_changed"))

  const open = (request: HttpServerRequest.HttpServerRequest, gated: Caller) =>
    Effect.gen(function*() {
      if (!accepts(request.headers[Header.accept], "text/event-stream")) {
        return HttpReply.error(
          null,
          ProtocolError.invalidRequest(
            `Accept ${JSON.stringify(request.headers[Header.accept] ?? "(missing)")} must list text/event-stream`,
            406
          )
        )
      }
      // one of the caller's open-stream permits, held until this stream ends (`MCP_MAX_STREAMS_PER_CALLER`)
      const refusal = yield* options.holdStream(request, gated)
      if (refusal !== undefined) return refusal
      const id = newSessionId()
      // `/servers/:name/messages` names the server the stream was opened on
      const route = yield* Effect.serviceOption(HttpRouter.RouteContext)
      const params: Readonly<Record<string, string | undefined>> = Option.isSome(route) ? route.value.params : {}
      const messagesPath = options.messagesPath.replace(/:(\w+)/g, (param, name: string) => {
        const value = params[name]
        return value === undefined ? param : encodeURIComponent(value)
      })
      const endpoint = `${messagesPath}?sessionId=${id}`
      const events = Stream.unwrap(Effect.gen(function*() {
        const outbound = yield* Queue.unbounded<string, Cause.Done>()
        const fibers = yield* FiberSet.make<void, never>()
        sessions.set(id, {
          caller: gated,
          outbound,
          fibers,
          inflight: new Map(),
          clientCapabilities: {},
          logLevel: undefined,
          asked: new Map(),
          // let go with the stream (its scope): the session ends when its stream closes
          subscribed: yield* SessionSubscriptions.make(features)
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => sessions.delete(id)))
        const changes = yield* signals.subscribe
        const session = sessions.get(id)!
        const updates = Option.isSome(features) ? yield* features.value.updatesFor(gated) : Stream.empty
        const other = Option.isNone(features) ? Stream.empty : Stream.merge(
          Stream.map(features.value.changes, (kind) =>
            Sse.named("message", encodeNotification(`notifications/${kind}/list_changed`))),
          updates.pipe(
            Stream.filter((uri) =>
              session.subscribed.has("", uri)
            ),
            Stream.map((uri) =>
              Sse.named("message", encodeNotification("notifications/resources/updated", JSON.stringify({ uri })))
            )
          )
        )
        return Stream.concat(
          Stream.succeed(Sse.named("endpoint", endpoint)),
          Stream.mergeAll([
            Stream.fromQueue(outbound),
            Stream.map(changes, () => listChanged),
            other,
            Stream.map(Stream.tick(options.keepAlive).pipe(Stream.drop(1)), () => Sse.keepAlive)
          ], { concurrency: "unbounded" })
        )
      })).pipe(Stream.interruptWhen(Deferred.await(options.shutdown)))
      return Sse.response(events)
    })

  /** Upstream log messages at the session's level and server-to-client requests, on the session's stream. */
  const relayFor = (session: LegacySession, emit: (json: string) => Effect.Effect<void>): CallContext["relay"] => ({
    log: ClientRelay.logHook(session.logLevel, emit),
    logLevel: session.logLevel,
    request: (method, params) => {
      const id = `janus.${newSessionId()}`
      return Effect.acquireUseRelease(
        Effect.map(Deferred.make<unknown>(), (answer) => {
          session.asked.set(id, answer)
          return answer
        }),
        (answer) =>
          Effect.andThen(
            emit(JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) })),
            Effect.flatMap(Deferred.await(answer), ClientRelay.outcomeOf)
          ),
        () => Effect.sync(() => session.asked.delete(id))
      )
    }
  })

  const handle = (session: LegacySession, body: unknown) =>
    Effect.gen(function*() {
      const message = classify(body)
      const send = (json: string) => Queue.offer(session.outbound, Sse.named("message", json))
      switch (message._tag) {
        case "Invalid":
          return yield* send(
            encodeError(message.id, ProtocolError.invalidRequest(`Invalid Request: ${message.reason}`))
          )
        case "Response": {
          const asked = typeof message.id === "string" ? session.asked.get(message.id) : undefined
          if (asked !== undefined) yield* Deferred.succeed(asked, body)
          return
        }
        case "Notification": {
          if (message.method !== "notifications/cancelled") return
          const requestId = message.params?.requestId
          const fiber = session.inflight.get(`${typeof requestId}:${String(requestId)}`)
          if (fiber !== undefined) yield* Effect.forkDetach(Fiber.interrupt(fiber))
          return
        }
        case "Request":
          break
      }
      if (message.method === "initialize") {
        const requested = message.params?.protocolVersion
        const capabilities = message.params?.capabilities
        session.clientCapabilities = Predicate.isReadonlyObject(capabilities) ? capabilities : {}
        const version = isStatefulVersion(requested) ? requested : LATEST_STATEFUL_VERSION
        return yield* send(encodeResult(message.id, yield* dispatcher.initializeResult(version, session.caller)))
      }
      if (message.method === "logging/setLevel") {
        const level = ClientRelay.requestedLevel(message.params)
        if (level instanceof ProtocolError) return yield* send(encodeError(message.id, level))
        session.logLevel = level
        return yield* send(encodeResult(message.id, "{}"))
      }
      const token = progressToken(message)
      const progress = token !== undefined ?
        Option.some<ProgressReporter>((value, total, text) =>
          Effect.asVoid(send(encodeProgress(token, value, total, text)))
        ) :
        Option.none()
      const key = `${typeof message.id}:${String(message.id)}`
      const fiber = yield* FiberSet.run(
        session.fibers,
        dispatcher.dispatch(
          {
            stateless: false,
            caller: session.caller,
            clientCapabilities: session.clientCapabilities,
            progress,
            relay: relayFor(session, (json) => Effect.asVoid(send(json)))
          },
          message.method,
          message.params
        ).pipe(
          Effect.matchCauseEffect({
            onSuccess: (result) => {
              return Effect.andThen(
                session.subscribed.record("", session.caller, message.method, message.params?.uri),
                send(encodeResult(message.id, result))
              )
            },
            onFailure: (cause) =>
              Cause.hasInterruptsOnly(cause) ? Effect.void : send(encodeError(
                message.id,
                Option.getOrElse(
                  Cause.findErrorOption(cause),
                  () => internalError
                )
              ))
          }),
          Effect.asVoid,
          Effect.ensuring(Effect.sync(() => session.inflight.delete(key)))
        )
      )
      session.inflight.set(key, fiber)
    })

  const post = (request: HttpServerRequest.HttpServerRequest, gated: Caller) =>
    Effect.gen(function*() {
      const sessionId = new URL(request.url, "http://localhost").searchParams.get("sessionId")
      if (sessionId === null) {
        return HttpReply.error(
          null,
          ProtocolError.invalidRequest(
            `The sessionId query parameter is missing; POST to the URL of the endpoint event of ${options.ssePath}`
          )
        )
      }
      const session = sessions.get(sessionId)
      if (session === undefined || session.caller.id !== gated.id) {
        return HttpReply.error(
          null,
          new ProtocolError({
            code: ErrorCode.sessionNotFound,
            message: `sessionId names no open ${options.ssePath} stream; open a new stream with GET ${options.ssePath}`,
            status: 404
          })
        )
      }
      const notJson = HttpReply.unlessJsonBody(request.headers)
      if (notJson !== undefined) return notJson
      const read = yield* options.readBody(request)
      if (!isParsedBody(read)) return read
      yield* handle(session, read.value)
      return HttpReply.accepted
    })

  const notAllowed = (allow: "GET" | "POST") =>
    options.guarded((request) =>
      Effect.succeed(HttpReply.error(
        null,
        ProtocolError.invalidRequest(`HTTP method ${request.method} is not supported here; use ${allow}`, 405),
        { allow }
      ))
    )

  yield* router.add("GET", options.ssePath, options.guarded(open))
  yield* router.add("OPTIONS", options.ssePath, options.preflightOr(notAllowed("GET")))
  yield* router.add("POST", options.messagesPath, options.guarded(post))
  yield* router.add("OPTIONS", options.messagesPath, options.preflightOr(notAllowed("POST")))
})
