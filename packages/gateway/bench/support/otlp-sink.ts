/**
 * The OpenTelemetry benchmark's collector: accepts OTLP over HTTP (any
 * `POST /v1/*`, JSON or protobuf) and over gRPC (the three collector
 * services), answers success and keeps nothing but counts, so its own cost
 * never lands on the gateway under test.
 *
 * Prints `{"http": "http://127.0.0.1:<port>", "grpc": "http://127.0.0.1:<port>"}` once listening.
 *
 * Run: node packages/gateway/bench/support/otlp-sink.ts
 */
import * as Grpc from "@grpc/grpc-js"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

let requests = 0
const http = createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    requests++
    res.writeHead(200, { "content-type": String(req.headers["content-type"] ?? "application/json") })
    res.end(req.headers["content-type"] === "application/json" ? "{}" : "")
  })
})
http.keepAliveTimeout = 60_000

// an empty Export*ServiceResponse is zero bytes: requests are taken as bytes and never decoded
const service = (name: string): Grpc.ServiceDefinition => ({
  Export: {
    path: `/opentelemetry.proto.collector.${name}/Export`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (value: Buffer) => value,
    requestDeserialize: (bytes: Buffer) => bytes,
    responseSerialize: () => Buffer.alloc(0),
    responseDeserialize: (bytes: Buffer) => bytes
  }
})
const grpc = new Grpc.Server()
for (const name of ["trace.v1.TraceService", "metrics.v1.MetricsService", "logs.v1.LogsService"]) {
  grpc.addService(service(name), {
    Export: (_call: unknown, callback: Grpc.sendUnaryData<Buffer>) => {
      requests++
      callback(null, Buffer.alloc(0))
    }
  })
}

http.listen(0, "127.0.0.1", () => {
  grpc.bindAsync("127.0.0.1:0", Grpc.ServerCredentials.createInsecure(), (error, port) => {
    if (error !== null) throw error
    console.log(JSON.stringify({
      http: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
      grpc: `http://127.0.0.1:${port}`
    }))
  })
})
process.on("SIGTERM", () => {
  console.error(`[otlp-sink] ${requests} export requests`)
  http.closeAllConnections()
  http.close()
  grpc.forceShutdown()
  process.exit(0)
})
