/**
 * The MCP client Janus uses towards one upstream server: a JSON-RPC session
 * over Streamable HTTP (2026-07-28 or a 2025 revision) or the deprecated
 * HTTP+SSE transport.
 *
 * Why not the SDK `Client`: a gateway must pass results through as they are
 * (the SDK validates output schemas, drops tools, auto-fulfils or rejects
 * `input_required`, and answers server requests itself), must correlate
 * progress, log messages and server requests with the call they belong to,
 * must bound every message and exchange, and must run every byte through the
 * egress guard and inside Effect's interruption (cancellation aborts the
 * request). The wire is small, so it is written here over `UpstreamHttp`;
 * the official SDK servers are the test counterparts.
 *
 * **Negotiation** (`transport: streamable-http`)
 * 1. `server/discover` as a 2026-07-28 request (`_meta` with protocol
 *    version, client info and capabilities; `MCP-Protocol-Version`,
 *    `Mcp-Method` headers). A result whose `supportedVersions` has
 *    2026-07-28 selects the stateless era: every later request carries the
 *    same `_meta` and headers (`Mcp-Name`, `Mcp-Param-*` for `x-mcp-header`
 *    arguments, Base64 sentinel for non-ASCII values), no session.
 * 2. Any other answer (JSON-RPC error, HTTP 4xx) falls back to `initialize`
 *    offering 2025-11-25; the server's choice among 2025-11-25, 2025-06-18,
 *    2025-03-26 and 2024-11-05 is accepted, `Mcp-Session-Id` kept, and
 *    `notifications/initialized` sent. Network failures do not fall back.
 * `transport: sse` opens `GET <url>` and waits for the `endpoint` event
 * (same origin as the stream, else refused), then runs `initialize` over it.
 *
 * **Exchanges**
 * - POST answers are JSON or an SSE stream; on the stream, notifications
 *   before the response belong to the request: `notifications/progress` (its
 *   token) and `notifications/message` go to the call's hooks, server
 *   requests (2025 era) are relayed through the hooks or answered with a
 *   refusal, `notifications/tools/list_changed` goes to `onEvent`.
 * - A 2025 session answering 404 is re-established once (a new
 *   `initialize`, the GET stream reopened) and the request retried; a 401
 *   drops a cached OAuth token and retries once.
 * - Cancellation: interrupting a request aborts its HTTP exchange; on 2025
 *   eras `notifications/cancelled` is also sent (2026-07-28 treats closing
 *   the response stream as cancellation).
 * - Every JSON body and SSE event is bounded (`maxMessageBytes`), every
 *   exchange by the caller's timeout.
 * - Every message is scrubbed of the credential Janus sent with the
 *   session's requests (`InjectedSecrets`) before it is parsed.
 *
 * **Change notifications** (background, in the session's scope)
 * - 2026-07-28: `subscriptions/listen` with `toolsListChanged`, re-listened
 *   after a graceful end; a failure to re-listen reports `Lost`.
 * - 2025 Streamable HTTP: the GET stream (405 means none), resumed with
 *   `Last-Event-ID` after the server's `retry` delay; a failure to reopen it
 *   reports `Lost`.
 * - HTTP+SSE: the session's own stream; its end reports `Lost` and fails
 *   every pending request.
 *
 * @since 0.1.0
 */
import { Cause, Deferred, Duration, Effect, Exit, Option, type Scope, Semaphore, Stream } from "effect"
import * as Sse from "effect/encoding/Sse"
import { HttpClientRequest, type HttpClientResponse } from "effect/http"
import type { AllowList } from "../egress/EgressPolicy.ts"
import { headerBindingsOf } from "../mcp/Dispatcher.ts"
import { InjectedSecrets } from "../redaction/InjectedSecrets.ts"
import { unavailable, UpstreamError } from "./Errors.ts"
import type { RelayHooks } from "./Relay.ts"
import { UpstreamAuth, type UpstreamAuthConfig } from "./UpstreamAuth.ts"
import { UpstreamHttp } from "./UpstreamHttp.ts"

export const MODERN_VERSION = "2026-07-28"
/** 2025-era revisions accepted from `initialize`, newest first. */
export const LEGACY_VERSIONS: ReadonlyArray<string> = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]

const META_VERSION = "io.modelcontextprotocol/protocolVersion"
const META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
const META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
const META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"

/** What Janus offers upstream: input requests are passed to (and checked against) the real client. */
const CLIENT_CAPABILITIES = {
  elicitation: { form: {}, url: {} },
  sampling: {},
  roots: {}
} as const

