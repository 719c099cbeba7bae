/**
 * Per-request observability of the HTTP server, as one global `HttpRouter`
 * middleware, plus the tracing settings of effect's HTTP server.
 *
 * **What effect's HTTP server tracing does** (`HttpMiddleware.tracer`, when a
 * tracer other than the native one is installed, e.g. OTLP): a `server` span
 * per request, named by `HttpMiddleware.SpanNameGenerator`, with
 * `http.request.method`, `url.*`, `http.response.status_code` and, once a
 * route matched, `http.route`; 5xx marks the span failed. Its parent is read
 * from `traceparent`, `b3` or `X-B3-*`, whatever `OTEL_PROPAGATORS` says, so
 * this module runs it itself, on the request as `Propagation.incoming`
 * canonicalised it (only the configured formats, the winner as
 * `traceparent`).
 *
 * **What this module adds**
 *
 * - {@link layerTracing}: span names `"{method} {route}"` (OpenTelemetry's
 *   HTTP convention) from a list of route templates, since the name is chosen
 *   before routing; unknown paths keep the bare method. Probes and scrapes
 *   (`/healthz`, `/readyz`, `/metrics`) are not traced. It turns the
 *   server-level tracing off: {@link layer} makes the server span.
 * - {@link layer} (the middleware), per request:
 *   - the server span (above), under the parent the configured propagators
 *     read, and the incoming baggage (`TraceContext.IncomingBaggage`); with
 *     no tracer, instead of the span, that parent and the request's trace id
 *     (`TraceContext.CurrentUntracedTrace`: passed on as received, recorded);
 *   - a request id: `X-Request-Id` when the client sent a sane one (1-128 of
 *     `[A-Za-z0-9._:-]`), a new UUID otherwise; echoed in the response and
 *     added to every log line of the request (`request_id`);
 *   - the incoming `tracestate`, kept for outgoing calls of the same trace
 *     (`TraceContext.TraceState`);
 *   - `http.server.request.duration{http.request.method, http.route,
 *     http.response.status_code}` when the response is written, and
 *     `http.server.active_requests`;
 *   - `janus.ready` from every `/readyz` answer;
 *   - the drain gate (`Drain.gate`).
 *
 * @since 0.1.0
 */
