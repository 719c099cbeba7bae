/**
 * The standard OpenTelemetry variables Janus reads: rows of
 * `JanusConfig.VARIABLES`, so they are validated at start with the others,
 * listed by `GET /api/v1/config` and checked against the deploy manifests.
 *
 * **Rules**
 *
 * - Names, values and defaults are the OpenTelemetry specification's
 *   ("SDK environment variables" and "OTLP exporter configuration"), with
 *   one deliberate difference: unset `OTEL_EXPORTER_OTLP_ENDPOINT` (and no
 *   per-signal endpoint) means no export at all, not `localhost:4318`.
 * - Each per-signal variable (`OTEL_EXPORTER_OTLP_TRACES_*`, `_METRICS_*`,
 *   `_LOGS_*`) overrides the general one for that signal; a per-signal
 *   endpoint is used as written, the general one gets `/v1/<signal>` added
 *   (HTTP protocols).
 * - Header values are secrets: never shown, masked in errors.
 * - Times are integer milliseconds, as the specification writes them.
 * - A propagator, sampler or protocol Janus does not implement is an error
 *   naming the ones it does, not a silent fallback.
 *
 * @since 0.1.0
 */
import { Option, Redacted, Result } from "effect"
import { boolean, int, oneOf, optional, type Parser, text, variable } from "./Settings.ts"

/** The OTLP transports. */
export const PROTOCOLS = ["grpc", "http/protobuf", "http/json"] as const
export type OtlpProtocol = typeof PROTOCOLS[number]

/** The samplers of `OTEL_TRACES_SAMPLER`. */
export const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio"
] as const
export type SamplerName = typeof SAMPLERS[number]

/** The propagators of `OTEL_PROPAGATORS` Janus implements (`none` alone: no propagation). */
export const PROPAGATORS = ["tracecontext", "baggage", "b3", "b3multi"] as const
export type PropagatorName = typeof PROPAGATORS[number]

/** The signals, as they appear in the per-signal variable names. */
export const SIGNALS = ["TRACES", "METRICS", "LOGS"] as const
export type Signal = typeof SIGNALS[number]

/** An OTLP endpoint URL; shown without its user info (a collector URL may carry credentials). */
export class Endpoint {
  readonly url: URL
  constructor(url: URL) {
    this.url = url
  }
  /** The URL as written, without a trailing slash. */
  get href(): string {
    return this.url.href.replace(/\/+$/, "")
  }
  toString(): string {
    if (this.url.username === "" && this.url.password === "") return this.href
    const masked = new URL(this.url.href)
    masked.username = "hidden"
    masked.password = ""
    return masked.href.replace(/\/+$/, "")
  }
}

/** `k=v,k2=v2` pairs, values percent-decoded (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS). */
export class KeyValues {
  readonly entries: ReadonlyArray<readonly [string, string]>
  constructor(entries: ReadonlyArray<readonly [string, string]>) {
    this.entries = entries
  }
  get record(): Record<string, string> {
    return Object.fromEntries(this.entries)
  }
  toString(): string {
    return this.entries.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join(",")
  }
}

const endpoint: Parser<Endpoint> = (raw) => {
  const expected = "a URL starting with http:// or https://, e.g. http://otel-collector:4318"
  if (!URL.canParse(raw.trim())) return Result.fail(expected)
  const url = new URL(raw.trim())
  return url.protocol === "http:" || url.protocol === "https:"
    ? Result.succeed(new Endpoint(url))
    : Result.fail(expected)
}

/** `k=v` pairs separated by commas; keys are printable ASCII without `=`/`,`, values percent-decoded. */
const keyValues = (lowerCaseKeys: boolean, example: string): Parser<KeyValues> => (raw) => {
  const expected = `comma-separated key=value pairs, values percent-encoded, e.g. ${example}`
  const entries: Array<readonly [string, string]> = []
  for (const entry of raw.split(",")) {
    if (entry.trim() === "") continue
    const eq = entry.indexOf("=")
    if (eq <= 0) return Result.fail(expected)
    const key = entry.slice(0, eq).trim()
    if (!/^[\x21-\x7e]+$/.test(key)) return Result.fail(expected)
    let value: string
    try {
      value = decodeURIComponent(entry.slice(eq + 1).trim())
    } catch {
      return Result.fail(expected)
    }
    entries.push([lowerCaseKeys ? key.toLowerCase() : key, value])
  }
  return Result.succeed(new KeyValues(entries))
}

