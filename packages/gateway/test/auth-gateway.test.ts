/**
 * Authentication and authorization through the whole gateway: client tokens
 * on /mcp, scopes that hide and refuse tools, revocation, and the audit of a
 * denied call.
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog, ClientTokens, Connections, Endpoints } from "@janus/storage"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../src/testing.ts"
import * as Downstream from "./support/Downstream.ts"

const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base)))

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
})

const TestLayer = Layer.effectDiscard(seed).pipe(
  Layer.provideMerge(GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false } })),
  Layer.provideMerge(Downstream.layer)
)

const connect = (token: string) =>
  Effect.acquireRelease(
    Effect.flatMap(mcpUrl, (url) =>
      Effect.promise(async () => {
        const client = new Client({ name: "t", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
        await client.connect(
          new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } })
        )
        return client
      })),
    (client) => Effect.promise(() => client.close())
  )

const listBody = JSON.stringify({
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
const rawList = (headers: Record<string, string>) =>
  Effect.flatMap(mcpUrl, (url) =>
    Effect.promise(() =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": "tools/list",
          ...headers
        },
        body: listBody
      })
    ))

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("authentication on /mcp", (it) => {
  it.effect("refuses a request without a token, or with an unknown one, with 401 and a challenge", () =>
    Effect.gen(function*() {
      const none = yield* rawList({})
      assert.strictEqual(none.status, 401)
      assert.match(none.headers.get("www-authenticate") ?? "", /^Bearer /)
      const unknown = yield* rawList({ authorization: "Bearer jns_unknown0000000000000000000000000000000000" })
      assert.strictEqual(unknown.status, 401)
      const text = yield* Effect.promise(() => unknown.text())
      assert.notInclude(text, "jns_unknown")
    }))

  it.effect("a scoped token sees and calls only its tools; the refused call is audited as denied", () =>
    Effect.scoped(Effect.gen(function*() {
      const created = yield* (yield* ClientTokens).create({ name: "pets-reader", allowedTools: ["get_pet"] })
      const client = yield* connect(Redacted.value(created.plaintext))
      const tools = (yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)
      assert.deepStrictEqual(tools, ["get_pet"])
      const ok = yield* Effect.promise(() => client.callTool({ name: "get_pet", arguments: { id: "1" } }))
      assert.deepStrictEqual(ok.structuredContent, { id: "1", name: "Rex", tag: null })
      const refused = yield* Effect.promise(() =>
        client.callTool({ name: "create_pet", arguments: {} }).then(() => "resolved", (e: Error) => e.message)
      )
      assert.include(refused, "refused (denied)")
      const audit = yield* AuditLog
      yield* audit.flush
      const denied = (yield* audit.query({ limit: 10, outcome: "denied" })).items
      assert.strictEqual(denied.length, 1)
      assert.strictEqual(denied[0]!.tool, "create_pet")
      assert.strictEqual(denied[0]!.identity, `token:${created.token.id}`)
    })))

  it.effect("a revoked token stops working at once", () =>
    Effect.gen(function*() {
      const tokens = yield* ClientTokens
      const created = yield* tokens.create({ name: "short-lived" })
      const auth = { authorization: `Bearer ${Redacted.value(created.plaintext)}` }
      assert.strictEqual((yield* rawList(auth)).status, 200)
      yield* tokens.revoke(created.token.id)
      assert.strictEqual((yield* rawList(auth)).status, 401)
    }))
})
