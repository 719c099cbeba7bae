/**
 * A real HTTP downstream on loopback for hot-path tests: a tiny pet API that
 * counts the requests it sees and can be slow or failing on demand.
 */
import { Connections, Endpoints, type RestConnectionInput, VirtualServers } from "@janus/storage"
import { Context, Effect, Layer } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface DownstreamState {
  url: string
  /** Requests seen, by "METHOD path". */
  readonly hits: Map<string, number>
  /** Last request's headers, lower-case. */
  lastHeaders: Record<string, string | Array<string> | undefined>
  /** Sockets closed by the client before an answer was sent. */
  aborted: number
}

export class Downstream extends Context.Service<Downstream, DownstreamState>()("test/Downstream") {}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const handle = (state: DownstreamState) => (req: IncomingMessage, res: ServerResponse) => {
  const url = new URL(req.url ?? "/", "http://x")
  const key = `${req.method} ${url.pathname}`
  state.hits.set(key, (state.hits.get(key) ?? 0) + 1)
  state.lastHeaders = req.headers
  let body = ""
  req.on("data", (c) => (body += c))
  req.on("end", () => {
    const pet = /^\/pets\/([^/]+)$/.exec(url.pathname)
    if (req.method === "GET" && pet) {
      return json(res, 200, { id: decodeURIComponent(pet[1]!), name: "Rex", tag: url.searchParams.get("tag") })
    }
    if (req.method === "POST" && url.pathname === "/pets") return json(res, 201, { created: JSON.parse(body || "{}") })
    if (url.pathname === "/slow") {
      const timer = setTimeout(() => json(res, 200, { slow: true }), Number(url.searchParams.get("ms") ?? 500))
      res.on("close", () => {
        if (!res.writableEnded) {
          clearTimeout(timer)
          state.aborted++
        }
      })
      return
    }
    if (url.pathname === "/fail") return json(res, 503, { error: "down for maintenance" })
    if (url.pathname === "/missing") return json(res, 404, { error: "no such pet" })
    if (url.pathname === "/text") {
      res.writeHead(200, { "content-type": "text/plain" })
      return res.end("plain words")
    }
    json(res, 404, { error: `no route ${key}` })
  })
}

export const layer: Layer.Layer<Downstream> = Layer.effect(
  Downstream,
  Effect.acquireRelease(
    Effect.callback<{ state: DownstreamState; close: () => void }>((resume) => {
      const state: DownstreamState = { url: "", hits: new Map(), lastHeaders: {}, aborted: 0 }
      const server = createServer(handle(state))
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
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ state }) => Downstream.of(state)))
)

/**
 * A rest connection `pets` to the downstream: allow-listed (the operator
 * trusts this loopback service, as an allow-list entry does), one attempt per
 * call, plus `extra`.
 */
export const connection = (extra: Partial<typeof RestConnectionInput.Encoded> = {}) =>
  Effect.gen(function*() {
    const downstream = yield* Downstream
    return yield* (yield* Connections).create({
      kind: "rest",
      name: "pets",
      baseUrl: downstream.url,
      egressAllowList: ["127.0.0.1"],
      retry: { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0 },
      ...extra
    })
  })

/** An endpoint of the `pets` connection, as `Endpoints.create` takes it without the connection. */
export type PetsTool = Omit<Parameters<(typeof Endpoints)["Service"]["create"]>[0], "connectionId">

/** `any_pet`: `GET /pets/{id}` whose schema declares `id`, `q` and `x-note` without typing them. */
export const anyPet: PetsTool = {
  name: "any_pet",
  method: "GET",
  pathTemplate: "/pets/{id}",
  arguments: { id: "path", q: "query", "x-note": "header" },
  inputSchema: { type: "object", properties: { id: {}, q: {}, "x-note": {} } }
}

/**
 * The `pets` REST connection (`connection(extra)`) with these endpoints, in
 * order; a circuit that opens after few failures (`extra.breaker`) makes a
 * test of "client input never opens it" strict.
 */
export const petsTools = (extra: Partial<typeof RestConnectionInput.Encoded>, tools: ReadonlyArray<PetsTool>) =>
  Effect.gen(function*() {
    const pets = yield* connection(extra)
    const endpoints = yield* Endpoints
    for (const tool of tools) yield* endpoints.create({ connectionId: pets.id, ...tool })
    return pets
  })

/**
 * The `pets` REST connection to this downstream, with one `GET /pets/{id}`
 * endpoint per name in `tools` and, for each `[name, tools]` of
 * `virtualServers`, a virtual server of those tools.
 */
export const seedPets = (options: {
  readonly tools: ReadonlyArray<string>
  readonly virtualServers?: ReadonlyArray<readonly [string, ReadonlyArray<string>]>
}) =>
  Effect.gen(function*() {
    const pets = yield* connection()
    const endpoints = yield* Endpoints
    for (const name of options.tools) {
      yield* endpoints.create({
        connectionId: pets.id,
        name,
        method: "GET",
        pathTemplate: "/pets/{id}",
        arguments: { id: "path" },
        inputSchema: { type: "object", properties: { id: { type: "string" } } }
      })
    }
    const servers = yield* VirtualServers
    for (const [name, tools] of options.virtualServers ?? []) yield* servers.create({ name, tools: [...tools] })
  })
