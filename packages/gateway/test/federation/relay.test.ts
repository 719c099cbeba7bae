/**
 * Relay through the whole gateway: a federated call's upstream log messages
 * and 2025 server-to-client requests reach the calling client on every
 * transport (2025 Streamable HTTP sessions, HTTP+SSE, 2026-07-28), at the
 * client's log level; a client that did not declare elicitation is not asked.
 * The upstream is the official SDK v1 server of `./upstreams.ts`.
 */
import { assert, layer } from "@effect/vitest"
import { Connections } from "@janus/storage"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ElicitRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"
import * as Stateless from "../support/StatelessRequests.ts"
import { waitUntil } from "./support.ts"
import * as Upstreams from "./upstreams.ts"

class Upstream extends Context.Service<Upstream, Upstreams.V1Upstream>()("test/federation/RelayUpstream") {}

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "v1",
    url: (yield* Upstream).url,
    transport: "streamable-http",
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 10_000
  })
}))

const TestLayer = Seed.pipe(
  Layer.provideMerge(GatewayTesting.layer()),
  Layer.provideMerge(Layer.effect(Upstream, Upstreams.scoped(() => Upstreams.v1StreamableHttp())))
)

const urlOf = (path: string) => HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base)))

interface Connected {
  readonly client: ClientV1
  readonly logs: Array<unknown>
}

/** An SDK v1 client on `/mcp` (2025 session) or `/sse`, recording log messages, answering elicitation if `asks`. */
const connect = (transport: "2025" | "sse", asks: boolean) =>
  Effect.acquireRelease(
    Effect.flatMap(urlOf(transport === "2025" ? "/mcp" : "/sse"), (url) =>
      Effect.promise(async (): Promise<Connected> => {
        const client = new ClientV1({ name: "relay-test", version: "1" }, {
          capabilities: asks ? { elicitation: {} } : {}
        })
        const logs: Array<unknown> = []
        client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
          logs.push(n.params.data)
        })
        if (asks) {
          client.setRequestHandler(ElicitRequestSchema, (request) => ({
            action: "accept",
            content: { colour: request.params.message.includes("colour") ? "blue" : "?" }
          }))
        }
        await client.connect(
          transport === "2025" ? new StreamableHTTPClientTransport(url) : new SSEClientTransport(url)
        )
        return { client, logs }
      })),
    ({ client }) =>
      Effect.promise(() =>
        client.close()
      )
  )

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text

const callTool = (client: ClientV1, name: string, args: Record<string, unknown>) =>
  Effect.promise(() => client.callTool({ name, arguments: args }).then(textOf))

/** A raw 2026-07-28 tools/call of a client that declares no capabilities. */
const modernCall = (name: string, args: Record<string, unknown>, meta: Record<string, unknown>) =>
  Effect.flatMap(
    urlOf("/mcp"),
    (url) =>
      Effect.promise(() =>
        Stateless.post(url, "tools/call", { name, arguments: args }, {
          meta: { "io.modelcontextprotocol/clientCapabilities": {}, ...meta }
        })
      )
  )

const federated = Effect.gen(function*() {
  const { client } = yield* connect("2025", false)
  yield* waitUntil(
    Effect.promise(() => client.listTools()).pipe(Effect.map((r) => r.tools.some((t) => t.name === "v1/chatty"))),
    "the upstream's tools"
  )
})

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("relay to the calling client", (it) => {
  for (const transport of ["2025", "sse"] as const) {
    it.effect(`${transport}: log messages at the session's level, and elicitation, reach the client`, () =>
      Effect.scoped(Effect.gen(function*() {
        yield* federated
        const { client, logs } = yield* connect(transport, true)
        assert.isObject(client.getServerCapabilities()?.logging)

        assert.strictEqual(yield* callTool(client, "v1/chatty", { text: "one" }), "one")
        assert.deepStrictEqual(logs, ["about to say one"])
        // below the level: dropped
        yield* Effect.promise(() => client.setLoggingLevel("error"))
        assert.strictEqual(yield* callTool(client, "v1/chatty", { text: "two" }), "two")
        yield* Effect.promise(() => client.setLoggingLevel("info"))
        assert.strictEqual(yield* callTool(client, "v1/chatty", { text: "three" }), "three")
        assert.deepStrictEqual(logs, ["about to say one", "about to say three"])

        // the upstream's elicitation/create is asked of this client, and its answer goes back
        assert.strictEqual(yield* callTool(client, "v1/ask", {}), "colour blue")
        // a level that does not exist is Invalid Params
        const refused = yield* Effect.promise(() =>
          client.request({ method: "logging/setLevel", params: { level: "loud" } } as never, {} as never).then(
            () => undefined,
            (error: { code?: number }) => error.code
          )
        )
        assert.strictEqual(refused, -32602)
      })))

    it.effect(`${transport}: a client without the elicitation capability is not asked; the upstream gets a decline`, () =>
      Effect.scoped(Effect.gen(function*() {
        yield* federated
        const { client } = yield* connect(transport, false)
        assert.strictEqual(yield* callTool(client, "v1/ask", {}), "no answer (decline)")
      })))
  }

  it.effect("2026-07-28: the request's logLevel opts in to log messages on its response stream", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* federated
      const level = "io.modelcontextprotocol/logLevel"
      const opted = yield* modernCall("v1/chatty", { text: "hi" }, { [level]: "info" })
      assert.include(opted.type, "text/event-stream")
      const messages = opted.messages
      assert.deepStrictEqual(messages.map((m) => m.method ?? "result"), ["notifications/message", "result"])
      assert.strictEqual(messages[0].params.data, "about to say hi")
      assert.strictEqual(messages[1].result.content[0].text, "hi")

      for (const meta of [{}, { [level]: "error" }]) {
        const quiet = yield* modernCall("v1/chatty", { text: "hi" }, meta)
        assert.deepStrictEqual(quiet.messages.map((m) => m.method ?? "result"), ["result"])
        assert.strictEqual(quiet.body.result.content[0].text, "hi")
      }
    })))
})
