/**
 * OTLP receivers on 127.0.0.1 for tests, one per protocol, each decoding
 * what arrives into the OTLP/JSON shape so tests read one shape:
 *
 * - `http/json` and `http/protobuf`: an HTTP server accepting `/v1/traces`,
 *   `/v1/metrics` and `/v1/logs` (gzip bodies too); protobuf is decoded
 *   with the OTLP messages generated from the OpenTelemetry protos
 *   (`otlp-proto-root`, an independent implementation of the encoding);
 * - `grpc`: a `@grpc/grpc-js` server implementing the three OTLP collector
 *   services with the same messages.
 *
 * Protobuf ids (bytes) are turned into hex, as OTLP/JSON writes them.
 */
import * as Grpc from "@grpc/grpc-js"
import { Context, Effect, Layer } from "effect"
import { createServer } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { gunzipSync } from "node:zlib"

const require = createRequire(import.meta.url)
// protobufjs static code generated from opentelemetry-proto (the 0.57 line of @opentelemetry/otlp-transformer)
const root = require("otlp-proto-root/build/src/generated/root.js")
const v1 = (signal: "trace" | "metrics" | "logs") => root.opentelemetry.proto.collector[signal].v1
export const messages = {
  traces: { request: v1("trace").ExportTraceServiceRequest, response: v1("trace").ExportTraceServiceResponse },
  metrics: { request: v1("metrics").ExportMetricsServiceRequest, response: v1("metrics").ExportMetricsServiceResponse },
  logs: { request: v1("logs").ExportLogsServiceRequest, response: v1("logs").ExportLogsServiceResponse }
} as const
type SignalName = keyof typeof messages

export type Protocol = "http/json" | "http/protobuf" | "grpc"

export interface OtlpAttribute {
  readonly key: string
  readonly value: {
    readonly stringValue?: string
    readonly intValue?: string | number
    readonly doubleValue?: number
    readonly boolValue?: boolean
  }
}

export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string | undefined
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<OtlpAttribute>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly status: { readonly code: number; readonly message?: string }
}

export interface ReceiverState {
  url: string
  readonly protocol: Protocol
  readonly traces: Array<any>
  readonly metrics: Array<any>
  readonly logs: Array<any>
  /** Headers (HTTP) or metadata (gRPC) of the last export request. */
  lastHeaders: Record<string, string | Array<string> | undefined>
  /** Content types (HTTP) of the requests received, `application/grpc` for gRPC. */
  readonly contentTypes: Set<string>
  /** Content encodings of the requests received (`identity` when none). */
  readonly encodings: Set<string>
}

export class Receiver extends Context.Service<Receiver, ReceiverState>()("test/OtlpReceiver") {}

const ID_FIELDS = new Set(["traceId", "spanId", "parentSpanId"])

/** A decoded protobuf message as OTLP/JSON writes it (ids in hex, 64-bit numbers as strings). */
const toJson = (value: unknown, key = ""): unknown => {
  if (ID_FIELDS.has(key) && typeof value === "string") return Buffer.from(value, "base64").toString("hex")
  if (Array.isArray(value)) return value.map((v) => toJson(v))
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = toJson(v, k)
    return out
  }
  return value
}

export const decodeProtobuf = (signal: SignalName, bytes: Uint8Array): unknown => {
  const type = messages[signal].request
  return toJson(type.toObject(type.decode(bytes), { longs: String, bytes: String, enums: Number }))
}

const newState = (protocol: Protocol): ReceiverState => ({
  url: "",
  protocol,
  traces: [],
  metrics: [],
  logs: [],
  lastHeaders: {},
  contentTypes: new Set(),
  encodings: new Set()
})

const keep = (state: ReceiverState, signal: SignalName, body: unknown) => {
  state[signal].push(body)
}

const httpReceiver = (protocol: Protocol) =>
  Effect.callback<{ state: ReceiverState; close: () => void }>((resume) => {
    const state = newState(protocol)
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        state.lastHeaders = req.headers
        const contentType = String(req.headers["content-type"] ?? "").split(";")[0]!
        const encoding = String(req.headers["content-encoding"] ?? "identity")
        state.contentTypes.add(contentType)
        state.encodings.add(encoding)
        const signal = ({ "/v1/traces": "traces", "/v1/metrics": "metrics", "/v1/logs": "logs" } as const)[
          req.url as "/v1/traces"
        ]
        try {
          let body = Buffer.concat(chunks)
          if (encoding === "gzip") body = gunzipSync(body)
          if (signal === undefined) throw new Error(`unknown path ${req.url}`)
          keep(
            state,
            signal,
            contentType === "application/x-protobuf" ? decodeProtobuf(signal, body) : JSON.parse(body.toString("utf8"))
          )
        } catch {
          res.writeHead(400).end()
          return
        }
        res.writeHead(200, { "content-type": contentType }).end(contentType === "application/json" ? "{}" : "")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      resume(Effect.succeed({
        state,
        close: () => {
          server.closeAllConnections()
          server.close()
        }
      }))
    })
  })

