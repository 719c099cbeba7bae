/**
 * Head sampling and propagation, received for real (OTLP/HTTP JSON
 * receiver, loopback downstream):
 *
 * - 1 % of 10,000 new traces are kept, within a binomial bound. The 10,000
 *   calls run in-process through the instrumented tools/call path (the
 *   `McpGuard` decoration that makes the tools/call span, under a server
 *   span as effect's HTTP server makes it), not over HTTP: 10,000 HTTP calls
 *   would take minutes on a loaded CI machine and exercise nothing more of
 *   the sampler.
 * - Parent-based decisions are honoured both ways, over HTTP: a caller's
 *   sampled `traceparent` is kept although the ratio would drop its trace,
 *   an unsampled one is dropped although the ratio would keep it, and the
 *   decision reaches the downstream (REST) and the upstream (an official SDK
 *   MCP server) in the `traceparent` flag.
 * - `OTEL_PROPAGATORS=b3multi,baggage`: X-B3-* read and written, W3C
 *   headers ignored, baggage passed on.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Connections } from "@janus/storage"
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js"
import * as OtelApi from "@opentelemetry/api"
import { TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-base"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { OtlpExporter } from "effect/observability"
import { z } from "zod"
import * as Instrument from "../../src/calls/Instrument.ts"
import * as Caller from "../../src/mcp/Caller.ts"
import { McpGuard } from "../../src/mcp/Guard.ts"
import { Otlp } from "../../src/observability/index.ts"
import { serveMcp, v1Sessions } from "../federation/upstreams.ts"
import { stateless } from "../mcp/http-client.ts"
import * as Downstream from "../support/Downstream.ts"
import * as ObservedGateway from "./support/ObservedGateway.ts"
import * as Receiver from "./support/Receiver.ts"

const flush = Effect.flatMap(Effect.service(OtlpExporter.Flusher), (flusher) => flusher.flush)

const settings = (receiver: Receiver.ReceiverState, ratio: number): Otlp.OtlpSettings => ({
  serviceName: "janus-sampling",
  serviceVersion: "0.1.0",
  attributes: { "service.instance.id": "test" },
  traces: {
    protocol: "http/json",
    url: `${receiver.url}/v1/traces`,
    headers: {},
    timeoutMillis: 5_000,
    compression: "none"
  },
  metrics: undefined,
  logs: undefined,
  sampler: { name: "parentbased_traceidratio", ratio },
  metricsExportInterval: "1 hour",
  tracesExportInterval: "100 millis",
  logsExportInterval: "1 hour"
})

const exportTo = (ratio: number) =>
  Layer.unwrap(Effect.map(Effect.service(Receiver.Receiver), (receiver) => Otlp.layerWith(settings(receiver, ratio))))

const named = (receiver: Receiver.ReceiverState, name: string) =>
  Receiver.spans(receiver).filter((span) => span.name === name)

describe("1 % head sampling", () => {
  layer(exportTo(0.01).pipe(Layer.provideMerge(Receiver.layer)), { timeout: 120_000, excludeTestServices: true })(
    "10,000 calls",
    (it) => {
      it.effect("keeps 1 % of new traces (binomial, 5 sigma) and nothing under the ones it drops", () =>
        Effect.gen(function*() {
          const receiver = yield* Receiver.Receiver
          const guard = Instrument.mcpGuard(McpGuard.of({
            admit: () => Effect.succeed(Caller.anonymous),
            admitMessage: () => Effect.void,
            guardCall: (_caller, _tool, call) => call
          }))
          const calls = 10_000
          for (let i = 0; i < calls; i++) {
            yield* guard.guardCall(Caller.anonymous, "sampled_tool", Effect.succeed({ content: [] })).pipe(
              Effect.andThen(Effect.void.pipe(Effect.withSpan("janus.inner"))),
              // a new trace per call, as each HTTP request without traceparent is
              Effect.withSpan("POST /mcp", { kind: "server", root: true })
            )
          }
          yield* flush
          yield* flush
          const roots = named(receiver, "POST /mcp")
          const toolCalls = named(receiver, "tools/call sampled_tool")
          // n = 10,000, p = 0.01: mean 100, sigma = sqrt(10,000 x 0.01 x 0.99) = 9.95; 5 sigma = 49.7
          assert.isAtLeast(roots.length, 51)
          assert.isAtMost(roots.length, 149)
          // every kept trace is whole (server span, tools/call under it), and no dropped trace left a span
          assert.strictEqual(toolCalls.length, roots.length)
          const rootIds = new Set(roots.map((span) => span.spanId))
          for (const call of toolCalls) assert.isTrue(rootIds.has(call.parentSpanId!), "tools/call under a kept root")
          assert.strictEqual(named(receiver, "janus.inner").length, roots.length)
        }))
    }
  )
})

const seed = ObservedGateway.seedPets()

const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base).href))

const gateway = (ratio: number, config: Parameters<typeof ObservedGateway.layer>[0] = {}) =>
  Layer.effectDiscard(seed).pipe(
    Layer.provideMerge(ObservedGateway.layer(config)),
    Layer.provideMerge(exportTo(ratio)),
    Layer.provideMerge(Receiver.layer),
    Layer.provideMerge(Downstream.layer)
  )

/** A trace id whose `traceidratio` decision at `ratio` is `keep`. */
const traceIdWhere = (ratio: number, keep: boolean): string => {
  const sampler = new TraceIdRatioBasedSampler(ratio)
  for (let i = 1;; i++) {
    // (the ratio sampler XORs the id's four 32-bit words: vary one, keep the others apart)
    const id = ((i * 2654435761) >>> 0).toString(16).padStart(8, "0") + "0".repeat(23) + "1"
    const kept = sampler.shouldSample(OtelApi.ROOT_CONTEXT, id).decision === 2
    if (kept === keep) return id
  }
}

