/**
 * Head sampling: which traces are exported, decided once, where a trace
 * enters Janus, before its spans are built.
 *
 * **Rules**
 *
 * - The samplers are the OpenTelemetry SDK's (`OTEL_TRACES_SAMPLER`,
 *   `OTEL_TRACES_SAMPLER_ARG`): `traceidratio` decides on the trace id, so
 *   every service with the same ratio keeps the same traces; the
 *   `parentbased_*` ones follow the caller's `traceparent` flag when there is
 *   one (sampled -> sampled, not sampled -> not) and apply the named sampler
 *   to new traces only.
 * - The decision is taken when a root span or a span with a remote parent is
 *   made (the HTTP server span of a request, in practice). Every span below
 *   inherits it: effect passes `sampled: false` down from an unsampled parent.
 * - An unsampled span is an {@link UnsampledSpan}: a trace id, a span id made
 *   only if read (for `traceparent` with flag `00`), no attributes kept,
 *   nothing exported. Janus's own spans (`Instrument`) are not even made
 *   under one, so an unsampled call costs a few allocations, not a trace.
 * - The decision travels on in `traceparent` (flag `01` / `00`) to
 *   downstream APIs and upstream MCP servers (`Propagation`).
 *
 * @since 0.1.0
 */
import * as OtelApi from "@opentelemetry/api"
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  TraceIdRatioBasedSampler
} from "@opentelemetry/sdk-trace-base"
import { type Context, type Exit, Option, Tracer } from "effect"
import { Hex } from "effect/encoding"
import type { SamplerName } from "../config/OtelVariables.ts"

/** `OTEL_TRACES_SAMPLER` and its argument. */
export interface SamplerSettings {
  readonly name: SamplerName
  /** The probability of the ratio samplers; the specification's default is 1. */
  readonly ratio: number
}

/** The OpenTelemetry SDK sampler for `settings`. */
export const sampler = (settings: SamplerSettings): Sampler => {
  const ratio = () => new TraceIdRatioBasedSampler(settings.ratio)
  switch (settings.name) {
    case "always_on":
      return new AlwaysOnSampler()
    case "always_off":
      return new AlwaysOffSampler()
    case "traceidratio":
      return ratio()
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() })
  }
}

const otelKind: Record<Tracer.SpanKind, OtelApi.SpanKind> = {
  internal: OtelApi.SpanKind.INTERNAL,
  server: OtelApi.SpanKind.SERVER,
  client: OtelApi.SpanKind.CLIENT,
  producer: OtelApi.SpanKind.PRODUCER,
  consumer: OtelApi.SpanKind.CONSUMER
}

const NO_ATTRIBUTES: OtelApi.Attributes = {}
const NO_LINKS: Array<OtelApi.Link> = []

/** Whether `sampler` keeps a span of trace `traceId` under `remote` (a caller's span), or a new trace. */
export const decide = (
  sampler: Sampler,
  traceId: string,
  remote: Tracer.ExternalSpan | undefined,
  name: string,
  kind: Tracer.SpanKind
): boolean => {
  const context = remote === undefined ? OtelApi.ROOT_CONTEXT : OtelApi.trace.setSpanContext(OtelApi.ROOT_CONTEXT, {
    traceId: remote.traceId.padStart(32, "0"),
    spanId: remote.spanId,
    traceFlags: remote.sampled ? OtelApi.TraceFlags.SAMPLED : OtelApi.TraceFlags.NONE,
    isRemote: true
  })
  return sampler.shouldSample(context, traceId.padStart(32, "0"), name, otelKind[kind], NO_ATTRIBUTES, NO_LINKS)
    .decision === SamplingDecision.RECORD_AND_SAMPLED
}

type SpanOptions = Parameters<Tracer.Tracer["span"]>[0]

const EMPTY_ATTRIBUTES: ReadonlyMap<string, unknown> = new Map()

/**
 * A span that is not sampled: it carries the trace (ids for `traceparent`
 * with flag `00`) and nothing else.
 */
export class UnsampledSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = false
  readonly name: string
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly annotations: Context.Context<never>
  readonly links: ReadonlyArray<Tracer.SpanLink>
  readonly kind: Tracer.SpanKind
  readonly traceId: string
  status: Tracer.SpanStatus
  #spanId: string | undefined = undefined

  constructor(options: SpanOptions, traceId: string) {
    this.name = options.name
    this.parent = options.parent
    this.annotations = options.annotations
    this.links = options.links
    this.kind = options.kind
    this.traceId = traceId
    this.status = { _tag: "Started", startTime: options.startTime }
  }

  get spanId(): string {
    return this.#spanId ??= Hex.random(16)
  }

  get attributes(): ReadonlyMap<string, unknown> {
    return EMPTY_ATTRIBUTES
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }

  attribute(): void {}
  event(): void {}
  addLinks(): void {}
}

/**
 * `inner` with head sampling: roots and spans with a remote parent are
 * decided by `sampler` (when given; otherwise `inner` decides, as the
 * OpenTelemetry SDK does with its own sampler), and below an unsampled span
 * only {@link UnsampledSpan}s are made. `inner`'s per-step context hook is
 * dropped: Janus uses no OpenTelemetry auto-instrumentation that would read
 * the active OpenTelemetry context, and it would run on every effect step.
 */
export const tracer = (inner: Tracer.Tracer, sampler: Sampler | undefined): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      const parent = Option.getOrUndefined(options.parent)
      if (parent !== undefined && parent._tag === "Span") {
        return parent.sampled && options.sampled ? inner.span(options) : new UnsampledSpan(options, parent.traceId)
      }
      // a root, or the first span under a caller's span: the sampler decides
      if (!options.sampled && (parent === undefined || parent.sampled)) {
        // not sampled for another reason (MinimumTraceLevel, an explicit `sampled: false`)
        return new UnsampledSpan(options, parent?.traceId ?? Hex.random(32))
      }
      if (sampler === undefined) return inner.span(options)
      if (parent !== undefined) {
        return decide(sampler, parent.traceId, parent, options.name, options.kind) ?
          inner.span({ ...options, sampled: true }) :
          new UnsampledSpan(options, parent.traceId)
      }
      // a new trace: the ratio samplers decide on its id, so the id is made first (by `inner`)
      const candidate = inner.span({ ...options, sampled: true })
      return decide(sampler, candidate.traceId, undefined, options.name, options.kind) ?
        candidate :
        new UnsampledSpan(options, candidate.traceId)
    }
  })
