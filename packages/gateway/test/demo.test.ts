import { assert, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/client"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import * as Demo from "../src/demo/Demo.ts"
import * as GatewayTesting from "../src/testing.ts"

const connect = Effect.acquireRelease(
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base))),
    (url) =>
      Effect.promise(async () => {
        const client = new Client({ name: "demo", version: "1" }, {
          versionNegotiation: { mode: { pin: "2026-07-28" } }
        })
        await client.connect(new StreamableHTTPClientTransport(url))
        return client
      })
  ),
  (client) => Effect.promise(() => client.close())
)

layer(Demo.layer.pipe(Layer.provideMerge(GatewayTesting.layer())), { timeout: 60_000, excludeTestServices: true })(
  "JANUS_DEMO",
  (it) => {
    it.effect("seeds demo tools that answer through the gateway, and seeding twice is harmless", () =>
      Effect.scoped(Effect.gen(function*() {
        // a restart seeds again: no duplicate, no failure
        yield* Layer.build(Demo.layer)
        const client = yield* connect
        const tools = (yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)
        assert.deepStrictEqual(tools, ["demo_add_todo", "demo_echo", "demo_get_todo", "demo_list_todos", "demo_time"])
        const echo = yield* Effect.promise(() => client.callTool({ name: "demo_echo", arguments: { text: "hi" } }))
        assert.deepStrictEqual(echo.structuredContent, { text: "hi" })
        const added = yield* Effect.promise(() =>
          client.callTool({ name: "demo_add_todo", arguments: { title: "ship" } })
        )
        assert.deepStrictEqual(added.structuredContent, { id: 3, title: "ship", done: false })
      })))
  }
)
