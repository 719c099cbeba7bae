/**
 * The MCP endpoint on an `HttpRouter`: Streamable HTTP at one path for every
 * revision (2026-07-28 stateless and the 2025-era sessions), plus the
 * deprecated HTTP+SSE transport.
 *
 * Why not effect/ai's `McpServer`: it has one global tool registry with no tool
 * removal, no per-caller tool lists, no GET stream, no resumable streams
 * (`Last-Event-ID`) and no shared session store, all of which the gateway needs
 * (SPEC "Interfaces", "Scale-out"). This module implements the JSON-RPC
 * dispatch on `HttpRouter` and uses effect/ai's `McpSchema` for the wire types,
 * error codes and header decoding.
 *
 * Rules enforced here, before a revision is chosen (all revisions):
 * - `Origin` present and not allowed: 403 (see `Origin.ts`). An allowed one
 *   gets CORS: preflights answered before admission, `Access-Control-*` on
 *   every response, refusals included (see `Cors.ts`).
 * - Admission (per-IP limiter, authentication, per-identity limiter; see
 *   `Guard.ts`) before the body is read.
 * - POST: `Content-Type` must be `application/json` (415); `Accept` must list
 *   both `application/json` and `text/event-stream` (406); the body is limited
 *   to `maxBodyBytes` (413, checked against `Content-Length` before reading);
 *   invalid JSON is 400 Parse error (-32700). GET must accept
 *   `text/event-stream` (406). Other methods: 405 with `Allow`.
 * - An event-stream response ends when the credential that opened it stops
 *   being valid (revoked, deleted or expired, on any replica), through
 *   `streamLifetime`: every transport's streams, the legacy `/sse` included.
 * - Long-lived streams (the GET stream, legacy `/sse`, `subscriptions/listen`)
 *   first take one of the caller's open-stream permits (`McpGuard.holdStream`,
 *   `MCP_MAX_STREAMS_PER_CALLER`), held until the response ends; without one,
 *   429 and nothing is opened.
 * - Revision choice: a request whose `params._meta` claims a protocol version,
 *   or whose `MCP-Protocol-Version` header is `2026-07-28` (except an
 *   `initialize` without a claim), is served statelessly (`Stateless.ts`);
 *   everything else by the 2025-era session transport (`Stateful.ts`).
 *
 * @since 0.1.0
 */
import { Deferred, Duration, Effect, Layer, Predicate, type Scope } from "effect"
import * as ByteSize from "effect/ByteSize"
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import * as Hardening from "../http/Hardening.ts"
import { endWhen } from "../http/StreamEnd.ts"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type { Caller } from "./Caller.ts"
import * as Cors from "./Cors.ts"
import { Dispatcher, type DispatcherOptions } from "./Dispatcher.ts"
import { AdmissionRefused, admissionRequest, McpGuard } from "./Guard.ts"
import * as HttpReply from "./HttpReply.ts"
import { isParsedBody, type ParsedBody } from "./HttpReply.ts"
import { classify, ProtocolError, type RequestId } from "./JsonRpc.ts"
import * as LegacySse from "./LegacySse.ts"
import { ListChangedSignals } from "./ListChanged.ts"
import * as Origin from "./Origin.ts"
import { accepts, Header, Meta, STATELESS_VERSION } from "./Protocol.ts"
import { McpSessionStore, type MemoryStoreOptions } from "./Sessions.ts"
import * as Stateful from "./Stateful.ts"
import * as Stateless from "./Stateless.ts"
import type { ToolCatalog } from "./ToolCatalog.ts"

