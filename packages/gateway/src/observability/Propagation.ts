/**
 * Trace context in HTTP headers, in the formats `OTEL_PROPAGATORS` names:
 * `tracecontext` (W3C `traceparent` / `tracestate`), `baggage` (W3C),
 * `b3` (one `b3` header) and `b3multi` (`X-B3-*`). The parsing and writing
 * are the OpenTelemetry SDK's propagators.
 *
 * **Rules**
 *
 * - In: only the configured formats are read; when several are present the
 *   last configured one that carries a valid context wins (OpenTelemetry's
 *   composite propagator). The request effect's HTTP server traces is given
 *   exactly that parent ({@link incoming}: the other trace headers are
 *   hidden from it and the winner is given as `traceparent`), so the server
 *   span, the sampling decision and the `_meta` check agree.
 * - `none` reads nothing: every request starts a new trace (a public edge
 *   should not let callers choose what is sampled).
 * - Out (downstream REST calls and upstream MCP servers, through the egress
 *   dispatcher): effect's client writes `traceparent` and `b3` for its
 *   client span; {@link interceptor} rewrites them into the configured
 *   formats (flag `00` for an unsampled call, so the decision travels on),
 *   and {@link withContextHeaders} adds the request's `baggage` and, for its
 *   own trace, `tracestate`.
 * - With no tracer installed (no trace export), no client span is made:
 *   {@link withContextHeaders} writes the caller's `traceparent` exactly as
 *   it came in (and its `tracestate`), rewritten into the configured formats
 *   as above, or no trace header at all when the caller sent none.
 * - Baggage is passed on as received, normalised and bounded by the W3C
 *   propagator (at most 180 entries, 4096 bytes each, 8192 in all); Janus
 *   adds nothing to it.
 *
 * @since 0.1.0
 */
import * as OtelApi from "@opentelemetry/api"
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from "@opentelemetry/core"
import { B3InjectEncoding, B3Propagator } from "@opentelemetry/propagator-b3"
import { Context, Effect, Layer, Tracer } from "effect"
import { Headers, HttpClient, HttpClientRequest } from "effect/http"
import type { Dispatcher } from "undici"
import type { PropagatorName } from "../config/OtelVariables.ts"
import {
  IncomingBaggage,
  type IncomingTraceState,
  isValidTraceState,
  outgoingParent,
  Propagators,
  traceparentOf,
  TraceState
} from "./TraceContext.ts"

export { IncomingBaggage, Propagators }

/** Every header a propagator reads or writes. */
export const TRACE_HEADERS: ReadonlyArray<string> = [
  "traceparent",
  "tracestate",
  "baggage",
  "b3",
  "x-b3-traceid",
  "x-b3-spanid",
  "x-b3-sampled",
  "x-b3-flags",
  "x-b3-parentspanid"
]

const tracecontext = new W3CTraceContextPropagator()
const baggage = new W3CBaggagePropagator()
const b3 = new B3Propagator({ injectEncoding: B3InjectEncoding.SINGLE_HEADER })
const b3multi = new B3Propagator({ injectEncoding: B3InjectEncoding.MULTI_HEADER })
const byName: Record<PropagatorName, OtelApi.TextMapPropagator> = { tracecontext, baggage, b3, b3multi }

const composites = new WeakMap<ReadonlyArray<PropagatorName>, OtelApi.TextMapPropagator>()
/** The composite propagator of `names` (memoised per list). */
export const propagatorOf = (names: ReadonlyArray<PropagatorName>): OtelApi.TextMapPropagator => {
  let found = composites.get(names)
  if (found === undefined) {
    found = new CompositePropagator({ propagators: names.map((name) => byName[name]) })
    composites.set(names, found)
  }
  return found
}

/** What a request carries, read with the configured propagators. */
export interface Incoming {
  /** The caller's span, when a configured format carried a valid one. */
  readonly parent: Tracer.ExternalSpan | undefined
  readonly traceState: IncomingTraceState | undefined
  readonly baggage: string | undefined
  /**
   * The headers effect's HTTP server should trace the request with (the
   * winner as `traceparent`, no other trace header); `undefined` when the
   * request's own headers already say exactly that.
   */
  readonly headers: Headers.Headers | undefined
}

const NOTHING: Incoming = { parent: undefined, traceState: undefined, baggage: undefined, headers: undefined }

const hasAny = (headers: Headers.Headers, names: ReadonlyArray<string>): boolean => {
  for (const name of names) if (headers[name] !== undefined) return true
  return false
}

const OTHER_THAN_W3C = TRACE_HEADERS.filter((h) => h !== "traceparent" && h !== "tracestate")

/** Reads the request's trace context with `names`. */
export const incoming = (headers: Headers.Headers, names: ReadonlyArray<PropagatorName>): Incoming => {
  if (!hasAny(headers, TRACE_HEADERS)) return NOTHING
  // the usual case, W3C only and tracecontext configured: effect's server reads it as we would
  const w3cOnly = !hasAny(headers, OTHER_THAN_W3C)
  if (w3cOnly && names.includes("tracecontext")) {
    const parent = tracecontext.extract(OtelApi.ROOT_CONTEXT, headers, OtelApi.defaultTextMapGetter)
    const span = OtelApi.trace.getSpanContext(parent)
    if (span === undefined) return { ...NOTHING, headers: withoutTraceHeaders(headers) }
    const state = headers["tracestate"]
    return {
      parent: external(span),
      traceState: state !== undefined && isValidTraceState(state) ? { traceId: span.traceId, value: state } : undefined,
      baggage: undefined,
      headers: undefined
    }
  }
  const context = propagatorOf(names).extract(OtelApi.ROOT_CONTEXT, headers, OtelApi.defaultTextMapGetter)
  const span = OtelApi.trace.getSpanContext(context)
  const bag = names.includes("baggage") ? OtelApi.propagation.getBaggage(context) : undefined
  let baggageHeader: string | undefined
  if (bag !== undefined && bag.getAllEntries().length > 0) {
    const carrier: Record<string, string> = {}
    baggage.inject(OtelApi.propagation.setBaggage(OtelApi.ROOT_CONTEXT, bag), carrier, OtelApi.defaultTextMapSetter)
    baggageHeader = carrier["baggage"]
  }
  const canonical: Record<string, string> = { ...withoutTraceHeaders(headers) }
  if (span !== undefined) canonical["traceparent"] = traceparent(span.traceId, span.spanId, span.traceFlags)
  const state = span?.traceState?.serialize()
  return {
    parent: span === undefined ? undefined : external(span),
    traceState: span !== undefined && state !== undefined && state !== "" && isValidTraceState(state) ?
      { traceId: span.traceId, value: state } :
      undefined,
    baggage: baggageHeader,
    headers: canonical as Headers.Headers
  }
}