const waitFor = (check: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 50; i++) {
      yield* flush
      if (yield* check) return
      yield* Effect.sleep("100 millis")
    }
  })

/** An official SDK v1 MCP server with an `echo` tool, keeping the `traceparent` of every POST it receives. */
class TracedUpstream extends Context.Service<TracedUpstream, {
  readonly url: string
  readonly traceparents: Array<string | undefined>
}>()("test/TracedUpstream") {}

const TracedUpstreamLive = Layer.effect(
  TracedUpstream,
  Effect.acquireRelease(
    Effect.promise(async () => {
      const traceparents: Array<string | undefined> = []
      const { handle } = v1Sessions(() => {
        const server = new McpServerV1({ name: "traced", version: "1.0.0" }, { capabilities: { tools: {} } })
        server.registerTool(
          "echo",
          { description: "Echoes its text", inputSchema: { text: z.string() } },
          async ({ text }) => ({
            content: [{ type: "text", text }]
          })
        )
        return server
      })
      const served = await serveMcp((req, res) => {
        if (req.method === "POST") traceparents.push(req.headers.traceparent as string | undefined)
        return handle(req, res)
      })
      return { ...served, traceparents }
    }),
    (upstream) => Effect.promise(() => upstream.stop())
  )
)

const seedUpstream = Effect.gen(function*() {
  const upstream = yield* TracedUpstream
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "traced",
    url: upstream.url,
    transport: "streamable-http",
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 10_000
  })
})

/** The name under which the gateway lists the upstream's `echo`, once it does. */
const upstreamEcho = Effect.gen(function*() {
  for (let i = 0; i < 100; i++) {
    const reply = yield* stateless(yield* mcpUrl, "tools/list", {})
    const tools = (reply.body?.result?.tools ?? []) as Array<{ name: string }>
    const echo = tools.find((tool) => tool.name.endsWith("echo"))
    if (echo !== undefined) return echo.name
    yield* Effect.sleep("100 millis")
  }
  return yield* Effect.die(new Error("the upstream's echo tool was never listed"))
})

