/**
 * Every metric the gateway exports, defined once with effect `Metric`, and
 * the cheap recorders the hot path calls.
 *
 * **Names**
 *
 * OpenTelemetry semantic-convention names where one exists, Janus names
 * (`janus.*`) otherwise. Prometheus sees them through `Prometheus.ts`, which
 * applies the OpenTelemetry-to-Prometheus rules: dots become underscores,
 * counters get `_total`, metrics in seconds get `_seconds` (see {@link UNITS}).
 *
 * | metric | kind | attributes | Prometheus |
 * | --- | --- | --- | --- |
 * | `http.server.request.duration` | histogram, s | `http.request.method`, `http.route`, `http.response.status_code` | `http_server_request_duration_seconds` |
 * | `http.server.active_requests` | gauge | `http.request.method` | `http_server_active_requests` |
 * | `mcp.server.operation.duration` | histogram, s | `mcp.method.name`, `gen_ai.tool.name` (catalog name or `other`), `error.type` | `mcp_server_operation_duration_seconds` |
 * | `janus.calls` | counter | `outcome`, `tool` (catalog name or `other`), `connection` | `janus_calls_total` |
 * | `janus.calls.active` | gauge | | `janus_calls_active` |
 * | `janus.admission.refusals` | counter | `reason` (unauthenticated, denied, rate_limited, error), as the audit row | `janus_admission_refusals_total` |
 * | `janus.breaker.state` | gauge | `connection` (0 closed, 1 half-open, 2 open) | `janus_breaker_state` |
 * | `janus.cache.lookups` | counter | `cache`, `result` (hit, miss) | `janus_cache_lookups_total` |
 * | `janus.event_log.flush.size` | histogram | | `janus_event_log_flush_size` |
 * | `janus.event_log.flush.lag` | histogram, s | | `janus_event_log_flush_lag_seconds` |
 * | `janus.event_log.flush.duration` | histogram, s | | `janus_event_log_flush_duration_seconds` |
 * | `janus.event_log.buffered` | gauge | | `janus_event_log_buffered` |
 * | `janus.ready` | gauge (1 ready) | | `janus_ready` |
 * | `janus.draining` | gauge (1 draining) | | `janus_draining` |
 * | `janus.config_file.applies` | counter | `outcome` (applied, unchanged, invalid, failed) | `janus_config_file_applies_total` |
 * | `janus.config_file.valid` | gauge (1 valid and applied) | | `janus_config_file_valid` |
 * | `janus.limiter.refused` | counter | `tier` (ip, identity, auth_failure) | `janus_limiter_refused_total` |
 * | `janus.limiter.fallback` | counter | `tier` (decided in memory: Redis unavailable) | `janus_limiter_fallback_total` |
 *
 * Defined elsewhere and exported the same way: `studio.sse.dropped{reason}`
 * and `studio.sse.subscribers` (packages/sse), `janus.audit.dropped` and
 * `janus.event_log.dropped` (packages/storage). The event-log metrics are
 * recorded from storage's `EventLogObserver` (`Instrument.eventLogObserverLayer`).
 *
 * **Rules**
 *
 * - Recording costs no string building per call: attributed series are
 *   built once per attribute combination and kept in maps. Each series is a
 *   metric of its own with its attributes built in, not
 *   `Metric.withAttributes` over a shared one: a shared metric caches one
 *   series key, so series recorded in turn rebuilt it (sorting and
 *   stringifying the attributes) and copied the context on every update.
 * - A sampled tools/call leaves an exemplar on its duration bucket
 *   (`toolCallDurationExemplars`), written out by `/metrics` (OpenMetrics)
 *   and OTLP.
 * - Labels take only names from the catalog, never a client's string: a
 *   call is labelled with the tool, listed resource, resource template or
 *   prompt it resolved to (`CallRecord.metricName`), and {@link OTHER}
 *   otherwise: an unknown tool, an unlisted resource URI (its connection is
 *   still the `connection` label), a call refused before it resolved. A
 *   label value is at most `ClientText.MAX_LABEL` characters. Methods are
 *   the guarded MCP methods, HTTP methods the standard ones (`_OTHER`
 *   otherwise); routes are the router's templates, statuses and outcomes
 *   fixed sets.
 * - Second line of defence: each attributed metric holds at most
 *   {@link MAX_SERIES} series; past it, new combinations fold into one
 *   series labelled {@link OTHER}.
 * - Recorders are synchronous (`updateUnsafe`) and take the context whose
 *   `MetricRegistry` they write to; the `Effect` forms read it from the fiber.
 *   They record against a small context holding only what metrics read
 *   (registry, contextual attributes, clock), built once per combination:
 *   an attributed metric copies the context it is given on every update, and
 *   a request fiber's context holds every service.
 *
 * Over 450 lines: every exported metric is defined in this one place, with
 * the bounded recorders (catalog names, `other`, the series cap) beside them.
 *
 * @since 0.1.0
 */
