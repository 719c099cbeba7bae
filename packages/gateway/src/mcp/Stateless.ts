/**
 * The 2026-07-28 (stateless) wire of the Streamable HTTP endpoint: one POST per
 * request, no session, no `initialize`, no GET stream, no resumption.
 *
 * **Spec rules**
 *
 * From the specification: 2026-07-28 "Streamable HTTP", "Versioning",
 * "Subscriptions", "Cancellation", in this order.
 *
 * 1. `MCP-Protocol-Version` is required (400, HeaderMismatch -32020).
 * 2. `params._meta` must carry `io.modelcontextprotocol/protocolVersion`
 *    (400, Invalid Params -32602); the header must equal it (400, -32020);
 *    `io.modelcontextprotocol/clientCapabilities` must be an object (400,
 *    -32602); `clientInfo` is optional.
 * 3. A version this server does not implement is 400
 *    UnsupportedProtocolVersion (-32022) with `data.supported` and
 *    `data.requested`.
 * 4. `Mcp-Method` must equal the body's `method` and `Mcp-Name` must equal
 *    `params.name` / `params.uri` after Base64-sentinel decoding (400, -32020);
 *    header names are case-insensitive, values case-sensitive, surrounding
 *    whitespace ignored.
 * 5. An unknown method is 404 Method not found (-32601).
 * 6. For `tools/call`, every argument the tool marks with `x-mcp-header` must
 *    be mirrored in its `Mcp-Param-{Name}` header (decoded, integers compared
 *    numerically); a missing, malformed or different header is 400, -32020.
 * Notifications are accepted with 202 (this revision defines no header rules
 * for them); error responses echo the request id.
 *
 * Responses: JSON unless the call reported progress (or, when the request's
 * `_meta["io.modelcontextprotocol/logLevel"]` opted in, relayed an upstream
 * log message at or above that level) before finishing, in which case the
 * response becomes an SSE stream of `notifications/progress` and
 * `notifications/message` followed by the result. Closing the response stream is the cancellation signal: the
 * call's fiber is interrupted and its `AbortSignal` aborted.
 * `subscriptions/listen` answers with a long-lived SSE stream: the
 * `notifications/subscriptions/acknowledged` first, then coalesced
 * `notifications/tools/list_changed` (only if the client asked for
 * `toolsListChanged`), each tagged with the subscription id; on shutdown the
 * stream ends with the listen result. Opening it takes one of the caller's
 * open-stream permits (`MCP_MAX_STREAMS_PER_CALLER`; 429 with the request's
 * id without one), given back when the stream ends.
 *
 * @since 0.1.0
 */
import { Cause, Deferred, type Duration, Effect, Exit, Option, Predicate, Queue, type Scope, Stream } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import * as ClientText from "../observability/ClientText.ts"
import type { Caller } from "./Caller.ts"
import * as ClientRelay from "./ClientRelay.ts"
import { type CallContext, Dispatcher, isKnownMethod } from "./Dispatcher.ts"
import { Features } from "./Features.ts"
import * as HttpReply from "./HttpReply.ts"
import {
  encodeError,
  encodeNotification,
  encodeProgress,
  encodeResult,
  errorOf,
  internalError,
  type Message,
  ProtocolError,
  type RequestId,
  type RequestMessage,
  type ResultJson
} from "./JsonRpc.ts"
import { ListChangedSignals } from "./ListChanged.ts"
import { checkParamHeaders } from "./ParamHeaders.ts"
import {
  decodeHeaderValue,
  Header,
  headerValue,
  Meta,
  routingNameKey,
  STATELESS_VERSION,
  SUPPORTED_VERSIONS
} from "./Protocol.ts"
import * as Sse from "./Sse.ts"
import type { ProgressReporter } from "./ToolCatalog.ts"

