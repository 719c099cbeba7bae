/**
 * Virtual servers through the whole gateway: `/servers/{name}/mcp` serves only
 * the server's tools over every transport (2026-07-28 stateless, 2025
 * sessions, the legacy HTTP+SSE), an unknown server is 404, and a client
 * token scoped to a server is refused on another (403).
 */
import { assert, layer } from "@effect/vitest"
import { ClientTokens, Connections, Endpoints, VirtualServers } from "@janus/storage"
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../src/testing.ts"
import * as Downstream from "./support/Downstream.ts"

const urlOf = (path: string) => HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base)))

const seed = Effect.gen(function*() {
  const downstream = yield* Downstream.Downstream
  const connection = yield* (yield* Connections).create({
    kind: "rest",
    name: "pets",
    baseUrl: downstream.url,
    egressAllowList: ["127.0.0.1"]
  })
  const endpoints = yield* Endpoints
  for (const [name, method, path] of [["get_pet", "GET", "/pets/{id}"], ["create_pet", "POST", "/pets"]] as const) {
    yield* endpoints.create({
      connectionId: connection.id,
      name,
      method,
      pathTemplate: path,
      arguments: method === "GET" ? { id: "path" } : {},
      inputSchema: { type: "object", properties: { id: { type: "string" } } }
    })
  }
  const servers = yield* VirtualServers
  yield* servers.create({ name: "readers", tools: ["get_pet"] })
  yield* servers.create({ name: "writers", tools: ["create_pet"] })
})

const TestLayer = Layer.effectDiscard(seed).pipe(
  Layer.provideMerge(GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false } })),
  Layer.provideMerge(Downstream.layer)
)

let tokenCount = 0
const token = (allowedVirtualServers: Array<string> | null = null) =>
  Effect.map(
    Effect.flatMap(
      ClientTokens,
      (tokens) => tokens.create({ name: `vs-client-${++tokenCount}`, allowedVirtualServers })
    ),
    (created) => Redacted.value(created.plaintext)
  )

const auth = (bearer: string) => ({ headers: { authorization: `Bearer ${bearer}` } })

type Transport = "2026" | "2025" | "sse"

const connect = (path: string, bearer: string, transport: Transport) =>
  Effect.acquireRelease(
    Effect.flatMap(urlOf(path), (url) =>
      Effect.promise(async () => {
        if (transport === "2026") {
          const client = new ClientV2({ name: "v2", version: "2" }, {
            versionNegotiation: { mode: { pin: "2026-07-28" } }
          })
          await client.connect(new TransportV2(url, { requestInit: auth(bearer) }))
          return client as unknown as ClientV1
        }
        const client = new ClientV1({ name: "v1", version: "1" })
        await client.connect(
          transport === "2025"
            ? new TransportV1(url, { requestInit: auth(bearer) })
            : new SSEClientTransport(url, { requestInit: auth(bearer), eventSourceInit: { fetch: withAuth(bearer) } })
        )
        return client
      })),
    (client) => Effect.promise(() => client.close())
  )

const withAuth = (bearer: string): typeof fetch => (input, init) =>
  fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), ...auth(bearer).headers } })

const post = (path: string, bearer: string) =>
  Effect.flatMap(urlOf(path), (url) =>
    Effect.promise(async () => {
      const response = await fetch(url, {
        method: "POST",
        headers: {
          ...auth(bearer).headers,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": "tools/list"
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/list",
          params: {
            _meta: {
              "io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {}
            }
          }
        })
      })
      return { status: response.status, text: await response.text() }
    }))

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("virtual servers", (it) => {
  for (const transport of ["2026", "2025", "sse"] as const) {
    it.effect(`${transport}: lists only the server's tools, calls one, refuses another as unknown`, () =>
      Effect.scoped(Effect.gen(function*() {
        const bearer = yield* token()
        const path = transport === "sse" ? "/servers/readers/sse" : "/servers/readers/mcp"
        const client = yield* connect(path, bearer, transport)
        const tools = (yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)
        assert.deepStrictEqual(tools, ["get_pet"])
        const ok = yield* Effect.promise(() => client.callTool({ name: "get_pet", arguments: { id: "1" } }))
        assert.deepStrictEqual(ok.structuredContent, { id: "1", name: "Rex", tag: null })
        const refused = yield* Effect.promise(() =>
          client.callTool({ name: "create_pet", arguments: {} }).then(
            (result) => JSON.stringify(result),
            (e: Error) => e.message
          )
        )
        assert.include(refused, "Unknown tool 'create_pet'")
      })))
  }

  it.effect("/mcp still serves every tool", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connect("/mcp", yield* token(), "2025")
      const tools = (yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)
      assert.deepStrictEqual(tools, ["create_pet", "get_pet"])
    })))

  it.effect("a change of the server's members shows in its next tools/list", () =>
    Effect.scoped(Effect.gen(function*() {
      const servers = yield* VirtualServers
      const created = yield* servers.create({ name: "changing", tools: ["get_pet"] })
      const client = yield* connect("/servers/changing/mcp", yield* token(), "2025")
      const names = Effect.map(Effect.promise(() => client.listTools()), (r) => r.tools.map((t) => t.name))
      assert.deepStrictEqual(yield* names, ["get_pet"])
      yield* servers.update(created.id, created.version, { name: "changing", tools: ["get_pet", "create_pet"] })
      let after: Array<string> = []
      for (let i = 0; i < 50 && after.length < 2; i++) {
        after = yield* names
        if (after.length < 2) yield* Effect.sleep("50 millis")
      }
      assert.deepStrictEqual(after, ["create_pet", "get_pet"])
    })))

  it.effect("an unknown server is 404 with a clear message", () =>
    Effect.gen(function*() {
      const reply = yield* post("/servers/nope/mcp", yield* token())
      assert.strictEqual(reply.status, 404)
      assert.include(reply.text, "No virtual server is named \\\"nope\\\"")
    }))

  it.effect("a token scoped to a server works there and is refused (403) on another", () =>
    Effect.scoped(Effect.gen(function*() {
      const bearer = yield* token(["readers"])
      const client = yield* connect("/servers/readers/mcp", bearer, "2026")
      const tools = (yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)
      assert.deepStrictEqual(tools, ["get_pet"])
      const other = yield* post("/servers/writers/mcp", bearer)
      assert.strictEqual(other.status, 403)
      assert.include(other.text, "may not use the virtual server 'writers'")
      const ok = yield* post("/servers/readers/mcp", bearer)
      assert.strictEqual(ok.status, 200, ok.text)
      assert.include(ok.text, "get_pet")
      assert.notInclude(ok.text, "create_pet")
    })))
})
