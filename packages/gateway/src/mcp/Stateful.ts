/**
 * The 2025-era wire of the Streamable HTTP endpoint (revisions 2025-03-26,
 * 2025-06-18, 2025-11-25): `initialize`, `Mcp-Session-Id` sessions kept in
 * {@link McpSessionStore}, the GET stream, resumable SSE streams, DELETE.
 *
 * Spec rules this module enforces (2025-11-25 "Transports", "Lifecycle",
 * "Cancellation"; earlier revisions where they differ):
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
 * - Notifications and responses are answered 202 Accepted. JSON-RPC batches are
 *   accepted on 2025-03-26 sessions only (400 otherwise). Each message of a
 *   batch after the first takes its own tokens of the per-IP and
 *   per-identity limits (`McpGuard.admitMessage`), as its own POST would: a
 *   refused request gets a -32000 error with `data.reason` `rate_limited`
 *   (a refused tools/call is audited so), a refused notification or response
 *   is dropped, and a batch that leaves nothing to answer because of it is
 *   429.
 * - `tools/call` answers JSON when the call finishes within `streamAfter`
 *   without reporting progress (nothing to resume, nothing stored); otherwise
 *   an SSE stream whose events have ids (`<stream>.<seq>`) and are stored for
 *   resumption; 2025-11-25 clients first get a priming event (id, `retry`,
 *   empty data). With `pollAfter`, a stream
 *   whose call is still running is closed after that delay (SSE polling): the
 *   client reconnects with GET and `Last-Event-ID` after `retry` ms and the
 *   server replays exactly the events it missed on that stream, then streams
 *   the rest until the response.
 *   A client disconnect never stops the call; `notifications/cancelled` does
 *   (its `AbortSignal` is aborted, and no response is sent).
 * - GET with `Accept: text/event-stream` opens the session's one standalone
 *   stream (409 if one is open) carrying coalesced
 *   `notifications/tools/list_changed`; with `Last-Event-ID` it resumes the
 *   stream that id belongs to. Without that Accept it is 406. A GET stream
 *   answers at once: with its priming event (2025-11-25 standalone), or else
 *   an `: open` comment, never first with the keep-alive interval later.
 * - `logging/setLevel` stores the level with the session; a federated
 *   call's upstream log messages at or above it, and its upstream's
 *   server-to-client requests (when the client declared the capability), go
 *   on the call's response stream; the client's response to one may be
 *   POSTed to any replica (`ClientRelay.ts`).
 * - DELETE with the session id ends the session (204): in-flight calls are
 *   cancelled and its streams end; later requests with that id get 404.
 *
 * @since 0.1.0
 */
import {
  type Cause,
  Clock,
  Deferred,
  type Duration,
  Effect,
  Exit,
  Fiber,
  FiberSet,
  Option,
  Queue,
  type Scope,
  Stream
} from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Caller } from "./Caller.ts"
import * as Cancellations from "./Cancellations.ts"
import * as ClientRelay from "./ClientRelay.ts"
import { type CallContext, Dispatcher } from "./Dispatcher.ts"
import { Features, ROUTED_METHODS } from "./Features.ts"
import { type AdmissionRefused, admissionRequest, McpGuard } from "./Guard.ts"
import * as HttpReply from "./HttpReply.ts"
import {
  classify,
  encodeError,
  encodeNotification,
  encodeProgress,
  encodeResult,
  type Message,
  ProtocolError,
  type RequestId
} from "./JsonRpc.ts"
import { ListChangedSignals } from "./ListChanged.ts"
import {
  acceptsBatches,
  ErrorCode,
  Header,
  isStatefulVersion,
  LATEST_STATEFUL_VERSION,
  STATEFUL_VERSIONS,
  supportsPriming
} from "./Protocol.ts"
import { eventId, type McpSession, McpSessionStore, newSessionId, newStreamId, parseEventId } from "./Sessions.ts"
import * as SessionSubscriptions from "./SessionSubscriptions.ts"
import * as Sse from "./Sse.ts"
import type { ProgressReporter } from "./ToolCatalog.ts"

/** @since 0.1.0 */
export interface StatefulOptions {
  /** `retry` (ms) sent in priming events. */
  readonly retryMs: number
  /** A `tools/call` still running after this long (or reporting progress) is answered with an SSE stream. */
  readonly streamAfter: Duration.Duration
  /** Close a call's stream after this long if the call still runs (SSE polling). */
  readonly pollAfter: Duration.Duration | undefined
  /** Keep-alive comment interval on long-lived streams. */
  readonly keepAlive: Duration.Duration
  /** Completed when the endpoint shuts down: streams end so clients reconnect elsewhere. */
  readonly shutdown: Deferred.Deferred<void>
}

