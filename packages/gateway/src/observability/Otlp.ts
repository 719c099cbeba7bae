/**
 * OTLP export of traces, metrics and logs, configured by the standard
 * OpenTelemetry variables (`config/OtelVariables.ts`, rows of
 * `JanusConfig`).
 *
 * **Which exporter** (decided by measurement, BENCHMARKS.md "OpenTelemetry
 * export"): effect's own OTLP exporter for `http/json` and `http/protobuf`
 * (it also does gzip, headers and batching); the OpenTelemetry SDK through
 * `@effect/opentelemetry`'s `NodeSdk` layer ({@link OtlpGrpc}) for `grpc`,
 * which effect's exporter does not speak. Each signal picks its own
 * (`OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`).
 *
 * **Rules**
 *
 * - No endpoint (general or per signal), `OTEL_SDK_DISABLED=true` or a
 *   signal's `OTEL_<SIGNAL>_EXPORTER=none`: that signal is not exported
 *   (and with no span export, no span is made: `Instrument`).
 * - HTTP protocols send to `<endpoint>/v1/traces`, `/v1/metrics`,
 *   `/v1/logs`, or to the per-signal endpoint as written; grpc to the
 *   endpoint's host and port (`https` means TLS).
 * - Head sampling (`Sampling`) wraps whichever tracer exports: new traces
 *   are decided by `OTEL_TRACES_SAMPLER`, children inherit, unsampled spans
 *   cost next to nothing and are not exported.
 * - `service.instance.id` is the host name (the pod name on Kubernetes)
 *   unless `OTEL_RESOURCE_ATTRIBUTES` sets it, so replicas' cumulative
 *   metrics never collide.
 * - Metric exports carry the call-duration exemplars in every protocol
 *   (OTLP/JSON: `Exemplars.attachOtlp`; protobuf, over HTTP and gRPC:
 *   `ProtobufExemplars.attach`).
 * - Each export request is bounded by `OTEL_EXPORTER_OTLP_(<SIGNAL>_)TIMEOUT`;
 *   a failed export is dropped (effect's exporter pauses for a minute, the
 *   SDK's retries), never blocking a call.
 * - The exporters' own HTTP calls are untraced and carry no `traceparent`;
 *   they do not go through the egress client, so the SSRF guard does not
 *   apply to the operator-chosen collector.
 * - Log export adds itself to the current loggers, and `Logging.layer`
 *   replaces them: build `Logging.layer` first (provide it outside this
 *   layer), so both the JSON console logger and the OTLP one stay.
 * - On shutdown (scope close) every exporter flushes what it buffered, so
 *   spans of the drain itself are exported: provide it outside the gateway's
 *   layers (only `Logging.layer` goes further out).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Layer, Option, Redacted, Tracer } from "effect"
import { FetchHttpClient, HttpBody, HttpClient, HttpClientError } from "effect/http"
import { OtlpExporter, OtlpLogger, OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"
import { hostname } from "node:os"
import { JanusConfig, type JanusSettings } from "../config/JanusConfig.ts"
import { type OtlpProtocol, type Signal, SIGNALS } from "../config/OtelVariables.ts"
import * as Exemplars from "./Exemplars.ts"
import * as Metrics from "./Metrics.ts"
import * as ProtobufExemplars from "./ProtobufExemplars.ts"
import type * as Sampling from "./Sampling.ts"
import { Propagators } from "./TraceContext.ts"

/** Where and how one signal is exported. */
export interface SignalExport {
  readonly protocol: OtlpProtocol
  /** HTTP: the full URL of the signal; grpc: the collector's `http(s)://host:port`. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMillis: number
  readonly compression: "gzip" | "none"
}

/** Everything the OTLP export needs. */
export interface OtlpSettings {
  readonly serviceName: string
  readonly serviceVersion: string
  /** Resource attributes besides `service.name` / `service.version`. */
  readonly attributes: Readonly<Record<string, unknown>>
  readonly traces: SignalExport | undefined
  readonly metrics: SignalExport | undefined
  readonly logs: SignalExport | undefined
  readonly sampler: Sampling.SamplerSettings
  readonly metricsExportInterval: Duration.Input
  readonly tracesExportInterval: Duration.Input
  readonly logsExportInterval: Duration.Input
  readonly shutdownTimeout?: Duration.Input | undefined
}

const signalPath: Record<Signal, string> = { TRACES: "/v1/traces", METRICS: "/v1/metrics", LOGS: "/v1/logs" }
const exporterOf: Record<Signal, "OTEL_TRACES_EXPORTER" | "OTEL_METRICS_EXPORTER" | "OTEL_LOGS_EXPORTER"> = {
  TRACES: "OTEL_TRACES_EXPORTER",
  METRICS: "OTEL_METRICS_EXPORTER",
  LOGS: "OTEL_LOGS_EXPORTER"
}

/** The export of `signal` that `config` asks for, if any. */
export const signalExport = (config: JanusSettings, signal: Signal): SignalExport | undefined => {
  if (config.OTEL_SDK_DISABLED || config[exporterOf[signal]] === "none") return undefined
  const own = Option.getOrUndefined(config[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`])
  const base = Option.getOrUndefined(config.OTEL_EXPORTER_OTLP_ENDPOINT)
  if (own === undefined && base === undefined) return undefined
  const protocol = Option.getOrElse(
    config[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`],
    () => config.OTEL_EXPORTER_OTLP_PROTOCOL
  )
  const url = own !== undefined ? own.href : protocol === "grpc" ? base!.href : base!.href + signalPath[signal]
  const headers = Option.getOrElse(
    Option.map(config[`OTEL_EXPORTER_OTLP_${signal}_HEADERS`], Redacted.value),
    () => Option.match(config.OTEL_EXPORTER_OTLP_HEADERS, { onNone: () => undefined, onSome: Redacted.value })
  )
  return {
    protocol,
    url,
    headers: headers?.record ?? {},
    timeoutMillis: Option.getOrElse(
      config[`OTEL_EXPORTER_OTLP_${signal}_TIMEOUT`],
      () => config.OTEL_EXPORTER_OTLP_TIMEOUT
    ),
    compression: Option.getOrElse(
      config[`OTEL_EXPORTER_OTLP_${signal}_COMPRESSION`],
      () => config.OTEL_EXPORTER_OTLP_COMPRESSION
    )
  }
}

/** The settings `config` asks for; `None` when no signal is exported. */
export const settingsOf = (config: JanusSettings, serviceVersion: string): Option.Option<OtlpSettings> => {
  const [traces, metrics, logs] = SIGNALS.map((signal) => signalExport(config, signal))
  if (traces === undefined && metrics === undefined && logs === undefined) return Option.none()
  const resource = config.OTEL_RESOURCE_ATTRIBUTES.record
  return Option.some({
    serviceName: config.OTEL_SERVICE_NAME,
    serviceVersion: resource["service.version"] ?? serviceVersion,
    attributes: {
      ...("service.instance.id" in resource ? {} : { "service.instance.id": hostname() }),
      ...resource
    },
    traces,
    metrics,
    logs,
    sampler: { name: config.OTEL_TRACES_SAMPLER, ratio: Option.getOrElse(config.OTEL_TRACES_SAMPLER_ARG, () => 1) },
    metricsExportInterval: Duration.millis(config.OTEL_METRIC_EXPORT_INTERVAL),
    tracesExportInterval: Duration.millis(config.OTEL_BSP_SCHEDULE_DELAY),
    logsExportInterval: Duration.millis(config.OTEL_BLRP_SCHEDULE_DELAY)
  })
}

// -----------------------------------------------------------------------------
// effect's exporter (http/json, http/protobuf)
// -----------------------------------------------------------------------------

/** `fetch`, each request bounded by `millis` (the export timeout). */
const clientWithTimeout = (millis: number): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(Effect.service(HttpClient.HttpClient), (client) =>
      HttpClient.transform(client, (effect, request) =>
        Effect.timeoutOrElse(effect, {
          duration: Duration.millis(millis),
          orElse: () =>
            Effect.fail(
              new HttpClientError.HttpClientError({
                reason: new HttpClientError.TransportError({
                  request,
                  description: `OTLP export took longer than ${millis} ms (OTEL_EXPORTER_OTLP_TIMEOUT)`
                })
              })
            )
        })))
  ).pipe(Layer.provide(FetchHttpClient.layer))

