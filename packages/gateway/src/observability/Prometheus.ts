/**
 * `GET /metrics`: every metric of the process in the Prometheus text format
 * (0.0.4), always on; in the OpenMetrics format (1.0.0) when the scraper's
 * `Accept` asks for it, with exemplars on the call-duration buckets.
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
 * - Without a scrape token the route is unauthenticated, like `/healthz`: it
 *   carries no secret and no client data beyond tool and connection names.
 *   With one (`JANUS_METRICS_TOKEN`), only a request presenting it as
 *   `Authorization: Bearer` gets the metrics; every other gets the same 401
 *   (`ScrapeToken.ts`), and the caller's limits (`admit`: the gateway's
 *   per-address and failed-authentication buckets) apply around the check.
 *   Either way, keep the path off the public Ingress where you can.
 * - A scrape never fails: formatting reads in-memory state.
 * - Mounting the route creates the zero-valued series alerts rely on
 *   (`Metrics.initialize`).
 *
 * @since 0.1.0
 */
import { Context, Effect, type Layer, Metric, Option, type Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import * as Exemplars from "./Exemplars.ts"
import * as Metrics from "./Metrics.ts"
import { UNITS } from "./Metrics.ts"
import * as ScrapeToken from "./ScrapeToken.ts"

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

/** The OpenMetrics content type (what a scraper asking for exemplars accepts). */
export const OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

/**
 * The registry of `context` in the OpenMetrics text format: effect's
 * exposition with counter families named without `_total` (their samples
 * keep it), the call-duration buckets carrying their exemplars, and `# EOF`.
 */
export const formatOpenMetricsUnsafe = (context: Context.Context<never>): string => {
  const durations = prometheusName(Metrics.toolCallDuration.id, "Histogram").replace(/[^a-zA-Z0-9_:]/g, "_")
  const suffixes = Exemplars.openMetricsSuffixes(Metrics.toolCallDurationExemplars, durations)
  const counters = new Set<string>()
  const out: Array<string> = []
  for (const line of formatUnsafe(context).split("\n")) {
    if (line === "") continue
    const type = /^# TYPE (\S+) counter$/.exec(line)
    if (type !== null && type[1]!.endsWith("_total")) counters.add(type[1]!)
    out.push(line)
  }
  for (let i = 0; i < out.length; i++) {
    const line = out[i]!
    const meta = /^# (HELP|TYPE) (\S+)(.*)$/.exec(line)
    if (meta !== null) {
      if (counters.has(meta[2]!)) out[i] = `# ${meta[1]} ${meta[2]!.slice(0, -"_total".length)}${meta[3]}`
      continue
    }
    if (suffixes.size > 0 && line.startsWith(durations)) {
      const suffix = suffixes.get(line.slice(0, line.lastIndexOf(" ")))
      if (suffix !== undefined) out[i] = line + suffix
    }
  }
  out.push("# EOF")
  return out.join("\n") + "\n"
}

/** Whether an `Accept` header asks for OpenMetrics (as Prometheus does when exemplar storage is on). */
export const wantsOpenMetrics = (accept: string | undefined): boolean =>
  accept !== undefined && /application\/openmetrics-text/i.test(accept)

/** The exposition text for the current fiber's registry. */
export const format: Effect.Effect<string> = Effect.contextWith((context: Context.Context<never>) =>
  Effect.sync(() => formatUnsafe(context))
)

/**
 * Admission of a scrape around its token check: `verified` fails with the 401
 * to answer when the token is not presented; the result fails with the
 * response to answer instead of the metrics (that 401, or a refusal of the
 * caller's own, such as a 429).
 */
export type Admit = (
  request: HttpServerRequest.HttpServerRequest,
  verified: Effect.Effect<void, HttpServerResponse.HttpServerResponse>
) => Effect.Effect<void, HttpServerResponse.HttpServerResponse>

/** How `/metrics` is served. */
export interface Options {
  /** Default `/metrics`. */
  readonly path?: HttpRouter.PathInput | undefined
  /** The scrape token (`JANUS_METRICS_TOKEN`); none: every scrape is answered. */
  readonly token?: Option.Option<Redacted.Redacted<string>> | undefined
  /** Limits around the token check (only when there is a token); default: the check alone. */
  readonly admit?: Admit | undefined
}

/** `GET path` (default `/metrics`) on the gateway's router. */
export const layer = (options: Options = {}): Layer.Layer<never, never, HttpRouter.HttpRouter> => {
  const token = options.token ?? Option.none()
  const verify = Option.map(token, ScrapeToken.verifier)
  const admit: Admit = options.admit ?? ((_, verified) => verified)
  const metrics = (context: Context.Context<HttpServerRequest.HttpServerRequest>) => {
    const request = Context.get(context, HttpServerRequest.HttpServerRequest)
    const open = wantsOpenMetrics(request.headers["accept"])
    return HttpServerResponse.text(
      open
        ? formatOpenMetricsUnsafe(context as Context.Context<never>)
        : formatUnsafe(context as Context.Context<never>),
      {
        contentType: open ? OPENMETRICS_CONTENT_TYPE : CONTENT_TYPE,
        headers: { "cache-control": "no-store" }
      }
    )
  }
  return HttpRouter.use((router) =>
    Effect.andThen(
      Metrics.withContext(Metrics.initialize),
      router.add(
        "GET",
        options.path ?? "/metrics",
        Effect.contextWith((context: Context.Context<HttpServerRequest.HttpServerRequest>) => {
          if (Option.isNone(verify)) return Effect.succeed(metrics(context))
          const request = Context.get(context, HttpServerRequest.HttpServerRequest)
          const check = verify.value
          const verified = Effect.suspend(() =>
            check(request.headers["authorization"]) ? Effect.void : Effect.fail(ScrapeToken.refusal())
          )
          return admit(request, verified).pipe(
            Effect.map(() => metrics(context)),
            Effect.catch((refused) => Effect.succeed(refused))
          )
        })
      )
    )
  )
}

/** `layer()` at `/metrics`. */
export const layerHttp: Layer.Layer<never, never, HttpRouter.HttpRouter> = layer()
