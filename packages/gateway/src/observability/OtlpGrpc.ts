/**
 * OTLP over gRPC, for the signals whose protocol is `grpc`: the
 * OpenTelemetry JS SDK's exporters behind `@effect/opentelemetry`'s
 * `NodeSdk` layer (effect's own exporter speaks OTLP/HTTP only).
 *
 * **Rules**
 *
 * - Spans: a `BatchSpanProcessor` (`OTEL_BSP_SCHEDULE_DELAY`) over the gRPC
 *   span exporter; the SDK's sampler is the one `OTEL_TRACES_SAMPLER` names
 *   (`Sampling.sampler`), so roots and remote parents are decided by the
 *   SDK, and `Sampling.tracer` makes every span under an unsampled one an
 *   `UnsampledSpan` without calling the SDK. The bridge's per-step
 *   OpenTelemetry context hook is dropped (see `Sampling.tracer`).
 * - Metrics: effect's metrics read by the SDK's periodic reader
 *   (`OTEL_METRIC_EXPORT_INTERVAL`), cumulative. The SDK's gRPC metric
 *   exporter is rebuilt from its parts ({@link ExemplarMetricExporter}) only
 *   to put the call-duration exemplars into the encoded request, which the
 *   SDK's serializer never writes (`ProtobufExemplars`).
 * - Logs: a `BatchLogRecordProcessor` (`OTEL_BLRP_SCHEDULE_DELAY`), added to
 *   the current loggers.
 * - Headers are gRPC metadata; `https` endpoints use TLS with the system's
 *   roots, `http` ones plaintext; compression and the timeout are the
 *   exporter's options.
 * - On scope close the providers flush and shut down.
 *
 * @since 0.1.0
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { Metadata } from "@grpc/grpc-js"
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-grpc"
import { OTLPMetricExporterBase } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc"
import { convertLegacyOtlpGrpcOptions, createOtlpGrpcExportDelegate } from "@opentelemetry/otlp-grpc-exporter-base"
import type { ISerializer } from "@opentelemetry/otlp-transformer"
import { MetricsExporterMetricsHelper, ProtobufMetricsSerializer } from "@opentelemetry/otlp-transformer"
import { BatchLogRecordProcessor } from "@opentelemetry/sdk-logs"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Duration, Effect, Layer, Tracer } from "effect"
import * as Metrics from "./Metrics.ts"
import type { OtlpSettings, SignalExport } from "./Otlp.ts"
import * as ProtobufExemplars from "./ProtobufExemplars.ts"
import * as Sampling from "./Sampling.ts"

const exporterOptions = (signal: SignalExport) => {
  const metadata = new Metadata()
  for (const [key, value] of Object.entries(signal.headers)) metadata.set(key, value)
  return {
    url: signal.url,
    metadata,
    timeoutMillis: signal.timeoutMillis,
    compression: signal.compression as never
  }
}

type MetricsSerializer = typeof ProtobufMetricsSerializer
type ResourceMetrics = MetricsSerializer extends ISerializer<infer Request, unknown> ? Request : never

/** The SDK's protobuf metrics serializer, with the call-duration exemplars added to what it writes. */
const serializerWithExemplars: MetricsSerializer = {
  serializeRequest: (request) => {
    const bytes = ProtobufMetricsSerializer.serializeRequest(request)
    return bytes === undefined ? undefined : ProtobufExemplars.attach(bytes, [Metrics.toolCallDurationExemplars])
  },
  deserializeResponse: (data) => ProtobufMetricsSerializer.deserializeResponse(data)
}

/**
 * `OTLPMetricExporter` of `@opentelemetry/exporter-metrics-otlp-grpc`, made
 * of the same parts with {@link serializerWithExemplars} as its serializer.
 */
class ExemplarMetricExporter extends OTLPMetricExporterBase {
  constructor(options: ReturnType<typeof exporterOptions>) {
    super(
      createOtlpGrpcExportDelegate<ResourceMetrics, unknown>(
        convertLegacyOtlpGrpcOptions(options, "METRICS"),
        serializerWithExemplars,
        "otlp_grpc_metric_exporter",
        MetricsExporterMetricsHelper,
        undefined,
        "MetricsExportService",
        "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
      )
    )
  }
}

const millis = (input: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(input))

/** The gRPC export of the signals of `settings` whose protocol is `grpc`; empty when there are none. */
export const layer = (settings: OtlpSettings): Layer.Layer<never> => {
  const grpc = (signal: SignalExport | undefined): signal is SignalExport => signal?.protocol === "grpc"
  const { logs, metrics, traces } = settings
  if (!grpc(traces) && !grpc(metrics) && !grpc(logs)) return Layer.empty
  const sdk = NodeSdk.layer(() => ({
    resource: {
      serviceName: settings.serviceName,
      serviceVersion: settings.serviceVersion,
      attributes: settings.attributes as Record<string, string>
    },
    spanProcessor: grpc(traces) ?
      new BatchSpanProcessor(new OTLPTraceExporter(exporterOptions(traces)), {
        scheduledDelayMillis: millis(settings.tracesExportInterval)
      }) :
      undefined,
    tracerConfig: { sampler: Sampling.sampler(settings.sampler) },
    metricReader: grpc(metrics) ?
      new PeriodicExportingMetricReader({
        exporter: new ExemplarMetricExporter(exporterOptions(metrics)),
        exportIntervalMillis: millis(settings.metricsExportInterval),
        exportTimeoutMillis: Math.min(metrics.timeoutMillis, millis(settings.metricsExportInterval))
      }) :
      undefined,
    logRecordProcessor: grpc(logs) ?
      new BatchLogRecordProcessor({
        exporter: new OTLPLogExporter(exporterOptions(logs)),
        scheduledDelayMillis: millis(settings.logsExportInterval)
      }) :
      undefined,
    loggerMergeWithExisting: true,
    shutdownTimeout: settings.shutdownTimeout ?? "3 seconds"
  }))
  if (!grpc(traces)) return sdk as Layer.Layer<unknown> as Layer.Layer<never>
  // the bridge's tracer, with head sampling below unsampled spans and without its per-step context hook
  const sampled = Layer.effect(
    Tracer.Tracer,
    Effect.map(Effect.tracer, (inner) => Sampling.tracer(inner, undefined))
  )
  return sampled.pipe(Layer.provideMerge(sdk)) as Layer.Layer<unknown> as Layer.Layer<never>
}