/** The serialization of `protocol`; its metrics carry the call-duration exemplars. */
const serialization = (protocol: Exclude<OtlpProtocol, "grpc">): Layer.Layer<OtlpSerialization.OtlpSerialization> =>
  protocol === "http/protobuf" ?
    Layer.effect(
      OtlpSerialization.OtlpSerialization,
      Effect.map(Effect.service(OtlpSerialization.OtlpSerialization), (protobuf) => ({
        ...protobuf,
        metrics: (data) => {
          const body = protobuf.metrics(data)
          return body._tag === "Uint8Array" ?
            HttpBody.uint8Array(
              ProtobufExemplars.attach(body.body, [Metrics.toolCallDurationExemplars]),
              body.contentType
            ) :
            body
        }
      }))
    ).pipe(Layer.provide(OtlpSerialization.layerProtobuf)) :
    Layer.effect(
      OtlpSerialization.OtlpSerialization,
      Effect.map(Effect.service(OtlpSerialization.OtlpSerialization), (json) => ({
        ...json,
        metrics: (data) => {
          Exemplars.attachOtlp(data, [Metrics.toolCallDurationExemplars])
          return json.metrics(data)
        }
      }))
    ).pipe(Layer.provide(OtlpSerialization.layerJson))

const transport = (signal: SignalExport) =>
  Layer.mergeAll(
    clientWithTimeout(signal.timeoutMillis),
    serialization(signal.protocol as Exclude<OtlpProtocol, "grpc">)
  )

