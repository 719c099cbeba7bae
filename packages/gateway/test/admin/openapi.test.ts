/**
 * `POST /api/v1/openapi/import` through the whole gateway: the Petstore 3.0
 * document as text, dry run then apply with an admin token, after which its
 * tools are listed and called through /mcp against a loopback mock; errors in
 * the admin API's shape.
 */
import { assert, layer } from "@effect/vitest"
import { Endpoints } from "@janus/storage"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { adminToken, call, client, expectStatus, fieldPaths } from "./support.ts"
import * as Support from "./support.ts"

const petstore = readFileSync(new URL("../fixtures/openapi/petstore.yaml", import.meta.url), "utf8")

/** A loopback Petstore: `GET /v1/pets` answers two pets. */
class MockApi extends Context.Service<MockApi, { readonly url: string }>()("test/admin/openapi/MockApi") {}

const MockApiLive = Layer.effect(
  MockApi,
  Effect.acquireRelease(
    Effect.promise(async () => {
      const server = createServer((req, res) => {
        if (req.method === "GET" && req.url?.startsWith("/v1/pets")) {
          res.writeHead(200, { "content-type": "application/json" })
          return res.end(JSON.stringify([{ id: 1, name: "Rex" }, { id: 2, name: "Tom" }]))
        }
        res.writeHead(404).end()
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
      return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
    }),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ url }) => ({ url })))
)

const connectMcp = Effect.acquireRelease(
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base))),
    (url) =>
      Effect.promise(async () => {
        const mcp = new Client({ name: "admin-openapi-test", version: "1.0.0" })
        await mcp.connect(new StreamableHTTPClientTransport(url))
        return mcp
      })
  ),
  (mcp) => Effect.promise(() => mcp.close())
)

const PATH = "/api/v1/openapi/import"

layer(Layer.provideMerge(Support.layer(), MockApiLive), Support.suiteOptions)(PATH, (it) => {
  const api = Effect.map(adminToken(), client)

  it.effect("Petstore: dry run writes nothing, apply creates the tools, tools/list shows them, a call works", () =>
    Effect.scoped(Effect.gen(function*() {
      const c = yield* api
      const mock = yield* MockApi
      const body = {
        source: { text: petstore },
        connection: { name: "petstore", egressAllowList: ["127.0.0.1"] },
        options: { baseUrl: `${mock.url}/v1` }
      }

      const preview = expectStatus(yield* c.post(`${PATH}?dryRun=true`, body), 200).body
      assert.isTrue(preview.dryRun)
      assert.isUndefined(preview.connection.id)
      assert.strictEqual(preview.plan.baseUrl, `${mock.url}/v1`)
      assert.deepStrictEqual(preview.diff.added.map((e: { name: string }) => e.name), [
        "listPets",
        "createPets",
        "showPetById"
      ])
      assert.lengthOf(yield* (yield* Endpoints).list(), 0, "a dry run writes nothing")

      const applied = expectStatus(yield* c.post(PATH, body), 200).body
      assert.isFalse(applied.dryRun)
      assert.isString(applied.connection.id)
      assert.lengthOf(applied.diff.added, 3)

      const mcp = yield* connectMcp
      const tools = (yield* Effect.promise(() => mcp.listTools())).tools.map((t) => t.name)
      assert.includeMembers(tools, ["createPets", "listPets", "showPetById"])
      const listed = yield* Effect.promise(() => mcp.callTool({ name: "listPets", arguments: { limit: 2 } }))
      assert.deepStrictEqual(listed.structuredContent, { result: [{ id: 1, name: "Rex" }, { id: 2, name: "Tom" }] })

      // the same document again: nothing to do
      const again = expectStatus(yield* c.post(`${PATH}?dryRun=true`, body), 200).body
      assert.deepStrictEqual(again.diff.added, [])
      assert.deepStrictEqual(again.diff.unchanged.length, 3)
    })))

  it.effect("errors: 400 naming the fields, 422 for a document that is not OpenAPI, 401 without a token", () =>
    Effect.gen(function*() {
      const c = yield* api
      const bad = expectStatus(
        yield* c.post(PATH, { source: { text: "x", url: "y" }, connection: { timeoutMs: "soon" } }),
        400,
        "invalid_request"
      )
      assert.deepStrictEqual(fieldPaths(bad), ["source", "connection.name", "connection.timeoutMs"])
      expectStatus(
        yield* c.post(`${PATH}?dryRun=maybe`, { source: { text: petstore }, connection: { name: "p" } }),
        400,
        "invalid_request"
      )
      // an allow-list entry that is not one is refused before anything is fetched or planned, dry run included
      for (const dryRun of ["true", "false"]) {
        const badAllow = expectStatus(
          yield* c.post(`${PATH}?dryRun=${dryRun}`, {
            source: { url: "http://127.0.0.1:9/openapi.json" },
            connection: { name: "p", egressAllowList: ["http://127.0.0.1:9"] }
          }),
          400,
          "invalid_input"
        )
        assert.deepStrictEqual(fieldPaths(badAllow), ["connection.egressAllowList.0"])
        assert.include(badAllow.body.error.message, "billing.internal:8443")
      }
      const notOpenApi = expectStatus(
        yield* c.post(`${PATH}?dryRun=true`, { source: { text: "{\"swagger\": \"2.0\"}" }, connection: { name: "p" } }),
        422,
        "invalid_openapi"
      )
      assert.isString(notOpenApi.body.error.message)
      expectStatus(yield* call("POST", PATH, { json: { source: { text: petstore }, connection: { name: "p" } } }), 401)
    }))
})
