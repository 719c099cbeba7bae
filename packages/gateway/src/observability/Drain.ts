/**
 * Graceful drain on SIGTERM/SIGINT.
 *
 * **How the process stops** (effect 4.1 / @effect/platform-node 4.1)
 *
 * `NodeRuntime.runMain` turns SIGTERM and SIGINT into an interrupt of the
 * main fiber, so `Layer.launch` closes its scope: finalizers run in reverse
 * order of construction. `HttpRouter.serve`'s finalizer calls
 * `server.close()` (no new connections; idle keep-alive sockets are closed)
 * and waits for open requests up to `gracefulShutdownTimeout`, after which
 * request fibers are interrupted; then the services, then storage (whose
 * event log flushes once more) close. Left alone, readiness never flips, new
 * connections are refused at TCP level rather than answered, and an open
 * event stream holds the process for the whole timeout.
 *
 * **What `Drain` does instead**
 *
 * Its finalizer (`layerShutdown`, built after the server so it runs first)
 * runs {@link Drain.run}:
 * 1. At once: `/readyz` answers 503 and every new request except `/healthz`
 *    and `/metrics` is refused with 503, `Retry-After` and
 *    `Connection: close` (MCP paths with a JSON-RPC error, others with the
 *    admin API's error shape), so clients and load balancers go elsewhere;
 *    responses still being sent get `Connection: close` too.
 * 2. Open-ended streams (GET event streams: Studio's `/api/v1/events`, the
 *    2025 MCP GET stream, the legacy `/sse`; and 2026-07-28
 *    `subscriptions/listen`) end after `streamGrace` (default 0) with a
 *    `retry:` hint, so clients reconnect, to another instance, with
 *    `Last-Event-ID` where they use it.
 * 3. Every other request (tools/call included, JSON or SSE) runs to its end,
 *    up to `timeout` (`JANUS_SHUTDOWN_TIMEOUT`).
 * 4. Flush hooks run in registration order (event log, audit log, …), all
 *    within `flushTimeout` (default 5 s); a failing hook is logged, never
 *    fatal.
 * 5. The finalizer returns: `server.close()` finds nothing left in flight,
 *    storage closes, and `bin.ts` exits 0 (an interrupt-only exit is a
 *    success there).
 *
 * @since 0.1.0
 */
