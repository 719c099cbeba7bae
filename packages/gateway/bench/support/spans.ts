/**
 * Where a tools/call's time goes, from the gateway's own spans: a small
 * OTLP/HTTP JSON receiver on loopback for `janus serve` to export to
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`), and the per-step breakdown of the
 * `POST /mcp` traces it received.
 *
 * The steps are the span tree `calls/Instrument.ts` documents:
 * `janus.admit` (per-IP limiter, authentication, per-identity limiter),
 * `tools/call {tool}` (authorize, permit, catalog call) with
 * `janus.config_cache.snapshot`, `janus.secret_cache.reveal` and
 * `janus.egress` (breaker, timeout, retries) around the HttpClient `GET`
 * (the downstream round trip). A step's *self* time is its duration minus
 * its children's; the HTTP span's self time is what is outside every step
 * (routing, body read and parse, MCP checks, dispatch, encoding, audit
 * append). Wall-clock durations: measure at concurrency 1 so they are not
 * time spent waiting for the event loop behind other calls.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string | undefined
  readonly name: string
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
}

export interface Receiver {
  readonly url: string
  readonly spans: Array<Span>
  /**
   * Trace export requests this receiver could not read (not `application/json`, or not JSON), by
   * content type: the gateway's default protocol is `http/protobuf`, so the gateway under test must
   * be started with {@link receiverEnv}; a non-zero count here says it was not.
   */
  readonly unreadable: Map<string, number>
  readonly close: () => Promise<void>
}

/**
 * The gateway's environment for exporting spans to `receiver`: OTLP/JSON (this receiver does not
 * decode protobuf, and `OTEL_EXPORTER_OTLP_PROTOCOL` defaults to `http/protobuf`), every trace
 * sampled, spans sent every `scheduleDelayMs`, and no metric or log export (not read here).
 */
export const receiverEnv = (receiver: Receiver, scheduleDelayMs = 200): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_TRACES_SAMPLER: "parentbased_always_on",
  OTEL_BSP_SCHEDULE_DELAY: String(scheduleDelayMs),
  OTEL_METRICS_EXPORTER: "none",
  OTEL_LOGS_EXPORTER: "none"
})

/** Accepts OTLP JSON on /v1/traces (keeps the spans), /v1/metrics and /v1/logs (discarded). */
export const startReceiver = (): Promise<Receiver> =>
  new Promise((resolve) => {
    const spans: Array<Span> = []
    const unreadable = new Map<string, number>()
    const server: Server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        if (request.url === "/v1/traces") {
          const type = String(request.headers["content-type"] ?? "none")
          try {
            if (!type.startsWith("application/json")) throw new Error(type)
            const json = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
              resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<Span> }> }>
            }
            for (const resource of json.resourceSpans ?? []) {
              for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []))
            }
          } catch {
            // counted, so the bench can say why it has no traces instead of printing an empty breakdown
            unreadable.set(type, (unreadable.get(type) ?? 0) + 1)
          }
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        spans,
        unreadable,
        close: () => new Promise((done) => server.close(() => done()))
      })
    })
  })

const micros = (span: Span) => Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1_000

/** The step a span stands for, or undefined for spans outside the tools/call tree. */
const stepOf = (name: string): string | undefined => {
  if (name === "POST /mcp") return "HTTP request (routing, body, MCP checks, dispatch, encode, audit append)"
  if (name === "janus.admit") return "admit (IP limiter, auth, identity limiter)"
  // the call's audit record is written inside it: with AUDIT_DURABILITY=sync its self time includes the wait for
  // the audit batch's commit (the batch writer's own SQL spans are traces of their own, not the call's)
  if (name.startsWith("tools/call ")) return "tools/call (authorize, permit, resolve, REST mapping, audit wait)"
  if (name === "janus.config_cache.snapshot") return "config cache"
  if (name === "janus.secret_cache.reveal") return "secret cache"
  if (name === "janus.egress") return "egress (breaker, timeout, retry)"
  if (name === "GET") return "downstream round trip (HttpClient GET)"
  // storage's own spans inside the call's trace (a token or config lookup that missed its cache)
  if (name === "postgresql" || name === "sql.transaction") return "storage (SQL inside the call)"
  return undefined
}

export interface StepShare {
  readonly step: string
  /** Mean self time per call, µs. */
  readonly selfMicros: number
  /** Mean duration per call, µs. */
  readonly totalMicros: number
}

/**
 * Mean self and total time per call of every step, over the traces whose root is `POST /mcp` and
 * started at or after `sinceMs` (Unix ms: leave out a warm-up). `rootP50Micros` is the median duration
 * of those roots, to compare with the client's p50.
 */
export const breakdown = (
  spans: ReadonlyArray<Span>,
  sinceMs = 0
): { readonly calls: number; readonly rootP50Micros: number; readonly steps: Array<StepShare> } => {
  const since = BigInt(Math.floor(sinceMs)) * 1_000_000n
  const byTrace = new Map<string, Array<Span>>()
  for (const span of spans) {
    const list = byTrace.get(span.traceId) ?? []
    list.push(span)
    byTrace.set(span.traceId, list)
  }
  const self = new Map<string, number>()
  const total = new Map<string, number>()
  let calls = 0
  const roots: Array<number> = []
  for (const trace of byTrace.values()) {
    const root = trace.find((s) => s.name === "POST /mcp")
    // complete tools/call traces only: the root and the downstream GET both arrived
    if (
      root === undefined || !trace.some((s) => s.name === "GET") || !trace.some((s) => s.name.startsWith("tools/call "))
    ) {
      continue
    }
    if (BigInt(root.startTimeUnixNano) < since) continue
    calls++
    roots.push(micros(root))
    const childrenMicros = new Map<string, number>()
    for (const span of trace) {
      if (span.parentSpanId === undefined || span.parentSpanId === "") continue
      childrenMicros.set(span.parentSpanId, (childrenMicros.get(span.parentSpanId) ?? 0) + micros(span))
    }
    for (const span of trace) {
      const step = stepOf(span.name)
      if (step === undefined) continue
      const duration = micros(span)
      total.set(step, (total.get(step) ?? 0) + duration)
      self.set(step, (self.get(step) ?? 0) + Math.max(0, duration - (childrenMicros.get(span.spanId) ?? 0)))
    }
  }
  const steps = [...total.keys()].map((step) => ({
    step,
    selfMicros: Math.round((self.get(step) ?? 0) / Math.max(1, calls)),
    totalMicros: Math.round((total.get(step) ?? 0) / Math.max(1, calls))
  })).sort((a, b) => b.selfMicros - a.selfMicros)
  roots.sort((a, b) => a - b)
  return { calls, rootP50Micros: Math.round(roots[roots.length >> 1] ?? 0), steps }
}