/** One upstream, as the client needs it. */
export interface UpstreamTarget {
  readonly id: string
  readonly name: string
  readonly url: string
  readonly transport: "streamable-http" | "sse"
  readonly allow: AllowList
  readonly auth: UpstreamAuthConfig
}

export interface ClientOptions {
  readonly clientInfo: { readonly name: string; readonly version: string }
  /** Bound of `server/discover`, `initialize`, `tools/list` and other control requests. */
  readonly requestTimeout: Duration.Duration
  /** Largest JSON body or SSE event accepted. */
  readonly maxMessageBytes: number
  /** Background events of the session. */
  readonly onEvent: (event: SessionEvent) => Effect.Effect<void>
}

export type SessionEvent =
  | { readonly _tag: "ToolsChanged" }
  | { readonly _tag: "Lost"; readonly error: UpstreamError }

/** What one request may report back while it runs. */
export interface RequestHooks {
  readonly onProgress?: ((params: Readonly<Record<string, unknown>>) => Effect.Effect<void>) | undefined
  readonly relay?: RelayHooks | undefined
  /** Extra request headers (2026-07-28 `Mcp-Param-*`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly timeout?: Duration.Duration | undefined
}

export interface UpstreamSession {
  readonly era: "modern" | "legacy"
  readonly protocolVersion: string
  readonly serverInfo: Readonly<Record<string, unknown>> | undefined
  readonly capabilities: Readonly<Record<string, unknown>>
  /** One request; resolves to its `result` object. */
  readonly request: (
    method: string,
    params: Readonly<Record<string, unknown>>,
    hooks?: RequestHooks
  ) => Effect.Effect<Readonly<Record<string, unknown>>, UpstreamError>
}

// ---------------------------------------------------------------------------
// JSON-RPC messages
// ---------------------------------------------------------------------------

type Id = string | number

type Incoming =
  | { readonly _tag: "Response"; readonly id: Id | null; readonly result?: unknown; readonly error?: unknown }
  | { readonly _tag: "Notification"; readonly method: string; readonly params: Readonly<Record<string, unknown>> }
  | {
    readonly _tag: "Request"
    readonly id: Id
    readonly method: string
    readonly params: Readonly<Record<string, unknown>> | undefined
  }

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const isId = (u: unknown): u is Id => typeof u === "string" || (typeof u === "number" && Number.isFinite(u))

const classify = (value: unknown): Incoming | undefined => {
  if (!isObject(value) || value.jsonrpc !== "2.0") return undefined
  if (typeof value.method === "string") {
    const params = isObject(value.params) ? value.params : undefined
    if (isId(value.id)) return { _tag: "Request", id: value.id, method: value.method, params }
    return { _tag: "Notification", method: value.method, params: params ?? {} }
  }
  if ((isId(value.id) || value.id === null) && ("result" in value || "error" in value)) {
    return { _tag: "Response", id: value.id as Id | null, result: value.result, error: value.error }
  }
  return undefined
}

const parseIncoming = (text: string): ReadonlyArray<Incoming> | undefined => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  const list = Array.isArray(value) ? value : [value]
  const out: Array<Incoming> = []
  for (const item of list) {
    const message = classify(item)
    if (message !== undefined) out.push(message)
  }
  return out
}

const rpcError = (connection: string, error: unknown, status?: number): UpstreamError => {
  const record = isObject(error) ? error : {}
  const code = typeof record.code === "number" ? record.code : -32603
  const message = typeof record.message === "string" ? record.message.slice(0, 500) : "error without a message"
  return new UpstreamError({
    connection,
    kind: "rpc",
    detail: `the upstream answered with error ${code}: ${message}`,
    code,
    ...(record.data === undefined ? {} : { data: record.data }),
    ...(status === undefined ? {} : { status })
  })
}