import { AuditLog, EventLog } from "@janus/storage"
import { Cause, Clock, Context, Deferred, Duration, Effect, Exit, Latch, Layer, Option, Scope, Stream } from "effect"
import { HttpBody, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { JanusConfig } from "../config/JanusConfig.ts"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import * as Metrics from "./Metrics.ts"

/** Settings of a drain. */
export interface DrainOptions {
  /** How long requests in flight may take to finish (`JANUS_SHUTDOWN_TIMEOUT`). */
  readonly timeout: Duration.Input
  /** Budget of all flush hooks together. Default 5 seconds. */
  readonly flushTimeout?: Duration.Input | undefined
  /** How long open-ended streams may run on after the drain starts. Default 0. */
  readonly streamGrace?: Duration.Input | undefined
  /** `Retry-After` of refusals, in seconds. Default 1. */
  readonly retryAfterSeconds?: number | undefined
  /** `retry:` sent to ended event streams, in milliseconds. Default 1000. */
  readonly streamRetryMs?: number | undefined
}

/** What a drain did, for its log line and tests. */
export interface DrainReport {
  /** Time spent waiting for requests in flight. */
  readonly waitedMillis: number
  /** Requests still in flight when the timeout passed (0 when all finished). */
  readonly unfinished: number
  readonly flushed: ReadonlyArray<{ readonly name: string; readonly ok: boolean; readonly millis: number }>
}

/** A unit of work the drain waits for; `release` is idempotent. */
export type Release = () => void

export class Drain extends Context.Service<Drain, {
  /** True from the moment the drain starts. */
  readonly isDraining: () => boolean
  /** Completes when the drain starts. */
  readonly started: Effect.Effect<void>
  /** Completes when open-ended streams must end (`streamGrace` after the start). */
  readonly streamsEnd: Effect.Effect<void>
  /** Requests (and other tracked work) in flight. */
  readonly inFlight: () => number
  /** Counts one unit of work in flight until the returned function is called. */
  readonly enter: () => Release
  /** Counts `self` in flight while it runs. */
  readonly track: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Adds a hook run after requests finished (before storage closes). */
  readonly addFlushHook: (name: string, flush: Effect.Effect<void, unknown>) => Effect.Effect<void>
  /** Starts the drain (idempotent, synchronous effect): readiness 503, new requests refused. */
  readonly start: Effect.Effect<void>
  /** Starts the drain, waits for requests in flight, runs the flush hooks; runs once, later calls await it. */
  readonly run: Effect.Effect<DrainReport>
  readonly options: {
    readonly retryAfterSeconds: number
    readonly streamRetryMs: number
  }
}>()("@janus/gateway/observability/Drain") {
  /** The service with `options`. */
  static readonly layer = (options: DrainOptions): Layer.Layer<Drain> => Layer.effect(Drain, make(options))

  /** The service with `timeout` = `JANUS_SHUTDOWN_TIMEOUT`. */
  static readonly layerConfig: Layer.Layer<Drain, never, JanusConfig> = Layer.unwrap(
    Effect.map(Effect.service(JanusConfig), (config) => Drain.layer({ timeout: config.JANUS_SHUTDOWN_TIMEOUT }))
  )
}

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : String(error)

const make = Effect.fnUntraced(function*(options: DrainOptions) {
  const context = yield* Effect.context<never>()
  const timeout = Duration.fromInputUnsafe(options.timeout)
  const flushTimeout = Duration.fromInputUnsafe(options.flushTimeout ?? "5 seconds")
  const streamGrace = Duration.fromInputUnsafe(options.streamGrace ?? Duration.zero)
  const startedLatch = Latch.makeUnsafe(false)
  const streamsLatch = Latch.makeUnsafe(false)
  const idle = Latch.makeUnsafe(true)
  const hooks: Array<{ readonly name: string; readonly flush: Effect.Effect<void, unknown> }> = []
  const done = Deferred.makeUnsafe<DrainReport>()
  let draining = false
  let running = false
  let inFlight = 0

  const enter = (): Release => {
    inFlight++
    if (inFlight === 1) idle.closeUnsafe()
    let released = false
    return () => {
      if (released) return
      released = true
      inFlight--
      if (inFlight === 0) idle.openUnsafe()
    }
  }

  const start = Effect.suspend(() => {
    if (draining) return Effect.void
    draining = true
    startedLatch.openUnsafe()
    Metrics.recordDraining(context, true)
    Metrics.recordReady(context, false)
    if (Duration.isZero(streamGrace)) {
      streamsLatch.openUnsafe()
      return Effect.void
    }
    return Effect.sleep(streamGrace).pipe(
      Effect.andThen(Effect.sync(() => streamsLatch.openUnsafe())),
      Effect.forkDetach,
      Effect.asVoid
    )
  })

  const runFlushHooks = Effect.gen(function*() {
    const flushed: Array<{ name: string; ok: boolean; millis: number }> = []
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(flushTimeout)
    for (const hook of hooks) {
      const began = yield* Clock.currentTimeMillis
      const left = Math.max(0, deadline - began)
      const exit = yield* hook.flush.pipe(
        Effect.timeoutOrElse({
          duration: Duration.millis(left),
          orElse: () => Effect.fail(new Error(`did not finish within the flush budget (${left} ms left)`))
        }),
        Effect.exit
      )
      const millis = (yield* Clock.currentTimeMillis) - began
      if (Exit.isFailure(exit)) {
        // A failure the hook reports (the database is away) is one line; a defect is a bug and keeps its trace.
        const error = Cause.findErrorOption(exit.cause)
        yield* Option.isSome(error) ?
          Effect.logError(`drain: flushing ${hook.name} failed: ${messageOf(error.value)}`) :
          Effect.logError(`drain: flushing ${hook.name} failed`, Cause.pretty(exit.cause))
      }
      flushed.push({ name: hook.name, ok: Exit.isSuccess(exit), millis })
    }
    return flushed
  })

  const execute = Effect.gen(function*() {
    const began = yield* Clock.currentTimeMillis
    yield* start
    yield* Effect.logInfo("drain started: /readyz answers 503, new requests are refused").pipe(
      Effect.annotateLogs({ in_flight: inFlight, timeout_ms: Duration.toMillis(timeout) })
    )
    const finished = yield* Effect.timeoutOption(idle.await, timeout)
    const waitedMillis = (yield* Clock.currentTimeMillis) - began
    const unfinished = finished._tag === "None" ? inFlight : 0
    if (unfinished > 0) {
      yield* Effect.logWarning(`drain: ${unfinished} request(s) still in flight after the drain timeout`).pipe(
        Effect.annotateLogs({ unfinished, waited_ms: waitedMillis })
      )
    }
    const flushed = yield* runFlushHooks
    const report: DrainReport = { waitedMillis, unfinished, flushed }
    yield* Effect.logInfo("drain complete").pipe(
      Effect.annotateLogs({
        waited_ms: waitedMillis,
        unfinished,
        flushed: flushed.map((f) => `${f.name}:${f.ok ? "ok" : "failed"}`).join(",")
      })
    )
    return report
  })

  const run = Effect.suspend(() => {
    if (running) return Deferred.await(done)
    running = true
    return Effect.uninterruptible(Effect.onExit(execute, (exit) => Deferred.done(done, exit)))
  })

  Metrics.recordDraining(context, false)

  return Drain.of({
    isDraining: () => draining,
    started: startedLatch.await,
    streamsEnd: streamsLatch.await,
    inFlight: () => inFlight,
    enter,
    track: (self) =>
      Effect.acquireUseRelease(
        Effect.sync(enter),
        () => self,
        (release) => Effect.sync(release)
      ),
    addFlushHook: (name, flush) => Effect.sync(() => void hooks.push({ name, flush })),
    start,
    run,
    options: {
      retryAfterSeconds: options.retryAfterSeconds ?? 1,
      streamRetryMs: options.streamRetryMs ?? 1_000
    }
  })
})

/**
 * Runs the drain when the enclosing scope closes. Build it after the HTTP
 * server (i.e. outermost: `Layer.provideMerge(Gateway.layer)` onto it), so
 * its finalizer runs before the server's.
 */
export const layerShutdown: Layer.Layer<never, never, Drain> = Layer.effectDiscard(
  Effect.flatMap(Effect.service(Drain), (drain) => Effect.addFinalizer(() => drain.run))
)

/**
 * Registers `flush` as a flush hook named `name`, with the services it
 * needs taken from where the layer is built.
 */
export const flushHook = <E, R>(name: string, flush: Effect.Effect<void, E, R>): Layer.Layer<never, never, Drain | R> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const drain = yield* Drain
    const context = yield* Effect.context<R>()
    yield* drain.addFlushHook(name, Effect.provideContext(flush, context))
  }))

