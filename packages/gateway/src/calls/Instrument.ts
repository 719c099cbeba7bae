/**
 * Traces and metrics of the tools/call hot path, added from outside by
 * decorating the services it runs through, so the hot-path modules stay as
 * they are.
 *
 * **Span tree of one tools/call** (names as exported)
 *
 * ```
 * POST /mcp                              server   effect's HTTP server (HttpObservability names it)
 * ├─ janus.admit                         internal per-IP limiter, authentication, per-identity limiter
 * └─ tools/call {tool}                   server   MCP semantic conventions; authorize, permit, catalog call
 *    ├─ janus.config_cache.snapshot      internal resolve the tool
 *    ├─ janus.secret_cache.reveal        internal the connection's credential
 *    └─ janus.egress                     internal breaker, total timeout, retries, redirects
 *       └─ GET                           client   effect's HttpClient, one per attempt; sends traceparent
 * ```
 *
 * `janus.admit` runs before the JSON-RPC body is read, so it is a sibling of
 * the tools/call span. When the request's `_meta` carries a `traceparent`
 * (`TraceContext.withMetaParent`), the tools/call span is its child and
 * links to the HTTP span.
 *
 * **Rules**
 *
 * - Spans are only made when a real tracer is installed (OTLP configured)
 *   and the trace is sampled (`Sampling`): with effect's native tracer, or
 *   under an unsampled request, nothing would be exported, so the hot path
 *   does not pay for spans. Metrics are always recorded.
 * - A sampled call leaves an exemplar (its trace and span id) on the
 *   call-duration histogram (`Exemplars`), unless
 *   `OTEL_METRICS_EXEMPLAR_FILTER=always_off`.
 * - Attributes never hold a secret, an argument or a response body: tool,
 *   connection and secret *names*, methods, statuses, outcomes.
 * - Metric labels are catalog names only (`CallRecord.metricName`, set by
 *   whoever resolved the call; `other` otherwise, see `Metrics.ts`); the
 *   span, made before the call resolves, carries the client's name bounded
 *   (`ClientText.recorded`).
 * - The outcome of a call is the audit record's (`CallGuard`): a result
 *   with `isError` is `error`; a `ToolCallRefused` is its reason
 *   (`unavailable` counts as `error`); any other failure or an interrupt is
 *   `error`.
 *
 * @since 0.1.0
 */
import { CacheSettings, ConfigCache, EventLogObserver, type SecretCache } from "@janus/storage"
import { Context, Effect, Layer, Tracer } from "effect"
import { CircuitBreaker } from "effect/persistence"
import type { DownstreamClient } from "../egress/index.ts"
import { McpGuard } from "../mcp/Guard.ts"
import * as ClientText from "../observability/ClientText.ts"
import * as Metrics from "../observability/Metrics.ts"
import { TransportSpan } from "../observability/TraceContext.ts"
import * as CallOutcome from "./CallOutcome.ts"
import { CurrentCall } from "./CallRecord.ts"

/** Span names, for tests and dashboards. */
export const SpanNames = {
  admit: "janus.admit",
  toolCall: (tool: string) => `tools/call ${tool}`,
  configCache: "janus.config_cache.snapshot",
  secretCache: "janus.secret_cache.reveal",
  egress: "janus.egress"
} as const

type FiberLike = {
  readonly getRef: <A>(ref: Context.Reference<A>) => A
  readonly context: Context.Context<never>
}

/**
 * Whether to make spans here: a real tracer is installed and the current
 * trace is sampled (under an unsampled span, a span would only be an
 * `UnsampledSpan`: skip making it at all).
 */
const tracing = (fiber: FiberLike): boolean =>
  fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer &&
  Context.getOrUndefined(fiber.context, Tracer.ParentSpan)?.sampled !== false

const spanned = <A, E, R>(
  fiber: FiberLike,
  self: Effect.Effect<A, E, R>,
  name: string,
  options: Tracer.SpanOptionsNoTrace
): Effect.Effect<A, E, R> => tracing(fiber) ? Effect.withSpan(self, name, options) : self

// -----------------------------------------------------------------------------
// McpGuard: admission and the tools/call span and metrics
// -----------------------------------------------------------------------------

