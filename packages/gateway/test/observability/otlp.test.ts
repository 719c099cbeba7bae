/**
 * OTLP export, received for real, for each protocol (http/json,
 * http/protobuf, grpc): a receiver on 127.0.0.1 decodes the exports of a
 * gateway serving a tools/call against a loopback downstream, and the span
 * tree, its parent links and attributes, the metrics, the logs and the
 * resource are checked.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer, Option, Tracer } from "effect"
import { HttpServer } from "effect/http"
import { OtlpExporter } from "effect/observability"
import { load } from "../../src/config/JanusConfig.ts"
import { Metrics, Otlp, TraceContext } from "../../src/observability/index.ts"
import { stateless } from "../mcp/http-client.ts"
import * as Downstream from "../support/Downstream.ts"
import * as ObservedGateway from "./support/ObservedGateway.ts"
import * as Receiver from "./support/Receiver.ts"

const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base).href))

const seed = ObservedGateway.seedPets("s3cr3t-value-123")

/** Where each signal goes on the test receiver for `protocol`. */
const signalTo = (receiver: Receiver.ReceiverState, protocol: Receiver.Protocol, path: string) => ({
  protocol,
  url: protocol === "grpc" ? receiver.url : receiver.url + path,
  headers: { "x-collector-key": "collector-secret" },
  timeoutMillis: 5_000,
  compression: "none" as const
})

/** OTLP export settings for the test receiver, exporting every 100 ms. */
export const settingsFor = (
  receiver: Receiver.ReceiverState,
  protocol: Receiver.Protocol,
  sampler: Otlp.OtlpSettings["sampler"] = { name: "parentbased_always_on", ratio: 1 }
): Otlp.OtlpSettings => ({
  serviceName: "janus-test",
  serviceVersion: "0.1.0",
  attributes: { "service.instance.id": "test-instance", "deployment.environment": "test" },
  traces: signalTo(receiver, protocol, "/v1/traces"),
  metrics: signalTo(receiver, protocol, "/v1/metrics"),
  logs: signalTo(receiver, protocol, "/v1/logs"),
  sampler,
  metricsExportInterval: "100 millis",
  tracesExportInterval: "100 millis",
  logsExportInterval: "100 millis"
})

/** OTLP export to the test receiver. */
const OtlpToReceiver = (protocol: Receiver.Protocol) =>
  Layer.unwrap(
    Effect.map(Effect.service(Receiver.Receiver), (receiver) => Otlp.layerWith(settingsFor(receiver, protocol)))
  )

const flush = Effect.flatMap(Effect.service(OtlpExporter.Flusher), (flusher) => flusher.flush)

const incomingTraceId = "4bf92f3577b34da6a3ce929d0e0e4736"
const incomingSpanId = "00f067aa0ba902b7"

const byName = (spans: ReadonlyArray<Receiver.OtlpSpan>, name: string) => spans.filter((s) => s.name === name)
const one = (spans: ReadonlyArray<Receiver.OtlpSpan>, name: string, parent?: Receiver.OtlpSpan) => {
  const found = byName(spans, name).filter((s) => parent === undefined || s.parentSpanId === parent.spanId)
  assert.isAtLeast(found.length, 1, `no span ${name}${parent ? ` under ${parent.name}` : ""}`)
  return found[0]!
}

const waitForSpans = (receiver: Receiver.ReceiverState, name: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 50; i++) {
      yield* flush
      if (byName(Receiver.spans(receiver), name).length > 0) return
      yield* Effect.sleep("100 millis")
    }
  })