const headers: Parser<Redacted.Redacted<KeyValues>> = (raw) =>
  Result.map(keyValues(true, "authorization=Bearer%20abc,x-tenant=t1")(raw), (kv) => Redacted.make(kv))

const millis = (min: number, max: number): Parser<number> => (raw) =>
  Result.mapError(int(min, max)(raw), () => `an integer number of milliseconds from ${min} to ${max}`)

const ratio: Parser<number> = (raw) => {
  const n = Number(raw.trim())
  return raw.trim() !== "" && Number.isFinite(n) && n >= 0 && n <= 1 ?
    Result.succeed(n) :
    Result.fail("a sampling probability from 0 to 1, e.g. 0.01 for 1 %")
}

const propagators: Parser<ReadonlyArray<PropagatorName>> = (raw) => {
  const names = raw.split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "")
  const expected = `a comma-separated list of ${PROPAGATORS.join(", ")}, or none`
  if (names.length === 1 && names[0] === "none") return Result.succeed([])
  if (names.length === 0 || !names.every((n) => (PROPAGATORS as ReadonlyArray<string>).includes(n))) {
    return Result.fail(expected)
  }
  return Result.succeed([...new Set(names)] as Array<PropagatorName>)
}

const exporter = oneOf(["otlp", "none"])

const signalName = { TRACES: "traces", METRICS: "metrics", LOGS: "logs" } as const

const perSignal = <K extends string, A>(
  suffix: K,
  make: (signal: Signal) => ReturnType<typeof optional<A>>
) =>
  ({
    [`OTEL_EXPORTER_OTLP_TRACES_${suffix}`]: make("TRACES"),
    [`OTEL_EXPORTER_OTLP_METRICS_${suffix}`]: make("METRICS"),
    [`OTEL_EXPORTER_OTLP_LOGS_${suffix}`]: make("LOGS")
  }) as Record<`OTEL_EXPORTER_OTLP_${Signal}_${K}`, ReturnType<typeof optional<A>>>

