/**
 * Loopback test servers and the egress layer under test. Servers listen on
 * 127.0.0.1 with an ephemeral port and record what reached them, so a test
 * can show that a refused or breaker-rejected call sent nothing.
 */
import { Effect, Layer } from "effect"
import { CircuitBreaker } from "effect/persistence"
import * as Http from "node:http"
import * as Net from "node:net"
import {
  DownstreamClient,
  type DownstreamRequest,
  type EgressConnection,
  type EgressOptions,
  layer,
  Resolver
} from "../../src/egress/index.ts"

export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

export interface TestServer {
  readonly port: number
  readonly origin: string
  /** Every request that reached the server, in order. */
  readonly received: Array<Received>
  /** TCP connections accepted. */
  readonly connections: () => number
}

type Handler = (req: Http.IncomingMessage, res: Http.ServerResponse, received: Received) => void

/** An HTTP server on 127.0.0.1 answering with `handler` once the request body is read; closed with the scope. */
export const httpServer = (handler: Handler) =>
  Effect.acquireRelease(
    Effect.callback<TestServer & { readonly server: Http.Server }>((resume) => {
      const received: Array<Received> = []
      let connections = 0
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const entry = {
            method: req.method ?? "",
            url: req.url ?? "",
            headers: req.headers,
            body: Buffer.concat(chunks).toString()
          }
          received.push(entry)
          handler(req, res, entry)
        })
      })
      server.on("connection", () => connections++)
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as Net.AddressInfo).port
        resume(Effect.succeed({
          port,
          origin: `http://127.0.0.1:${port}`,
          received,
          connections: () => connections,
          server
        }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** Answers every request with `status` and a small JSON body. */
export const statusServer = (status: () => number) =>
  httpServer((_req, res) => {
    res.writeHead(status(), { "content-type": "application/json" })
    res.end(JSON.stringify({ ok: true }))
  })

/** A TCP server that resets every connection as soon as it is accepted. */
export const resetServer = Effect.acquireRelease(
  Effect.callback<TestServer & { readonly server: Net.Server }>((resume) => {
    let connections = 0
    const server = Net.createServer((socket) => {
      connections++
      socket.resetAndDestroy()
    })
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      resume(Effect.succeed({
        port,
        origin: `http://127.0.0.1:${port}`,
        received: [],
        connections: () => connections,
        server
      }))
    })
  }),
  ({ server }) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
)

/**
 * The egress layer with a test resolver and an in-memory breaker store.
 * `lookups` counts resolver calls per name.
 */
export const egress = (
  options: EgressOptions & {
    readonly names?: Readonly<Record<string, string | ReadonlyArray<string>>>
    readonly lookups?: Map<string, number>
  } = {}
) =>
  layer(options).pipe(
    Layer.provide(Layer.mergeAll(
      Resolver.layerTest(options.names ?? {}, options.lookups),
      CircuitBreaker.layerStoreMemory()
    )),
    Layer.orDie
  )

/** `DownstreamClient.call` from the context. */
export const call = (connection: EgressConnection, request: DownstreamRequest) =>
  Effect.flatMap(Effect.service(DownstreamClient), (client) => client.call(connection, request))

/** Loopback is refused unless allow-listed, as an operator allow-lists an internal service. */
export const trustLoopback: ReadonlyArray<string> = ["127.0.0.1/32"]

export const fastRetry = { baseDelay: "1 millis", maxDelay: "5 millis" } as const