for (const protocol of ["http/json", "http/protobuf", "grpc"] as const) {
  describe(`OTLP export over ${protocol}`, () => {
    const TestLayer = Layer.effectDiscard(seed).pipe(
      Layer.provideMerge(ObservedGateway.layer()),
      Layer.provideMerge(OtlpToReceiver(protocol)),
      Layer.provideMerge(Receiver.layerFor(protocol)),
      Layer.provideMerge(Downstream.layer)
    )

    layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("a tools/call", (it) => {
      it.effect("exports the HTTP span, the tools/call span and its children with parents and attributes", () =>
        Effect.gen(function*() {
          const receiver = yield* Receiver.Receiver
          const downstream = yield* Downstream.Downstream
          const url = yield* mcpUrl
          const reply = yield* stateless(url, "tools/call", { name: "get_pet", arguments: { id: "7" } }, {
            traceparent: `00-${incomingTraceId}-${incomingSpanId}-01`,
            tracestate: "vendor=abc"
          })
          assert.strictEqual(reply.status, 200)
          assert.deepStrictEqual(reply.body.result.structuredContent, { id: "7", name: "Rex", tag: null })
          assert.match(reply.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/)

          yield* waitForSpans(receiver, "tools/call get_pet")
          const spans = Receiver.spans(receiver).filter((s) => s.traceId === incomingTraceId)

          // The HTTP server span continues the incoming trace.
          const http = one(spans, "POST /mcp")
          assert.strictEqual(http.parentSpanId, incomingSpanId)
          assert.strictEqual(http.kind, 2)
          const httpAttributes = Receiver.attributes(http.attributes)
          assert.strictEqual(httpAttributes["http.route"], "/mcp")
          assert.strictEqual(httpAttributes["http.request.method"], "POST")
          assert.strictEqual(httpAttributes["http.response.status_code"], 200)

          // Admission, then the MCP operation, both under the HTTP span.
          one(spans, "janus.admit", http)
          const call = one(spans, "tools/call get_pet", http)
          assert.strictEqual(call.kind, 2)
          assert.deepInclude(Receiver.attributes(call.attributes), {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_pet",
            "janus.outcome": "ok",
            "janus.connection": "pets",
            "janus.caller.id": "anonymous"
          })

          // Resolve, secret, egress under the call; the client span under egress.
          one(spans, "janus.config_cache.snapshot", call)
          const secret = one(spans, "janus.secret_cache.reveal", call)
          assert.strictEqual(Receiver.attributes(secret.attributes)["janus.secret.name"], "pets-key")
          const egress = one(spans, "janus.egress", call)
          assert.deepInclude(Receiver.attributes(egress.attributes), {
            "http.request.method": "GET",
            "http.response.status_code": 200,
            "janus.egress.attempts": 1
          })
          const client = one(spans, "GET", egress)
          assert.strictEqual(client.kind, 3)
          assert.strictEqual(Receiver.attributes(client.attributes)["http.response.status_code"], 200)

          // W3C trace context reached the downstream: the client span is its parent.
          assert.strictEqual(downstream.lastHeaders["traceparent"], `00-${incomingTraceId}-${client.spanId}-01`)

          // No span carries the secret.
          assert.notInclude(JSON.stringify(receiver.traces), "s3cr3t-value-123")

          // OTEL_EXPORTER_OTLP_HEADERS reach the collector (as gRPC metadata over grpc).
          assert.strictEqual(String(receiver.lastHeaders["x-collector-key"]), "collector-secret")

          // The resource names the service and the instance.
          assert.deepInclude(Receiver.resources(receiver)[0]!, {
            "service.name": "janus-test",
            "service.version": "0.1.0",
            "service.instance.id": "test-instance",
            "deployment.environment": "test"
          })

          // The protocol is the one asked for.
          assert.deepStrictEqual([...receiver.contentTypes], [
            { "http/json": "application/json", "http/protobuf": "application/x-protobuf", grpc: "application/grpc" }[
              protocol
            ]
          ])
        }))

      it.effect("exports the metrics and the logs, logs with the trace id", () =>
        Effect.gen(function*() {
          const receiver = yield* Receiver.Receiver
          const url = yield* mcpUrl
          // exemplars are process-wide: forget those of the protocols tested before this one
          Metrics.toolCallDurationExemplars.clear()
          yield* stateless(url, "tools/call", { name: "get_pet", arguments: { id: "8" } })
          // exports from here on were made after the call was answered
          const exportsBefore = receiver.metrics.length
          yield* Effect.logInfo("observed log line").pipe(Effect.withSpan("log-parent"))
          const getPetPoints = () =>
            Receiver.allMetrics(receiver, exportsBefore)
              .filter((m) => m.name === "mcp.server.operation.duration")
              .flatMap((m) => m.histogram.dataPoints)
              .filter((p: any) => Receiver.attributes(p.attributes)["gen_ai.tool.name"] === "get_pet")
          let point: any
          for (let i = 0; i < 50 && point === undefined; i++) {
            yield* flush
            point = getPetPoints().findLast((p: any) => (p.exemplars?.length ?? 0) > 0)
            if (point === undefined) yield* Effect.sleep("100 millis")
          }
          const names = Receiver.metricNames(receiver)
          for (
            const name of [
              "janus.calls",
              "mcp.server.operation.duration",
              "http.server.request.duration",
              "janus.calls.active"
            ]
          ) assert.isTrue(names.has(name), `metric ${name} not exported`)
          // exemplars point at the sampled traces of the calls, in every protocol
          assert.isDefined(point, "a call-duration data point for get_pet with an exemplar, exported after the call")
          assert.isAtLeast(Number(point.count), 1)
          // spans and metrics are exported by separate batches: the exemplar's span may come a flush later
          const exportedSpans = () => new Set(Receiver.spans(receiver).map((s) => `${s.traceId}/${s.spanId}`))
          const allExported = () => point.exemplars.every((e: any) => exportedSpans().has(`${e.traceId}/${e.spanId}`))
          for (let i = 0; i < 50 && !allExported(); i++) {
            yield* flush
            if (!allExported()) yield* Effect.sleep("100 millis")
          }
          const exported = exportedSpans()
          for (const exemplar of point.exemplars) {
            assert.isTrue(exported.has(`${exemplar.traceId}/${exemplar.spanId}`), "the exemplar's span was exported")
            assert.isAbove(Number(exemplar.asDouble), 0)
          }
          for (const resource of Receiver.otherResources(receiver)) {
            assert.deepInclude(resource, { "service.name": "janus-test", "service.instance.id": "test-instance" })
          }
          let logged: { body: string; traceId: string | undefined } | undefined
          for (let i = 0; i < 50 && logged === undefined; i++) {
            yield* flush
            logged = Receiver.logBodies(receiver).find((l) => l.body.includes("observed log line"))
            if (logged === undefined) yield* Effect.sleep("100 millis")
          }
          assert.isDefined(logged)
          assert.match(logged!.traceId ?? "", /^[0-9a-f]{32}$/)
        }))

      it.effect("an MCP request's _meta.traceparent parents the operation, linked to the HTTP span", () =>
        Effect.gen(function*() {
          const receiver = yield* Receiver.Receiver
          const metaTrace = "0af7651916cd43dd8448eb211c80319c"
          const metaSpan = "b7ad6b7169203331"
          // What the Dispatcher does once wired (recipe 6), around an operation span.
          yield* Effect.void.pipe(
            Effect.withSpan("tools/call meta_tool", { kind: "server" }),
            Effect.provideService(TraceContext.TransportSpan, undefined),
            TraceContext.withMetaParent({ traceparent: `00-${metaTrace}-${metaSpan}-01`, tracestate: "k=v" }),
            Effect.withSpan("POST /mcp (transport)", { kind: "server" })
          )
          const headers = yield* TraceContext.inject({ accept: "x" }).pipe(
            TraceContext.withMetaParent({ traceparent: `00-${metaTrace}-${metaSpan}-01`, tracestate: "k=v" })
          )
          assert.deepStrictEqual(headers, {
            accept: "x",
            traceparent: `00-${metaTrace}-${metaSpan}-01`,
            tracestate: "k=v"
          })
          yield* waitForSpans(receiver, "tools/call meta_tool")
          const operation = one(Receiver.spans(receiver), "tools/call meta_tool")
          assert.strictEqual(operation.traceId, metaTrace)
          assert.strictEqual(operation.parentSpanId, metaSpan)
        }))
    })
  })
}