/**
 * The storage writers' flush hooks, in this order: the audit log, then the
 * event log (whose `calls` events follow the audit rows of the same calls).
 */
export const storageFlushHooks: Layer.Layer<never, never, Drain | AuditLog | EventLog> = Layer.effectDiscard(
  Effect.gen(function*() {
    const drain = yield* Drain
    const audit = yield* AuditLog
    const events = yield* EventLog
    yield* drain.addFlushHook("audit log", audit.flush)
    yield* drain.addFlushHook("event log", events.flush)
  })
)

// -----------------------------------------------------------------------------
// HTTP
// -----------------------------------------------------------------------------

/** Which requests the drain treats how. */
export interface HttpDrainOptions {
  /** Answered 503 while draining (readiness). Default `/readyz`. */
  readonly readinessPath?: string | undefined
  /** Still served while draining. Default `/healthz`, `/metrics`. */
  readonly exempt?: ReadonlyArray<string> | undefined
  /** Refused with a JSON-RPC error body. Default `/mcp`, `/sse`, `/messages` (and below). */
  readonly mcpPaths?: ReadonlyArray<string> | undefined
}

const encoder = new TextEncoder()

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

const under = (path: string, prefixes: ReadonlyArray<string>): boolean =>
  prefixes.some((prefix) => path === prefix || path.startsWith(prefix + "/"))

