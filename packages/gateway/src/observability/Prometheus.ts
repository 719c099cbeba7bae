/**
 * `GET /metrics`: every metric of the process in the Prometheus text format
 * (0.0.4), always on.
 *
 * **Rules**
 *
 * - The text is effect's own `PrometheusMetrics.formatUnsafe` over the
 *   current `MetricRegistry`; only the names are mapped, with the
 *   OpenTelemetry-to-Prometheus rules an OpenTelemetry Collector applies:
 *   dots become underscores, counters end in `_total`, metrics measured in
 *   seconds (`Metrics.UNITS`) end in `_seconds`. So
 *   `http.server.request.duration` is `http_server_request_duration_seconds`
 *   and `janus.calls` is `janus_calls_total`.
 * - The route is unauthenticated, like `/healthz`: it carries no secret and
 *   no client data beyond tool and connection names. Keep it off the public
 *   Ingress (deploy/ exposes it to Prometheus inside the cluster only).
 * - A scrape never fails: formatting reads in-memory state.
 * - Mounting the route creates the zero-valued series alerts rely on
 *   (`Metrics.initialize`).
 *
 * @since 0.1.0
 */
import { type Context, Effect, type Layer, Metric } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import * as Metrics from "./Metrics.ts"
import { UNITS } from "./Metrics.ts"

/** The exposition's content type. */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** The Prometheus name of a metric id of the given type (before sanitizing). */
export const prometheusName = (id: string, type: Metric.Metric.Type): string => {
  let name = id
  if (UNITS[id] === "seconds" && !name.endsWith("_seconds") && !name.endsWith(".seconds")) name = `${name}_seconds`
  if ((type === "Counter" || type === "Frequency") && !name.endsWith("_total") && !name.endsWith(".total")) {
    name = `${name}_total`
  }
  return name
}

/** The exposition text for the registry of `context`. */
export const formatUnsafe = (context: Context.Context<never>): string => {
  const types = new Map<string, Metric.Metric.Type>()
  for (const snapshot of Metric.snapshotUnsafe(context)) types.set(snapshot.id, snapshot.type)
  return PrometheusMetrics.formatUnsafe(context, {
    metricNameMapper: (id) => prometheusName(id, types.get(id) ?? "Gauge")
  })
}

/** The exposition text for the current fiber's registry. */
export const format: Effect.Effect<string> = Effect.contextWith((context: Context.Context<never>) =>
  Effect.sync(() => formatUnsafe(context))
)

/** `GET path` (default `/metrics`) on the gateway's router. */
export const layer = (options: { readonly path?: HttpRouter.PathInput | undefined } = {}): Layer.Layer<
  never,
  never,
  HttpRouter.HttpRouter
> =>
  HttpRouter.use((router) =>
    Effect.andThen(
      Metrics.withContext(Metrics.initialize),
      router.add(
        "GET",
        options.path ?? "/metrics",
        Effect.map(
          format,
          (text) =>
            HttpServerResponse.text(text, { contentType: CONTENT_TYPE, headers: { "cache-control": "no-store" } })
        )
      )
    )
  )

/** `layer()` at `/metrics`. */
export const layerHttp: Layer.Layer<never, never, HttpRouter.HttpRouter> = layer()
