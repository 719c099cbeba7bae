/**
 * An upstream MCP server cannot hand Janus's credential back: one that
 * echoes the Authorization header it received in a tool result, its
 * structured content, a progress message and an error gets every echo of
 * the injected token scrubbed before the client sees it; a stdio upstream
 * (the published server-everything, whose `get-env` prints its environment)
 * gets the secret Janus put in its environment scrubbed the same way.
 */
import { assert, layer } from "@effect/vitest"
import { Connections, Secrets } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { EgressPolicy } from "../../src/egress/EgressPolicy.ts"
import { FederatedCatalog } from "../../src/federation/FederatedCatalog.ts"
import { anonymous } from "../../src/mcp/Caller.ts"
import type { CallToolResult } from "../../src/mcp/ToolCatalog.ts"
import * as GatewayTesting from "../../src/testing.ts"
import { httpServer } from "../egress/servers.ts"
import * as SdkClients from "../support/SdkClients.ts"
import { EVERYTHING } from "./stdio-servers.ts"
import { fast, waitUntil } from "./support.ts"

const TOKEN = "upstream-S3CRET-token/42"

/** A stateless v1 upstream whose tools tell what Authorization header they were called with. */
class Leaky extends Context.Service<Leaky, { readonly url: string }>()("test/federation/Leaky") {}

const LeakyLive = Layer.effect(
  Leaky,
  Effect.map(
    httpServer(async (req, res, received) => {
      const mcp = new McpServer({ name: "leaky", version: "1.0.0" }, { capabilities: { tools: {} } })
      mcp.registerTool("whoami", { description: "Says who called it" }, async (extra) => {
        const seen = String(extra.requestInfo?.headers.authorization)
        const token = extra._meta?.progressToken
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: 1, total: 2, message: `working for ${seen}` }
          })
        }
        return {
          content: [{ type: "text", text: `you are ${seen}` }],
          structuredContent: { authorization: seen, token: seen.slice("Bearer ".length) }
        }
      })
      mcp.registerTool("fail", { description: "Fails, quoting the credential" }, async (extra) => {
        throw new Error(`refused ${String(extra.requestInfo?.headers.authorization)}`)
      })
      const transport = new StreamableHTTPServerTransport({})
      await mcp.connect(transport)
      await transport.handleRequest(req, res, received.body === "" ? undefined : JSON.parse(received.body))
    }),
    (server) => Leaky.of({ url: `${server.origin}/mcp` })
  )
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  yield* (yield* Secrets).set("leaky-token", Redacted.make(TOKEN))
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "leaky",
    url: (yield* Leaky).url,
    auth: { scheme: "bearer", secret: "leaky-token" },
    egressAllowList: ["127.0.0.1"]
  })
}))

const TestLayer = FederatedCatalog.layer(fast).pipe(
  Layer.provideMerge(Seed),
  Layer.provideMerge(LeakyLive),
  Layer.provideMerge(EgressPolicy.layerDefault),
  Layer.provideMerge(StorageTesting.layerMemory())
)

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("federated results", (it) => {
  it.effect("an upstream's echo of Janus's token is scrubbed from results, progress and errors", () =>
    Effect.gen(function*() {
      const catalog = yield* FederatedCatalog
      const messages: Array<string> = []
      const call = (name: string) =>
        catalog.call(anonymous, {
          name,
          arguments: {},
          signal: new AbortController().signal,
          progress: Option.some((_progress, _total, message) => Effect.sync(() => void messages.push(String(message))))
        })
      yield* waitUntil(Effect.map(catalog.list(anonymous), (tools) => tools.length === 2), "the upstream's tools")
      const result = (yield* call("leaky/whoami")) as CallToolResult
      const everything = JSON.stringify({ result, messages })
      assert.notInclude(everything, "S3CRET", everything)
      assert.strictEqual((result.content[0] as { text: string }).text, "you are Bearer [REDACTED:secret]")
      assert.deepStrictEqual(result.structuredContent, {
        authorization: "Bearer [REDACTED:secret]",
        token: "[REDACTED:secret]"
      })
      assert.deepStrictEqual(messages, ["working for Bearer [REDACTED:secret]"])

      const failed = yield* Effect.exit(call("leaky/fail"))
      assert.notInclude(JSON.stringify(failed), "S3CRET", JSON.stringify(failed))
    }))
})

const STDIO_SECRET = "stdio-S3CRET-value-9"

const StdioGateway = Layer.effectDiscard(Effect.gen(function*() {
  yield* (yield* Secrets).set("stdio-key", Redacted.make(STDIO_SECRET))
  yield* (yield* Connections).create({
    kind: "mcp",
    transport: "stdio",
    name: "everything",
    command: process.execPath,
    args: [EVERYTHING, "stdio"],
    env: { LEAKY_API_KEY: { secret: "stdio-key" } },
    timeoutMs: 10_000
  })
})).pipe(Layer.provideMerge(GatewayTesting.layer({ config: { JANUS_STDIO_COMMANDS: [process.execPath] } })))

layer(StdioGateway, { timeout: 120_000, excludeTestServices: true })("stdio upstream results", (it) => {
  it.effect("a program that prints its environment does not print the secret Janus gave it", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* SdkClients.v1
      yield* waitUntil(
        Effect.promise(() => client.listTools()).pipe(
          Effect.map((listed) => listed.tools.some((t) => t.name === "everything/get-env"))
        ),
        "the stdio upstream's tools"
      )
      const result = yield* Effect.promise(() => client.callTool({ name: "everything/get-env", arguments: {} }))
      const text = JSON.stringify(result)
      assert.notInclude(text, "S3CRET", text)
      const env = JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as Record<string, string>
      assert.strictEqual(env.LEAKY_API_KEY, "[REDACTED:secret]")
    })))
})