/** A header value as 2026-07-28 sends it: visible ASCII as is, anything else in the Base64 sentinel. */
export const encodeHeaderValue = (value: string): string =>
  /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !value.startsWith("=?")
    ? value
    : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`

/** `Mcp-Param-*` headers for the `x-mcp-header` arguments of a tool's input schema. */
export const paramHeaders = (
  inputSchema: unknown,
  args: Readonly<Record<string, unknown>>
): Readonly<Record<string, string>> => {
  const headers: Record<string, string> = {}
  for (const binding of headerBindingsOf(inputSchema)) {
    let value: unknown = args
    for (const key of binding.path) value = isObject(value) ? value[key] : undefined
    if (typeof value === "string") headers[binding.header] = encodeHeaderValue(value)
    else if (typeof value === "number" || typeof value === "boolean") headers[binding.header] = String(value)
  }
  return headers
}

// ---------------------------------------------------------------------------
// Reading responses
// ---------------------------------------------------------------------------

const mediaType = (response: HttpClientResponse.HttpClientResponse): string =>
  (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

/** The body as text, failing once it exceeds `limit` bytes. */
const readBounded = (
  connection: string,
  response: HttpClientResponse.HttpClientResponse,
  limit: number
): Effect.Effect<string, UpstreamError> =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    let tooLarge = false
    return response.stream.pipe(
      Stream.runForEachWhile((chunk) =>
        Effect.sync(() => {
          size += chunk.length
          if (size > limit) {
            tooLarge = true
            return false
          }
          chunks.push(chunk)
          return true
        })
      ),
      Effect.mapError(() => unavailable(connection, "the upstream's response broke off")),
      Effect.flatMap(() =>
        tooLarge
          ? Effect.fail(unavailable(connection, `the upstream sent a message larger than ${limit} bytes`))
          : Effect.succeed(Buffer.concat(chunks).toString("utf8"))
      )
    )
  })

interface StreamEnd {
  /** `true` when `onEvent` stopped the reading; `false` when the stream ended. */
  readonly stopped: boolean
  readonly lastEventId: string | undefined
  readonly retryMs: number | undefined
}

/** Reads SSE events until `onEvent` answers `false` or the stream ends. */
const readEvents = <E>(
  connection: string,
  response: HttpClientResponse.HttpClientResponse,
  limit: number,
  onEvent: (event: Sse.Event) => Effect.Effect<boolean, E>
): Effect.Effect<StreamEnd, E | UpstreamError> =>
  Effect.suspend(() => {
    const queue: Array<Sse.AnyEvent> = []
    const parser = Sse.makeParser((event) => queue.push(event), { maxEventSize: limit })
    let stopped = false
    let lastEventId: string | undefined
    let retryMs: number | undefined
    return Stream.decodeText(response.stream).pipe(
      Stream.mapError(() => unavailable(connection, "the upstream's event stream broke off")),
      Stream.runForEachWhile((text) =>
        Effect.gen(function*() {
          const error = parser.feed(text)
          if (error !== undefined) {
            return yield* unavailable(connection, `the upstream sent an event larger than ${limit} characters`)
          }
          while (queue.length > 0) {
            const event = queue.shift()!
            if (event._tag === "Retry") {
              retryMs = Duration.toMillis(event.duration)
              continue
            }
            if (event.id !== undefined) lastEventId = event.id
            if (!(yield* onEvent(event))) {
              stopped = true
              return false
            }
          }
          return true
        })
      ),
      Effect.map(() => ({ stopped, lastEventId, retryMs }))
    )
  })

// ---------------------------------------------------------------------------
// The session
// ---------------------------------------------------------------------------

type ResponseMessage = Incoming & { _tag: "Response" }

interface PendingCall {
  readonly id: Id
  readonly deferred: Deferred.Deferred<ResponseMessage, UpstreamError>
  readonly hooks: RequestHooks | undefined
  readonly progressToken: string | undefined
}

/**
 * Opens a session with the upstream; it lives until the scope closes (then a
 * 2025 session is ended with DELETE, streams are aborted).
 */
export const connect = (
  target: UpstreamTarget,
  options: ClientOptions
): Effect.Effect<UpstreamSession, UpstreamError, UpstreamHttp | UpstreamAuth | Scope.Scope> =>
  Effect.gen(function*() {
    const http = yield* UpstreamHttp
    const auth = yield* UpstreamAuth
    const scope = yield* Effect.scope
    const name = target.name
    const limit = options.maxMessageBytes
    const authTarget = { id: target.id, name, url: target.url, allow: target.allow }

    let nextId = 1
    let era: "modern" | "legacy" = "legacy"
    let protocolVersion: string | undefined
    let sessionId: string | undefined
    let capabilities: Readonly<Record<string, unknown>> = {}
    let serverInfo: Readonly<Record<string, unknown>> | undefined
    /** HTTP+SSE: where messages are POSTed. */
    let messagesUrl: string | undefined
    const pending = new Map<Id, PendingCall>()
    const isLegacy = () => era === "legacy"
    const reinitLock = yield* Semaphore.make(1)

    // Every message the upstream sends passes here: an echo of the credential Janus sent it is scrubbed
    // before anything reads it (results, errors, progress, logs, server requests, tool lists).
    let injected = InjectedSecrets.none
    const parseMessages = (text: string) => parseIncoming(injected.scrub(text).text)

    const baseHeaders = (extra?: Readonly<Record<string, string>>) =>
      Effect.map(auth.headers(authTarget, target.auth), (credential) => {
        injected = InjectedSecrets.track(injected, credential)
        const headers: Record<string, string> = { ...extra, ...credential }
        if (era === "legacy" && protocolVersion !== undefined) headers["mcp-protocol-version"] = protocolVersion
        if (era === "legacy" && sessionId !== undefined) headers["mcp-session-id"] = sessionId
        return headers
      })

    const modernMeta = (relay: RelayHooks | undefined) => ({
      [META_VERSION]: MODERN_VERSION,
      // a call carries its client's own capabilities: the upstream asks only for input that client can give
      [META_CAPABILITIES]: relay?.clientCapabilities ?? CLIENT_CAPABILITIES,
      [META_CLIENT_INFO]: options.clientInfo,
      ...(relay?.logLevel === undefined ? {} : { [META_LOG_LEVEL]: relay.logLevel })
    })

    const modernHeaders = (method: string, params: Readonly<Record<string, unknown>>) => {
      const headers: Record<string, string> = { "mcp-protocol-version": MODERN_VERSION, "mcp-method": method }
      const routing = method === "tools/call" || method === "prompts/get"
        ? params.name
        : method === "resources/read"
        ? params.uri
        : undefined
      if (typeof routing === "string") headers["mcp-name"] = encodeHeaderValue(routing)
      return headers
    }

    /** One HTTP exchange; the response lives in the caller's scope. */
    const send = (
      method: "GET" | "POST" | "DELETE",
      url: string,
      headers: Readonly<Record<string, string>>,
      body?: string
    ) => {
      let request = HttpClientRequest.make(method)(url).pipe(HttpClientRequest.setHeaders(headers))
      if (body !== undefined) request = HttpClientRequest.bodyText(request, body, "application/json")
      return http.execute(name, target.allow, request)
    }

    // --- server-to-client requests and notifications -----------------------

    const answer = (id: Id, outcome: Exit.Exit<Readonly<Record<string, unknown>>, { code: number; message: string }>) =>
      Exit.isSuccess(outcome)
        ? { jsonrpc: "2.0", id, result: outcome.value }
        : {
          jsonrpc: "2.0",
          id,
          error: Option.match(Cause.findErrorOption(outcome.cause), {
            onNone: () => ({ code: -32603, message: "the gateway could not relay the request" }),
            onSome: (e) => ({ code: e.code, message: e.message })
          })
        }

    /** Answers a server request: relayed to the client when it can take it, else refused. */
    const serve = (
      message: Incoming & { _tag: "Request" },
      relay: RelayHooks | undefined
    ): Effect.Effect<Readonly<Record<string, unknown>>, { code: number; message: string }> => {
      if (message.method === "ping") return Effect.succeed({})
      const capability = message.method === "elicitation/create"
        ? "elicitation"
        : message.method === "sampling/createMessage"
        ? "sampling"
        : message.method === "roots/list"
        ? "roots"
        : undefined
      if (capability === undefined) {
        return Effect.fail({ code: -32601, message: `Method not found: ${message.method}` })
      }
      const declared = relay?.clientCapabilities?.[capability]
      if (relay?.request !== undefined && isObject(declared)) {
        return relay.request(message.method, message.params).pipe(
          Effect.mapError((refused) => ({ code: refused.code, message: refused.message }))
        )
      }
      if (capability === "elicitation") return Effect.succeed({ action: "decline" })
      return Effect.fail({
        code: -32601,
        message: `the client behind the Janus gateway cannot answer ${message.method}`
      })
    }

    /** Posts a JSON-RPC response or notification (202 expected). */
    const post = (url: string, message: unknown) =>
      Effect.scoped(Effect.gen(function*() {
        const headers = yield* baseHeaders({
          "content-type": "application/json",
          accept: "application/json, text/event-stream"
        })
        const response = yield* send("POST", url, headers, JSON.stringify(message))
        if (response.status >= 400) {
          return yield* unavailable(name, `the upstream refused a message (HTTP ${response.status})`, response.status)
        }
      }))

    const reply = (message: Incoming & { _tag: "Request" }, relay: RelayHooks | undefined) =>
      serve(message, relay).pipe(
        Effect.exit,
        Effect.flatMap((outcome) => post(messagesUrl ?? target.url, answer(message.id, outcome))),
        Effect.catch((error) => Effect.logDebug(`could not answer a request of upstream ${name}`, error.detail))
      )

    const onNotification = (
      message: Incoming & { _tag: "Notification" },
      call: PendingCall | undefined
    ): Effect.Effect<void> => {
      switch (message.method) {
        case "notifications/progress": {
          const token = message.params.progressToken
          const owner = call !== undefined && call.progressToken === token
            ? call
            : [...pending.values()].find((p) => p.progressToken !== undefined && p.progressToken === token)
          return owner?.hooks?.onProgress?.(message.params) ?? Effect.void
        }
        case "notifications/message": {
          const owner = call ?? (pending.size === 1 ? [...pending.values()][0] : undefined)
          const log = owner?.hooks?.relay?.log
          return log !== undefined
            ? log(message.params)
            : Effect.logDebug(`log message from upstream ${name}`, message.params)
        }
        case "notifications/tools/list_changed":
          return options.onEvent({ _tag: "ToolsChanged" })
        default:
          return Effect.void
      }
    }

    // --- Streamable HTTP exchange -----------------------------------------

    /** POSTs a request and reads its response (JSON or SSE), routing what arrives before it. */
    const exchange = (
      call: PendingCall,
      body: string,
      headers: Readonly<Record<string, string>>
    ): Effect.Effect<Incoming & { _tag: "Response" }, UpstreamError> =>
      Effect.scoped(Effect.gen(function*() {
        const sentSession = sessionId
        const response = yield* send("POST", target.url, headers, body)
        if (response.status === 404 && sentSession !== undefined) {
          return yield* new UpstreamError({ connection: name, kind: "session_expired", detail: "the session ended" })
        }
        if (response.status === 401 || response.status === 403) {
          return yield* new UpstreamError({
            connection: name,
            kind: "refused",
            detail: `the upstream rejected Janus's credentials (HTTP ${response.status})`,
            status: response.status
          })
        }
        const type = mediaType(response)
        if (response.status >= 200 && response.status < 300 && type === "text/event-stream") {
          let found: (Incoming & { _tag: "Response" }) | undefined
          yield* readEvents(name, response, limit, (event) =>
            Effect.gen(function*() {
              if (event.data === "") return true
              const messages = parseMessages(event.data)
              if (messages === undefined) {
                return yield* unavailable(name, "the upstream sent an event that is not JSON")
              }
              for (const message of messages) {
                switch (message._tag) {
                  case "Response":
                    if (message.id === call.id) found = message
                    break
                  case "Notification":
                    yield* onNotification(message, call)
                    break
                  case "Request":
                    yield* Effect.forkIn(reply(message, call.hooks?.relay), scope)
                    break
                }
              }
              return found === undefined
            }))
          if (found === undefined) {
            return yield* unavailable(name, "the upstream closed the response stream before answering")
          }
          return found
        }
        const text = yield* readBounded(name, response, limit)
        const messages = type === "application/json" || text.startsWith("{") ? parseMessages(text) : undefined
        const found = messages?.find((m): m is Incoming & { _tag: "Response" } =>
          m._tag === "Response" && (m.id === call.id || response.status >= 400)
        )
        if (found !== undefined) {
          if (found.error !== undefined) return yield* rpcError(name, found.error, response.status)
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

    // --- HTTP+SSE exchange --------------------------------------------------

    const sseExchange = (call: PendingCall, body: string) =>
      Effect.gen(function*() {
        pending.set(call.id, call)
        yield* post(messagesUrl!, JSON.parse(body))
        return yield* Deferred.await(call.deferred)
      }).pipe(Effect.ensuring(Effect.sync(() => pending.delete(call.id))))

    // --- requests -------------------------------------------------------------

    const cancel = (id: Id) =>
      post(messagesUrl ?? target.url, {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: id, reason: "the client cancelled the call" }
      }).pipe(Effect.timeout("2 seconds"), Effect.ignore, Effect.forkIn(scope), Effect.asVoid)

    const requestOnce = (
      method: string,
      params: Readonly<Record<string, unknown>>,
      hooks: RequestHooks | undefined
    ): Effect.Effect<Readonly<Record<string, unknown>>, UpstreamError> =>
      Effect.suspend(() => {
        const id = nextId++
        return requestWithId(id, method, params, hooks).pipe(
          Effect.onInterrupt(() => era === "legacy" ? cancel(id) : Effect.void)
        )
      })

    const requestWithId = (
      id: number,
      method: string,
      params: Readonly<Record<string, unknown>>,
      hooks: RequestHooks | undefined
    ): Effect.Effect<Readonly<Record<string, unknown>>, UpstreamError> =>
      Effect.gen(function*() {
        const progressToken = hooks?.onProgress !== undefined ? `janus-${id}` : undefined
        const meta: Record<string, unknown> = { ...(isObject(params._meta) ? params._meta : {}) }
        if (era === "modern") Object.assign(meta, modernMeta(hooks?.relay))
        if (progressToken !== undefined) meta.progressToken = progressToken
        const body = JSON.stringify({
          jsonrpc: "2.0",
          id,
          method,
          params: Object.keys(meta).length === 0 ? params : { ...params, _meta: meta }
        })
        const call: PendingCall = {
          id,
          deferred: yield* Deferred.make<ResponseMessage, UpstreamError>(),
          hooks,
          progressToken
        }
        const response = target.transport === "sse"
          ? yield* sseExchange(call, body)
          : yield* exchange(
            call,
            body,
            yield* baseHeaders({
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              ...(era === "modern" ? modernHeaders(method, params) : {}),
              ...hooks?.headers
            })
          )
        if (response.error !== undefined) return yield* rpcError(name, response.error)
        if (!isObject(response.result)) {
          return yield* unavailable(name, `the upstream's ${method} result is not an object`)
        }
        return response.result
      })

    const request = (
      method: string,
      params: Readonly<Record<string, unknown>>,
      hooks?: RequestHooks
    ): Effect.Effect<Readonly<Record<string, unknown>>, UpstreamError> => {
      const attempt = requestOnce(method, params, hooks)
      const retried = attempt.pipe(
        Effect.catchIf(
          (error) => error.kind === "session_expired",
          () => Effect.andThen(reinitialize(sessionId), attempt)
        ),
        Effect.catchIf(
          (error) =>
            error.kind === "refused" && error.status === 401 && target.auth.scheme === "oauth-client-credentials",
          () => Effect.andThen(auth.invalidate(authTarget, target.auth), attempt)
        )
      )
      const timeout = hooks?.timeout ?? options.requestTimeout
      return retried.pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () =>
            Effect.fail(
              new UpstreamError({
                connection: name,
                kind: "timeout",
                detail: `${method} got no answer within ${Duration.format(timeout)}`
              })
            )
        })
      )
    }

    const notify = (method: string, params: Readonly<Record<string, unknown>> = {}) =>
      post(messagesUrl ?? target.url, { jsonrpc: "2.0", method, params })

    // --- initialize / discover ------------------------------------------------

    const initialize = Effect.gen(function*() {
      era = "legacy"
      protocolVersion = undefined
      sessionId = undefined
      const id = nextId++
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "initialize",
        params: {
          protocolVersion: LEGACY_VERSIONS[0],
          capabilities: CLIENT_CAPABILITIES,
          clientInfo: options.clientInfo
        }
      })
      const call: PendingCall = {
        id,
        deferred: yield* Deferred.make<ResponseMessage, UpstreamError>(),
        hooks: undefined,
        progressToken: undefined
      }
      let result: unknown
      if (target.transport === "sse") {
        result = (yield* sseExchange(call, body)).result
      } else {
        const headers = yield* baseHeaders({
          "content-type": "application/json",
          accept: "application/json, text/event-stream"
        })
        result = yield* Effect.scoped(Effect.gen(function*() {
          const response = yield* send("POST", target.url, headers, body)
          if (response.status === 401 || response.status === 403) {
            return yield* new UpstreamError({
              connection: name,
              kind: "refused",
              detail: `the upstream rejected Janus's credentials (HTTP ${response.status})`,
              status: response.status
            })
          }
          const session = response.headers["mcp-session-id"]
          const type = mediaType(response)
          let found: (Incoming & { _tag: "Response" }) | undefined
          if (response.status < 300 && type === "text/event-stream") {
            yield* readEvents(name, response, limit, (event) =>
              Effect.sync(() => {
                const messages = event.data === "" ? [] : parseMessages(event.data) ?? []
                found = messages.find((m): m is Incoming & { _tag: "Response" } => m._tag === "Response" && m.id === id)
                return found === undefined
              }))
          } else {
            const messages = parseMessages(yield* readBounded(name, response, limit)) ?? []
            found = messages.find((m): m is Incoming & { _tag: "Response" } => m._tag === "Response")
          }
          if (found === undefined) {
            return yield* unavailable(name, `initialize failed (HTTP ${response.status})`, response.status)
          }
          if (found.error !== undefined) return yield* rpcError(name, found.error, response.status)
          if (session !== undefined && /^[\x21-\x7e]{1,1024}$/.test(session)) sessionId = session
          return found.result
        }))
      }
      if (!isObject(result) || typeof result.protocolVersion !== "string") {
        return yield* unavailable(name, "the initialize result has no protocolVersion")
      }
      if (!LEGACY_VERSIONS.includes(result.protocolVersion)) {
        return yield* unavailable(
          name,
          `the upstream chose protocol ${result.protocolVersion.slice(0, 40)}, which Janus does not speak`
        )
      }
      protocolVersion = result.protocolVersion
      capabilities = isObject(result.capabilities) ? result.capabilities : {}
      serverInfo = isObject(result.serverInfo) ? result.serverInfo : undefined
      yield* notify("notifications/initialized")
    })

    const reinitialize = (failedSession: string | undefined) =>
      reinitLock.withPermits(1)(
        Effect.suspend(() =>
          sessionId !== failedSession
            ? Effect.void
            : Effect.andThen(initialize, options.onEvent({ _tag: "ToolsChanged" }))
        )
      )

    /** `server/discover`; `true` when the upstream speaks 2026-07-28. */
    const discover = Effect.gen(function*() {
      era = "modern"
      const outcome = yield* requestOnce("server/discover", {}, undefined).pipe(
        Effect.timeout(options.requestTimeout),
        Effect.catchTag("TimeoutError", () =>
          Effect.fail(
            new UpstreamError({ connection: name, kind: "timeout", detail: "server/discover got no answer in time" })
          )),
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
      if (!versions.includes(MODERN_VERSION)) return false
      protocolVersion = MODERN_VERSION
      capabilities = isObject(result.capabilities) ? result.capabilities : {}
      const meta = isObject(result._meta) ? result._meta : {}
      serverInfo = isObject(meta["io.modelcontextprotocol/serverInfo"])
        ? meta["io.modelcontextprotocol/serverInfo"]
        : undefined
      return true
    })

    // --- background streams ---------------------------------------------------

    const lost = (error: UpstreamError) => options.onEvent({ _tag: "Lost", error })

    /** HTTP+SSE: opens the stream, resolves the endpoint, then routes messages until it ends. */
    const openLegacyStream = Effect.gen(function*() {
      const endpoint = yield* Deferred.make<string, UpstreamError>()
      const streamScope = yield* Effect.scope
      const headers = yield* baseHeaders({ accept: "text/event-stream" })
      const response = yield* send("GET", target.url, headers)
      if (response.status !== 200 || mediaType(response) !== "text/event-stream") {
        return yield* unavailable(name, `the SSE endpoint answered HTTP ${response.status}`, response.status)
      }
      const route = (event: Sse.Event) =>
        Effect.gen(function*() {
          if (event.event === "endpoint") {
            let url: URL
            try {
              url = new URL(event.data.trim(), target.url)
            } catch {
              return yield* unavailable(name, "the endpoint event does not hold a URL")
            }
            if (url.origin !== new URL(target.url).origin) {
              return yield* new UpstreamError({
                connection: name,
                kind: "refused",
                detail:
                  `the endpoint event names another origin (${url.origin}); messages only go to the stream's origin`
              })
            }
            messagesUrl = url.href
            yield* Deferred.succeed(endpoint, url.href)
            return true
          }
          if (event.data === "") return true
          for (const message of parseMessages(event.data) ?? []) {
            switch (message._tag) {
              case "Response": {
                const call = message.id === null ? undefined : pending.get(message.id)
                if (call !== undefined) yield* Deferred.succeed(call.deferred, message)
                break
              }
              case "Notification":
                yield* onNotification(message, undefined)
                break
              case "Request": {
                const only = pending.size === 1 ? [...pending.values()][0] : undefined
                yield* Effect.forkIn(reply(message, only?.hooks?.relay), scope)
                break
              }
            }
          }
          return true
        })
      const failAll = (error: UpstreamError) =>
        Effect.forEach([...pending.values()], (call) => Deferred.fail(call.deferred, error), { discard: true })
      yield* readEvents(name, response, limit, route).pipe(
        Effect.flatMap(() => Effect.fail(unavailable(name, "the upstream closed its SSE stream"))),
        Effect.catch((error) =>
          Effect.andThen(
            Effect.all([failAll(error), Deferred.fail(endpoint, error)]),
            lost(error)
          )
        ),
        Effect.forkIn(streamScope)
      )
      yield* Deferred.await(endpoint).pipe(
        Effect.timeout(options.requestTimeout),
        Effect.catchTag("TimeoutError", () =>
          Effect.fail(
            new UpstreamError({ connection: name, kind: "timeout", detail: "the SSE stream named no endpoint in time" })
          ))
      )
    })

    /** 2025 Streamable HTTP: the GET stream, resumed after its `retry` delay. */
    const getStreamLoop = Effect.gen(function*() {
      let lastEventId: string | undefined
      let retryMs = 1_000
      while (true) {
        const end = yield* Effect.scoped(Effect.gen(function*() {
          const sent = sessionId
          const headers = yield* baseHeaders({
            accept: "text/event-stream",
            ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId })
          })
          const response = yield* send("GET", target.url, headers)
          if (response.status === 405) return "unsupported" as const
          if (response.status === 404 && sent !== undefined) {
            yield* reinitialize(sent)
            lastEventId = undefined
            return "again" as const
          }
          if (response.status !== 200 || mediaType(response) !== "text/event-stream") {
            return yield* unavailable(name, `the GET stream answered HTTP ${response.status}`, response.status)
          }
          const result = yield* readEvents(name, response, limit, (event) =>
            Effect.gen(function*() {
              if (event.data === "") {
                return true
              }
              for (const message of parseMessages(event.data) ?? []) {
                if (message._tag === "Notification") yield* onNotification(message, undefined)
                else if (message._tag === "Request") yield* Effect.forkIn(reply(message, undefined), scope)
              }
              return true
            })).pipe(
              // A stream that breaks off is reopened; only a failure to reopen it loses the session.
              Effect.orElseSucceed((): StreamEnd => ({ stopped: false, lastEventId, retryMs: undefined }))
            )
          lastEventId = result.lastEventId ?? lastEventId
          if (result.retryMs !== undefined) retryMs = Math.min(Math.max(result.retryMs, 100), 60_000)
          return "again" as const
        }))
        if (end === "unsupported") return
        yield* Effect.sleep(Duration.millis(retryMs))
      }
    }).pipe(Effect.catch(lost))

    /** 2026-07-28: `subscriptions/listen`, re-listened after each graceful end. */
    const listenLoop = Effect.gen(function*() {
      while (true) {
        const outcome = yield* Effect.scoped(Effect.gen(function*() {
          const id = `listen-${nextId++}`
          const params = { notifications: { toolsListChanged: true }, _meta: modernMeta(undefined) }
          const headers = yield* baseHeaders({
            "content-type": "application/json",
            accept: "text/event-stream, application/json",
            ...modernHeaders("subscriptions/listen", params)
          })
          const response = yield* send(
            "POST",
            target.url,
            headers,
            JSON.stringify({ jsonrpc: "2.0", id, method: "subscriptions/listen", params })
          )
          if (response.status !== 200 || mediaType(response) !== "text/event-stream") {
            if (response.status >= 400 && response.status < 500) return "unsupported" as const
            return yield* unavailable(name, `subscriptions/listen answered HTTP ${response.status}`, response.status)
          }
          yield* readEvents(name, response, limit, (event) =>
            Effect.gen(function*() {
              if (event.data === "") return true
              for (const message of parseMessages(event.data) ?? []) {
                if (message._tag === "Notification") yield* onNotification(message, undefined)
                else if (message._tag === "Response" && message.id === id) return false
              }
              return true
            })).pipe(Effect.ignore)
          return "again" as const
        }))
        if (outcome === "unsupported") return
        yield* Effect.sleep("1 second")
        // Changes may have been missed while the stream was down.
        yield* options.onEvent({ _tag: "ToolsChanged" })
      }
    }).pipe(Effect.catch(lost))

    // --- connect --------------------------------------------------------------

    if (target.transport === "sse") {
      yield* openLegacyStream
      yield* initialize
    } else {
      const modern = yield* discover
      if (!modern) yield* initialize
      yield* Effect.addFinalizer(() =>
        isLegacy() && sessionId !== undefined
          ? Effect.scoped(Effect.flatMap(baseHeaders(), (headers) => send("DELETE", target.url, headers))).pipe(
            Effect.timeout("2 seconds"),
            Effect.ignore
          )
          : Effect.void
      )
      const listChanged = isObject(capabilities.tools) && capabilities.tools.listChanged === true
      if (listChanged) yield* Effect.forkIn(isLegacy() ? getStreamLoop : listenLoop, scope)
    }

    return {
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
      request
    } satisfies UpstreamSession
  })