import { Metrics as SseMetrics } from "@janus/sse"
import { auditDropped, type AuditOutcome, eventLogDropped } from "@janus/storage"
import { Clock, Context, Effect, Metric } from "effect"
import { cut, MAX_LABEL } from "./ClientText.ts"
import * as Exemplars from "./Exemplars.ts"

let lastRegistry: unknown
let lastAttributes: unknown
let lastClock: unknown
let lastSlim: Context.Context<never> | undefined

/** The part of `context` metrics read (see the rules). */
const slim = (context: Context.Context<never>): Context.Context<never> => {
  const registry = Context.get(context, Metric.MetricRegistry)
  const attributes = Context.get(context, Metric.CurrentMetricAttributes)
  const clock = Context.get(context, Clock.Clock)
  if (lastSlim === undefined || registry !== lastRegistry || attributes !== lastAttributes || clock !== lastClock) {
    lastRegistry = registry
    lastAttributes = attributes
    lastClock = clock
    lastSlim = Context.make(Metric.MetricRegistry, registry).pipe(
      Context.add(Metric.CurrentMetricAttributes, attributes),
      Context.add(Clock.Clock, clock)
    ) as Context.Context<never>
  }
  return lastSlim
}

/**
 * Most series (attribute combinations) of one attributed metric; past it,
 * new combinations fold into one series labelled {@link OTHER}. Why 2,000:
 * OpenTelemetry SDKs' default cardinality limit, and the second line of
 * defence behind catalog-only labels: a duration histogram writes 19 lines
 * per series, so 2,000 series are a few MB of `/metrics`, not the 89 MB that
 * 17,347 series of client-chosen URIs made.
 */
export const MAX_SERIES = 2_000

/** Histogram buckets for durations in seconds (OpenTelemetry's HTTP advice, plus 30 s and 60 s). */
export const DURATION_BUCKETS: ReadonlyArray<number> = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.075,
  0.1,
  0.25,
  0.5,
  0.75,
  1,
  2.5,
  5,
  7.5,
  10,
  30,
  60
]

/** Buckets for event-log batch sizes. */
export const SIZE_BUCKETS: ReadonlyArray<number> = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000]

/** Metrics measured in seconds: `Prometheus.ts` names them `..._seconds`. */
export const UNITS: Readonly<Record<string, "seconds">> = {
  "http.server.request.duration": "seconds",
  "mcp.server.operation.duration": "seconds",
  "janus.event_log.flush.lag": "seconds",
  "janus.event_log.flush.duration": "seconds"
}

// -----------------------------------------------------------------------------
// Definitions
// -----------------------------------------------------------------------------

/** The description of each metric, by name (Prometheus `# HELP`, OTLP `description`). */
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  "http.server.request.duration": "Duration of HTTP server requests, in seconds",
  "http.server.active_requests": "HTTP server requests in flight (streams until they end)",
  "mcp.server.operation.duration":
    "Duration of guarded MCP calls (tools/call, resources/read, prompts/get, ...) as seen by the gateway, in seconds",
  "janus.calls": "Guarded MCP call attempts by outcome, catalog name (other: none) and connection",
  "janus.calls.active": "tools/call calls holding a concurrency permit (MCP_MAX_CONCURRENT_CALLS)",
  "janus.admission.refusals":
    "Requests refused before the JSON-RPC body is read, by reason (rate_limited = a limiter refused)",
  "janus.breaker.state": "Circuit breaker state per downstream connection: 0 closed, 1 half-open, 2 open",
  "janus.cache.lookups": "Cache lookups by cache and result (hit, miss)",
  "janus.event_log.flush.size": "Events written per event-log flush",
  "janus.event_log.flush.lag": "Age of the oldest event of a flush when it committed (append to commit), in seconds",
  "janus.event_log.flush.duration": "Duration of one event-log flush transaction, in seconds",
  "janus.event_log.buffered": "Events appended but not yet committed (waiting for the database, or being written)",
  "janus.ready": "1 when the last /readyz answered 200, 0 when it answered otherwise or the instance drains",
  "janus.draining": "1 while the instance drains after SIGTERM",
  "janus.config_file.applies":
    "JANUS_CONFIG_FILE reads by outcome: applied (changes made), unchanged, invalid (kept the running " +
    "configuration), failed (the database; retried)",
  "janus.config_file.valid": "1 when the last read of JANUS_CONFIG_FILE validated and is applied, 0 when it did not",
  "janus.limiter.refused": "Requests refused by an admission rate limiter, by tier (ip, identity, auth_failure)",
  "janus.limiter.fallback": "Rate-limit decisions taken per instance because the Redis store was unavailable, by tier"
}

