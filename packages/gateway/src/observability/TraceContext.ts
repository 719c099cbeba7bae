/**
 * W3C trace context in and out of the gateway.
 *
 * **Rules**
 *
 * - In over HTTP: `HttpObservability` reads the formats `OTEL_PROPAGATORS`
 *   names (`Propagation`) and makes the request's server span a child of
 *   the caller's span; it keeps the incoming `tracestate` ({@link TraceState})
 *   for as long as the request's trace is the incoming one, and the incoming
 *   baggage ({@link IncomingBaggage}).
 * - In over MCP: `_meta.traceparent` / `_meta.tracestate` (reserved by the
 *   MCP specification, SEP-414; read when `tracecontext` is configured) take
 *   precedence for the MCP operation:
 *   {@link withMetaParent} runs the tools/call under that parent and keeps
 *   the HTTP server span as a link ({@link TransportSpan}).
 * - Out over HTTP: effect's `HttpClient` (the egress client is one, over
 *   undici) writes `traceparent` for its client span, which the egress
 *   dispatcher rewrites into the configured formats (`Propagation`). With no
 *   tracer ({@link UntracedTrace}) no span is made and the caller's context
 *   goes out as it came in, or none;
 *   {@link inject} adds `traceparent`/`tracestate` to a plain headers object
 *   for code that writes requests by hand.
 * - Out over MCP: {@link injectMeta} adds `traceparent`/`tracestate` to a
 *   request's `_meta` for upstream MCP servers.
 * - `tracestate` is only ever sent for the trace it came with, and only when
 *   it is a valid W3C list (at most 32 members, 512 characters).
 *
 * @since 0.1.0
 */
import { Context, Effect, Option, Predicate, Tracer } from "effect"
import { HttpTraceContext } from "effect/http"
import type { PropagatorName } from "../config/OtelVariables.ts"

/** The trace context formats in force (`OTEL_PROPAGATORS`; `Propagation` reads and writes them). */
export const Propagators = Context.Reference<ReadonlyArray<PropagatorName>>(
  "@janus/gateway/observability/Propagators",
  { defaultValue: () => ["tracecontext", "baggage"] }
)

/** The `baggage` header of the request being served (normalised), passed on to the calls it makes. */
export const IncomingBaggage = Context.Reference<string | undefined>(
  "@janus/gateway/observability/IncomingBaggage",
  { defaultValue: () => undefined }
)

/** The incoming `tracestate` and the trace it belongs to. */
export interface IncomingTraceState {
  readonly traceId: string
  readonly value: string
}

/** The `tracestate` of the trace the current request continues, if any. */
export const TraceState = Context.Reference<IncomingTraceState | undefined>(
  "@janus/gateway/observability/TraceState",
  { defaultValue: () => undefined }
)

/**
 * The trace of the request being served when no tracer makes spans (no
 * trace export): the caller's, as its trace context came in (`parent`), or a
 * new trace id with no parent. The id goes into audit records and logs; the
 * caller's context is passed on, as received, to the calls the request makes
 * (Janus, making no spans, is then not a participant). A new id is never
 * sent: a made-up `traceparent` would break the caller's trace and, flagged
 * sampled, make every downstream that samples by its parent record every
 * call.
 */
export interface UntracedTrace {
  readonly traceId: string
  readonly parent: Tracer.ExternalSpan | undefined
}

/** The {@link UntracedTrace} of the request being served; undefined when a tracer makes spans. */
export const CurrentUntracedTrace = Context.Reference<UntracedTrace | undefined>(
  "@janus/gateway/observability/CurrentUntracedTrace",
  { defaultValue: () => undefined }
)

/**
 * The span whose context goes out with the calls the current fiber makes:
 * the current span or, when no tracer makes spans, the caller's.
 */
export const outgoingParent = (fiber: {
  readonly context: Context.Context<never>
  readonly getRef: <A>(ref: Context.Reference<A>) => A
}): Tracer.AnySpan | undefined =>
  Context.getOrUndefined(fiber.context, Tracer.ParentSpan) ?? fiber.getRef(CurrentUntracedTrace)?.parent

