/**
 * A change of the tool set reaches connected clients as a list-changed
 * notification: the write becomes a change signal on the event log, the hub
 * delivers it on topic `tools`, and the MCP transports notify.
 */
import { assert, layer } from "@effect/vitest"
import { Connections, Endpoints, EventLog } from "@janus/storage"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../src/testing.ts"

layer(GatewayTesting.layer(), { timeout: 60_000, excludeTestServices: true })("list-changed", (it) => {
  it.effect("a 2025-era client on its GET stream is told when an endpoint is added, and sees the new tool", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base)))
      const notified: Array<number> = []
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new ClientV1({ name: "watcher", version: "1" })
          client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
            notified.push(Date.now())
          })
          await client.connect(new TransportV1(url))
          return client
        }),
        (client) => Effect.promise(() => client.close())
      )
      assert.deepStrictEqual((yield* Effect.promise(() => client.listTools())).tools, [])
      yield* Effect.sleep("300 millis") // the client opens its GET stream after initialize

      const connection = yield* (yield* Connections).create({
        kind: "rest",
        name: "later",
        baseUrl: "https://api.example.com"
      })
      yield* (yield* Endpoints).create({
        connectionId: connection.id,
        name: "late_tool",
        method: "GET",
        pathTemplate: "/x",
        inputSchema: { type: "object" }
      })
      yield* (yield* EventLog).flush
      for (let i = 0; i < 100 && notified.length === 0; i++) yield* Effect.sleep("50 millis")
      assert.isAtLeast(notified.length, 1)
      // two writes, one flush: the signals coalesced into (at most) one notification per flush
      assert.isAtMost(notified.length, 2)
      const tools = (yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)
      assert.deepStrictEqual(tools, ["late_tool"])
    })))
})