/** The stream id of a session's standalone GET stream. */
export const STANDALONE_STREAM = "get"

const TOUCH_EVERY_MS = 30_000

type Request = Extract<Message, { _tag: "Request" }>

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const header = (request: HttpServerRequest.HttpServerRequest, name: string): string | undefined => {
  const value = request.headers[name]
  return value === undefined ? undefined : value.trim()
}

const requestKey = (id: RequestId): string => `${typeof id}:${id}`

const internalError = new ProtocolError({ code: ErrorCode.internalError, message: "Internal error", status: 500 })

const storeUnavailable = new ProtocolError({
  code: ErrorCode.internalError,
  message: "The session store is unavailable; retry the request shortly",
  status: 503
})

const errorOf = (exit: Exit.Exit<unknown, ProtocolError>): ProtocolError =>
  Exit.isSuccess(exit) ? internalError : Option.getOrElse(Exit.findErrorOption(exit), () => internalError)

/** Builds the handlers of 2025-era POST, GET and DELETE. */
export const make = Effect.fnUntraced(function*(options: StatefulOptions) {
  const store = yield* McpSessionStore
  const dispatcher = yield* Dispatcher
  const guard = yield* McpGuard
  const signals = yield* ListChangedSignals
  const calls = yield* FiberSet.make<void, never>()
  const inflight = new Map<string, Map<string, { fiber: Fiber.Fiber<void> | undefined }>>()
  const standalone = new Map<string, Deferred.Deferred<void>>()
  const listChangedJson = encodeNotification("notifications/tools/list_changed")
  const features = yield* Effect.serviceOption(Features)
  const subscribed = yield* SessionSubscriptions.make(features, {
    alive: (id) => Effect.map(store.get(id), Option.isSome)
  })
  const ended = Deferred.await(options.shutdown)
  const relay = yield* Cancellations.relay

  // -------------------------------------------------------------------------
  // Sessions
  // -------------------------------------------------------------------------

  /** The session named by `Mcp-Session-Id`, checked against the caller and the version header. */
  const loadSession = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, caller: Caller) {
    const id = header(request, Header.sessionId)
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
    const version = header(request, Header.protocolVersion)
    if (version !== undefined && version !== session.protocolVersion && !isStatefulVersion(version)) {
      return yield* new ProtocolError({
        code: ErrorCode.unsupportedProtocolVersion,
        message: `Unsupported MCP-Protocol-Version '${version}' for a session; supported: ${
          STATEFUL_VERSIONS.join(", ")
        } (this session negotiated ${session.protocolVersion})`,
        data: { supported: STATEFUL_VERSIONS, requested: version },
        status: 400
      })
    }
    const now = yield* Clock.currentTimeMillis
    if (now - session.lastSeenAt > TOUCH_EVERY_MS) yield* Effect.ignore(store.touch(session.id, now))
    return session
  })

  const sessionHeaders = (session: McpSession) => ({ [Header.sessionId]: session.id })

  const initialize = Effect.fnUntraced(function*(
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller,
    message: Request
  ) {
    if (header(request, Header.sessionId) !== undefined) {
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
      clientInfo: isObject(clientInfo) ? clientInfo : undefined,
      clientCapabilities: isObject(capabilities) ? capabilities : {},
      createdAt: now,
      lastSeenAt: now
    }
    const created = yield* Effect.exit(store.create(session))
    if (Exit.isFailure(created)) return HttpReply.error(message.id, storeUnavailable)
    const result = yield* dispatcher.initializeResult(version, caller)
    return HttpReply.json(encodeResult(message.id, result), 200, sessionHeaders(session))
  })

  // -------------------------------------------------------------------------
  // In-flight calls (cancellation)
  // -------------------------------------------------------------------------

  /** Runs a call in the endpoint's fiber set, cancellable by `notifications/cancelled`. */
  const track = (sessionId: string, id: RequestId, effect: Effect.Effect<void>) =>
    Effect.gen(function*() {
      let calls_ = inflight.get(sessionId)
      if (calls_ === undefined) {
        calls_ = new Map()
        inflight.set(sessionId, calls_)
      }
      const key = requestKey(id)
      const entry: { fiber: Fiber.Fiber<void> | undefined } = { fiber: undefined }
      calls_.set(key, entry)
      const own = calls_
      entry.fiber = yield* FiberSet.run(
        calls,
        Effect.ensuring(
          // cancellable from other replicas too while it runs
          relay.during(sessionId, key, Effect.asVoid(interruptLocal(sessionId, key)), effect),
          Effect.sync(() => {
            if (own.get(key) === entry) own.delete(key)
            if (own.size === 0 && inflight.get(sessionId) === own) inflight.delete(sessionId)
          })
        )
      )
      return entry.fiber
    })

  /** Interrupts the call if this instance runs it; false when it does not. */
  const interruptLocal = (sessionId: string, key: string): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      const fiber = inflight.get(sessionId)?.get(key)?.fiber
      return fiber === undefined ? Effect.succeed(false) : Effect.as(Effect.forkDetach(Fiber.interrupt(fiber)), true)
    })

  const cancel = (sessionId: string, params: Readonly<Record<string, unknown>> | undefined) =>
    Effect.suspend(() => {
      const id = params?.requestId
      if (typeof id !== "string" && typeof id !== "number") return Effect.void
      const key = requestKey(id)
      return Effect.flatMap(
        interruptLocal(sessionId, key),
        // without sticky sessions the call may run on another replica (Cancellations.ts)
        (interrupted) => interrupted ? Effect.void : relay.publish({ sessionId, requestKey: key })
      )
    })

  const endSession = (sessionId: string) =>
    Effect.suspend(() => {
      const running = inflight.get(sessionId)
      inflight.delete(sessionId)
      const stream = standalone.get(sessionId)
      standalone.delete(sessionId)
      return Effect.andThen(
        Effect.andThen(
          subscribed.end(sessionId),
          stream === undefined ? Effect.void : Deferred.succeed(stream, undefined)
        ),
        Effect.forEach(running?.values() ?? [], (entry) =>
          entry.fiber === undefined ? Effect.void : Fiber.interrupt(entry.fiber), {
          discard: true
        })
      )
    })

  // -------------------------------------------------------------------------
  // Requests
  // -------------------------------------------------------------------------

  const contextFor = (session: McpSession, caller: Caller, progress: CallContext["progress"]): CallContext => ({
    stateless: false,
    caller,
    clientCapabilities: session.clientCapabilities,
    progress
  })

  const progressToken = (message: Request): string | number | undefined => {
    const meta = message.params?._meta
    const token = isObject(meta) ? meta.progressToken : undefined
    return typeof token === "string" || typeof token === "number" ? token : undefined
  }

  const keepAlive = Stream.map(Stream.tick(options.keepAlive).pipe(Stream.drop(1)), () => Sse.keepAlive)

  const polled = <E>(events: Stream.Stream<string, E>, session: McpSession): Stream.Stream<string, E> =>
    options.pollAfter !== undefined && supportsPriming(session.protocolVersion) ?
      Stream.interruptWhen(events, Effect.sleep(options.pollAfter)) :
      events

  /**
   * `tools/call`. The call runs in the endpoint's fiber set, so it outlives
   * the connection. If it finishes within `streamAfter` without reporting
   * progress, the answer is plain JSON and nothing is stored. Otherwise the
   * answer becomes a resumable SSE stream: messages emitted so far, then the
   * rest, each stored under its event id before it is sent.
   */
  const callTool = Effect.fnUntraced(function*(session: McpSession, caller: Caller, message: Request) {
    // Messages emitted before the response mode is chosen, and the final one.
    const buffered: Array<string> = []
    let final: string | undefined
    let done = false
    // Set once streaming: where messages go, and how the stream ends.
    let sink: ((json: string) => Effect.Effect<void>) | undefined
    let close: Effect.Effect<void> | undefined
    const wake = yield* Deferred.make<void>()
    const signal = Effect.asVoid(Deferred.succeed(wake, undefined))
    const emit = (json: string) =>
      Effect.suspend(() => {
        if (sink !== undefined) return sink(json)
        buffered.push(json)
        return signal
      })
    const token = progressToken(message)
    const progress: CallContext["progress"] = token === undefined ?
      Option.none() :
      Option.some<ProgressReporter>((value, total, text) => emit(encodeProgress(token, value, total, text)))
    const run = dispatcher.dispatch(
      { ...contextFor(session, caller, progress), relay: relayFor(session, emit) },
      message.method,
      message.params
    ).pipe(
      Effect.exit,
      Effect.flatMap((exit) =>
        Effect.suspend(() => {
          const json = Exit.isSuccess(exit) ?
            encodeResult(message.id, exit.value) :
            encodeError(message.id, errorOf(exit))
          if (sink !== undefined) return sink(json)
          final = json
          return Effect.void
        })
      ),
      // Cancelled or finished: end the stream, or wake the request to answer.
      Effect.ensuring(Effect.suspend(() => {
        done = true
        return close ?? signal
      }))
    )
    yield* track(session.id, message.id, run)
    yield* Effect.raceFirst(Deferred.await(wake), Effect.sleep(options.streamAfter))
    const headers = sessionHeaders(session)
    if (done && buffered.length === 0) {
      // Finished quickly: JSON. Cancelled before any message: an empty stream (no response is sent).
      return final === undefined ? Sse.response(Stream.empty, headers) : HttpReply.json(final, 200, headers)
    }
    const streamId = newStreamId()
    yield* Effect.ignore(store.openStream(session.id, streamId))
    const live = yield* Queue.unbounded<string, Cause.Done>()
    // Stored for resumption, then sent; if the store fails the message still goes out (without an id).
    const send = (json: string) =>
      store.append(session.id, streamId, json).pipe(
        Effect.map((seq) => Sse.message(json, eventId(streamId, seq))),
        Effect.orElseSucceed(() => Sse.message(json)),
        Effect.flatMap((frame) => Queue.offer(live, frame)),
        Effect.asVoid
      )
    const end = Effect.andThen(Effect.ignore(store.closeStream(session.id, streamId)), Queue.end(live))
    // Flush what was emitted so far, then route later messages straight to the stream.
    const handOver: Effect.Effect<void> = Effect.suspend(() => {
      const next = buffered.shift() ?? final
      if (next !== undefined) {
        if (next === final) final = undefined
        return Effect.andThen(send(next), handOver)
      }
      if (done) return Effect.asVoid(end)
      sink = send
      close = Effect.asVoid(end)
      return Effect.void
    })
    yield* handOver
    const priming = supportsPriming(session.protocolVersion) ?
      Stream.succeed(Sse.priming(eventId(streamId, 0), options.retryMs)) :
      Stream.empty
    const events = Stream.concat(priming, Stream.merge(Stream.fromQueue(live), keepAlive, { haltStrategy: "left" }))
    return Sse.response(polled(events, session).pipe(Stream.interruptWhen(ended)), headers)
  })

  /** Upstream log messages (at the session's level) and server-to-client requests, on the call's stream. */
  const relayFor = (session: McpSession, emit: (json: string) => Effect.Effect<void>): CallContext["relay"] => ({
    log: ClientRelay.logHook(session.logLevel, emit),
    request: ClientRelay.requestHook(store, session.id, emit),
    logLevel: session.logLevel
  })

  /** Methods answered with the session itself rather than by the dispatcher. */
  const sessionMethod = (
    session: McpSession,
    caller: Caller,
    message: Request,
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

  const handleRequest = (session: McpSession, caller: Caller, message: Request) => {
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

  const notification = (session: McpSession, message: Extract<Message, { _tag: "Notification" }>) =>
    message.method === "notifications/cancelled" ? cancel(session.id, message.params) : Effect.void

  /** A limiter's refusal of one batch message, as its JSON-RPC error. */
  const rateLimited = (refusal: AdmissionRefused) =>
    new ProtocolError({
      code: ErrorCode.refused,
      message: refusal.message,
      data: refusal.retryAfterMs === undefined ?
        { reason: "rate_limited" } :
        { reason: "rate_limited", retryAfterMs: refusal.retryAfterMs },
      status: 429
    })

  /**
   * One message of a 2025-03-26 batch; its encoded response, if it gets one,
   * or the refusal that dropped it. `admitted` charges the limiters for it
   * (every message but the first).
   */
  const batchItem = (
    session: McpSession,
    caller: Caller,
    value: unknown,
    admitted: Effect.Effect<void, AdmissionRefused> | undefined
  ): Effect.Effect<Option.Option<string> | AdmissionRefused> =>
    Effect.gen(function*() {
      const message = classify(value)
      // a tools/call (resources/read, prompts/get, ...) is charged inside its guard, so that its refusal is audited
      const guarded = message._tag === "Request" &&
        (message.method === "tools/call" || ROUTED_METHODS.has(message.method))
      if (admitted !== undefined && !guarded) {
        const charged = yield* Effect.result(admitted)
        if (charged._tag === "Failure") {
          return message._tag === "Request" || message._tag === "Invalid" ?
            Option.some(encodeError(message.id, rateLimited(charged.failure))) :
            charged.failure
        }
      }
      switch (message._tag) {
        case "Invalid":
          return Option.some(
            encodeError(message.id, ProtocolError.invalidRequest(`Invalid Request: ${message.reason}`))
          )
        case "Response":
          yield* ClientRelay.deliverReply(store, session.id, value)
          return Option.none()
        case "Notification":
          yield* notification(session, message)
          return Option.none()
        case "Request": {
          if (message.method === "initialize") {
            return Option.some(encodeError(
              message.id,
              ProtocolError.invalidRequest("initialize must be sent alone, not in a batch")
            ))
          }
          let response: Option.Option<string> = Option.none() // stays none when cancelled: no response
          const fiber = yield* track(
            session.id,
            message.id,
            sessionMethod(session, caller, message, admitted).pipe(
              Effect.exit,
              Effect.map((exit) => {
                response = Option.some(
                  Exit.isSuccess(exit) ? encodeResult(message.id, exit.value) : encodeError(message.id, errorOf(exit))
                )
              })
            )
          )
          yield* Fiber.await(fiber)
          return response
        }
      }
    })

  const batch = Effect.fnUntraced(function*(
    request: HttpServerRequest.HttpServerRequest,
    session: McpSession,
    caller: Caller,
    values: ReadonlyArray<unknown>
  ) {
    if (!acceptsBatches(session.protocolVersion)) {
      return HttpReply.error(
        null,
        ProtocolError.invalidRequest(
          `JSON-RPC batches are accepted only on 2025-03-26 sessions; this session negotiated ${session.protocolVersion}, send one message per POST`
        )
      )
    }
    if (values.length === 0) {
      return HttpReply.error(null, ProtocolError.invalidRequest("Invalid Request: the batch is empty"))
    }
    // the request's admission paid for its first message; every other one pays its own way
    const admission = admissionRequest(request)
    const admitted = guard.admitMessage(admission, caller)
    const responses = yield* Effect.forEach(
      values,
      (value, index) => batchItem(session, caller, value, index === 0 ? undefined : admitted),
      { concurrency: "unbounded" }
    )
    const bodies: Array<string> = []
    let refusal: AdmissionRefused | undefined
    let dropped = 0
    for (const response of responses) {
      if (Option.isOption(response)) {
        if (Option.isSome(response)) bodies.push(response.value)
      } else {
        refusal = response
        dropped++
      }
    }
    if (bodies.length === 0) {
      if (refusal === undefined) return HttpReply.accepted
      const error = rateLimited(refusal)
      return HttpReply.error(
        null,
        new ProtocolError({
          ...error,
          message:
            `${error.message} (${dropped} of the ${values.length} notifications and responses of this batch were dropped)`
        }),
        { ...refusal.headers, ...sessionHeaders(session) }
      )
    }
    return HttpReply.json(`[${bodies.join(",")}]`, 200, sessionHeaders(session))
  })

  /** POST with a parsed body. */
  const post = (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller,
    body: unknown
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope> =>
    Effect.gen(function*() {
      if (Array.isArray(body)) {
        const session = yield* loadSession(request, caller)
        return yield* batch(request, session, caller, body)
      }
      const message = classify(body)
      if (message._tag === "Request" && message.method === "initialize") {
        return yield* initialize(request, caller, message)
      }
      // what is wrong with the message comes before what is wrong with the session
      if (message._tag === "Invalid") {
        return HttpReply.error(message.id, ProtocolError.invalidRequest(`Invalid Request: ${message.reason}`))
      }
      const session = yield* loadSession(request, caller)
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
  // GET streams
  // -------------------------------------------------------------------------

  const replayFrames = (session: McpSession, streamId: string, afterSeq: number) =>
    store.replay(session.id, streamId, afterSeq).pipe(
      Effect.map((events) =>
        Stream.map(events, (event) => Sse.message(event.data, eventId(streamId, event.seq))).pipe(
          Stream.catchCause(() => Stream.empty)
        )
      )
    )

  /** The session's standalone stream, from after `afterSeq` (or from now). */
  const standaloneStream = (session: McpSession, caller: Caller, afterSeq: number | undefined) =>
    Effect.gen(function*() {
      const existing = standalone.get(session.id)
      if (existing !== undefined) {
        if (afterSeq === undefined) {
          return HttpReply.error(
            null,
            new ProtocolError({
              code: ErrorCode.invalidRequest,
              message:
                "This session already has an open GET stream; only one is allowed per session (close it, or resume it with Last-Event-ID)",
              status: 409
            })
          )
        }
        yield* Deferred.succeed(existing, undefined)
      }
      const last = yield* store.openStream(session.id, STANDALONE_STREAM).pipe(Effect.mapError(() => storeUnavailable))
      const from = afterSeq ?? last
      const end = yield* Deferred.make<void>()
      standalone.set(session.id, end)
      const events = Stream.unwrap(Effect.gen(function*() {
        const changes = yield* signals.subscribe
        yield* changes.pipe(
          Stream.runForEach(() => Effect.ignore(store.append(session.id, STANDALONE_STREAM, listChangedJson))),
          Effect.forkScoped
        )
        if (Option.isSome(features)) {
          // prompts and resources list changes, and updates of the resources this session subscribed to
          const updates = yield* features.value.updatesFor(caller)
          const other = Stream.merge(
            Stream.map(features.value.changes, (kind) => encodeNotification(`notifications/${kind}/list_changed`)),
            updates.pipe(
              Stream.filter((uri) => subscribed.has(session.id, uri)),
              Stream.map((uri) => encodeNotification("notifications/resources/updated", JSON.stringify({ uri })))
            )
          )
          yield* other.pipe(
            Stream.runForEach((json) => Effect.ignore(store.append(session.id, STANDALONE_STREAM, json))),
            Effect.forkScoped
          )
        }
        const replayed = yield* replayFrames(session, STANDALONE_STREAM, from).pipe(
          Effect.catchCause(() => Effect.succeed(Stream.empty))
        )
        const first = supportsPriming(session.protocolVersion) ?
          Sse.priming(eventId(STANDALONE_STREAM, from), options.retryMs) :
          Sse.opened
        return Stream.concat(Stream.succeed(first), Stream.merge(replayed, keepAlive, { haltStrategy: "left" }))
      })).pipe(
        Stream.interruptWhen(Effect.raceFirst(Deferred.await(end), ended)),
        Stream.ensuring(Effect.sync(() => {
          if (standalone.get(session.id) === end) standalone.delete(session.id)
        }))
      )
      return Sse.response(events, sessionHeaders(session))
    })

  const get = (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope> =>
    Effect.gen(function*() {
      const session = yield* loadSession(request, caller)
      const lastEventId = header(request, Header.lastEventId)
      if (lastEventId === undefined) return yield* standaloneStream(session, caller, undefined)
      const parsed = parseEventId(lastEventId)
      if (parsed === undefined) {
        return yield* ProtocolError.invalidParams(
          `Last-Event-ID ${
            JSON.stringify(lastEventId)
          } is not an event id of this server; expected <stream>.<sequence>`,
          400
        )
      }
      if (parsed.streamId === STANDALONE_STREAM) return yield* standaloneStream(session, caller, parsed.seq)
      const replayed = yield* replayFrames(session, parsed.streamId, parsed.seq).pipe(
        Effect.catchTag("UnknownStream", () =>
          Effect.fail(ProtocolError.invalidParams(
            `Last-Event-ID ${
              JSON.stringify(lastEventId)
            } names no stream of this session (it ended long ago or never existed); resend the request`,
            404
          ))),
        Effect.catchTag("McpSessionStoreError", () => Effect.fail(storeUnavailable))
      )
      const events = Stream.concat(
        Stream.succeed(Sse.opened),
        Stream.merge(replayed, keepAlive, { haltStrategy: "left" })
      )
      return Sse.response(events.pipe(Stream.interruptWhen(ended)), sessionHeaders(session))
    }).pipe(Effect.catchTag("ProtocolError", (error) => Effect.succeed(HttpReply.error(null, error))))

  // -------------------------------------------------------------------------
  // DELETE
  // -------------------------------------------------------------------------

  const del = (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller
  ): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
    Effect.gen(function*() {
      const session = yield* loadSession(request, caller)
      yield* store.delete(session.id).pipe(Effect.mapError(() => storeUnavailable))
      yield* endSession(session.id)
      return HttpReply.noContent
    }).pipe(Effect.catchTag("ProtocolError", (error) => Effect.succeed(HttpReply.error(null, error))))

  return { post, get, delete: del } as const
})