const grpcService = (signal: SignalName, service: string): Grpc.ServiceDefinition => ({
  Export: {
    path: `/opentelemetry.proto.collector.${service}/Export`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (value: unknown) => Buffer.from(messages[signal].request.encode(value).finish()),
    requestDeserialize: (bytes: Buffer) => bytes,
    responseSerialize: (value: unknown) => Buffer.from(messages[signal].response.encode(value).finish()),
    responseDeserialize: (bytes: Buffer) => messages[signal].response.decode(bytes)
  }
})

const grpcReceiver = Effect.callback<{ state: ReceiverState; close: () => void }>((resume) => {
  const state = newState("grpc")
  const server = new Grpc.Server()
  const services = [
    ["traces", "trace.v1.TraceService"],
    ["metrics", "metrics.v1.MetricsService"],
    ["logs", "logs.v1.LogsService"]
  ] as const
  for (const [signal, service] of services) {
    server.addService(grpcService(signal, service), {
      Export: (call: Grpc.ServerUnaryCall<Buffer, unknown>, callback: Grpc.sendUnaryData<unknown>) => {
        state.lastHeaders = call.metadata.getMap() as Record<string, string>
        state.contentTypes.add("application/grpc")
        state.encodings.add(String(call.metadata.get("grpc-encoding")[0] ?? "identity"))
        keep(state, signal, decodeProtobuf(signal, call.request))
        callback(null, {})
      }
    })
  }
  server.bindAsync("127.0.0.1:0", Grpc.ServerCredentials.createInsecure(), (error, port) => {
    if (error !== null) return resume(Effect.die(error))
    state.url = `http://127.0.0.1:${port}`
    resume(Effect.succeed({ state, close: () => server.forceShutdown() }))
  })
})

/** A receiver for `protocol` (both HTTP protocols are served by the same HTTP receiver). */
export const layerFor = (protocol: Protocol): Layer.Layer<Receiver> =>
  Layer.effect(
    Receiver,
    Effect.acquireRelease(
      protocol === "grpc" ? grpcReceiver : httpReceiver(protocol),
      ({ close }) => Effect.sync(close)
    ).pipe(Effect.map(({ state }) => Receiver.of(state)))
  )

/** The OTLP/HTTP JSON receiver. */
export const layer: Layer.Layer<Receiver> = layerFor("http/json")

/** Every span received so far. */
export const spans = (state: ReceiverState): Array<OtlpSpan> =>
  state.traces.flatMap((t) =>
    (t.resourceSpans ?? []).flatMap((rs: any) =>
      (rs.scopeSpans ?? []).flatMap((ss: any) => (ss.spans ?? []) as Array<OtlpSpan>)
    )
  )

/** Resource attributes of the received traces. */
export const resources = (state: ReceiverState): Array<Record<string, unknown>> =>
  state.traces.flatMap((t) => (t.resourceSpans ?? []).map((rs: any) => attributes(rs.resource?.attributes ?? [])))

/** Resource attributes of the received metrics and logs. */
export const otherResources = (state: ReceiverState): Array<Record<string, unknown>> => [
  ...state.metrics.flatMap((m) => (m.resourceMetrics ?? []).map((r: any) => attributes(r.resource?.attributes ?? []))),
  ...state.logs.flatMap((l) => (l.resourceLogs ?? []).map((r: any) => attributes(r.resource?.attributes ?? [])))
]

/** Every metric received so far. */
export const allMetrics = (state: ReceiverState, fromExport = 0): Array<any> =>
  state.metrics.slice(fromExport).flatMap((m) =>
    (m.resourceMetrics ?? []).flatMap((rm: any) => (rm.scopeMetrics ?? []).flatMap((sm: any) => sm.metrics ?? []))
  )

/** Names of every metric received so far. */
export const metricNames = (state: ReceiverState): Set<string> =>
  new Set(allMetrics(state).map((metric) => metric.name as string))

/** Every log record body received so far, as text. */
export const logBodies = (state: ReceiverState): Array<{ body: string; traceId: string | undefined }> =>
  state.logs.flatMap((l) =>
    (l.resourceLogs ?? []).flatMap((rl: any) =>
      (rl.scopeLogs ?? []).flatMap((sl: any) =>
        (sl.logRecords ?? []).map((r: any) => ({ body: JSON.stringify(r.body), traceId: r.traceId || undefined }))
      )
    )
  )

/** OTLP attributes as a plain record. */
export const attributes = (list: ReadonlyArray<OtlpAttribute>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const { key, value } of list) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.doubleValue ?? value.boolValue
  }
  return out
}
