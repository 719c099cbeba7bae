/**
 * The Streamable HTTP transport towards an upstream, in both revision eras:
 * 2026-07-28 (stateless) and the 2025 revisions (a session).
 *
 * **Negotiation**
 * 1. `server/discover` as a 2026-07-28 request (`_meta` with protocol
 *    version, client info and capabilities; `MCP-Protocol-Version`,
 *    `Mcp-Method` headers). A result whose `supportedVersions` has
 *    2026-07-28 selects the stateless era: every later request carries the
 *    same `_meta` and headers (`Mcp-Name`, `Mcp-Param-*` for `x-mcp-header`
 *    arguments, Base64 sentinel for non-ASCII values), no session.
 * 2. Any other answer (JSON-RPC error, HTTP 4xx) falls back to `initialize`
 *    offering 2025-11-25; the server's choice among the stateful revisions is
 *    accepted, `Mcp-Session-Id` kept, and `notifications/initialized` sent.
 *    Network failures and 5xx do not fall back.
 *
 * **Exchanges**
 * - POST answers are JSON or an SSE stream; on the stream, what arrives
 *   before the response is routed by `MessageRouter` (progress, log
 *   messages, server requests of the 2025 era).
 * - A 2025 session answering 404 is re-established once (a new
 *   `initialize`) and the request retried; a 401 drops a cached OAuth token
 *   and retries once.
 * - Cancellation: interrupting a request aborts its HTTP exchange; the 2025
 *   era also gets `notifications/cancelled` (2026-07-28 treats closing the
 *   response stream as cancellation).
 * - On close, a 2025 session is ended with DELETE (bounded to 2 s).
 *
 * The change channel (`subscriptions/listen` or the GET stream) is
 * `ChangeChannel.ts`.
 *
 * @since 0.1.0
 */
import { Deferred, Effect, Option, Predicate, PubSub, Semaphore, Stream } from "effect"
import { Header, Meta, STATELESS_VERSION } from "../../mcp/Protocol.ts"
import type { RelayHooks } from "../../mcp/Relay.ts"
import { unavailable, UpstreamError } from "../Errors.ts"
import type { UpstreamAuth } from "../UpstreamAuth.ts"
import type { UpstreamHttp } from "../UpstreamHttp.ts"
import * as ChangeChannel from "./ChangeChannel.ts"
import * as Handshake from "./Handshake.ts"
import * as HttpExchange from "./HttpExchange.ts"
import * as MessageRouter from "./MessageRouter.ts"
import * as Requests from "./Requests.ts"
import {
  type ChannelState,
  CLIENT_CAPABILITIES,
  type Connect,
  type Era,
  type SessionEvent,
  type UpstreamSession
} from "./Session.ts"
import * as Wire from "./Wire.ts"

/** The `Mcp-Method` / `Mcp-Name` headers of a 2026-07-28 request. */
const routingHeaders = (method: string, params: Wire.Params) => {
  const headers: Record<string, string> = { [Header.protocolVersion]: STATELESS_VERSION, [Header.method]: method }
  const routing = method === "tools/call" || method === "prompts/get"
    ? params.name
    : method === "resources/read"
    ? params.uri
    : undefined
  if (typeof routing === "string") headers[Header.name] = Wire.encodeHeaderValue(routing)
  return headers
}