const resourceOf = (settings: OtlpSettings) => ({
  serviceName: settings.serviceName,
  serviceVersion: settings.serviceVersion,
  attributes: { ...settings.attributes }
})

/**
 * Loaded only when something is exported: the OpenTelemetry SDK's samplers,
 * and for `grpc` the SDK's exporters with gRPC, cost an idle gateway that
 * exports nothing about 6 MiB of heap and 10 MiB resident (#19).
 */
const loadSampling = Effect.promise(() => import("./Sampling.ts"))
const loadGrpc = Effect.promise(() => import("./OtlpGrpc.ts"))

const effectTraces = (settings: OtlpSettings, signal: SignalExport) =>
  Layer.effect(
    Tracer.Tracer,
    Effect.zipWith(
      OtlpTracer.make({
        url: signal.url,
        resource: resourceOf(settings),
        headers: signal.headers,
        compression: signal.compression,
        exportInterval: settings.tracesExportInterval,
        shutdownTimeout: settings.shutdownTimeout ?? "3 seconds"
      }),
      loadSampling,
      (inner, Sampling) => Sampling.tracer(inner, Sampling.sampler(settings.sampler))
    )
  ).pipe(Layer.provide(transport(signal)))

const effectMetrics = (settings: OtlpSettings, signal: SignalExport) =>
  Layer.effectDiscard(OtlpMetrics.make({
    url: signal.url,
    resource: resourceOf(settings),
    headers: signal.headers,
    compression: signal.compression,
    exportInterval: settings.metricsExportInterval,
    shutdownTimeout: settings.shutdownTimeout ?? "3 seconds"
  })).pipe(Layer.provide(transport(signal)))

const effectLogs = (settings: OtlpSettings, signal: SignalExport) =>
  OtlpLogger.layer({
    url: signal.url,
    resource: resourceOf(settings),
    headers: signal.headers,
    compression: signal.compression,
    exportInterval: settings.logsExportInterval,
    shutdownTimeout: settings.shutdownTimeout ?? "3 seconds",
    mergeWithExisting: true
  }).pipe(Layer.provide(transport(signal)))

/**
 * OTLP export with explicit settings. Provides `OtlpExporter.Flusher`, which
 * flushes effect's exporters (the SDK's flush on scope close).
 */
export const layerWith = (settings: OtlpSettings): Layer.Layer<OtlpExporter.Flusher> => {
  const native = (signal: SignalExport | undefined): signal is SignalExport =>
    signal !== undefined && signal.protocol !== "grpc"
  const layers: Array<Layer.Layer<never, never, OtlpExporter.Flusher>> = []
  if (native(settings.traces)) layers.push(effectTraces(settings, settings.traces))
  if (native(settings.metrics)) layers.push(effectMetrics(settings, settings.metrics))
  if (native(settings.logs)) {
    layers.push(effectLogs(settings, settings.logs) as Layer.Layer<never, never, OtlpExporter.Flusher>)
  }
  const grpcWanted = [settings.traces, settings.metrics, settings.logs].some((signal) => signal?.protocol === "grpc")
  const grpc = grpcWanted ? Layer.unwrap(Effect.map(loadGrpc, (OtlpGrpc) => OtlpGrpc.layer(settings))) : Layer.empty
  return Layer.mergeAll(grpc, ...layers).pipe(Layer.provideMerge(OtlpExporter.layerFlusher))
}

/**
 * Export as the `OTEL_*` variables ask, nothing when they ask for none. The
 * tracer and loggers it installs are references, not services: its context
 * is kept, the Flusher hidden.
 */
export const layerConfig = (serviceVersion: string): Layer.Layer<never, never, JanusConfig> =>
  Layer.unwrap(Effect.map(Effect.service(JanusConfig), (config) =>
    Option.match(settingsOf(config, serviceVersion), {
      onNone: () => Layer.empty,
      onSome: (settings) => layerWith(settings) as Layer.Layer<unknown> as Layer.Layer<never>
    })))

/**
 * The settings every request reads whether or not anything is exported:
 * `OTEL_PROPAGATORS` and the exemplar filter. `Gateway.layerOn` provides it.
 */
export const layerReferences: Layer.Layer<never, never, JanusConfig> = Layer.unwrap(
  Effect.map(Effect.service(JanusConfig), (config) =>
    Layer.mergeAll(
      Layer.succeed(Propagators)(config.OTEL_PROPAGATORS),
      Layer.succeed(Metrics.ExemplarsEnabled)(config.OTEL_METRICS_EXEMPLAR_FILTER !== "always_off")
    ))
)