describe("Otlp.settingsOf (the OTEL_* variables)", () => {
  const settings = (env: Record<string, string>) =>
    load.pipe(
      Effect.map((config) => Otlp.settingsOf(config, "9.9.9")),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
    )

  it.effect("no endpoint, no export; OTEL_SDK_DISABLED and *_EXPORTER=none turn export off", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isNone(yield* settings({ OTEL_SERVICE_NAME: "x" })))
      assert.isTrue(
        Option.isNone(yield* settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }))
      )
      const tracesOnly = Option.getOrThrow(
        yield* settings({
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
          OTEL_METRICS_EXPORTER: "none",
          OTEL_LOGS_EXPORTER: "none"
        })
      )
      assert.isDefined(tracesOnly.traces)
      assert.isUndefined(tracesOnly.metrics)
      assert.isUndefined(tracesOnly.logs)
    }))

  it.effect("reads the standard variables, per signal over the general ones", () =>
    Effect.gen(function*() {
      const value = Option.getOrThrow(
        yield* settings({
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4317",
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc",
          OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/json",
          OTEL_SERVICE_NAME: "janus-prod",
          OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc,x-tenant = t1",
          OTEL_EXPORTER_OTLP_LOGS_HEADERS: "x-logs=1",
          OTEL_EXPORTER_OTLP_TIMEOUT: "2000",
          OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: "3000",
          OTEL_EXPORTER_OTLP_COMPRESSION: "gzip",
          OTEL_METRIC_EXPORT_INTERVAL: "15000",
          OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod,team=a%2Cb",
          OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
          OTEL_TRACES_SAMPLER_ARG: "0.01"
        })
      )
      assert.strictEqual(value.serviceName, "janus-prod")
      assert.strictEqual(value.serviceVersion, "9.9.9")
      assert.deepStrictEqual(value.traces, {
        protocol: "grpc",
        url: "http://collector:4317",
        headers: { authorization: "Bearer abc", "x-tenant": "t1" },
        timeoutMillis: 2000,
        compression: "gzip"
      })
      assert.deepStrictEqual(value.metrics, {
        protocol: "http/json",
        url: "http://collector:4318/v1/metrics",
        headers: { authorization: "Bearer abc", "x-tenant": "t1" },
        timeoutMillis: 3000,
        compression: "gzip"
      })
      assert.deepStrictEqual(value.logs, {
        protocol: "http/protobuf",
        url: "http://collector:4318/v1/logs",
        headers: { "x-logs": "1" },
        timeoutMillis: 2000,
        compression: "gzip"
      })
      assert.deepStrictEqual(value.sampler, { name: "parentbased_traceidratio", ratio: 0.01 })
      assert.strictEqual(String(value.metricsExportInterval), String(Duration.millis(15_000)))
      assert.deepInclude(value.attributes, { "deployment.environment": "prod", team: "a,b" })
      assert.isString(value.attributes["service.instance.id"])
      // a service.instance.id set by the operator wins
      const own = Option.getOrThrow(
        yield* settings({
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
          OTEL_RESOURCE_ATTRIBUTES: "service.instance.id=pod-7"
        })
      )
      assert.deepStrictEqual(own.attributes, { "service.instance.id": "pod-7" })
      assert.strictEqual(own.serviceName, "janus")
      assert.strictEqual(own.traces?.protocol, "http/protobuf")
      assert.deepStrictEqual(own.sampler, { name: "parentbased_always_on", ratio: 1 })
    }))

  it.effect("every bad value is named with what is expected, secrets masked", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(settings({
        OTEL_EXPORTER_OTLP_ENDPOINT: "not a url",
        OTEL_EXPORTER_OTLP_PROTOCOL: "thrift",
        OTEL_EXPORTER_OTLP_HEADERS: "s3cr3t-token-value",
        OTEL_EXPORTER_OTLP_TIMEOUT: "10s",
        OTEL_EXPORTER_OTLP_COMPRESSION: "zstd",
        OTEL_TRACES_SAMPLER: "ratelimiting",
        OTEL_TRACES_SAMPLER_ARG: "1%",
        OTEL_PROPAGATORS: "tracecontext,jaeger",
        OTEL_RESOURCE_ATTRIBUTES: "no-equals",
        OTEL_SDK_DISABLED: "maybe",
        OTEL_METRICS_EXEMPLAR_FILTER: "sometimes"
      }))
      const message = error.message
      for (
        const line of [
          "OTEL_EXPORTER_OTLP_ENDPOINT=\"not a url\": expected a URL starting with http:// or https://",
          "OTEL_EXPORTER_OTLP_PROTOCOL=\"thrift\": expected one of grpc, http/protobuf, http/json",
          "OTEL_EXPORTER_OTLP_HEADERS=(18 characters, hidden): expected comma-separated key=value pairs",
          "OTEL_EXPORTER_OTLP_TIMEOUT=\"10s\": expected an integer number of milliseconds from 1 to 600000",
          "OTEL_EXPORTER_OTLP_COMPRESSION=\"zstd\": expected one of gzip, none",
          "OTEL_TRACES_SAMPLER=\"ratelimiting\": expected one of always_on, always_off, traceidratio",
          "OTEL_TRACES_SAMPLER_ARG=\"1%\": expected a sampling probability from 0 to 1",
          "OTEL_PROPAGATORS=\"tracecontext,jaeger\": expected a comma-separated list of tracecontext, baggage, b3, b3multi, or none",
          "OTEL_RESOURCE_ATTRIBUTES=\"no-equals\": expected comma-separated key=value pairs",
          "OTEL_SDK_DISABLED=\"maybe\": expected true or false",
          "OTEL_METRICS_EXEMPLAR_FILTER=\"sometimes\": expected one of trace_based, always_on, always_off"
        ]
      ) assert.include(message, line)
      assert.notInclude(message, "s3cr3t")
      // a gRPC endpoint with a path is an HTTP endpoint given to gRPC
      const grpc = yield* Effect.flip(settings({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/v1/traces",
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc"
      }))
      assert.include(
        grpc.message,
        "OTEL_EXPORTER_OTLP_ENDPOINT=\"http://collector:4318/v1/traces\": expected http(s)://host:port without a path"
      )
    }))
})