import { Cause, Context, Effect, Exit, Layer, Scope, Tracer } from "effect"
import {
  FindMyWay,
  HttpMiddleware,
  HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import { randomUUID } from "node:crypto"
import { Drain, gate, type HttpDrainOptions } from "./Drain.ts"
import * as Metrics from "./Metrics.ts"
import * as Propagation from "./Propagation.ts"
import { CurrentUntracedTrace, IncomingBaggage, TraceState } from "./TraceContext.ts"

/** The gateway's route templates, for span names. Unknown paths are named by their method. */
export const ROUTE_TEMPLATES: ReadonlyArray<string> = [
  "/mcp",
  "/sse",
  "/messages",
  "/healthz",
  "/readyz",
  "/metrics",
  "/api/v1/events",
  "/api/v1/*"
]

/** Paths that are not traced: probes and scrapes. */
export const UNTRACED_PATHS: ReadonlyArray<string> = ["/healthz", "/readyz", "/metrics"]

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/** `"{method} {template}"` for a request, or the method alone when no template matches. */
export const spanNameGenerator = (
  templates: ReadonlyArray<string> = ROUTE_TEMPLATES
): (request: HttpServerRequest.HttpServerRequest) => string => {
  const router = FindMyWay.make<string>({ ignoreTrailingSlash: true })
  for (const template of templates) router.all(template as HttpRouter.PathInput, template)
  return (request) => {
    const found = router.find(request.method, pathOf(request.url))
    return found === undefined ? request.method : `${request.method} ${found.handler}`
  }
}

/**
 * effect's HTTP server tracing settings: span names from `templates`, no
 * spans for `untraced` paths. Provide it where the server is built (below
 * `HttpRouter.serve`).
 */
export const layerTracing = (options: {
  readonly templates?: ReadonlyArray<string> | undefined
  readonly untraced?: ReadonlyArray<string> | undefined
} = {}): Layer.Layer<never> => {
  const untraced = new Set(options.untraced ?? UNTRACED_PATHS)
  return Layer.mergeAll(
    Layer.succeed(HttpMiddleware.SpanNameGenerator)(spanNameGenerator(options.templates)),
    // off at the server level (the request has not been read with the configured propagators yet);
    // on inside `layer`, which marks the requests it traces
    Layer.succeed(HttpMiddleware.TracerDisabledWhen)((request) =>
      !traced.has(request) || untraced.has(pathOf(request.url))
    )
  )
}

/** Requests `layer` runs effect's server tracing for (see `layerTracing`). */
const traced = new WeakSet<HttpServerRequest.HttpServerRequest>()

const saneRequestId = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * The id of the request being served, for handlers that put it in a body
 * (the admin API's 500s): one id per request, the one in `X-Request-Id`.
 */
export const CurrentRequestId = Context.Reference<string | undefined>(
  "@janus/gateway/observability/CurrentRequestId",
  { defaultValue: () => undefined }
)

/**
 * The trace id of the current span, or, when no tracer makes spans, of the
 * request (`CurrentUntracedTrace`: the caller's, or a new one), so audit
 * records carry a trace id whether or not tracing is on.
 */
export const traceIdOf = (context: Context.Context<never>): string | null =>
  Context.getOrUndefined(context, Tracer.ParentSpan)?.traceId ?? Context.get(context, CurrentUntracedTrace)?.traceId ??
    null

/** The request id of a request: a sane `X-Request-Id`, or a new UUID. */
export const requestIdOf = (request: HttpServerRequest.HttpServerRequest): string => {
  const given = request.headers["x-request-id"]
  return given !== undefined && saneRequestId.test(given) ? given : randomUUID()
}

const statusOfFailure = (cause: Cause.Cause<unknown>): Effect.Effect<number> =>
  Cause.hasInterruptsOnly(cause) ?
    Effect.succeed(499) :
    Effect.map(HttpServerError.causeResponse(cause), ([response]) => response.status)

/** Options of the middleware. */
export interface HttpObservabilityOptions {
  readonly drain?: HttpDrainOptions | undefined
  /** Readiness path whose answers set `janus.ready`. Default `/readyz`. */
  readonly readinessPath?: string | undefined
}

/**
 * The middleware as a global `HttpRouter` middleware Layer: merge it into
 * the gateway's routes.
 */
export const layer = (
  options: HttpObservabilityOptions = {}
): Layer.Layer<never, never, HttpRouter.HttpRouter | Drain> =>
  HttpRouter.middleware(
    Effect.gen(function*() {
      const drain = yield* Drain
      const propagators = yield* Propagation.Propagators
      const drainGate = gate(drain, options.drain)
      const readinessPath = options.readinessPath ?? options.drain?.readinessPath ?? "/readyz"
      return (app) =>
        Effect.withFiber((fiber) => {
          const context = fiber.context as Context.Context<never>
          const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
          const method = request.method
          const requestId = requestIdOf(request)
          const started = performance.now()
          const incoming = Propagation.incoming(request.headers, propagators)
          const scope = Context.getOrUndefined(fiber.context, Scope.Scope)
          Metrics.httpActive(context, method, 1)
          let route = ""
          let status = 500
          let recorded = false
          const record = () => {
            if (recorded) return
            recorded = true
            Metrics.httpActive(context, method, -1)
            Metrics.recordHttpRequest(context, method, route, status, (performance.now() - started) / 1000)
          }
          const observed = drainGate(request, app).pipe(
            Effect.map((response) => HttpServerResponse.setHeader(response, "x-request-id", requestId)),
            Effect.onExit((exit) =>
              Effect.withFiber((inner) => {
                route = Context.getOrUndefined(inner.context, HttpRouter.RouteContext)?.route.path ?? ""
                const settle = (code: number) => {
                  status = code
                  if (pathOf(request.url) === readinessPath) Metrics.recordReady(context, code === 200)
                  // Without a request scope, record now; with one, when the response is written.
                  if (scope === undefined) record()
                  return Effect.void
                }
                return Exit.isSuccess(exit) ?
                  settle(exit.value.status) :
                  Effect.flatMap(statusOfFailure(exit.cause), settle)
              })
            ),
            Effect.annotateLogs("request_id", requestId),
            // outside onExit: providing restores the fiber context on exit, and with it the router's
            // RouteContext that onExit reads for the http.route label
            Effect.provideService(CurrentRequestId, requestId)
          )
          let withState = incoming.traceState === undefined
            ? observed
            : Effect.provideService(observed, TraceState, incoming.traceState)
          if (incoming.baggage !== undefined) {
            withState = Effect.provideService(withState, IncomingBaggage, incoming.baggage)
          }
          const served = fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer ?
            Effect.provideService(withState, CurrentUntracedTrace, {
              traceId: incoming.parent?.traceId ?? randomUUID().replaceAll("-", ""),
              parent: incoming.parent
            }) :
            serverSpan(request, incoming, withState)
          return scope === undefined ?
            served :
            Effect.andThen(Scope.addFinalizer(scope, Effect.sync(record)), served)
        })
    }),
    { global: true }
  )

/** effect's server tracing of `app`, under the parent `incoming` read (the app sees the request as it came). */
const serverSpan = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  incoming: Propagation.Incoming,
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
  if (incoming.headers === undefined) {
    traced.add(request)
    // the request is in the context: the middleware runs inside the router
    return HttpMiddleware.tracer(app) as Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  }
  const canonical = request.modify({ headers: incoming.headers })
  traced.add(canonical)
  return HttpMiddleware.tracer(Effect.provideService(app, HttpServerRequest.HttpServerRequest, request)).pipe(
    Effect.provideService(HttpServerRequest.HttpServerRequest, canonical)
  )
}