describe("parent-based sampling over HTTP", () => {
  const withUpstream = Layer.effectDiscard(seedUpstream).pipe(
    Layer.provideMerge(gateway(0.5)),
    Layer.provideMerge(TracedUpstreamLive)
  )
  layer(withUpstream, { timeout: 60_000, excludeTestServices: true })("ratio 0.5 for new traces", (it) => {
    it.effect("the decision reaches an upstream MCP server in traceparent, sampled (01) and not (00)", () =>
      Effect.gen(function*() {
        const upstream = yield* TracedUpstream
        const echo = yield* upstreamEcho
        for (const [keep, flag] of [[false, "01"], [true, "00"]] as const) {
          // the caller's decision, against what the ratio would decide for the trace
          const traceId = traceIdWhere(0.5, keep)
          const reply = yield* stateless(yield* mcpUrl, "tools/call", { name: echo, arguments: { text: "hi" } }, {
            traceparent: `00-${traceId}-00f067aa0ba902b7-${flag}`
          })
          assert.strictEqual(reply.status, 200)
          assert.deepStrictEqual(reply.body.result.content, [{ type: "text", text: "hi" }])
          const sent = upstream.traceparents.filter((header) => header?.startsWith(`00-${traceId}-`))
          assert.lengthOf(sent, 1, `one upstream request in trace ${traceId}`)
          assert.match(sent[0]!, new RegExp(`^00-${traceId}-[0-9a-f]{16}-${flag}$`))
          assert.notInclude(sent[0]!, "00f067aa0ba902b7", "the upstream's parent is Janus's client span")
        }
      }))

    it.effect("a sampled caller is kept where the ratio would drop it, and the downstream is told 01", () =>
      Effect.gen(function*() {
        const receiver = yield* Receiver.Receiver
        const downstream = yield* Downstream.Downstream
        const traceId = traceIdWhere(0.5, false)
        const reply = yield* stateless(yield* mcpUrl, "tools/call", { name: "get_pet", arguments: { id: "1" } }, {
          traceparent: `00-${traceId}-00f067aa0ba902b7-01`
        })
        assert.strictEqual(reply.status, 200)
        yield* waitFor(Effect.sync(() => named(receiver, "tools/call get_pet").some((s) => s.traceId === traceId)))
        const spans = Receiver.spans(receiver).filter((s) => s.traceId === traceId)
        assert.includeMembers(spans.map((s) => s.name), ["POST /mcp", "tools/call get_pet", "janus.egress", "GET"])
        const client = spans.find((s) => s.name === "GET")!
        assert.strictEqual(downstream.lastHeaders["traceparent"], `00-${traceId}-${client.spanId}-01`)
      }))

    it.effect("an unsampled caller is dropped where the ratio would keep it, and the downstream is told 00", () =>
      Effect.gen(function*() {
        const receiver = yield* Receiver.Receiver
        const downstream = yield* Downstream.Downstream
        const traceId = traceIdWhere(0.5, true)
        const reply = yield* stateless(yield* mcpUrl, "tools/call", { name: "get_pet", arguments: { id: "2" } }, {
          traceparent: `00-${traceId}-00f067aa0ba902b7-00`
        })
        assert.strictEqual(reply.status, 200)
        // the same trace id travels on, unsampled
        assert.match(String(downstream.lastHeaders["traceparent"]), new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`))
        // a sampled call after it is exported: once it is, the unsampled one would have been too
        const marker = traceIdWhere(0.5, false).replace(/^0/, "f")
        yield* stateless(yield* mcpUrl, "tools/call", { name: "get_pet", arguments: { id: "3" } }, {
          traceparent: `00-${marker}-00f067aa0ba902b7-01`
        })
        yield* waitFor(Effect.sync(() => Receiver.spans(receiver).some((s) => s.traceId === marker)))
        assert.isTrue(Receiver.spans(receiver).some((s) => s.traceId === marker))
        assert.deepStrictEqual(Receiver.spans(receiver).filter((s) => s.traceId === traceId), [])
      }))

    it.effect("a new trace the ratio keeps leaves an exemplar in /metrics (OpenMetrics)", () =>
      Effect.gen(function*() {
        const receiver = yield* Receiver.Receiver
        const base = (yield* mcpUrl).replace(/\/mcp$/, "")
        for (let i = 0; i < 20; i++) {
          yield* stateless(yield* mcpUrl, "tools/call", { name: "get_pet", arguments: { id: String(i) } })
        }
        yield* waitFor(Effect.sync(() => named(receiver, "tools/call get_pet").length > 0))
        const response = yield* Effect.promise(() =>
          fetch(`${base}/metrics`, { headers: { accept: "application/openmetrics-text; version=1.0.0" } })
        )
        assert.match(response.headers.get("content-type") ?? "", /^application\/openmetrics-text; version=1\.0\.0/)
        const text = yield* Effect.promise(() => response.text())
        assert.isTrue(text.endsWith("# EOF\n"))
        // counters: family named without _total, samples with it
        assert.match(text, /^# TYPE janus_calls counter$/m)
        assert.match(text, /^janus_calls_total\{/m)
        const exemplars = [...text.matchAll(
          /^mcp_server_operation_duration_seconds_bucket\{[^}]*gen_ai_tool_name="get_pet"[^}]*\} \d+ # \{trace_id="([0-9a-f]{32})",span_id="([0-9a-f]{16})"\} [0-9.e-]+ \d+\.\d{3}$/gm
        )]
        assert.isAtLeast(exemplars.length, 1, "an exemplar on a get_pet bucket")
        const exported = new Set(Receiver.spans(receiver).map((s) => `${s.traceId}/${s.spanId}`))
        for (const [, traceId, spanId] of exemplars) {
          assert.isTrue(exported.has(`${traceId}/${spanId}`), "the exemplar points at an exported tools/call span")
        }
        // the Prometheus text format stays the default
        const plain = yield* Effect.promise(() => fetch(`${base}/metrics`).then((r) => r.text()))
        assert.notInclude(plain, "# EOF")
        assert.notInclude(plain, "trace_id=")
      }))
  })
})

describe("OTEL_PROPAGATORS=b3multi,baggage", () => {
  layer(gateway(1, { config: { OTEL_PROPAGATORS: ["b3multi", "baggage"] } }), {
    timeout: 60_000,
    excludeTestServices: true
  })("a gateway", (it) => {
    it.effect("reads X-B3-*, ignores traceparent, writes X-B3-* downstream and passes baggage on", () =>
      Effect.gen(function*() {
        const receiver = yield* Receiver.Receiver
        const downstream = yield* Downstream.Downstream
        const b3Trace = "80f198ee56343ba864fe8b2a57d3eff7"
        const w3cTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
        const reply = yield* stateless(yield* mcpUrl, "tools/call", { name: "get_pet", arguments: { id: "9" } }, {
          "x-b3-traceid": b3Trace,
          "x-b3-spanid": "e457b5a2e4d86bd1",
          "x-b3-sampled": "1",
          traceparent: `00-${w3cTrace}-00f067aa0ba902b7-01`,
          baggage: "tenant=acme, region=eu%2D1;p=1"
        })
        assert.strictEqual(reply.status, 200)
        yield* waitFor(Effect.sync(() => named(receiver, "GET").some((s) => s.traceId === b3Trace)))
        const http = Receiver.spans(receiver).find((s) => s.name === "POST /mcp" && s.traceId === b3Trace)
        assert.strictEqual(http?.parentSpanId, "e457b5a2e4d86bd1")
        assert.isFalse(Receiver.spans(receiver).some((s) => s.traceId === w3cTrace))
        const client = Receiver.spans(receiver).find((s) => s.name === "GET" && s.traceId === b3Trace)!
        assert.strictEqual(downstream.lastHeaders["x-b3-traceid"], b3Trace)
        assert.strictEqual(downstream.lastHeaders["x-b3-spanid"], client.spanId)
        assert.strictEqual(downstream.lastHeaders["x-b3-sampled"], "1")
        assert.isUndefined(downstream.lastHeaders["traceparent"])
        assert.isUndefined(downstream.lastHeaders["b3"])
        assert.include(String(downstream.lastHeaders["baggage"]), "tenant=acme")
        // normalised by the W3C propagator (percent-decoded where the encoding is not needed), metadata kept
        assert.include(String(downstream.lastHeaders["baggage"]), "region=eu-1;p=1")
      }))
  })
})
