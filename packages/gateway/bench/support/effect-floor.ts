/**
 * The floor of the gateway's own stack: effect's HTTP server (the
 * `HttpRouter` on `@effect/platform-node`, as Janus serves) with one `POST
 * /mcp` route that reads the JSON body, makes the same downstream call with
 * effect's `HttpClient` on undici (as Janus's egress does) and answers a
 * 2026-07-28 `tools/call` result. No auth, limits, audit, metrics or MCP
 * checks: what any gateway built on this stack pays before doing its job, so
 * the benchmark can tell Janus's own cost from the framework's.
 *
 * Usage: node packages/gateway/bench/support/effect-floor.ts <downstream-url>
 * Prints `{"url": "http://127.0.0.1:<port>/mcp"}` once listening.
 */
import { NodeHttpClient, NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpClient, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"

const downstream = process.argv[2]
if (downstream === undefined) throw new Error("usage: effect-floor.ts <downstream-url>")

const Routes = HttpRouter.use(Effect.fn(function*(router) {
  const client = yield* HttpClient.HttpClient
  yield* router.add("GET", "/healthz", HttpServerResponse.text("ok"))
  yield* router.add("POST", "/mcp", (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function*() {
      const message = JSON.parse(yield* request.text) as { id: number; params: { arguments: { id: string } } }
      const response = yield* client.get(`${downstream}/pets/${encodeURIComponent(message.params.arguments.id)}`)
      const data = yield* response.text
      return HttpServerResponse.text(
        `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[{"type":"text","text":${
          JSON.stringify(data)
        }}],"structuredContent":${data},"resultType":"complete"}}`,
        { contentType: "application/json" }
      )
    }).pipe(Effect.orDie))
}))

const Announce = Layer.effectDiscard(Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const address = server.address as { port: number }
  console.log(JSON.stringify({ url: `http://127.0.0.1:${address.port}/mcp` }))
}))

NodeRuntime.runMain(Layer.launch(
  Layer.merge(HttpRouter.serve(Routes, { disableLogger: true, disableListenLog: true }), Announce).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
    Layer.provide(NodeHttpClient.layerUndici)
  )
))
