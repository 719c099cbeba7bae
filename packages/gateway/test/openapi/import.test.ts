/**
 * OpenAPI import end to end, on the whole test gateway (in-memory storage,
 * RestCatalog, egress): Petstore 3.0 fetched from a URL (dry run, then
 * apply) and called through /mcp with the SDK client; a re-import of a
 * changed document with its diff; GitHub's REST API description (1,223
 * operations) imported and called against a loopback mock of the API.
 */
import { assert, layer } from "@effect/vitest"
import { Connections, Endpoints } from "@janus/storage"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Effect, Layer, Option } from "effect"
import { HttpServer } from "effect/http"
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { gunzipSync } from "node:zlib"
import { anonymous } from "../../src/mcp/Caller.ts"
import { type CallToolResult, ToolCatalog } from "../../src/mcp/ToolCatalog.ts"
import { OpenApiImporter } from "../../src/openapi/Importer.ts"
import * as GatewayTesting from "../../src/testing.ts"

const fixture = (name: string) => readFileSync(new URL(`../fixtures/openapi/${name}`, import.meta.url))

interface Seen {
  readonly method: string
  readonly path: string
  readonly query: Record<string, string>
  readonly body: unknown
}

/** A loopback mock of the Petstore and GitHub APIs, which also serves the Petstore document. */
class MockApi extends Context.Service<MockApi, { readonly url: string; readonly seen: Array<Seen> }>()(
  "test/openapi/MockApi"
) {}

const MockApiLive = Layer.effect(
  MockApi,
  Effect.acquireRelease(
    Effect.promise(async () => {
      const seen: Array<Seen> = []
      const pets = new Map<string, { id: number; name: string; tag?: string }>([
        ["1", { id: 1, name: "Rex", tag: "dog" }],
        ["2", { id: 2, name: "Tom", tag: "cat" }]
      ])
      const send = (res: ServerResponse, status: number, body?: unknown) => {
        if (body === undefined) return res.writeHead(status).end()
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))
      }
      const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
        const url = new URL(req.url ?? "/", "http://mock")
        const body = raw === "" ? undefined : JSON.parse(raw)
        seen.push({ method: req.method!, path: url.pathname, query: Object.fromEntries(url.searchParams), body })
        if (url.pathname === "/openapi.yaml") {
          return res.writeHead(200, { "content-type": "application/yaml" }).end(fixture("petstore.yaml"))
        }
        if (url.pathname.startsWith("/gh/")) return send(res, 200, { method: req.method, path: url.pathname, body })
        if (url.pathname === "/v1/pets" && req.method === "GET") {
          const limit = Number(url.searchParams.get("limit") ?? 100)
          const tag = url.searchParams.get("tag")
          return send(res, 200, [...pets.values()].filter((p) => tag === null || p.tag === tag).slice(0, limit))
        }
        if (url.pathname === "/v1/pets" && req.method === "POST") {
          pets.set(String(body.id), body)
          return send(res, 201)
        }
        const match = /^\/v1\/pets\/([^/]+)$/.exec(url.pathname)
        if (match !== null) {
          const pet = pets.get(decodeURIComponent(match[1]!))
          if (req.method === "DELETE") {
            pets.delete(decodeURIComponent(match[1]!))
            return send(res, 204)
          }
          return pet === undefined ? send(res, 404, { code: 404, message: "no such pet" }) : send(res, 200, pet)
        }
        send(res, 404, { code: 404, message: "not found" })
      }
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")))
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
      return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
    }),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ seen, url }) => ({ url, seen })))
)

const TestLayer = OpenApiImporter.layer.pipe(
  Layer.provideMerge(GatewayTesting.layer()),
  Layer.provideMerge(MockApiLive)
)

const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base)))