/** @since 0.1.0 */
export interface McpHttpOptions extends DispatcherOptions {
  /** The Streamable HTTP endpoint. Default `/mcp`. */
  readonly path?: HttpRouter.PathInput | undefined
  /**
   * After admission: narrows the caller to this mount, given the route's
   * path parameters (e.g. `/servers/:name/mcp` sets `Caller.virtualServer`),
   * or refuses the request (the error's `status` and message are the reply).
   * Runs on every request of every transport of this mount.
   */
  readonly scopeCaller?:
    | ((caller: Caller, params: Readonly<Record<string, string | undefined>>) => Effect.Effect<
      Caller,
      ProtocolError
    >)
    | undefined
  /** Browser origins allowed besides loopback ones (see `Origin.ts`). */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /** Allow loopback browser origins. Default `true`. */
  readonly allowLocalhostOrigins?: boolean | undefined
  /**
   * Completes when the credential `caller` was admitted with stops being
   * valid (revoked, deleted, expired); `since` is when the request arrived.
   * Every event-stream response of the caller ends then. Default: never.
   */
  readonly streamLifetime?: ((caller: Caller, since: number) => Effect.Effect<void>) | undefined
  /** Largest accepted request body. Default 1 MiB. */
  readonly maxBodyBytes?: number | undefined
  /** `retry` (ms) of priming events. Default 1000. */
  readonly sseRetryMs?: number | undefined
  /**
   * 2025-era `tools/call`: answer JSON if the call finishes within this time
   * without reporting progress, else switch to a resumable SSE stream.
   * Default 250 milliseconds.
   */
  readonly streamAfter?: Duration.Input | undefined
  /** 2025-era SSE polling: close a call's stream after this long if it still runs. Default: never. */
  readonly pollAfter?: Duration.Input | undefined
  /** Keep-alive comments on long-lived streams. Default 15 seconds. */
  readonly keepAlive?: Duration.Input | undefined
  /**
   * The deprecated HTTP+SSE transport (2024-11-05): `GET ssePath` opens the
   * stream, `POST messagesPath?sessionId=` sends. Default `/sse` and
   * `/messages`; `false` disables it.
   */
  readonly legacySse?: false | {
    readonly ssePath?: HttpRouter.PathInput | undefined
    readonly messagesPath?: HttpRouter.PathInput | undefined
  } | undefined
}

/** The services the endpoint needs besides the router. */
export type McpHttpRequirements = ToolCatalog | McpGuard | McpSessionStore | ListChangedSignals

const forbidden = (origin: string) =>
  HttpReply.error(
    null,
    new ProtocolError({ code: ErrorCode.invalidRequest, message: Origin.rejectionMessage(origin), status: 403 })
  )

const refused = (refusal: AdmissionRefused): HttpServerResponse.HttpServerResponse =>
  HttpReply.error(
    null,
    new ProtocolError({ code: ErrorCode.refused, message: refusal.message, status: refusal.status }),
    refusal.headers
  )

/** Whether a parsed POST body belongs to the 2026-07-28 wire. */
export const isStatelessBody = (body: unknown, versionHeader: string | undefined): boolean => {
  if (!Predicate.isReadonlyObject(body)) return false
  const params = body.params
  const meta = Predicate.isReadonlyObject(params) ? params._meta : undefined
  if (Predicate.isReadonlyObject(meta) && Meta.protocolVersion in meta) return true
  return versionHeader?.trim() === STATELESS_VERSION && body.method !== "initialize"
}