/** A counter recorded by increments (`incremental`), as every Janus counter is; `attributes` make it one series. */
const counter = (name: string, attributes?: Metric.Metric.AttributeSet): Metric.Counter<number> =>
  Metric.counter(name, { description: DESCRIPTIONS[name], incremental: true, attributes })

const gauge = (name: string, attributes?: Metric.Metric.AttributeSet): Metric.Gauge<number> =>
  Metric.gauge(name, { description: DESCRIPTIONS[name], attributes })

const histogram = (
  name: string,
  boundaries: ReadonlyArray<number>,
  attributes?: Metric.Metric.AttributeSet
): Metric.Histogram<number> => Metric.histogram(name, { description: DESCRIPTIONS[name], boundaries, attributes })

export const httpServerRequestDuration = histogram("http.server.request.duration", DURATION_BUCKETS)
export const httpServerActiveRequests = gauge("http.server.active_requests")
export const toolCallDuration = histogram("mcp.server.operation.duration", DURATION_BUCKETS)
export const calls = counter("janus.calls")
export const callsActive = gauge("janus.calls.active")
export const admissionRefusals = counter("janus.admission.refusals")
export const breakerState = gauge("janus.breaker.state")
export const cacheLookups = counter("janus.cache.lookups")
export const eventLogFlushSize = histogram("janus.event_log.flush.size", SIZE_BUCKETS)
export const eventLogFlushLag = histogram("janus.event_log.flush.lag", DURATION_BUCKETS)
export const eventLogFlushDuration = histogram("janus.event_log.flush.duration", DURATION_BUCKETS)
export const eventLogBuffered = gauge("janus.event_log.buffered")
export const ready = gauge("janus.ready")
export const draining = gauge("janus.draining")
export const configFileApplies = counter("janus.config_file.applies")
export const configFileValid = gauge("janus.config_file.valid")
export const limiterRefused = counter("janus.limiter.refused")
export const limiterFallback = counter("janus.limiter.fallback")

// -----------------------------------------------------------------------------
// Attribute caches
// -----------------------------------------------------------------------------

/** The label of every value that is not a catalog name, and of a metric's series past {@link MAX_SERIES}. */
export const OTHER = "other"

/**
 * A metric's attributed series, by up to three attribute values (unused ones
 * `""`), made by `make` once per combination: at most {@link MAX_SERIES} of
 * them, past which every new combination records into one series whose
 * values are all {@link OTHER}. Lookups build no string.
 */
const seriesOf = <M>(make: (a: string, b: string, c: string) => M) => {
  const root = new Map<string, Map<string, Map<string, M>>>()
  let count = 0
  let overflow: M | undefined
  return (a: string, b = "", c = ""): M => {
    let byB = root.get(a)
    let byC = byB?.get(b)
    let value = byC?.get(c)
    if (value !== undefined) return value
    if (count >= MAX_SERIES) return overflow ??= make(OTHER, b === "" ? "" : OTHER, c === "" ? "" : OTHER)
    if (byB === undefined) root.set(a, byB = new Map())
    if (byC === undefined) byB.set(b, byC = new Map())
    value = make(a, b, c)
    byC.set(c, value)
    count++
    return value
  }
}

// -----------------------------------------------------------------------------
// HTTP
// -----------------------------------------------------------------------------

const httpRequests = seriesOf((method, route, status) =>
  histogram(
    httpServerRequestDuration.id,
    DURATION_BUCKETS,
    route === "" ?
      { "http.request.method": method, "http.response.status_code": status } :
      { "http.request.method": method, "http.route": route, "http.response.status_code": status }
  )
)

