/**
 * OTLP export of traces, metrics and logs, through effect's own
 * `Otlp.layerJson` (OTLP/HTTP with JSON bodies; no OpenTelemetry SDK).
 *
 * **Configuration** (the standard OpenTelemetry variables)
 *
 * | variable | meaning |
 * | --- | --- |
 * | `OTEL_EXPORTER_OTLP_ENDPOINT` | base URL of the collector (`http(s)://host:4318`); unset: no export at all |
 * | `OTEL_SERVICE_NAME` | `service.name`, default `janus` |
 * | `OTEL_EXPORTER_OTLP_HEADERS` | `k=v,k2=v2` (values percent-decoded) sent with every export; secret |
 * | `OTEL_RESOURCE_ATTRIBUTES` | extra resource attributes (read by effect) |
 * | `OTEL_METRIC_EXPORT_INTERVAL` | milliseconds between metric exports, default 60000 |
 * | `OTEL_BSP_SCHEDULE_DELAY` | milliseconds between span (and log) exports, default 5000 |
 *
 * **Rules**
 *
 * - Signals go to `<endpoint>/v1/traces`, `/v1/metrics`, `/v1/logs`.
 * - `service.instance.id` is the host name (the pod name on Kubernetes)
 *   unless `OTEL_RESOURCE_ATTRIBUTES` sets it, so replicas' cumulative
 *   metrics never collide.
 * - The exporters' own HTTP calls are untraced and carry no `traceparent`
 *   (effect's exporter sees to it); they use `fetch`, not the egress client,
 *   so the SSRF guard does not apply to the operator-chosen collector.
 * - Log export adds itself to the current loggers, and `Logging.layer`
 *   replaces them: build `Logging.layer` first (provide it outside this
 *   layer), so both the JSON console logger and the OTLP one stay.
 * - On shutdown (scope close) every exporter flushes what it buffered, so
 *   spans of the drain itself are exported: provide it outside the gateway's
 *   layers (only `Logging.layer` goes further out).
 *
 * @since 0.1.0
 */
import { Config, Duration, Effect, Layer, Option, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { Otlp, type OtlpExporter } from "effect/observability"
import { hostname } from "node:os"

/** Everything the OTLP export needs. */
export interface OtlpSettings {
  /** Base URL; signals go to `/v1/traces`, `/v1/metrics`, `/v1/logs` below it. */
  readonly endpoint: string
  readonly serviceName: string
  readonly serviceVersion: string
  readonly headers?: Redacted.Redacted<Readonly<Record<string, string>>> | undefined
  /** Extra resource attributes (on top of `OTEL_RESOURCE_ATTRIBUTES`). */
  readonly attributes?: Readonly<Record<string, unknown>> | undefined
  readonly metricsExportInterval?: Duration.Input | undefined
  readonly tracesExportInterval?: Duration.Input | undefined
  readonly logsExportInterval?: Duration.Input | undefined
  readonly shutdownTimeout?: Duration.Input | undefined
}

/** The OpenTelemetry variables Janus reads (the table above); `secret` ones are never shown. */
export const VARIABLES: ReadonlyArray<{ readonly name: string; readonly secret: boolean }> = [
  { name: "OTEL_EXPORTER_OTLP_ENDPOINT", secret: false },
  { name: "OTEL_SERVICE_NAME", secret: false },
  { name: "OTEL_EXPORTER_OTLP_HEADERS", secret: true },
  { name: "OTEL_RESOURCE_ATTRIBUTES", secret: false },
  { name: "OTEL_METRIC_EXPORT_INTERVAL", secret: false },
  { name: "OTEL_BSP_SCHEDULE_DELAY", secret: false }
]

/** Parses `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, values percent-encoded). */
export const parseHeaders = (raw: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const entry of raw.split(",")) {
    const eq = entry.indexOf("=")
    if (eq <= 0) continue
    const key = entry.slice(0, eq).trim().toLowerCase()
    if (key === "") continue
    let value = entry.slice(eq + 1).trim()
    try {
      value = decodeURIComponent(value)
    } catch {
      // kept as written
    }
    headers[key] = value
  }
  return headers
}

/** OTLP export with explicit settings (traces, metrics and logs). */
export const layerWith = (settings: OtlpSettings): Layer.Layer<OtlpExporter.Flusher> =>
  Otlp.layerJson({
    baseUrl: settings.endpoint,
    resource: {
      serviceName: settings.serviceName,
      serviceVersion: settings.serviceVersion,
      attributes: { ...settings.attributes }
    },
    headers: settings.headers === undefined ? undefined : Redacted.value(settings.headers),
    metricsExportInterval: settings.metricsExportInterval ?? "60 seconds",
    tracerExportInterval: settings.tracesExportInterval ?? "5 seconds",
    loggerExportInterval: settings.logsExportInterval ?? settings.tracesExportInterval ?? "5 seconds",
    shutdownTimeout: settings.shutdownTimeout ?? "3 seconds",
    loggerMergeWithExisting: true
  }).pipe(Layer.provide(FetchHttpClient.layer))

const millis = (name: string) =>
  Config.option(Config.Int(name)).pipe(Config.map(Option.map((ms) => Duration.millis(Math.max(1, ms)))))

/** The settings from the standard `OTEL_*` variables; `None` when no endpoint is set. */
export const settingsFromEnv = (
  serviceVersion: string
): Effect.Effect<Option.Option<OtlpSettings>, Config.ConfigError> =>
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.URL("OTEL_EXPORTER_OTLP_ENDPOINT"))
    if (Option.isNone(endpoint)) return Option.none()
    const serviceName = yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("janus"))
    const rawHeaders = yield* Config.option(Config.Redacted("OTEL_EXPORTER_OTLP_HEADERS"))
    const resourceAttributes = yield* Config.String("OTEL_RESOURCE_ATTRIBUTES").pipe(Config.withDefault(""))
    const metricsInterval = yield* millis("OTEL_METRIC_EXPORT_INTERVAL")
    const tracesInterval = yield* millis("OTEL_BSP_SCHEDULE_DELAY")
    return Option.some<OtlpSettings>({
      endpoint: endpoint.value.href.replace(/\/+$/, ""),
      serviceName: serviceName.trim() === "" ? "janus" : serviceName,
      serviceVersion,
      headers: Option.match(rawHeaders, {
        onNone: () => undefined,
        onSome: (raw) => Redacted.make(parseHeaders(Redacted.value(raw)))
      }),
      attributes: /(^|,)\s*service\.instance\.id\s*=/.test(resourceAttributes) ?
        {} :
        { "service.instance.id": hostname() },
      metricsExportInterval: Option.getOrUndefined(metricsInterval),
      tracesExportInterval: Option.getOrUndefined(tracesInterval)
    })
  })

/**
 * OTLP export when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, nothing otherwise.
 * A malformed variable fails the layer with effect's `ConfigError`, which
 * names the variable.
 */
export const layerFromEnv = (serviceVersion: string): Layer.Layer<never, Config.ConfigError> =>
  Layer.unwrap(Effect.map(settingsFromEnv(serviceVersion), (settings) =>
    // The tracer and loggers it installs are references, not services: keep its context, hide the Flusher.
    Option.isNone(settings) ? Layer.empty : layerWith(settings.value) as Layer.Layer<unknown> as Layer.Layer<never>))