const connectV1 = Effect.acquireRelease(
  Effect.flatMap(mcpUrl, (url) =>
    Effect.promise(async () => {
      const client = new Client({ name: "openapi-test", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(url))
      return client
    })),
  (client) => Effect.promise(() => client.close())
)

const callTool = (name: string, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    const outcome = yield* (yield* ToolCatalog).call(anonymous, {
      name,
      arguments: args,
      signal: new AbortController().signal,
      progress: Option.none()
    })
    return outcome as CallToolResult
  })

const petstore = (mock: { readonly url: string }) => ({
  connection: { name: "petstore", egressAllowList: ["127.0.0.1"] },
  options: { baseUrl: `${mock.url}/v1` }
})

layer(TestLayer, { timeout: 240_000, excludeTestServices: true })("OpenAPI import", (it) => {
  it.effect("imports Petstore 3.0 from a URL (dry run first) and its tools answer through /mcp", () =>
    Effect.scoped(Effect.gen(function*() {
      const mock = yield* MockApi
      const importer = yield* OpenApiImporter
      const endpoints = yield* Endpoints
      const request = { ...petstore(mock), source: { url: `${mock.url}/openapi.yaml` } }

      const preview = yield* importer.preview(request)
      assert.isUndefined(preview.connection.id)
      assert.strictEqual(preview.connection.baseUrl, `${mock.url}/v1`)
      assert.deepStrictEqual(preview.diff.added.map((e) => e.name), ["listPets", "createPets", "showPetById"])
      assert.lengthOf(yield* endpoints.list(), 0, "a preview writes nothing")

      const applied = yield* importer.apply(request)
      assert.isString(applied.connection.id)
      const stored = yield* endpoints.list({ connectionId: applied.connection.id! })
      assert.deepStrictEqual(stored.map((e) => e.name), ["createPets", "listPets", "showPetById"])

      const client = yield* connectV1
      const listed = yield* Effect.promise(() => client.listTools())
      assert.includeMembers(listed.tools.map((t) => t.name), ["createPets", "listPets", "showPetById"])
      const list = yield* Effect.promise(() => client.callTool({ name: "listPets", arguments: { limit: 1 } }))
      assert.deepStrictEqual(list.structuredContent, { result: [{ id: 1, name: "Rex", tag: "dog" }] })
      const created = yield* Effect.promise(() =>
        client.callTool({ name: "createPets", arguments: { id: 3, name: "Kit", tag: "cat" } })
      )
      assert.isUndefined(created.isError)
      assert.deepStrictEqual(mock.seen.at(-1), {
        method: "POST",
        path: "/v1/pets",
        query: {},
        body: { id: 3, name: "Kit", tag: "cat" }
      })
      const shown = yield* Effect.promise(() => client.callTool({ name: "showPetById", arguments: { petId: "3" } }))
      assert.deepStrictEqual(shown.structuredContent, { id: 3, name: "Kit", tag: "cat" })
      const missing = yield* Effect.promise(() => client.callTool({ name: "showPetById", arguments: { petId: "9" } }))
      assert.isTrue(missing.isError)
    })))

  it.effect("re-importing a changed document shows the diff, applies it in one go, then finds nothing to do", () =>
    Effect.gen(function*() {
      const mock = yield* MockApi
      const importer = yield* OpenApiImporter
      const endpoints = yield* Endpoints
      const request = { ...petstore(mock), source: { text: fixture("petstore-v2.yaml").toString("utf8") } }
      // an operator declared the structured result of one tool: a re-import does not describe it, so keeps it
      const outputSchema = { type: "object", properties: { id: { type: "integer" } }, required: ["id"] }
      const shown = (yield* endpoints.list()).find((e) => e.name === "showPetById")!
      yield* endpoints.update(shown.id, shown.version, {
        connectionId: shown.connectionId,
        name: shown.name,
        description: shown.description,
        method: shown.method,
        pathTemplate: shown.pathTemplate,
        arguments: shown.arguments,
        inputSchema: shown.inputSchema,
        outputSchema
      })

      const preview = yield* importer.preview(request)
      assert.isString(preview.connection.id)
      assert.deepStrictEqual(preview.diff.added.map((e) => e.name), ["deletePet"])
      assert.deepStrictEqual(preview.diff.removed.map((e) => e.name), ["createPets"])
      assert.deepStrictEqual(preview.diff.changed.map((c) => [c.name, c.fields]), [
        ["listPets", ["arguments", "inputSchema"]],
        ["showPetById", ["description", "inputSchema"]]
      ])
      assert.deepStrictEqual(preview.diff.unchanged, [])

      yield* importer.apply(request)
      const stored = yield* endpoints.list({ connectionId: preview.connection.id! })
      assert.deepStrictEqual(stored.map((e) => e.name), ["deletePet", "listPets", "showPetById"])
      const listPets = stored.find((e) => e.name === "listPets")!
      assert.deepStrictEqual(listPets.arguments, { limit: "query", tag: "query" })
      assert.strictEqual(stored.find((e) => e.name === "showPetById")!.version, 3)
      assert.deepStrictEqual(stored.find((e) => e.name === "showPetById")!.outputSchema, outputSchema)

      const cats = yield* callTool("listPets", { tag: "cat" })
      assert.deepStrictEqual(
        (cats.structuredContent as { result: Array<{ name: string }> }).result.map((p) => p.name),
        ["Tom", "Kit"]
      )
      yield* callTool("deletePet", { petId: "3" })
      assert.deepStrictEqual(mock.seen.at(-1), { method: "DELETE", path: "/v1/pets/3", query: {}, body: undefined })

      const again = yield* importer.preview(request)
      assert.deepStrictEqual([again.diff.added, again.diff.changed, again.diff.removed], [[], [], []])
      assert.deepStrictEqual(again.diff.unchanged, ["listPets", "showPetById", "deletePet"])
    }))

  it.effect("imports GitHub's REST API description (1,223 operations) and calls it", () =>
    Effect.gen(function*() {
      const mock = yield* MockApi
      const importer = yield* OpenApiImporter
      const endpoints = yield* Endpoints
      const text = gunzipSync(fixture("api.github.com.json.gz")).toString("utf8")
      const request = {
        source: { text },
        connection: { name: "github", egressAllowList: ["127.0.0.1"] },
        options: { baseUrl: `${mock.url}/gh` }
      }
      const preview = yield* importer.preview(request)
      assert.strictEqual(preview.plan.openapi, "3.0.3")
      assert.strictEqual(preview.diff.added.length, 1223)
      assert.lengthOf(preview.plan.skipped, 0)

      const applied = yield* importer.apply(request)
      const stored = yield* endpoints.list({ connectionId: applied.connection.id! })
      assert.strictEqual(stored.length, 1223)
      const connection = yield* (yield* Connections).findByName("github")
      assert.strictEqual(
        Option.getOrThrow(connection).description,
        "GitHub's official OpenAPI spec + Octokit extension"
      )

      const tools = yield* (yield* ToolCatalog).list(anonymous)
      assert.isAtLeast(tools.length, 1223)
      const repo = yield* callTool("repos_get", { owner: "octo", repo: "hello" })
      assert.deepStrictEqual(repo.structuredContent, { method: "GET", path: "/gh/repos/octo/hello" })
      const issue = yield* callTool("issues_create", { owner: "octo", repo: "hello", title: "Bug", labels: ["p1"] })
      assert.deepStrictEqual(issue.structuredContent, {
        method: "POST",
        path: "/gh/repos/octo/hello/issues",
        body: { title: "Bug", labels: ["p1"] }
      })
      yield* callTool("issues_list-for-repo", { owner: "octo", repo: "hello", state: "open", per_page: 5 })
      assert.deepStrictEqual(mock.seen.at(-1)!.query, { state: "open", per_page: "5" })

      // a second import of the same document changes nothing
      const again = yield* importer.preview(request)
      assert.strictEqual(again.diff.unchanged.length, 1223)
    }), { timeout: 240_000 })
})