/**
 * The HTTP methods labelled as themselves (RFC 9110 and PATCH); any other is
 * `_OTHER`, as OpenTelemetry's HTTP conventions say: the method is the
 * client's to choose.
 */
const HTTP_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "PATCH"
])
const methodLabel = (method: string): string => HTTP_METHODS.has(method) ? method : "_OTHER"

const statusText: Array<string> = []
const statusKey = (status: number): string => statusText[status] ??= String(status)

/** Records one HTTP request; `route` is the matched template, `""` when none matched. */
export const recordHttpRequest = (
  context: Context.Context<never>,
  method: string,
  route: string,
  status: number,
  seconds: number
): void => httpRequests(methodLabel(method), route, statusKey(status)).updateUnsafe(seconds, slim(context))

const activeByMethod = seriesOf((method) => gauge(httpServerActiveRequests.id, { "http.request.method": method }))
/** Adds `delta` (+1 / -1) to the in-flight requests of `method`. */
export const httpActive = (context: Context.Context<never>, method: string, delta: number): void =>
  activeByMethod(methodLabel(method)).modifyUnsafe(delta, slim(context))

// -----------------------------------------------------------------------------
// tools/call
// -----------------------------------------------------------------------------

/** Every outcome of a call attempt: the audit record's (`calls/CallOutcome.ts` classifies). */
export type CallOutcome = Exclude<AuditOutcome, "unauthenticated" | "refused">

const callCounters = seriesOf((tool, connection, outcome) => counter(calls.id, { outcome, tool, connection }))

/** Exemplars of `mcp.server.operation.duration` (see `Exemplars.ts`). */
export const toolCallDurationExemplars = new Exemplars.HistogramExemplars(toolCallDuration.id, DURATION_BUCKETS)

/** Whether sampled calls leave exemplars (`OTEL_METRICS_EXEMPLAR_FILTER`; off: `always_off`). */
export const ExemplarsEnabled = Context.Reference<boolean>("@janus/gateway/observability/ExemplarsEnabled", {
  defaultValue: () => true
})

const callDurations = seriesOf((method, tool, outcome) => {
  const attributes: Record<string, string> = outcome === "ok" ?
    { "mcp.method.name": method, "gen_ai.tool.name": tool } :
    { "mcp.method.name": method, "gen_ai.tool.name": tool, "error.type": outcome }
  return {
    metric: histogram(toolCallDuration.id, DURATION_BUCKETS, attributes),
    exemplars: toolCallDurationExemplars.of(attributes)
  }
})

/** The MCP methods the guard records (every other value, which no caller passes, is {@link OTHER}). */
const CALL_METHODS: ReadonlySet<string> = new Set([
  "tools/call",
  "resources/read",
  "resources/subscribe",
  "resources/unsubscribe",
  "prompts/get",
  "completion/complete"
])

/** A catalog name as a label: bounded by `ClientText.MAX_LABEL`; `null` (not a catalog name) is {@link OTHER}. */
const nameLabel = (name: string | null): string => name === null ? OTHER : cut(name, MAX_LABEL)

/**
 * Records one finished call of `method` (`tools/call`, `resources/read`, ...).
 * `name` is the catalog name the call resolved to (a tool, a listed resource
 * or template, a prompt: `CallRecord.metricName`), `null` when it resolved to
 * none; then the label is {@link OTHER}, never the client's string.
 * `connection` is the connection it went to (`null`: none). `span`, the
 * call's span when its trace is sampled, becomes the exemplar of the
 * duration's bucket.
 */
export const recordCall = (
  context: Context.Context<never>,
  method: string,
  name: string | null,
  connection: string | null,
  outcome: CallOutcome,
  seconds: number,
  span?: { readonly traceId: string; readonly spanId: string } | undefined
): void => {
  const label = nameLabel(name)
  callCounters(label, connection ?? "", outcome).updateUnsafe(1, slim(context))
  const durations = callDurations(CALL_METHODS.has(method) ? method : OTHER, label, outcome)
  durations.metric.updateUnsafe(seconds, slim(context))
  if (span !== undefined) {
    durations.exemplars.record({ value: seconds, traceId: span.traceId, spanId: span.spanId, timeMillis: Date.now() })
  }
}

/** Adds `delta` (+1 / -1) to the calls holding a concurrency permit. */
export const callActive = (context: Context.Context<never>, delta: number): void =>
  callsActive.modifyUnsafe(delta, slim(context))

