/**
 * Exemplars of the call-duration histogram (`mcp.server.operation.duration`):
 * for each series and bucket, the last sampled call that fell in it, with
 * its trace and span id, so a dashboard goes from a slow bucket to the trace
 * of a slow call.
 *
 * effect's `Metric` keeps no exemplars, so they are kept here, beside it,
 * and added where the histogram is written out: `/metrics` in the
 * OpenMetrics format ({@link openMetricsSuffixes}) and OTLP/JSON metric
 * exports ({@link attachOtlp}).
 *
 * **Rules**
 *
 * - Only calls whose trace is sampled leave one (`OTEL_METRICS_EXEMPLAR_FILTER`
 *   `trace_based`, the default; `always_off` keeps none): an exemplar always
 *   points at a trace the collector received.
 * - One exemplar per series and bucket (the newest): memory is bounded by the
 *   histogram's own series (`Metrics.MAX_SERIES`) times its buckets.
 * - Recording is a few field writes, on sampled calls only.
 *
 * @since 0.1.0
 */

/** One exemplar: a measured value and the span it was measured in. */
export interface Exemplar {
  readonly value: number
  readonly traceId: string
  readonly spanId: string
  /** Wall-clock time of the measurement, ms since the epoch. */
  readonly timeMillis: number
}

/** The exemplars of one histogram series, by bucket index (the last index is +Inf). */
export class SeriesExemplars {
  readonly attributes: Readonly<Record<string, string>>
  readonly buckets: Array<Exemplar | undefined>
  readonly #boundaries: ReadonlyArray<number>

  constructor(attributes: Readonly<Record<string, string>>, boundaries: ReadonlyArray<number>) {
    this.attributes = attributes
    this.#boundaries = boundaries
    this.buckets = new Array(boundaries.length + 1).fill(undefined)
  }

  /** Keeps `exemplar` as the newest of the bucket its value falls in. */
  record(exemplar: Exemplar): void {
    let index = 0
    while (index < this.#boundaries.length && exemplar.value > this.#boundaries[index]!) index++
    this.buckets[index] = exemplar
  }

  /** The boundary (`le`) of bucket `index` as effect's Prometheus text writes it. */
  le(index: number): string {
    return index < this.#boundaries.length ? this.#boundaries[index]!.toString() : "+Inf"
  }
}

/** Every series' exemplars of one histogram. */
export class HistogramExemplars {
  readonly name: string
  readonly boundaries: ReadonlyArray<number>
  readonly series = new Map<string, SeriesExemplars>()

  constructor(name: string, boundaries: ReadonlyArray<number>) {
    this.name = name
    this.boundaries = boundaries
  }

  /** The exemplars of the series with `attributes` (made on first use; call once per series and keep it). */
  of(attributes: Readonly<Record<string, string>>): SeriesExemplars {
    const key = seriesKey(attributes)
    let found = this.series.get(key)
    if (found === undefined) {
      found = new SeriesExemplars(attributes, this.boundaries)
      this.series.set(key, found)
    }
    return found
  }

  /** Forgets every exemplar (tests); the series stay, since recorders keep them (see {@link of}). */
  clear(): void {
    for (const series of this.series.values()) series.buckets.fill(undefined)
  }
}

const seriesKey = (attributes: Readonly<Record<string, string>>): string =>
  JSON.stringify(Object.keys(attributes).sort().map((k) => [k, attributes[k]]))

// -----------------------------------------------------------------------------
// OpenMetrics text
// -----------------------------------------------------------------------------

// effect's Prometheus formatter writes labels this way (PrometheusMetrics.ts): the same rules find its lines
const labelName = (name: string): string => {
  let sanitized = name.replace(/[^a-zA-Z0-9_]/g, "_")
  if (/^[0-9]/.test(sanitized)) sanitized = "_" + sanitized
  return sanitized.replace(/_+/g, "_")
}
const labelValue = (value: string): string => value.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

const exemplarText = (exemplar: Exemplar): string =>
  ` # {trace_id="${exemplar.traceId}",span_id="${exemplar.spanId}"} ${exemplar.value} ${
    (exemplar.timeMillis / 1000).toFixed(3)
  }`

/**
 * The exemplar suffix of each bucket line of `histogram` under the
 * exposition name `name`, keyed by the line up to its value
 * (`name_bucket{labels,le="0.1"}`).
 */
export const openMetricsSuffixes = (histogram: HistogramExemplars, name: string): Map<string, string> => {
  const out = new Map<string, string>()
  for (const series of histogram.series.values()) {
    const labels = Object.entries(series.attributes)
      .filter(([key]) => key !== "unit" && key !== "time_unit")
      .map(([key, value]) => `${labelName(key)}="${labelValue(value)}"`)
    for (let i = 0; i < series.buckets.length; i++) {
      const exemplar = series.buckets[i]
      if (exemplar === undefined) continue
      out.set(`${name}_bucket{${[...labels, `le="${series.le(i)}"`].join(",")}}`, exemplarText(exemplar))
    }
  }
  return out
}

// -----------------------------------------------------------------------------
// OTLP
// -----------------------------------------------------------------------------

interface OtlpKeyValue {
  readonly key: string
  readonly value: { readonly stringValue?: string }
}

/** An OTLP exemplar (OTLP/JSON: ids in hex). */
export interface OtlpExemplar {
  readonly timeUnixNano: string
  readonly asDouble: number
  readonly traceId: string
  readonly spanId: string
  readonly filteredAttributes: ReadonlyArray<never>
}

const otlpExemplar = (exemplar: Exemplar): OtlpExemplar => ({
  timeUnixNano: `${exemplar.timeMillis}000000`,
  asDouble: exemplar.value,
  traceId: exemplar.traceId,
  spanId: exemplar.spanId,
  filteredAttributes: []
})

/**
 * Adds the exemplars of `histograms` to the matching data points of an
 * OTLP metrics payload (effect's `MetricsData`), in place.
 */
export const attachOtlp = (data: unknown, histograms: ReadonlyArray<HistogramExemplars>): void => {
  const resourceMetrics = (data as { resourceMetrics?: Array<any> }).resourceMetrics ?? []
  for (const rm of resourceMetrics) {
    for (const sm of rm.scopeMetrics ?? []) {
      for (const metric of sm.metrics ?? []) {
        const histogram = histograms.find((h) => h.name === metric.name)
        if (histogram === undefined || metric.histogram === undefined) continue
        for (const point of metric.histogram.dataPoints ?? []) {
          const attributes: Record<string, string> = {}
          for (const kv of (point.attributes ?? []) as ReadonlyArray<OtlpKeyValue>) {
            if (kv.value.stringValue !== undefined) attributes[kv.key] = kv.value.stringValue
          }
          const series = histogram.series.get(seriesKey(attributes))
          if (series === undefined) continue
          const exemplars = series.buckets.filter((e): e is Exemplar => e !== undefined).map(otlpExemplar)
          if (exemplars.length > 0) point.exemplars = exemplars
        }
      }
    }
  }
}