/** The rows, in the order `GET /api/v1/config` and the README list them. */
export const VARIABLES = {
  OTEL_SDK_DISABLED: variable(boolean, false, "true: no OpenTelemetry export at all, whatever else is set"),
  OTEL_SERVICE_NAME: variable(text, "janus", "service.name of every span, metric and log record"),
  OTEL_RESOURCE_ATTRIBUTES: variable(
    keyValues(false, "deployment.environment=prod,k8s.pod.name=janus-0"),
    new KeyValues([]),
    "Extra resource attributes (k=v,...); service.instance.id defaults to the host name (the pod name)"
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(
    endpoint,
    "Collector base URL (http(s)://host:4318 for HTTP, http(s)://host:4317 for grpc); unset: no export"
  ),
  ...perSignal(
    "ENDPOINT",
    (s) => optional(endpoint, `Collector URL for ${signalName[s]}, used as written (overrides the base URL)`)
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: variable(
    oneOf(PROTOCOLS),
    "http/protobuf",
    "OTLP transport: grpc, http/protobuf or http/json"
  ),
  ...perSignal("PROTOCOL", (s) => optional(oneOf(PROTOCOLS), `OTLP transport for ${signalName[s]}`)),
  OTEL_EXPORTER_OTLP_HEADERS: optional(headers, "Headers sent with every export (k=v,..., percent-encoded)", true),
  ...perSignal("HEADERS", (s) => optional(headers, `Headers sent with ${signalName[s]} exports`, true)),
  OTEL_EXPORTER_OTLP_TIMEOUT: variable(millis(1, 600_000), 10_000, "Time limit of one export request, ms"),
  ...perSignal("TIMEOUT", (s) => optional(millis(1, 600_000), `Time limit of one ${signalName[s]} export, ms`)),
  OTEL_EXPORTER_OTLP_COMPRESSION: variable(oneOf(["gzip", "none"]), "none", "Export request compression: gzip or none"),
  ...perSignal("COMPRESSION", (s) => optional(oneOf(["gzip", "none"]), `Compression of ${signalName[s]} exports`)),
  OTEL_TRACES_EXPORTER: variable(exporter, "otlp", "otlp or none (no span export)"),
  OTEL_METRICS_EXPORTER: variable(exporter, "otlp", "otlp or none (no OTLP metrics; /metrics stays)"),
  OTEL_LOGS_EXPORTER: variable(exporter, "otlp", "otlp or none (no log export; stdout stays)"),
  OTEL_TRACES_SAMPLER: variable(
    oneOf(SAMPLERS),
    "parentbased_always_on",
    "Which traces are kept: parentbased_traceidratio keeps OTEL_TRACES_SAMPLER_ARG of new traces and follows " +
      "the caller's decision otherwise"
  ),
  OTEL_TRACES_SAMPLER_ARG: optional(ratio, "Probability of the ratio samplers, 0 to 1 (0.01 = 1 %); default 1"),
  OTEL_PROPAGATORS: variable(
    propagators,
    ["tracecontext", "baggage"],
    "Trace context formats read from requests and sent downstream and upstream: tracecontext, baggage, b3 " +
      "(single header), b3multi (X-B3-*), or none"
  ),
  OTEL_METRIC_EXPORT_INTERVAL: variable(millis(100, 3_600_000), 60_000, "Time between metric exports, ms"),
  OTEL_BSP_SCHEDULE_DELAY: variable(millis(1, 600_000), 5_000, "Time between span exports, ms"),
  OTEL_BLRP_SCHEDULE_DELAY: variable(millis(1, 600_000), 1_000, "Time between log exports, ms"),
  OTEL_METRICS_EXEMPLAR_FILTER: variable(
    oneOf(["trace_based", "always_on", "always_off"]),
    "trace_based",
    "Which calls leave an exemplar on the call-duration histogram: trace_based (sampled ones), always_off"
  )
} as const

/** One mistake, in the shape of `JanusConfig`'s `InvalidVariable`. */
export interface Problem {
  readonly name: string
  readonly value: string
  readonly expected: string
}

/** The cross-variable mistakes of `settings` (partially parsed: a variable that failed is absent). */
export const problems = (settings: Readonly<Record<string, unknown>>): ReadonlyArray<Problem> => {
  const found: Array<Problem> = []
  // always_on would record an exemplar pointing at a trace nobody keeps; say so rather than mislead.
  if (settings.OTEL_METRICS_EXEMPLAR_FILTER === "always_on") {
    found.push({
      name: "OTEL_METRICS_EXEMPLAR_FILTER",
      value: "\"always_on\"",
      expected: "trace_based or always_off (an exemplar links to a sampled trace; unsampled calls have none)"
    })
  }
  const base = settings.OTEL_EXPORTER_OTLP_ENDPOINT as Option.Option<Endpoint> | undefined
  for (const signal of SIGNALS) {
    const own = settings[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`] as Option.Option<Endpoint> | undefined
    const protocol = (settings[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`] as Option.Option<OtlpProtocol> | undefined)
      ?.pipe(Option.getOrUndefined) ?? settings.OTEL_EXPORTER_OTLP_PROTOCOL
    const url = own !== undefined && Option.isSome(own) ? own.value : base?.pipe(Option.getOrUndefined)
    // gRPC has no path: a path there is most often an HTTP endpoint given to a gRPC exporter.
    const name = own !== undefined && Option.isSome(own) ?
      `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT` :
      "OTEL_EXPORTER_OTLP_ENDPOINT"
    if (
      protocol === "grpc" && url !== undefined && url.url.pathname !== "/" && url.url.pathname !== "" &&
      !found.some((problem) => problem.name === name)
    ) {
      found.push({
        name,
        value: JSON.stringify(String(url)),
        expected: "http(s)://host:port without a path when the protocol is grpc (usually port 4317)"
      })
    }
  }
  return found
}