/** Opens a session; it lives until the scope closes. */
export const connect: Connect<UpstreamHttp | UpstreamAuth> = (target, options) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const name = target.name
    const limit = options.maxMessageBytes

    let nextId = 1
    let era: Era = "stateful"
    let protocolVersion: string | undefined
    let sessionId: string | undefined
    let capabilities: Readonly<Record<string, unknown>> = {}
    let serverInfo: Readonly<Record<string, unknown>> | undefined
    let instructions: string | undefined
    let channel: ChannelState = { _tag: "Opening" }
    const lost = yield* Deferred.make<never, UpstreamError>()
    const events = yield* PubSub.sliding<SessionEvent>(1_024)
    const reinitLock = yield* Semaphore.make(1)
    const publish = (event: SessionEvent) =>
      Effect.asVoid(Effect.andThen(
        Effect.sync(() => {
          if (event._tag === "Channel") channel = event.state
        }),
        PubSub.publish(events, event)
      ))

    const http = yield* HttpExchange.make(target, () => {
      const headers: Record<string, string> = {}
      if (era === "stateful" && protocolVersion !== undefined) headers[Header.protocolVersion] = protocolVersion
      if (era === "stateful" && sessionId !== undefined) headers[Header.sessionId] = sessionId
      return headers
    })
    const router = MessageRouter.make({
      connection: name,
      reply: (json) => http.post(target.url, json),
      publish,
      scope
    })

    const statelessMeta = (relay: RelayHooks | undefined): Wire.Params => ({
      [Meta.protocolVersion]: STATELESS_VERSION,
      // a call carries its client's own capabilities: the upstream asks only for input that client can give
      [Meta.clientCapabilities]: relay?.clientCapabilities ?? CLIENT_CAPABILITIES,
      [Meta.clientInfo]: options.clientInfo,
      ...(relay?.logLevel === undefined ? {} : { [Meta.logLevel]: relay.logLevel })
    })

    const refused = (status: number) =>
      new UpstreamError({
        connection: name,
        kind: "refused",
        detail: `the upstream rejected Janus's credentials (HTTP ${status})`,
        status
      })

    /** POSTs a request and reads its response (JSON or SSE), routing what arrives before it. */
    const exchange = (
      call: MessageRouter.PendingCall,
      body: string,
      method: string,
      params: Wire.Params
    ): Effect.Effect<Wire.Response, UpstreamError> =>
      Effect.scoped(Effect.gen(function*() {
        const headers = yield* http.headers({
          "content-type": "application/json",
          accept: HttpExchange.JSON_AND_SSE,
          ...(era === "stateless" ? routingHeaders(method, params) : {}),
          ...call.options?.headers
        })
        const sentSession = sessionId
        const response = yield* http.send("POST", target.url, headers, body)
        if (response.status === 404 && sentSession !== undefined) {
          return yield* new UpstreamError({ connection: name, kind: "session_expired", detail: "the session ended" })
        }
        if (response.status === 401 || response.status === 403) return yield* refused(response.status)
        const type = Wire.mediaType(response)
        if (response.status >= 200 && response.status < 300 && type === "text/event-stream") {
          let found: Wire.Response | undefined
          yield* Wire.readEvents(name, response, limit, (event) =>
            Effect.gen(function*() {
              if (event.data === "") return true
              const messages = Wire.parseMessages(event.data, http.injected())
              if (messages === undefined) {
                return yield* unavailable(name, "the upstream sent an event that is not JSON")
              }
              for (const message of messages) {
                if (message._tag === "Response" && message.id === call.id) found = message
                else yield* router.route(message, call)
              }
              return found === undefined
            }))
          if (found === undefined) {
            return yield* unavailable(name, "the upstream closed the response stream before answering")
          }
          return found
        }
        const text = yield* Wire.readBounded(name, response, limit)
        const messages = type === "application/json" || text.startsWith("{")
          ? Wire.parseMessages(text, http.injected())
          : undefined
        const found = messages?.find((m): m is Wire.Response =>
          m._tag === "Response" && (m.id === call.id || response.status >= 400)
        )
        if (found !== undefined) {
          if (found.error !== undefined) return yield* Wire.rpcError(name, found.error, response.status)
          return found
        }
        return yield* unavailable(
          name,
          response.status >= 400
            ? `the upstream answered HTTP ${response.status}`
            : "the upstream's answer is not a JSON-RPC response",
          response.status
        )
      }))

    const notify = (method: string, params: Wire.Params) =>
      http.post(target.url, Wire.encodeRequest(undefined, method, params))

    const cancelled = Requests.notifyCancelled(notify, scope)
    const request = Requests.make({
      connection: name,
      router,
      requestTimeout: options.requestTimeout,
      nextId: () => nextId++,
      meta: (requestOptions) => era === "stateless" ? statelessMeta(requestOptions?.relay) : undefined,
      exchange,
      cancel: (id) => era === "stateful" ? cancelled(id) : Effect.void,
      recover: (error) =>
        error.kind === "session_expired"
          ? reinitialize(sessionId)
          : error.kind === "refused" && error.status === 401 && http.refreshable
          ? http.invalidate
          : undefined
    })

    // --- initialize / discover ------------------------------------------------

    const initialize = Effect.gen(function*() {
      era = "stateful"
      protocolVersion = undefined
      sessionId = undefined
      const id = nextId++
      const body = Wire.encodeRequest(id, "initialize", Handshake.initializeParams(options.clientInfo))
      const headers = yield* http.headers({ "content-type": "application/json", accept: HttpExchange.JSON_AND_SSE })
      const result = yield* Effect.scoped(Effect.gen(function*() {
        const response = yield* http.send("POST", target.url, headers, body)
        if (response.status === 401 || response.status === 403) return yield* refused(response.status)
        const session = response.headers[Header.sessionId]
        let found: Wire.Response | undefined
        if (response.status < 300 && Wire.mediaType(response) === "text/event-stream") {
          yield* Wire.readMessages(name, response, limit, (m) =>
            Effect.sync(() => {
              if (m._tag === "Response" && m.id === id) found = m
              return found === undefined
            }), http.injected())
        } else {
          const messages = Wire.parseMessages(yield* Wire.readBounded(name, response, limit), http.injected()) ?? []
          found = messages.find((m): m is Wire.Response => m._tag === "Response")
        }
        if (found === undefined) {
          return yield* unavailable(name, `initialize failed (HTTP ${response.status})`, response.status)
        }
        if (found.error !== undefined) return yield* Wire.rpcError(name, found.error, response.status)
        if (session !== undefined && /^[\x21-\x7e]{1,1024}$/.test(session)) sessionId = session
        return found.result
      }))
      yield* accept(result)
      yield* notify("notifications/initialized", {})
    })

    const accept = (result: unknown) =>
      Effect.map(Handshake.accept(name, result), (negotiated) => {
        protocolVersion = negotiated.protocolVersion
        capabilities = negotiated.capabilities
        serverInfo = negotiated.serverInfo
        instructions = negotiated.instructions
      })

    const reinitialize = (failedSession: string | undefined) =>
      reinitLock.withPermits(1)(
        Effect.suspend(() =>
          sessionId !== failedSession
            ? Effect.void
            : Effect.andThen(
              initialize,
              publish({ _tag: "Notification", method: "notifications/tools/list_changed", params: {} })
            )
        )
      )

    /** `server/discover`; `true` when the upstream speaks 2026-07-28. */
    const discover = Effect.gen(function*() {
      era = "stateless"
      const outcome = yield* request("server/discover", {}).pipe(
        Effect.map(Option.some),
        Effect.catchIf(
          (error) =>
            error.kind === "rpc" || (error.kind === "unavailable" && error.status !== undefined && error.status < 500),
          () => Effect.succeed(Option.none())
        )
      )
      if (Option.isNone(outcome)) return false
      const result = outcome.value
      const versions = Array.isArray(result.supportedVersions) ? result.supportedVersions : []
      if (!versions.includes(STATELESS_VERSION)) return false
      protocolVersion = STATELESS_VERSION
      capabilities = Predicate.isReadonlyObject(result.capabilities) ? result.capabilities : {}
      instructions = typeof result.instructions === "string" ? result.instructions : undefined
      const meta = Predicate.isReadonlyObject(result._meta) ? result._meta : {}
      const info = meta[Meta.serverInfo]
      serverInfo = Predicate.isReadonlyObject(info) ? info : undefined
      return true
    })

    // --- connect --------------------------------------------------------------

    if (!(yield* discover)) yield* initialize
    yield* Effect.addFinalizer(() =>
      era === "stateful" && sessionId !== undefined
        ? Effect.scoped(Effect.flatMap(http.headers(), (headers) => http.send("DELETE", target.url, headers))).pipe(
          Effect.timeout("2 seconds"),
          Effect.ignore
        )
        : Effect.void
    )
    const channelContext: ChangeChannel.ChannelContext = {
      target,
      http,
      router,
      limit,
      publish,
      lost: (error) => Effect.asVoid(Deferred.fail(lost, error)),
      retry: options.channelRetry ?? ChangeChannel.DEFAULT_RETRY,
      retryMax: options.channelRetryMax ?? ChangeChannel.DEFAULT_RETRY_MAX
    }
    const filter = ChangeChannel.listenFilter(capabilities)
    yield* Effect.forkIn(
      era === "stateful"
        ? ChangeChannel.getStream(channelContext, {
          announces: Object.keys(filter).length > 0,
          id: () => sessionId,
          reinitialize
        })
        : ChangeChannel.listen(channelContext, {
          filter,
          nextId: () => `listen-${nextId++}`,
          meta: statelessMeta(undefined),
          headers: routingHeaders
        }),
      scope
    )

    // a URI's updates: a listen of its own, whose state is not the change channel's
    const watch = (uri: string) =>
      Effect.asVoid(Effect.forkScoped(
        ChangeChannel.listen(
          { ...channelContext, publish: (event) => event._tag === "Channel" ? Effect.void : publish(event) },
          {
            filter: { resourceSubscriptions: [uri] },
            nextId: () => `watch-${nextId++}`,
            meta: statelessMeta(undefined),
            headers: routingHeaders
          }
        ).pipe(Effect.interruptible)
      ))

    return {
      transport: "streamable-http",
      get era() {
        return era
      },
      get protocolVersion() {
        return protocolVersion!
      },
      get serverInfo() {
        return serverInfo
      },
      get capabilities() {
        return capabilities
      },
      get instructions() {
        return instructions
      },
      request,
      notify,
      events: Stream.fromPubSub(events),
      get channel() {
        return channel
      },
      get watch() {
        return era === "stateless" ? watch : undefined
      },
      lost: Deferred.await(lost)
    } satisfies UpstreamSession
  })