describe("TraceContext", () => {
  it("fromMeta accepts W3C traceparent only", () => {
    assert.isTrue(Option.isSome(TraceContext.fromMeta({ traceparent: `00-${incomingTraceId}-${incomingSpanId}-01` })))
    assert.isTrue(Option.isNone(TraceContext.fromMeta({ traceparent: "garbage" })))
    assert.isTrue(Option.isNone(TraceContext.fromMeta({ traceparent: `00-${"0".repeat(32)}-${incomingSpanId}-01` })))
    assert.isTrue(Option.isNone(TraceContext.fromMeta(undefined)))
  })

  it("isValidTraceState bounds the list", () => {
    assert.isTrue(TraceContext.isValidTraceState("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"))
    assert.isFalse(TraceContext.isValidTraceState("no equals sign"))
    assert.isFalse(TraceContext.isValidTraceState(Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(",")))
  })

  it.effect("injectMeta adds the current span's traceparent to _meta", () =>
    Effect.gen(function*() {
      const meta = yield* TraceContext.injectMeta({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" })
      const span = yield* Effect.currentSpan
      assert.strictEqual(meta.traceparent, TraceContext.traceparentOf(span))
      assert.strictEqual(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28")
    }).pipe(Effect.withSpan("upstream call"), Effect.provideService(Tracer.Tracer, Tracer.nativeTracer)))
})