/** `guard` with the admission span and refusal counts, and the tools/call span and metrics. */
export const mcpGuard = (guard: McpGuard["Service"]): McpGuard["Service"] =>
  McpGuard.of({
    admit: (request) =>
      Effect.withFiber((fiber) =>
        spanned(
          fiber,
          guard.admit(request).pipe(
            Effect.tapError((refused) =>
              Effect.sync(() => Metrics.recordRefusal(fiber.context, CallOutcome.ofAdmissionRefusal(refused.status)))
            )
          ),
          SpanNames.admit,
          { kind: "internal" }
        )
      ),
    admitMessage: (request, caller) =>
      Effect.withFiber((fiber) =>
        guard.admitMessage(request, caller).pipe(
          Effect.tapError((refused) =>
            Effect.sync(() => Metrics.recordRefusal(fiber.context, CallOutcome.ofAdmissionRefusal(refused.status)))
          )
        )
      ),
    guardCall: (caller, toolName, call, admitted, method) =>
      Effect.withFiber((fiber) => {
        const context = fiber.context
        const started = performance.now()
        let connection: string | null = null
        let metricName: string | null = null
        // Runs once the guard granted the concurrency permit, inside the call's record.
        const permitted = Effect.suspend(() => {
          Metrics.callActive(context, 1)
          return call
        }).pipe(
          Effect.onExit(() =>
            Effect.withFiber((inner) => {
              const record = Context.getOrUndefined(inner.context, CurrentCall)
              connection = record?.connection ?? null
              metricName = record?.metricName ?? null
              Metrics.callActive(context, -1)
              return Effect.void
            })
          )
        )
        const traced = tracing(fiber)
        const exemplar = traced && fiber.getRef(Metrics.ExemplarsEnabled)
        const observed = guard.guardCall(caller, toolName, permitted, admitted, method).pipe(
          Effect.onExit((exit) =>
            Effect.withFiber((inner) => {
              const outcome = CallOutcome.ofExit(exit)
              // inside the tools/call span (sampled, when traced): its ids are the exemplar
              const span = exemplar ? Context.getOrUndefined(inner.context, Tracer.ParentSpan) : undefined
              Metrics.recordCall(
                context,
                method ?? "tools/call",
                metricName,
                connection,
                outcome,
                (performance.now() - started) / 1000,
                span?.sampled === true ? span : undefined
              )
              if (!traced) return Effect.void
              return Effect.annotateCurrentSpan({
                "janus.outcome": outcome,
                ...(connection === null ? {} : { "janus.connection": connection }),
                ...(outcome === "ok" ? {} : { "error.type": outcome })
              })
            })
          )
        )
        if (!traced) return observed
        const transport = fiber.getRef(TransportSpan)
        // the client chose the name: the span carries it bounded, as the audit record does
        const shownName = ClientText.recorded(toolName)
        return Effect.withSpan(observed, SpanNames.toolCall(shownName), {
          kind: "server",
          attributes: {
            "mcp.method.name": method ?? "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": shownName,
            "janus.caller.id": caller.id
          },
          links: transport === undefined ? [] : [{ span: transport, attributes: { "janus.link": "transport" } }]
        })
      }),
    openStreams: guard.openStreams,
    holdStream: guard.holdStream === undefined ?
      undefined :
      (request, caller) =>
        Effect.withFiber((fiber) =>
          guard.holdStream!(request, caller).pipe(
            Effect.tapError((refused) =>
              Effect.sync(() => Metrics.recordRefusal(fiber.context, CallOutcome.ofAdmissionRefusal(refused.status)))
            )
          )
        )
  })

/** `McpGuard` decorated by {@link mcpGuard}: provide the undecorated guard to it. */
export const mcpGuardLayer: Layer.Layer<McpGuard, never, McpGuard> = Layer.effect(
  McpGuard,
  Effect.map(Effect.service(McpGuard), mcpGuard)
)

// -----------------------------------------------------------------------------
// Egress, caches
// -----------------------------------------------------------------------------

/** `client` with a `janus.egress` span around each call. */
export const downstreamClient = (client: DownstreamClient["Service"]): DownstreamClient["Service"] => {
  const observe = <A extends { readonly status: number; readonly attempts: number }, E>(
    self: Effect.Effect<A, E>,
    connection: string,
    method: string
  ): Effect.Effect<A, E> =>
    Effect.withFiber((fiber) =>
      tracing(fiber) ?
        self.pipe(
          Effect.tap((response) =>
            Effect.annotateCurrentSpan({
              "http.response.status_code": response.status,
              "janus.egress.attempts": response.attempts
            })
          ),
          Effect.withSpan(SpanNames.egress, {
            kind: "internal",
            attributes: { "janus.connection.id": connection, "http.request.method": method }
          })
        ) :
        self
    )
  return {
    prepare: client.prepare,
    execute: (prepared, request) => observe(client.execute(prepared, request), prepared.id, request.method),
    call: (connection, request) => observe(client.call(connection, request), connection.id, request.method)
  }
}

