/**
 * The benchmark's downstream: a bare `node:http` server on loopback answering
 * `GET /pets/{id}` with a small JSON object (about 40 bytes), keep-alive on.
 * Nothing else runs in this process, so it is never the bottleneck's cause.
 *
 * Prints `{"url": "http://127.0.0.1:<port>"}` once listening.
 *
 * Run: node packages/gateway/bench/support/downstream.ts
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const server = createServer((req, res) => {
  const url = req.url ?? "/"
  if (req.method === "GET" && url.startsWith("/pets/")) {
    const id = decodeURIComponent(url.slice(6).split("?")[0]!)
    const body = JSON.stringify({ id, name: "Rex", tag: "dog" })
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
    return
  }
  res.writeHead(404, { "content-type": "application/json" })
  res.end("{\"error\":\"not found\"}")
})
server.keepAliveTimeout = 60_000
server.headersTimeout = 65_000
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }))
})
process.on("SIGTERM", () => {
  server.closeAllConnections()
  server.close(() => process.exit(0))
})