const make = Effect.fnUntraced(function*(options: McpHttpOptions) {
  const router = yield* HttpRouter.HttpRouter
  const guard = yield* McpGuard
  const path = options.path ?? "/mcp"
  const scopeCaller = options.scopeCaller
  const originAllowed = Origin.make({
    allowedOrigins: options.allowedOrigins,
    allowLocalhost: options.allowLocalhostOrigins
  })
  const maxBody = options.maxBodyBytes ?? 1024 * 1024
  const maxBodySize = ByteSize.fromInputUnsafe(maxBody)
  const keepAlive = Duration.fromInputUnsafe(options.keepAlive ?? "15 seconds")
  const shutdown = yield* Deferred.make<void>()
  yield* Effect.addFinalizer(() => Deferred.succeed(shutdown, undefined))

  /** One of the caller's open-stream permits for the request's scope, or the 429 that refuses the stream. */
  const holdStream = (
    request: HttpServerRequest.HttpServerRequest,
    caller: Caller,
    id: RequestId | null = null
  ): Effect.Effect<HttpServerResponse.HttpServerResponse | undefined, never, Scope.Scope> =>
    guard.holdStream === undefined ?
      Effect.succeed(undefined) :
      guard.holdStream(admissionRequest(request), caller).pipe(
        Effect.as(undefined),
        Effect.catchTag("AdmissionRefused", (refusal) =>
          Effect.succeed(HttpReply.error(
            id,
            new ProtocolError({ code: ErrorCode.refused, message: refusal.message, status: refusal.status }),
            refusal.headers
          )))
      )

  const stateless = yield* Stateless.make({ keepAlive, shutdown, holdStream })
  const stateful = yield* Stateful.make({
    retryMs: options.sseRetryMs ?? 1000,
    streamAfter: Duration.fromInputUnsafe(options.streamAfter ?? "250 millis"),
    pollAfter: options.pollAfter === undefined ? undefined : Duration.fromInputUnsafe(options.pollAfter),
    keepAlive,
    shutdown
  })

  const isResponse = (u: Caller | HttpServerResponse.HttpServerResponse): u is HttpServerResponse.HttpServerResponse =>
    !("scopes" in u)

  /** Origin, then admission: the caller, or the response that refuses the request. */
  const gate = (
    request: HttpServerRequest.HttpServerRequest
  ): Effect.Effect<Caller | HttpServerResponse.HttpServerResponse> => {
    const origin = request.headers[Header.origin]
    if (!originAllowed(origin)) return Effect.succeed(forbidden(origin!))
    const admitted = guard.admit(admissionRequest(request)).pipe(
      Effect.catchTag("AdmissionRefused", (refusal) => Effect.succeed(refused(refusal)))
    )
    if (scopeCaller === undefined) return admitted
    // after authentication: this mount's narrowing (e.g. the virtual server of `/servers/:name/mcp`)
    return Effect.flatMap(
      admitted,
      (gated) =>
        isResponse(gated) ? Effect.succeed(gated) : Effect.serviceOption(HttpRouter.RouteContext).pipe(
          Effect.flatMap((route) => scopeCaller(gated, route._tag === "Some" ? route.value.params : {})),
          Effect.catchTag("ProtocolError", (error) => Effect.succeed(HttpReply.error(null, error)))
        )
    )
  }

  /** Reads the body within the limit and parses it; a failure response otherwise. */
  const readBody = (request: HttpServerRequest.HttpServerRequest) =>
    request.text.pipe(
      Effect.provideService(HttpServerRequest.MaxBodySize, maxBodySize),
      Effect.map((text): ParsedBody | HttpServerResponse.HttpServerResponse => {
        // nesting is bounded before parsing: a deep document costs the parser and every walk after it
        if (Hardening.exceedsDepth(text)) {
          return HttpReply.error(null, ProtocolError.invalidRequest(Hardening.tooDeepMessage(), 400))
        }
        try {
          return { _tag: "ParsedBody", value: JSON.parse(text) as unknown }
        } catch {
          return HttpReply.error(
            null,
            new ProtocolError({
              code: ErrorCode.parseError,
              message: "Parse error: the request body is not valid JSON; expected one JSON-RPC message",
              status: 400
            })
          )
        }
      }),
      Effect.catchTag("HttpServerError", (error) =>
        Effect.succeed(
          error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge" ?
            HttpReply.error(
              null,
              ProtocolError.invalidRequest(
                `The request body exceeds the ${maxBody}-byte limit; send a smaller message`,
                413
              )
            ) :
            HttpReply.error(
              null,
              ProtocolError.invalidRequest("The request body could not be read; resend the request", 400)
            )
        ))
    )

  /** A streamed response of `caller` that ends when its credential does. */
  const lifetime = options.streamLifetime
  const untilRevoked = (caller: Caller, since: number) => (response: HttpServerResponse.HttpServerResponse) =>
    lifetime === undefined || response.body._tag !== "Stream" ? response : endWhen(response, lifetime(caller, since))

  /**
   * A route's handler behind the gate: `handle` runs for an admitted caller;
   * every response to an allowed browser origin gets CORS headers, and an
   * event stream ends with the caller's credential.
   */
  const guarded = <R>(
    handle: (
      request: HttpServerRequest.HttpServerRequest,
      caller: Caller
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
  ) =>
  (request: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
    Effect.clockWith((clock) => {
      const since = clock.currentTimeMillisUnsafe()
      const origin = request.headers[Header.origin]
      const served = Effect.flatMap(
        gate(request),
        (gated) =>
          isResponse(gated) ? Effect.succeed(gated) : Effect.map(handle(request, gated), untilRevoked(gated, since))
      )
      return origin !== undefined && originAllowed(origin) ? Effect.map(served, Cors.allow(origin)) : served
    })

  /** `OPTIONS`: a CORS preflight from an allowed origin is answered before admission; anything else is 405. */
  const preflightOr = <R>(
    otherwise: (
      request: HttpServerRequest.HttpServerRequest
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
  ) =>
  (request: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> => {
    if (!Cors.isPreflight(request.headers)) return otherwise(request)
    const origin = request.headers[Header.origin]!
    return Effect.succeed(
      originAllowed(origin)
        ? Cors.preflight(origin, request.headers["access-control-request-headers"])
        : forbidden(origin)
    )
  }

  const post = (request: HttpServerRequest.HttpServerRequest, gated: Caller) =>
    Effect.gen(function*() {
      const notJson = HttpReply.unlessJsonBody(request.headers)
      if (notJson !== undefined) return notJson
      const accept = request.headers[Header.accept]
      if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream")) {
        return HttpReply.error(
          null,
          ProtocolError.invalidRequest(
            `Accept ${JSON.stringify(accept ?? "(missing)")} must list both application/json and text/event-stream`,
            406
          )
        )
      }
      const read = yield* readBody(request)
      if (!isParsedBody(read)) return read
      const body = read.value
      const version = request.headers[Header.protocolVersion]
      if (!Predicate.isReadonlyObject(body)) {
        // not one message: said as such, before any session rule could be quoted instead
        if (!Array.isArray(body)) {
          const invalid = classify(body) as { readonly reason: string }
          return HttpReply.error(null, ProtocolError.invalidRequest(`Invalid Request: ${invalid.reason}`))
        }
        if (version?.trim() === STATELESS_VERSION) {
          return HttpReply.error(
            null,
            ProtocolError.invalidRequest(
              `Invalid Request: got a JSON-RPC batch of ${body.length} messages; protocol ${STATELESS_VERSION} (the MCP-Protocol-Version header) takes one message per POST`
            )
          )
        }
      }
      return isStatelessBody(body, version) ?
        yield* stateless(request, gated, classify(body)) :
        yield* stateful.post(request, gated, body)
    })

  const get = (request: HttpServerRequest.HttpServerRequest, gated: Caller) => {
    if (!accepts(request.headers[Header.accept], "text/event-stream")) {
      return Effect.succeed(HttpReply.error(
        null,
        ProtocolError.invalidRequest(
          `Accept ${
            JSON.stringify(request.headers[Header.accept] ?? "(missing)")
          } must list text/event-stream to open the GET stream`,
          406
        )
      ))
    }
    return Effect.flatMap(
      holdStream(request, gated),
      (refusal) => refusal === undefined ? stateful.get(request, gated) : Effect.succeed(refusal)
    )
  }

  const del = (request: HttpServerRequest.HttpServerRequest, gated: Caller) => stateful.delete(request, gated)

  const notAllowed = guarded((request) =>
    Effect.succeed(HttpReply.error(
      null,
      ProtocolError.invalidRequest(
        `HTTP method ${request.method} is not supported on the MCP endpoint; use POST, GET or DELETE`,
        405
      ),
      { allow: "GET, POST, DELETE" }
    ))
  )

  yield* router.add("POST", path, guarded(post))
  yield* router.add("GET", path, guarded(get))
  yield* router.add("DELETE", path, guarded(del))
  for (const method of ["PUT", "PATCH"] as const) yield* router.add(method, path, notAllowed)
  yield* router.add("OPTIONS", path, preflightOr(notAllowed))

  if (options.legacySse !== false) {
    yield* LegacySse.mount({
      ssePath: options.legacySse?.ssePath ?? "/sse",
      messagesPath: options.legacySse?.messagesPath ?? "/messages",
      guarded,
      preflightOr,
      readBody,
      holdStream,
      keepAlive,
      shutdown
    })
  }
})

/**
 * Mounts the MCP endpoints on the `HttpRouter`.
 *
 * @since 0.1.0
 */
export const layer = (
  options: McpHttpOptions
): Layer.Layer<never, never, HttpRouter.HttpRouter | McpHttpRequirements> =>
  Layer.effectDiscard(make(options)).pipe(Layer.provide(Dispatcher.layer(options)))

/**
 * {@link layer} with the in-memory session store, the anonymous guard and
 * list-changed signals from the catalog: needs only the router and a catalog.
 *
 * @since 0.1.0
 */
export const layerMemory = (
  options: McpHttpOptions & { readonly sessions?: MemoryStoreOptions | undefined }
): Layer.Layer<never, never, HttpRouter.HttpRouter | ToolCatalog> =>
  layer(options).pipe(
    Layer.provide([
      McpSessionStore.layerMemory(options.sessions),
      McpGuard.layerAnonymous,
      ListChangedSignals.layerFromCatalog
    ])
  )
