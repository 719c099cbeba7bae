/**
 * Exemplars added to OTLP metrics already encoded as protobuf
 * (`ExportMetricsServiceRequest` / `MetricsData`), for the two exporters
 * that write protobuf: effect's `http/protobuf` serializer and the
 * OpenTelemetry SDK's gRPC exporter.
 *
 * Written by hand because neither encoder writes exemplars (effect's
 * `otlpProtobuf.encodeHistogramDataPoint` and `@opentelemetry/otlp-transformer`'s
 * `ProtobufMetricsSerializer` both skip field 8), and neither takes a hook
 * per data point. Protobuf lets a message carry its fields in any order, so
 * appending `exemplars` to an encoded `HistogramDataPoint` is a valid
 * encoding of the point with exemplars; only the lengths of the enclosing
 * messages change.
 *
 * **Rules**
 *
 * - Only the histograms named in `histograms` are touched; every other
 *   byte is copied as it came.
 * - A data point gets the exemplars of the series whose attributes equal
 *   its string attributes (the unit attributes effect adds are ignored on
 *   both sides, so the SDK bridge's points match too).
 * - Malformed input is returned unchanged rather than half rewritten.
 *
 * Field numbers (opentelemetry-proto, metrics/v1): MetricsData.resource_metrics
 * = 1; ResourceMetrics.scope_metrics = 2; ScopeMetrics.metrics = 2;
 * Metric.name = 1, Metric.histogram = 9; Histogram.data_points = 1;
 * HistogramDataPoint.attributes = 9, .exemplars = 8; Exemplar.time_unix_nano
 * = 2 (fixed64), .as_double = 3, .span_id = 4, .trace_id = 5; KeyValue.key =
 * 1, .value = 2; AnyValue.string_value = 1.
 *
 * @since 0.1.0
 */
import type { Exemplar, HistogramExemplars, SeriesExemplars } from "./Exemplars.ts"

const VARINT = 0
const FIXED64 = 1
const LENGTH = 2
const FIXED32 = 5

interface Field {
  readonly number: number
  readonly wire: number
  /** The whole field, tag included. */
  readonly start: number
  readonly end: number
  /** The payload of a length-delimited field. */
  readonly payloadStart: number
}

class Malformed extends Error {}

const readVarint = (bytes: Uint8Array, at: number): [value: number, next: number] => {
  let value = 0
  let shift = 0
  for (let i = at; i < bytes.length && shift < 64; i++) {
    const byte = bytes[i]!
    if (shift < 53) value += (byte & 0x7f) * 2 ** shift
    shift += 7
    if ((byte & 0x80) === 0) return [value, i + 1]
  }
  throw new Malformed()
}

const fieldsOf = (bytes: Uint8Array): Array<Field> => {
  const fields: Array<Field> = []
  let at = 0
  while (at < bytes.length) {
    const start = at
    const [tag, afterTag] = readVarint(bytes, at)
    const number = Math.floor(tag / 8)
    const wire = tag & 7
    let end: number
    let payloadStart = afterTag
    if (wire === VARINT) end = readVarint(bytes, afterTag)[1]
    else if (wire === FIXED64) end = afterTag + 8
    else if (wire === FIXED32) end = afterTag + 4
    else if (wire === LENGTH) {
      const [length, afterLength] = readVarint(bytes, afterTag)
      payloadStart = afterLength
      end = afterLength + length
    } else throw new Malformed()
    if (end > bytes.length) throw new Malformed()
    fields.push({ number, wire, start, end, payloadStart })
    at = end
  }
  return fields
}

const varint = (value: number): Array<number> => {
  const out: Array<number> = []
  let rest = value
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80)
    rest = Math.floor(rest / 0x80)
  }
  out.push(rest)
  return out
}

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  let length = 0
  for (const part of parts) length += part.length
  const out = new Uint8Array(length)
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

const lengthField = (number: number, payload: Uint8Array): Uint8Array =>
  concat([Uint8Array.from([...varint(number * 8 + LENGTH), ...varint(payload.length)]), payload])

const utf8 = new TextDecoder()
const stringOf = (bytes: Uint8Array, field: Field) => utf8.decode(bytes.subarray(field.payloadStart, field.end))
const payloadOf = (bytes: Uint8Array, field: Field) => bytes.subarray(field.payloadStart, field.end)