/** `cache` with a `janus.secret_cache.reveal` span (attribute: the secret's name, never its value). */
export const secretCache = (cache: SecretCache["Service"]): SecretCache["Service"] => ({
  invalidate: cache.invalidate,
  reveal: (name) =>
    Effect.withFiber((fiber) =>
      spanned(fiber, cache.reveal(name), SpanNames.secretCache, {
        kind: "internal",
        attributes: { "janus.secret.name": name }
      })
    )
})

/** `cache` with a `janus.config_cache.snapshot` span. */
export const configCache = (cache: ConfigCache["Service"]): ConfigCache["Service"] => ({
  invalidate: cache.invalidate,
  snapshot: Effect.withFiber((fiber) => spanned(fiber, cache.snapshot, SpanNames.configCache, { kind: "internal" }))
})

// -----------------------------------------------------------------------------
// Circuit breakers
// -----------------------------------------------------------------------------

/**
 * `store` reporting every breaker's state in `janus.breaker.state`, labelled
 * with `connectionName(key)` (the breaker key is the connection id; default:
 * the key itself). It sees what this instance sees: with a shared (Redis)
 * store, a circuit another replica opened shows when this one is refused.
 */
export const breakerStore = (
  store: CircuitBreaker.CircuitBreakerStore["Service"],
  connectionName: (key: string) => Effect.Effect<string | undefined> = (key) => Effect.succeed(key)
): CircuitBreaker.CircuitBreakerStore["Service"] => {
  const last = new Map<string, keyof typeof Metrics.BreakerStateValue>()
  const set = (key: string, state: keyof typeof Metrics.BreakerStateValue): Effect.Effect<void> => {
    if (last.get(key) === state) return Effect.void
    last.set(key, state)
    return Effect.flatMap(connectionName(key), (name) =>
      Effect.withFiber((fiber) => {
        Metrics.recordBreakerState(fiber.context, name ?? key, state)
        return Effect.void
      }))
  }
  return CircuitBreaker.CircuitBreakerStore.of({
    admit: (key) =>
      store.admit(key).pipe(
        Effect.tap((admission) => set(key, admission.probe ? "HalfOpen" : "Closed")),
        Effect.tapError((error) =>
          error.reason._tag === "CircuitOpen" ?
            set(key, "Open") :
            error.reason._tag === "CircuitHalfOpen" ?
            set(key, "HalfOpen") :
            Effect.void
        )
      ),
    record: (options) =>
      store.record(options).pipe(
        Effect.tap((transition) => transition === undefined ? Effect.void : set(options.key, transition.to))
      ),
    state: store.state
  })
}

/**
 * The current `CircuitBreakerStore` decorated by {@link breakerStore}, naming
 * connections through the config cache (id -> name).
 */
export const breakerStoreLayer: Layer.Layer<
  CircuitBreaker.CircuitBreakerStore,
  never,
  CircuitBreaker.CircuitBreakerStore | ConfigCache
> = Layer.effect(
  CircuitBreaker.CircuitBreakerStore,
  Effect.gen(function*() {
    const store = yield* CircuitBreaker.CircuitBreakerStore
    const config = yield* ConfigCache
    return breakerStore(store, (key) =>
      config.snapshot.pipe(
        Effect.map((snapshot) => snapshot.connectionById.get(key)?.name),
        Effect.orElseSucceed(() => undefined)
      ))
  })
)

// -----------------------------------------------------------------------------
// Event log
// -----------------------------------------------------------------------------

/**
 * The storage event log's observer, recording what its writer tells:
 * `janus.event_log.flush.size`, `.lag` (oldest append to commit),
 * `.duration` per committed batch, and `janus.event_log.buffered` (every
 * event appended and not yet committed, the batch being written included)
 * after every append and flush attempt. Provide it to the storage layer.
 */
/** Storage's `CacheObserver`: the config, token and secret caches' lookups in `janus_cache_lookups_total`. */
export const cacheObserverLayer = Layer.effect(
  CacheSettings.CacheObserver,
  Effect.map(
    Effect.context<never>(),
    (context) => (cache: CacheSettings.CacheName, hit: boolean) => Metrics.recordCacheLookup(context, cache, hit)
  )
)

export const eventLogObserverLayer = Layer.effect(
  EventLogObserver,
  Effect.map(Effect.context<never>(), (context) => ({
    buffered: (count: number) => Metrics.recordEventLogBuffered(context, count),
    flushed: (size: number, lagMillis: number, durationMillis: number) =>
      Metrics.recordEventLogFlush(context, size, lagMillis / 1000, durationMillis / 1000)
  }))
)