const withoutTraceHeaders = (headers: Headers.Headers): Headers.Headers => Headers.removeMany(headers, TRACE_HEADERS)

const external = (span: OtelApi.SpanContext): Tracer.ExternalSpan =>
  Tracer.externalSpan({
    traceId: span.traceId,
    spanId: span.spanId,
    sampled: (span.traceFlags & OtelApi.TraceFlags.SAMPLED) === OtelApi.TraceFlags.SAMPLED
  })

const traceparent = (traceId: string, spanId: string, flags: number) =>
  `00-${traceId}-${spanId}-${(flags & OtelApi.TraceFlags.SAMPLED) === 1 ? "01" : "00"}`

// -----------------------------------------------------------------------------
// Out
// -----------------------------------------------------------------------------

const W3C_TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/**
 * Rewrites the trace headers effect's client wrote for its client span
 * (`traceparent` and `b3`) into the `names` formats. Runs inside undici's
 * dispatch, on the request exactly as sent.
 */
export const rewrite = (
  headers: Readonly<Record<string, string>>,
  names: ReadonlyArray<PropagatorName>
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in headers) {
    if (name !== "traceparent" && name !== "b3" && (name !== "tracestate" || names.includes("tracecontext"))) {
      out[name] = headers[name]!
    }
  }
  const written = headers["traceparent"]
  const ids = written === undefined ? null : W3C_TRACEPARENT.exec(written)
  if (ids === null) return out
  if (names.includes("tracecontext")) out["traceparent"] = written!
  const b3Formats = names.filter((name) => name === "b3" || name === "b3multi")
  if (b3Formats.length > 0) {
    const context = OtelApi.trace.setSpanContext(OtelApi.ROOT_CONTEXT, {
      traceId: ids[1]!,
      spanId: ids[2]!,
      traceFlags: parseInt(ids[3]!, 16) & OtelApi.TraceFlags.SAMPLED,
      isRemote: false
    })
    for (const format of b3Formats) byName[format].inject(context, out, OtelApi.defaultTextMapSetter)
  }
  return out
}

/** An undici interceptor applying {@link rewrite} to every request of a dispatcher. */
export const interceptor =
  (names: ReadonlyArray<PropagatorName>): Dispatcher.DispatcherComposeInterceptor =>
  (dispatch) =>
  (
    options,
    handler
  ) => {
    const headers = options.headers
    // effect's client passes its headers as a plain record
    if (headers === undefined || headers === null || Array.isArray(headers) || typeof headers !== "object") {
      return dispatch(options, handler)
    }
    if (Symbol.iterator in headers) return dispatch(options, handler)
    return dispatch({ ...options, headers: rewrite(headers as Record<string, string>, names) }, handler)
  }

/** Requests sent with no tracer installed: effect's client makes no span for them ({@link layerUntracedClient}). */
const untracedRequests = new WeakSet<HttpClientRequest.HttpClientRequest>()

/**
 * `HttpClient.TracerDisabledWhen` for the gateway: effect's client makes no
 * span, and writes no `traceparent`, for a request {@link withContextHeaders}
 * sent with no tracer installed (it writes the caller's context instead).
 */
export const layerUntracedClient: Layer.Layer<never> = Layer.succeed(HttpClient.TracerDisabledWhen)((request) =>
  untracedRequests.has(request)
)

/**
 * `client` adding the request's `baggage` (when `baggage` is configured) and,
 * for the request's own trace, its `tracestate` (when `tracecontext` is).
 * With no tracer installed it also writes the caller's `traceparent` as it
 * came in (`TraceContext.outgoingParent`; rewritten into the configured
 * formats by {@link interceptor}), or none, and marks the request so that
 * effect's client makes no span for it: a span of the native tracer would be
 * a new, unrecorded trace, sent on as sampled.
 */
export const withContextHeaders = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.mapRequestEffect(client, (request) =>
    Effect.withFiber((fiber) => {
      const names = fiber.getRef(Propagators)
      let out = request
      const bag = fiber.getRef(IncomingBaggage)
      if (bag !== undefined && names.includes("baggage")) out = HttpClientRequest.setHeader(out, "baggage", bag)
      const untraced = fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer
      const span = untraced ? outgoingParent(fiber) : Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
      if (untraced && span !== undefined) out = HttpClientRequest.setHeader(out, "traceparent", traceparentOf(span))
      const state = fiber.getRef(TraceState)
      if (
        state !== undefined && names.includes("tracecontext") && span !== undefined && span.traceId === state.traceId
      ) {
        out = HttpClientRequest.setHeader(out, "tracestate", state.value)
      }
      if (untraced) untracedRequests.add(out)
      return Effect.succeed(out)
    }))
