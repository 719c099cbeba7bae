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
 *   (`OTEL_METRIC_EXPORT_INTERVAL`), cumulative.
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
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-grpc"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc"
import { BatchLogRecordProcessor } from "@opentelemetry/sdk-logs"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Duration, Effect, Layer, Tracer } from "effect"
import type { OtlpSettings, SignalExport } from "./Otlp.ts"
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
        exporter: new OTLPMetricExporter(exporterOptions(metrics)),
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