/**
 * Whether a response is a stream with no natural end: an event stream
 * answering a GET (Studio's events, the 2025 MCP GET stream, the legacy
 * `/sse`) or a 2026-07-28 `subscriptions/listen`. Event streams answering
 * other POSTs carry a call's progress and result: they end with the call.
 */
export const isOpenEnded = (
  request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse
): boolean =>
  response.body._tag === "Stream" &&
  response.body.contentType.startsWith("text/event-stream") &&
  (request.method === "GET" || request.headers["mcp-method"] === "subscriptions/listen")

/** The 503 a request gets while the instance drains. */
export const refusal = (
  path: string,
  retryAfterSeconds: number,
  mcpPaths: ReadonlyArray<string>
): HttpServerResponse.HttpServerResponse => {
  const headers = { "retry-after": String(retryAfterSeconds), connection: "close", "cache-control": "no-store" }
  const message = "This Janus instance is shutting down; retry the request, another instance will serve it"
  return under(path, mcpPaths) ?
    HttpServerResponse.jsonUnsafe({
      jsonrpc: "2.0",
      id: null,
      error: { code: ErrorCode.refused, message, data: { reason: "draining", retryAfterMs: retryAfterSeconds * 1000 } }
    }, { status: 503, headers }) :
    HttpServerResponse.jsonUnsafe({ error: { code: "draining", message } }, { status: 503, headers })
}

/** `response` whose event-stream body ends when open streams must end, then sends a `retry:` hint. */
export const endOnDrain = (
  drain: Drain["Service"],
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  const body = response.body
  if (body._tag !== "Stream") return response
  const hint = encoder.encode(`: janus is shutting down; reconnect\nretry: ${drain.options.streamRetryMs}\n\n`)
  const stream = body.stream.pipe(
    Stream.interruptWhen(drain.streamsEnd),
    Stream.concat(Stream.suspend(() => drain.isDraining() ? Stream.succeed(hint) : Stream.empty))
  )
  return HttpServerResponse.setBody(response, HttpBody.stream(stream, body.contentType, body.contentLength))
}

/**
 * The drain's part of the HTTP middleware (see `HttpObservability`): refuses
 * new requests while draining, counts the others in flight until their
 * response is written (the request scope closes), except open-ended streams
 * ({@link isOpenEnded}), which it ends on drain instead.
 */
export const gate = (
  drain: Drain["Service"],
  options: HttpDrainOptions = {}
) => {
  const readinessPath = options.readinessPath ?? "/readyz"
  const exempt = options.exempt ?? ["/healthz", "/metrics"]
  const mcpPaths = options.mcpPaths ?? ["/mcp", "/sse", "/messages"]
  const readiness503 = HttpServerResponse.jsonUnsafe(
    { status: "unavailable", reason: "draining: the instance is shutting down" },
    { status: 503, headers: { "cache-control": "no-store" } }
  )
  return <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
    if (drain.isDraining()) {
      const path = pathOf(request.url)
      if (path === readinessPath) return Effect.succeed(readiness503)
      if (!exempt.includes(path)) return Effect.succeed(refusal(path, drain.options.retryAfterSeconds, mcpPaths))
    }
    return Effect.withFiber((fiber) => {
      const release = drain.enter()
      const respond = Effect.map(app, (response) => {
        if (isOpenEnded(request, response)) {
          // Not waited for: it ends when the drain says so.
          release()
          return endOnDrain(drain, response)
        }
        return drain.isDraining() ? HttpServerResponse.setHeader(response, "connection", "close") : response
      })
      // Released when the request scope closes, i.e. once the response (a
      // streamed body included) is written or the client went away.
      const scope = Context.getOrUndefined(fiber.context, Scope.Scope)
      return scope === undefined ?
        Effect.ensuring(respond, Effect.sync(release)) :
        Effect.andThen(Scope.addFinalizer(scope, Effect.sync(release)), respond)
    })
  }
}