/** The HTTP server span of a request whose MCP operation has another parent (from `_meta`). */
export const TransportSpan = Context.Reference<Tracer.AnySpan | undefined>(
  "@janus/gateway/observability/TransportSpan",
  { defaultValue: () => undefined }
)

const tracestateMember =
  /^[a-z0-9][a-z0-9_\-*/@]{0,255}=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/

/** Whether `value` is a W3C `tracestate` header value worth passing on. */
export const isValidTraceState = (value: string): boolean => {
  if (value.length === 0 || value.length > 512) return false
  const members = value.split(",")
  if (members.length > 32) return false
  return members.every((member) => {
    const trimmed = member.trim()
    return trimmed === "" || tracestateMember.test(trimmed)
  })
}

/** The `traceparent` header value of a span. */
export const traceparentOf = (span: Tracer.AnySpan): string =>
  `00-${span.traceId.padStart(32, "0")}-${span.spanId}-${span.sampled ? "01" : "00"}`

/** `traceparent` (and `tracestate` when it belongs to this trace) of `span`. */
export const headersOf = (
  span: Tracer.AnySpan,
  state: IncomingTraceState | undefined
): { traceparent: string; tracestate?: string } =>
  state !== undefined && state.traceId === span.traceId ?
    { traceparent: traceparentOf(span), tracestate: state.value } :
    { traceparent: traceparentOf(span) }

/** The trace headers of {@link outgoingParent}; `{}` when there is none. */
export const current: Effect.Effect<{ readonly traceparent?: string; readonly tracestate?: string }> = Effect
  .withFiber((fiber) => {
    const span = outgoingParent(fiber)
    return Effect.succeed(span === undefined ? {} : headersOf(span, fiber.getRef(TraceState)))
  })

/**
 * A copy of `headers` with `traceparent`/`tracestate` of the current span
 * (replacing any the caller set): for requests written without effect's
 * `HttpClient`, e.g. with undici directly.
 */
export const inject = (
  headers: Readonly<Record<string, string>> = {}
): Effect.Effect<Record<string, string>> =>
  Effect.map(current, (trace) => {
    const out: Record<string, string> = {}
    for (const name in headers) {
      const lower = name.toLowerCase()
      if (lower !== "traceparent" && lower !== "tracestate") out[name] = headers[name]!
    }
    return Object.assign(out, trace)
  })

/** A copy of an MCP request's `_meta` with the current span's `traceparent`/`tracestate`. */
export const injectMeta = (
  meta: Readonly<Record<string, unknown>> | undefined = undefined
): Effect.Effect<Record<string, unknown>> => Effect.map(current, (trace) => ({ ...meta, ...trace }))

/** The remote parent carried in an MCP request's `_meta` (W3C `traceparent`), if valid. */
export const fromMeta = (meta: unknown): Option.Option<Tracer.ExternalSpan> => {
  if (!Predicate.isReadonlyObject(meta) || typeof meta.traceparent !== "string") return Option.none()
  return HttpTraceContext.w3c({ traceparent: meta.traceparent.trim().toLowerCase() } as never)
}

/**
 * Runs `self` (the handling of one MCP request) under the parent its
 * `_meta` carries, when it carries a valid `traceparent`; the HTTP server
 * span stays reachable as {@link TransportSpan} so the operation's span can
 * link to it. Without one, `self` runs unchanged.
 */
export const withMetaParent = (meta: unknown) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const parent = fromMeta(meta)
  if (Option.isNone(parent)) return self
  const external = parent.value
  const state =
    Predicate.isReadonlyObject(meta) && typeof meta.tracestate === "string" && isValidTraceState(meta.tracestate) ?
      { traceId: external.traceId, value: meta.tracestate } :
      undefined
  return Effect.withFiber((fiber) => {
    // `_meta.traceparent` is W3C trace context: read only when OTEL_PROPAGATORS has tracecontext
    if (!fiber.getRef(Propagators).includes("tracecontext")) return self
    const transport = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
    return self.pipe(
      Effect.withParentSpan(external),
      Effect.provideService(TraceState, state),
      Effect.provideService(TransportSpan, transport)
    )
  })
}
