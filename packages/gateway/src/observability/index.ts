/**
 * Observability of the gateway (issue #8): metrics and `/metrics`, OTLP
 * export, traces, structured logs, and the graceful drain.
 *
 * @since 0.1.0
 */
export * as Drain from "./Drain.ts"
export * as Exemplars from "./Exemplars.ts"
export * as HttpObservability from "./HttpObservability.ts"
export * as Logging from "./Logging.ts"
export * as Metrics from "./Metrics.ts"
export * as Otlp from "./Otlp.ts"
export * as Prometheus from "./Prometheus.ts"
export * as Propagation from "./Propagation.ts"
export * as TraceContext from "./TraceContext.ts"
