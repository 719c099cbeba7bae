/**
 * A round-robin HTTP proxy with no affinity, standing in for a load balancer
 * in front of the replicas.
 *
 * **Rules**
 *
 * - Every request goes to the next backend in turn, whatever its session
 *   id, cookie or path: nothing is sticky.
 * - Bodies stream both ways unbuffered, so SSE passes through as it is
 *   written.
 * - A backend that refuses the connection (its process is gone) is taken out
 *   of the rotation and the request goes to the next one: it never reached
 *   the dead one, so this is safe for any method (what a load balancer does
 *   on a connect error). A backend that dies mid-response is not retried:
 *   the client's response is cut, as it would be behind a real balancer.
 * - Each response says which backend answered (`x-cluster-backend`), and
 *   the proxy records every routed request, so tests can show where things
 *   went.
 */
import * as Http from "node:http"
import type * as Net from "node:net"

export interface Routed {
  readonly backend: string
  readonly method: string
  readonly path: string
  readonly sessionId: string | undefined
  status: number | undefined
}

export interface Proxy {
  readonly url: string
  readonly routed: Array<Routed>
  /** Backend names in rotation. */
  readonly backends: () => ReadonlyArray<string>
  readonly add: (name: string, port: number) => void
  readonly remove: (name: string) => void
  readonly close: () => Promise<void>
}

export const BACKEND_HEADER = "x-cluster-backend"

export const startProxy = async (): Promise<Proxy> => {
  const backends: Array<{ name: string; port: number }> = []
  const routed: Array<Routed> = []
  const sockets = new Set<Net.Socket>()
  let next = 0

  const forward = (req: Http.IncomingMessage, res: Http.ServerResponse, body: Buffer, tried: Set<string>) => {
    const candidates = backends.filter((b) => !tried.has(b.name))
    if (candidates.length === 0) {
      res.writeHead(502, { "content-type": "text/plain" })
      res.end("no backend available")
      return
    }
    const backend = candidates[next++ % candidates.length]!
    tried.add(backend.name)
    const record: Routed = {
      backend: backend.name,
      method: req.method ?? "GET",
      path: req.url ?? "/",
      sessionId: req.headers["mcp-session-id"] as string | undefined,
      status: undefined
    }
    const upstream = Http.request({
      host: "127.0.0.1",
      port: backend.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
      agent: false
    })
    upstream.on("response", (answer) => {
      record.status = answer.statusCode
      routed.push(record)
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, [BACKEND_HEADER]: backend.name })
      res.flushHeaders()
      answer.on("data", (chunk: Buffer) => res.write(chunk))
      answer.on("end", () => res.end())
      // the replica died mid-response: cut the client's response too
      answer.on("error", () => res.destroy())
      answer.on("aborted", () => res.destroy())
    })
    upstream.on("error", (error: NodeJS.ErrnoException) => {
      if (res.headersSent) return res.destroy()
      if (error.code === "ECONNREFUSED") {
        // never reached it: out of the rotation, and on to the next one
        const index = backends.indexOf(backend)
        if (index >= 0) backends.splice(index, 1)
        return forward(req, res, body, tried)
      }
      res.destroy()
    })
    // the client went away: so does the request to the replica
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy()
    })
    upstream.end(body)
  }

  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => forward(req, res, Buffer.concat(chunks), new Set()))
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as Net.AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    routed,
    backends: () => backends.map((b) => b.name),
    add: (name, backendPort) => {
      if (!backends.some((b) => b.name === name)) backends.push({ name, port: backendPort })
    },
    remove: (name) => {
      const index = backends.findIndex((b) => b.name === name)
      if (index >= 0) backends.splice(index, 1)
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}