// -----------------------------------------------------------------------------
// Admission, breakers, caches
// -----------------------------------------------------------------------------

/** Why admission refused a request. */
export type RefusalReason = Extract<AuditOutcome, "unauthenticated" | "denied" | "rate_limited" | "error">

const refusalByReason = seriesOf((reason) => counter(admissionRefusals.id, { reason }))

/** Records an admission refusal. */
export const recordRefusal = (context: Context.Context<never>, reason: RefusalReason): void =>
  refusalByReason(reason).updateUnsafe(1, slim(context))

/** Breaker states as gauge values. */
export const BreakerStateValue = { Closed: 0, HalfOpen: 1, Open: 2 } as const

const breakerByConnection = seriesOf((connection) => gauge(breakerState.id, { connection }))

/** Sets the breaker state of `connection`. */
export const recordBreakerState = (
  context: Context.Context<never>,
  connection: string,
  state: keyof typeof BreakerStateValue
): void => breakerByConnection(connection).updateUnsafe(BreakerStateValue[state], slim(context))

/** The caches Janus reports on (SPEC "Caches and their invalidation"). */
export type CacheName = "config" | "token" | "secret" | "response" | "jwks" | (string & {})

const cacheHits = seriesOf((cache) => counter(cacheLookups.id, { cache, result: "hit" }))
const cacheMisses = seriesOf((cache) => counter(cacheLookups.id, { cache, result: "miss" }))

/** Records one lookup of `cache`. */
export const recordCacheLookup = (context: Context.Context<never>, cache: CacheName, hit: boolean): void =>
  (hit ? cacheHits : cacheMisses)(cache).updateUnsafe(1, slim(context))

/**
 * `recordCacheLookup` as an effect; build it once per cache and reuse it:
 * `const responseHit = Metrics.cacheLookup("response", true)`.
 */
export const cacheLookup = (cache: CacheName, hit: boolean): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    recordCacheLookup(fiber.context as Context.Context<never>, cache, hit)
    return Effect.void
  })

// -----------------------------------------------------------------------------
// Event log, readiness, drain
// -----------------------------------------------------------------------------

/** Records one event-log flush: its size, the age of its oldest event and how long it took. */
export const recordEventLogFlush = (
  context: Context.Context<never>,
  size: number,
  lagSeconds: number,
  durationSeconds: number
): void => {
  eventLogFlushSize.updateUnsafe(size, slim(context))
  eventLogFlushLag.updateUnsafe(lagSeconds, slim(context))
  eventLogFlushDuration.updateUnsafe(durationSeconds, slim(context))
}

/** Sets the number of appended, unflushed events. */
export const recordEventLogBuffered = (context: Context.Context<never>, count: number): void =>
  eventLogBuffered.updateUnsafe(count, slim(context))

/** Sets `janus.ready`. */
export const recordReady = (context: Context.Context<never>, isReady: boolean): void =>
  ready.updateUnsafe(isReady ? 1 : 0, slim(context))

/** Sets `janus.draining`. */
export const recordDraining = (context: Context.Context<never>, isDraining: boolean): void =>
  draining.updateUnsafe(isDraining ? 1 : 0, slim(context))

/** Runs a synchronous recorder with the current fiber's context. */
export const withContext = (f: (context: Context.Context<never>) => void): Effect.Effect<void> =>
  Effect.contextWith((context: Context.Context<never>) => Effect.sync(() => f(context)))

/**
 * Creates the series alerts and dashboards read at their zero value, so a
 * `rate()` or an alert has a series before the first event: drops of the
 * event stream (every reason), admission refusals (every reason), audit
 * records and events dropped, active calls, buffered events, draining.
 */
export const initialize = (context: Context.Context<never>): void => {
  for (const reason of ["coalesced", "overflow", "replay", "blocked"] as const) {
    SseMetrics.droppedFor(reason).updateUnsafe(0, slim(context))
  }
  for (const reason of ["unauthenticated", "denied", "rate_limited", "error"] as const) {
    refusalByReason(reason).updateUnsafe(0, slim(context))
  }
  auditDropped.updateUnsafe(0, slim(context))
  eventLogDropped.updateUnsafe(0, slim(context))
  callsActive.modifyUnsafe(0, slim(context))
  eventLogBuffered.modifyUnsafe(0, slim(context))
  draining.modifyUnsafe(0, slim(context))
}
