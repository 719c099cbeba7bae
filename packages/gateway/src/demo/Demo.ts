/**
 * `JANUS_DEMO=true`: a small downstream API on another loopback port, and a
 * `demo` connection with a few endpoints pointing at it, so a newcomer lists
 * and calls tools within a minute of `npm start`.
 *
 * **Rules**
 *
 * - The demo API listens on 127.0.0.1 only, on a free port chosen at start.
 * - The `demo` connection allow-lists exactly that loopback address: the
 *   egress guard refuses loopback otherwise, as it should.
 * - Seeding is idempotent: a restart updates the connection's base URL (the
 *   port changes) and creates only the endpoints that are missing; it never
 *   touches anything else.
 *
 * @since 0.1.0
 */
import {
  type ArgumentLocation,
  ClientTokens,
  type ClientTokenWriteError,
  Connections,
  type ConnectionWriteError,
  Endpoints,
  type EndpointWriteError,
  type HttpMethod,
  type NotFound,
  type StorageError,
  type VersionConflict
} from "@janus/storage"
import { Console, Effect, Layer, Option, Redacted } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

interface Todo {
  readonly id: number
  readonly title: string
  readonly done: boolean
}

const api = () => {
  const todos: Array<Todo> = [{ id: 1, title: "Try Janus", done: true }, { id: 2, title: "Call a tool", done: false }]
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" })
    res.end(JSON.stringify(body))
  }
  return (req: IncomingMessage, res: ServerResponse) => {
    let body = ""
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://demo")
      const todo = /^\/todos\/(\d+)$/.exec(url.pathname)
      if (req.method === "GET" && url.pathname === "/time") return json(res, 200, { now: new Date().toISOString() })
      if (req.method === "GET" && url.pathname === "/echo") {
        return json(res, 200, { text: url.searchParams.get("text") })
      }
      if (req.method === "GET" && url.pathname === "/todos") return json(res, 200, { todos })
      if (req.method === "GET" && todo) {
        const found = todos.find((t) => t.id === Number(todo[1]))
        return found ? json(res, 200, found) : json(res, 404, { error: `no todo ${todo[1]}` })
      }
      if (req.method === "POST" && url.pathname === "/todos") {
        try {
          const { title } = JSON.parse(body || "{}") as { title?: unknown }
          if (typeof title !== "string" || title === "") return json(res, 400, { error: "title is required" })
          const created = { id: todos.length + 1, title, done: false }
          todos.push(created)
          return json(res, 201, created)
        } catch {
          return json(res, 400, { error: "body must be JSON" })
        }
      }
      json(res, 404, { error: `no route ${req.method} ${url.pathname}` })
    })
  }
}

const object = (properties: Record<string, unknown>, required: Array<string> = []) => ({
  type: "object",
  properties,
  required
})

/** A demo endpoint; `args` says where each argument goes (unnamed ones: the query of a GET, else the body). */
const endpoint = (
  name: string,
  method: HttpMethod,
  pathTemplate: string,
  description: string,
  inputSchema: ReturnType<typeof object>,
  args?: Readonly<Record<string, ArgumentLocation>>
) => ({ name, description, method, pathTemplate, ...(args === undefined ? {} : { arguments: args }), inputSchema })

const endpoints = [
  endpoint("demo_time", "GET", "/time", "The current time on the demo server", object({})),
  endpoint(
    "demo_echo",
    "GET",
    "/echo",
    "Echoes the text it is given",
    object({ text: { type: "string", description: "What to echo" } }, ["text"]),
    { text: "query" }
  ),
  endpoint("demo_list_todos", "GET", "/todos", "Lists the todos", object({})),
  endpoint(
    "demo_get_todo",
    "GET",
    "/todos/{id}",
    "Fetches one todo by id",
    object({ id: { type: "integer" } }, ["id"]),
    {
      id: "path"
    }
  ),
  endpoint("demo_add_todo", "POST", "/todos", "Adds a todo", object({ title: { type: "string" } }, ["title"]), {
    title: "body"
  })
]

/** Starts the demo API and seeds the `demo` connection; prints how to try it. */
export const layer: Layer.Layer<
  never,
  ConnectionWriteError | EndpointWriteError | ClientTokenWriteError | NotFound | VersionConflict | StorageError,
  Connections | Endpoints | ClientTokens
> = Layer.effectDiscard(Effect.gen(function*() {
  const baseUrl = yield* Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly close: () => void }>((resume) => {
      const server = createServer(api())
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        })))
    }),
    ({ close }) => Effect.sync(close)
  )
  const connections = yield* Connections
  const endpointRepo = yield* Endpoints
  const input = {
    kind: "rest" as const,
    name: "demo",
    description: "The built-in demo API (JANUS_DEMO)",
    baseUrl: baseUrl.url,
    egressAllowList: ["127.0.0.1"]
  }
  const existing = yield* connections.findByName("demo")
  const firstSeed = Option.isNone(existing)
  const connection = Option.isSome(existing)
    ? yield* connections.update(existing.value.id, existing.value.version, input)
    : yield* connections.create(input)
  for (const endpoint of endpoints) {
    if (Option.isNone(yield* endpointRepo.findByName(endpoint.name))) {
      yield* endpointRepo.create({ ...endpoint, connectionId: connection.id })
    }
  }
  yield* Console.log(`  demo: ${endpoints.length} tools (demo_*) backed by a demo API on ${baseUrl.url}`)
  if (firstSeed) {
    // /mcp needs a client token; the demo brings one, limited to its own tools, shown once like every token
    const token = yield* (yield* ClientTokens).create({ name: "demo", allowedTools: endpoints.map((e) => e.name) })
    yield* Console.log(`  demo client token (shown once): ${Redacted.value(token.plaintext)}`)
  }
}))