/** @since 0.1.0 */
export interface StatelessOptions {
  /** Keep-alive comment interval on `subscriptions/listen` streams. */
  readonly keepAlive: Duration.Duration
  /** Completed when the endpoint shuts down: listen streams end gracefully. */
  readonly shutdown: Deferred.Deferred<void>
  /** One of the caller's open-stream permits for the request's scope, or the 429 (with `id`) that refuses it. */
  readonly holdStream: (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller,
    id: RequestId
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse | undefined, never, Scope.Scope>
}

/** Builds the handler of 2026-07-28 POSTs. */
export const make = Effect.fnUntraced(function*(options: StatelessOptions) {
  const dispatcher = yield* Dispatcher
  const signals = yield* ListChangedSignals
  const features = yield* Effect.serviceOption(Features)
  const supported = { supported: SUPPORTED_VERSIONS }

  /** Rules 1-5; the request context when the request may be dispatched. */
  const admit = (
    request: HttpServerRequest.HttpServerRequest,
    message: RequestMessage
  ): ProtocolError | Readonly<Record<string, unknown>> => {
    const version = headerValue(request.headers, Header.protocolVersion)
    if (version === undefined) {
      return ProtocolError.headerMismatch(
        `MCP-Protocol-Version header is missing; 2026-07-28 requests must send it, equal to params._meta["${Meta.protocolVersion}"]`
      )
    }
    const meta = message.params?._meta
    if (!Predicate.isReadonlyObject(meta)) {
      return ProtocolError.invalidParams(
        `params._meta is missing; 2026-07-28 requests must carry "${Meta.protocolVersion}" and "${Meta.clientCapabilities}" in it`,
        400
      )
    }
    const claim = meta[Meta.protocolVersion]
    if (typeof claim !== "string") {
      return ProtocolError.invalidParams(
        `params._meta["${Meta.protocolVersion}"] is ${
          ClientText.json(claim) ?? "missing"
        }; expected the protocol version string, e.g. "${STATELESS_VERSION}"`,
        400
      )
    }
    if (claim !== version) {
      return ProtocolError.headerMismatch(
        `MCP-Protocol-Version header '${
          ClientText.echoed(version)
        }' does not match params._meta["${Meta.protocolVersion}"] '${ClientText.echoed(claim)}'`
      )
    }
    if (!Predicate.isReadonlyObject(meta[Meta.clientCapabilities])) {
      return ProtocolError.invalidParams(
        `params._meta["${Meta.clientCapabilities}"] is ${
          ClientText.json(meta[Meta.clientCapabilities]) ?? "missing"
        }; expected an object (use {} to declare no optional capabilities)`,
        400
      )
    }
    if (version !== STATELESS_VERSION) {
      return new ProtocolError({
        code: ErrorCode.unsupportedProtocolVersion,
        message: `Unsupported protocol version '${
          ClientText.echoed(version)
        }' for a request without a session; supported: ${
          SUPPORTED_VERSIONS.join(", ")
        } (versions before ${STATELESS_VERSION} start with initialize)`,
        data: { ...supported, requested: ClientText.echoed(version) },
        status: 400
      })
    }
    const method = headerValue(request.headers, Header.method)
    if (method === undefined) {
      return ProtocolError.headerMismatch(
        `Mcp-Method header is missing; expected '${ClientText.echoed(message.method)}'`
      )
    }
    if (method !== message.method) {
      return ProtocolError.headerMismatch(
        `Mcp-Method header '${ClientText.echoed(method)}' does not match the request method '${
          ClientText.echoed(message.method)
        }'`
      )
    }
    const nameKey = routingNameKey(message.method)
    if (nameKey !== undefined) {
      const name = message.params?.[nameKey]
      const raw = headerValue(request.headers, Header.name)
      if (raw === undefined) {
        return ProtocolError.headerMismatch(
          `Mcp-Name header is missing; ${message.method} requires it, equal to params.${nameKey} ${
            ClientText.json(name) ?? "(absent)"
          }`
        )
      }
      const decoded = decodeHeaderValue(raw)
      if (decoded === undefined) {
        return ProtocolError.headerMismatch(
          `Mcp-Name header ${
            ClientText.json(raw)
          } has invalid characters or invalid Base64; expected visible ASCII or =?base64?<valid Base64>?=`
        )
      }
      if (decoded !== name) {
        return ProtocolError.headerMismatch(
          `Mcp-Name header ${ClientText.json(decoded)} does not match params.${nameKey} ${
            ClientText.json(name) ?? "(absent)"
          }`
        )
      }
    }
    if (!isKnownMethod(true, message.method)) {
      return ProtocolError.methodNotFound(message.method, 404, `is not a ${STATELESS_VERSION} method of this server`)
    }
    return meta
  }

  const reply = (id: RequestId, exit: Exit.Exit<ResultJson, ProtocolError>): HttpServerResponse.HttpServerResponse =>
    Exit.isSuccess(exit) ?
      HttpReply.json(encodeResult(id, exit.value)) :
      Cause.hasFails(exit.cause) ?
      HttpReply.error(id, Cause.findErrorOption(exit.cause).pipe(Option.getOrThrow)) :
      HttpReply.error(id, internalError)

  /**
   * `tools/call` with a progress token or a log level: JSON if it finishes
   * first, SSE once it reports progress or relays a log message.
   */
  const callStreaming = Effect.fnUntraced(function*(
    context: CallContext,
    message: RequestMessage,
    token: string | number | undefined,
    logLevel: string | undefined
  ) {
    const frames = yield* Queue.unbounded<string, Cause.Done>()
    const started = yield* Deferred.make<void>()
    const finished = yield* Deferred.make<Exit.Exit<ResultJson, ProtocolError>>()
    const emit = (json: string) =>
      Effect.andThen(Queue.offer(frames, Sse.message(json)), Deferred.succeed(started, undefined))
    const progress: Option.Option<ProgressReporter> = token === undefined ?
      Option.none() :
      Option.some((value, total, text) => emit(encodeProgress(token, value, total, text)))
    // no server-to-client requests on this revision: input is asked for with input_required results
    const relay: CallContext["relay"] = logLevel === undefined ?
      undefined :
      { log: ClientRelay.logHook(logLevel, emit), logLevel }
    yield* dispatcher.dispatch({ ...context, progress, relay }, message.method, message.params).pipe(
      Effect.exit,
      Effect.tap((exit) => Deferred.succeed(finished, exit)),
      Effect.flatMap((exit) =>
        Queue.offer(
          frames,
          Sse.message(
            Exit.isSuccess(exit) ?
              encodeResult(message.id, exit.value) :
              encodeError(message.id, errorOf(exit))
          )
        )
      ),
      Effect.ensuring(Queue.end(frames)),
      // The request scope lives until the response is written; closing the stream interrupts the call.
      Effect.forkScoped
    )
    const first = yield* Effect.raceFirst(
      Effect.as(Deferred.await(started), Option.none<Exit.Exit<ResultJson, ProtocolError>>()),
      Effect.map(Deferred.await(finished), Option.some)
    )
    if (Option.isSome(first)) return reply(message.id, first.value)
    return Sse.response(Stream.fromQueue(frames))
  })

  const listen = (message: RequestMessage, caller: Caller): HttpServerResponse.HttpServerResponse => {
    const filter = message.params?.notifications
    if (!Predicate.isReadonlyObject(filter)) {
      return HttpReply.error(
        message.id,
        ProtocolError.invalidParams(
          `subscriptions/listen requires params.notifications (an object such as {"toolsListChanged": true}), got ${
            ClientText.json(filter) ?? "nothing"
          }`,
          400
        )
      )
    }
    // tools always; prompts, resources and resource subscriptions (those in the caller's view) when it can have them
    const uris = Array.isArray(filter.resourceSubscriptions)
      ? filter.resourceSubscriptions.filter((u): u is string => typeof u === "string").slice(0, 1_000)
      : []
    const honored: Record<string, unknown> = {
      ...(filter.toolsListChanged === true ? { toolsListChanged: true } : {}),
      ...(Option.isSome(features) && filter.promptsListChanged === true ? { promptsListChanged: true } : {}),
      ...(Option.isSome(features) && filter.resourcesListChanged === true ? { resourcesListChanged: true } : {})
    }
    const wanted = new Set<string>()
    const idJson = JSON.stringify(message.id)
    const meta = `"_meta":{${JSON.stringify(Meta.subscriptionId)}:${idJson}}`
    const changed = Sse.message(encodeNotification("notifications/tools/list_changed", `{${meta}}`))
    const ended = Sse.message(
      encodeResult(
        message.id,
        `{"_meta":{${JSON.stringify(Meta.subscriptionId)}:${idJson},${
          JSON.stringify(Meta.serverInfo)
        }:${dispatcher.serverInfoJson}},"resultType":"complete"}`
      )
    )
    const events = Stream.unwrap(Effect.gen(function*() {
      const changes = honored.toolsListChanged === true ? yield* signals.subscribe : Stream.never
      // subscribed before the URIs are held: an update sent as soon as an upstream is asked is not missed
      const updates = Option.isSome(features) ? yield* features.value.updatesFor(caller) : Stream.empty
      // the owners of the URIs in the caller's view tell of their updates while this listen is open
      const held = Option.isSome(features) ? yield* Effect.filter(uris, (uri) => features.value.hold(caller, uri)) : []
      for (const uri of held) wanted.add(uri)
      const ack = Sse.message(encodeNotification(
        "notifications/subscriptions/acknowledged",
        `{${meta},"notifications":${
          JSON.stringify(held.length > 0 ? { ...honored, resourceSubscriptions: held } : honored)
        }}`
      ))
      const other = Option.isNone(features) ? Stream.empty : Stream.merge(
        features.value.changes.pipe(
          Stream.filter((kind) =>
            kind === "prompts" ? honored.promptsListChanged === true : honored.resourcesListChanged === true
          ),
          Stream.map((kind) => Sse.message(encodeNotification(`notifications/${kind}/list_changed`, `{${meta}}`)))
        ),
        updates.pipe(
          Stream.filter((uri) => wanted.has(uri)),
          Stream.map((uri) =>
            Sse.message(encodeNotification("notifications/resources/updated", `{${meta},"uri":${JSON.stringify(uri)}}`))
          )
        )
      )
      const live = Stream.merge(
        Stream.merge(Stream.map(changes, () => changed), other),
        Stream.map(Stream.tick(options.keepAlive).pipe(Stream.drop(1)), () => Sse.keepAlive)
      ).pipe(Stream.interruptWhen(Deferred.await(options.shutdown)))
      return Stream.concat(Stream.concat(Stream.succeed(ack), live), Stream.succeed(ended))
    }))
    return Sse.response(events)
  }

  return (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller,
    message: Message
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope> => {
    switch (message._tag) {
      case "Invalid":
        return Effect.succeed(
          HttpReply.error(message.id, ProtocolError.invalidRequest(`Invalid Request: ${message.reason}`))
        )
      case "Response":
        return Effect.succeed(HttpReply.error(
          message.id,
          ProtocolError.invalidRequest(
            "Invalid Request: 2026-07-28 clients send requests and notifications only, never JSON-RPC responses"
          )
        ))
      case "Notification":
        return Effect.succeed(HttpReply.accepted)
      case "Request":
        break
    }
    const admitted = admit(request, message)
    if (admitted instanceof ProtocolError) return Effect.succeed(HttpReply.error(message.id, admitted))
    if (message.method === "subscriptions/listen") {
      // one of the caller's open-stream permits, held until the listen stream ends (`MCP_MAX_STREAMS_PER_CALLER`)
      return Effect.map(
        options.holdStream(request, caller, message.id),
        (refusal) => refusal ?? listen(message, caller)
      )
    }
    const context: CallContext = {
      stateless: true,
      caller,
      clientCapabilities: admitted[Meta.clientCapabilities] as Readonly<Record<string, unknown>>,
      progress: Option.none()
    }
    if (message.method !== "tools/call") {
      return Effect.map(
        Effect.exit(dispatcher.dispatch(context, message.method, message.params)),
        (exit) => reply(message.id, exit)
      )
    }
    return Effect.gen(function*() {
      const name = message.params?.name
      if (typeof name === "string") {
        const bindings = (yield* dispatcher.prepared(caller)).headerBindings.get(name)
        if (bindings !== undefined) {
          const mismatch = checkParamHeaders(request.headers, bindings, message.params?.arguments)
          if (mismatch !== undefined) return HttpReply.error(message.id, mismatch)
        }
      }
      const token = admitted.progressToken
      // the client opts in to log messages per request; an unknown level asks for none
      const level = admitted[Meta.logLevel]
      const logLevel = ClientRelay.isLogLevel(level) ? level : undefined
      if (typeof token === "string" || typeof token === "number" || logLevel !== undefined) {
        return yield* callStreaming(
          context,
          message,
          typeof token === "string" || typeof token === "number" ? token : undefined,
          logLevel
        )
      }
      return reply(message.id, yield* Effect.exit(dispatcher.dispatch(context, message.method, message.params)))
    })
  }
})