/**
 * `bytes` with each length-delimited field numbered `number` replaced by
 * `rewrite(payload)`; every other field copied.
 */
const rewriteFields = (
  bytes: Uint8Array,
  number: number,
  rewrite: (payload: Uint8Array) => Uint8Array
): Uint8Array =>
  concat(
    fieldsOf(bytes).map((field) =>
      field.number === number && field.wire === LENGTH ?
        lengthField(number, rewrite(payloadOf(bytes, field))) :
        bytes.subarray(field.start, field.end)
    )
  )

const hexBytes = (hex: string): Uint8Array => {
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16)
  return out
}

const encodeExemplar = (exemplar: Exemplar): Uint8Array => {
  const fixed = new Uint8Array(1 + 8 + 1 + 8)
  const view = new DataView(fixed.buffer)
  fixed[0] = 2 * 8 + FIXED64
  view.setBigUint64(1, BigInt(Math.round(exemplar.timeMillis)) * 1_000_000n, true)
  fixed[9] = 3 * 8 + FIXED64
  view.setFloat64(10, exemplar.value, true)
  return concat([fixed, lengthField(4, hexBytes(exemplar.spanId)), lengthField(5, hexBytes(exemplar.traceId))])
}

const IGNORED_ATTRIBUTES = new Set(["unit", "time_unit"])

const matchKey = (attributes: Readonly<Record<string, string>>): string =>
  JSON.stringify(
    Object.keys(attributes).filter((k) => !IGNORED_ATTRIBUTES.has(k)).sort().map((k) => [k, attributes[k]])
  )

const attributesOf = (point: Uint8Array): Record<string, string> => {
  const attributes: Record<string, string> = {}
  for (const field of fieldsOf(point)) {
    if (field.number !== 9 || field.wire !== LENGTH) continue
    const keyValue = payloadOf(point, field)
    let key: string | undefined
    let value: string | undefined
    for (const kv of fieldsOf(keyValue)) {
      if (kv.number === 1 && kv.wire === LENGTH) key = stringOf(keyValue, kv)
      if (kv.number === 2 && kv.wire === LENGTH) {
        const any = payloadOf(keyValue, kv)
        for (const v of fieldsOf(any)) if (v.number === 1 && v.wire === LENGTH) value = stringOf(any, v)
      }
    }
    if (key !== undefined && value !== undefined) attributes[key] = value
  }
  return attributes
}

const withPointExemplars = (point: Uint8Array, series: ReadonlyMap<string, SeriesExemplars>): Uint8Array => {
  const found = series.get(matchKey(attributesOf(point)))
  if (found === undefined) return point
  const exemplars = found.buckets.filter((e): e is Exemplar => e !== undefined)
  if (exemplars.length === 0) return point
  return concat([point, ...exemplars.map((e) => lengthField(8, encodeExemplar(e)))])
}

const metricName = (metric: Uint8Array): string | undefined => {
  for (const field of fieldsOf(metric)) if (field.number === 1 && field.wire === LENGTH) return stringOf(metric, field)
  return undefined
}

/**
 * The encoded metrics `bytes` with the exemplars of `histograms` on their
 * data points; `bytes` itself when there is nothing to add or it cannot be
 * read.
 */
export const attach = (bytes: Uint8Array, histograms: ReadonlyArray<HistogramExemplars>): Uint8Array => {
  const byName = new Map<string, ReadonlyMap<string, SeriesExemplars>>()
  for (const histogram of histograms) {
    if (histogram.series.size === 0) continue
    const series = new Map<string, SeriesExemplars>()
    for (const s of histogram.series.values()) series.set(matchKey(s.attributes), s)
    byName.set(histogram.name, series)
  }
  if (byName.size === 0) return bytes
  try {
    return rewriteFields(
      bytes,
      1,
      (resource) =>
        rewriteFields(resource, 2, (scope) =>
          rewriteFields(scope, 2, (metric) => {
            const series = byName.get(metricName(metric) ?? "")
            if (series === undefined) return metric
            return rewriteFields(
              metric,
              9,
              (histogram) => rewriteFields(histogram, 1, (point) => withPointExemplars(point, series))
            )
          }))
    )
  } catch (error) {
    if (error instanceof Malformed) return bytes
    throw error
  }
}
