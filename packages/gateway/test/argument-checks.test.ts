/**
 * Tool arguments are checked by the gateway before anything is sent, on a
 * linear-time regex engine, for REST tools and federated MCP tools alike, and
 * a client's invalid arguments never count against a connection. Through one
 * whole gateway: a real REST downstream and a real upstream MCP server (the
 * official SDK's low-level server, so the test lists exactly the schemas it
 * wants, hostile ones included) on loopback, the official SDK client.
 *
 * - `^(a+)+$` (nested quantifiers, as OpenAPI imports bring) against 10,000
 *   `a`s and a `!`: on a backtracking engine 2^10,000 steps, a call that
 *   never returns; here a prompt "must match the pattern" for both kinds of
 *   tool, and `/healthz` answers meanwhile.
 * - An MCP tool's arguments that do not fit its `inputSchema` are answered
 *   as REST tools answer (a tool result with `isError`), and the upstream
 *   never receives the call.
 * - Hostile upstream schemas (a lookahead RE2 cannot run, 5,000 properties,
 *   a `$ref` cycle, nesting 200 deep) leave their tools callable and the
 *   gateway well.
 * - Many invalid calls, judged by the gateway or by the server itself (HTTP
 *   422, JSON-RPC -32602), against a breaker that opens after two failures:
 *   the breaker stays closed, the upstream session stays up (no new
 *   `initialize`), and a valid call still goes through.
 */
import { assert, layer } from "@effect/vitest"
import { Connections, Endpoints } from "@janus/storage"
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js"
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import { HttpServer } from "effect/http"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { UpstreamHealth } from "../src/federation/FederatedCatalog.ts"
import * as GatewayTesting from "../src/testing.ts"
import { waitUntil } from "./federation/support.ts"
import { serveMcp, v1Sessions } from "./federation/upstreams.ts"
import { v1 as connectV1 } from "./support/SdkClients.ts"

const PATHOLOGICAL = "a".repeat(10_000) + "!"

// -----------------------------------------------------------------------------
// The REST downstream: orders, at most 100 of a kind (a rule only it knows: 422)
// -----------------------------------------------------------------------------

interface Seen {
  /** REST requests, by "METHOD path". */
  readonly rest: Map<string, number>
  /** tools/call requests the upstream received, by tool. */
  readonly calls: Map<string, number>
  initializes: number
}

const handleRest = (seen: Seen) => (req: IncomingMessage, res: ServerResponse) => {
  const key = `${req.method} ${new URL(req.url ?? "/", "http://x").pathname}`
  seen.rest.set(key, (seen.rest.get(key) ?? 0) + 1)
  let body = ""
  req.on("data", (c) => (body += c))
  req.on("end", () => {
    const order = JSON.parse(body || "{}") as { quantity?: number }
    const [status, answer] = (order.quantity ?? 0) > 100
      ? [422, { error: "at most 100 of a kind" }]
      : [201, { ordered: order }]
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(answer))
  })
}

// -----------------------------------------------------------------------------
// The upstream MCP server: it lists the schemas given here as they are
// -----------------------------------------------------------------------------

const orderSchema = {
  type: "object",
  properties: {
    code: { type: "string", pattern: "^(a+)+$" },
    quantity: { type: "integer", minimum: 1 }
  },
  required: ["quantity"],
  additionalProperties: false
}

let deep: Record<string, unknown> = { type: "string" }
for (let i = 0; i < 200; i++) deep = { type: "object", properties: { x: deep } }

const upstreamTools = [
  { name: "order", description: "orders things", inputSchema: orderSchema },
  {
    name: "lookahead",
    description: "a pattern RE2 cannot run; the rest is checked",
    inputSchema: {
      type: "object",
      properties: { password: { type: "string", pattern: "^(?=.*[0-9]).{8,}$" }, user: { type: "string" } },
      required: ["user"]
    }
  },
  {
    name: "huge",
    description: "5,000 properties (over 100 KB of JSON)",
    inputSchema: {
      type: "object",
      properties: Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`p${i}`, { type: "string" }]))
    }
  },
  {
    name: "cycle",
    description: "a $ref cycle",
    inputSchema: { type: "object", $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" }
  },
  { name: "deep", description: "nested 200 deep", inputSchema: deep }
]

const makeUpstream = (seen: Seen) => () => {
  const server = new McpServerV1({ name: "hostile-schemas", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.server.oninitialized = () => {
    seen.initializes++
  }
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: upstreamTools }))
  server.server.setRequestHandler(CallToolRequestSchema, (request) => {
    const name = request.params.name
    seen.calls.set(name, (seen.calls.get(name) ?? 0) + 1)
    const args = request.params.arguments ?? {}
    // the upstream's own rule, which its schema does not say: Invalid params
    if (name === "order" && typeof args.quantity === "number" && args.quantity > 100) {
      throw new McpError(-32602, "at most 100 of a kind")
    }
    return { content: [{ type: "text", text: `${name} ok: ${JSON.stringify(args)}` }] }
  })
  return server
}

// -----------------------------------------------------------------------------
// The gateway under test
// -----------------------------------------------------------------------------

class Fixture extends Context.Service<Fixture, Seen>()("test/argument-checks/Fixture") {}

const FixtureLive = Layer.effect(
  Fixture,
  Effect.gen(function*() {
    const seen: Seen = { rest: new Map(), calls: new Map(), initializes: 0 }
    const rest = yield* Effect.acquireRelease(
      Effect.promise(() =>
        new Promise<ReturnType<typeof createServer>>((resolve) => {
          const server = createServer(handleRest(seen))
          server.listen(0, "127.0.0.1", () => resolve(server))
        })
      ),
      (server) =>
        Effect.sync(() => {
          server.closeAllConnections()
          server.close()
        })
    )
    const sessions = v1Sessions(makeUpstream(seen))
    const upstream = yield* Effect.acquireRelease(
      Effect.promise(() => serveMcp(sessions.handle)),
      (served) => Effect.promise(() => served.stop())
    )
    const connections = yield* Connections
    const shop = yield* connections.create({
      kind: "rest",
      name: "shop",
      baseUrl: `http://127.0.0.1:${(rest.address() as AddressInfo).port}`,
      egressAllowList: ["127.0.0.1"],
      retry: { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0 },
      // two failures open the circuit: a client's mistakes must never get there
      breaker: { consecutiveFailures: 2, openMs: 600_000 }
    })
    yield* (yield* Endpoints).create({
      connectionId: shop.id,
      name: "rest_order",
      method: "POST",
      pathTemplate: "/orders",
      arguments: { code: "body", quantity: "body" },
      inputSchema: orderSchema
    })
    yield* connections.create({ kind: "mcp", name: "up", url: upstream.url, egressAllowList: ["127.0.0.1"] })
    return seen
  })
)

const TestLayer = FixtureLive.pipe(Layer.provideMerge(GatewayTesting.layer()))

const textOf = (result: object): string => (result as { content: Array<{ text: string }> }).content[0]!.text

/**
 * A tools/call through the SDK client; an upstream's own Invalid params
 * (-32602, relayed as a JSON-RPC error) as an `isError` result with its message.
 */
const call = (client: Effect.Success<typeof connectV1>, name: string, args: Record<string, unknown>) =>
  Effect.promise(() =>
    client.callTool({ name, arguments: args }).catch((error: unknown) => {
      if (error instanceof McpError && error.code === -32602) {
        return { isError: true, content: [{ type: "text", text: error.message }] }
      }
      throw error
    })
  )

const healthz = HttpServer.addressFormattedWith((base) =>
  Effect.promise(() => fetch(new URL("/healthz", base)).then((r) => r.status))
)

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })("tool argument checks", (it) => {
  it.effect("^(a+)+$ against 10,000 a's and a !: refused at once for REST and MCP tools, /healthz answers", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen = yield* Fixture
      const v1 = yield* connectV1
      for (const name of ["rest_order", "up/order"]) {
        const call = yield* Effect.forkChild(
          Effect.promise(() => v1.callTool({ name, arguments: { code: PATHOLOGICAL, quantity: 1 } }))
        )
        assert.strictEqual(yield* healthz, 200)
        const result = yield* Fiber.join(call)
        assert.isTrue(result.isError, name)
        assert.include(textOf(result), `Invalid arguments for tool '${name}'`)
        assert.include(textOf(result), "arguments.code must match the pattern \"^(a+)+$\"")
        const matching = yield* Effect.promise(() =>
          v1.callTool({ name, arguments: { code: "a".repeat(10_000), quantity: 1 } })
        )
        assert.isUndefined(matching.isError, name)
      }
      assert.strictEqual(seen.rest.get("POST /orders"), 1, "only the matching call reached the downstream")
      assert.strictEqual(seen.calls.get("order"), 1, "only the matching call reached the upstream")
    })))

  it.effect("an MCP tool's invalid arguments: an isError result naming each, and the upstream never gets the call", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen = yield* Fixture
      const v1 = yield* connectV1
      const before = seen.calls.get("order") ?? 0
      const wrong = yield* Effect.promise(() =>
        v1.callTool({ name: "up/order", arguments: { quantity: "many", code: "b", admin: true } })
      )
      assert.isTrue(wrong.isError)
      const text = textOf(wrong)
      assert.include(text, "Invalid arguments for tool 'up/order'")
      assert.include(text, "arguments.quantity must be integer; got the string \"many\"")
      assert.include(text, "arguments.code must match the pattern \"^(a+)+$\"; got the string \"b\"")
      assert.include(text, "arguments.admin is not an argument of this tool (it takes code, quantity)")
      const missing = yield* Effect.promise(() => v1.callTool({ name: "up/order", arguments: {} }))
      assert.include(textOf(missing), "arguments.quantity is required but missing")
      assert.strictEqual(seen.calls.get("order") ?? 0, before, "nothing reached the upstream")

      const ok = yield* Effect.promise(() => v1.callTool({ name: "up/order", arguments: { quantity: 2, code: "aa" } }))
      assert.isUndefined(ok.isError)
      assert.strictEqual(seen.calls.get("order"), before + 1)
    })))

  it.effect("hostile upstream schemas leave their tools callable and the gateway well", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen = yield* Fixture
      const v1 = yield* connectV1
      // the lookahead is not checked; the rest of its schema is
      const lookahead = yield* Effect.promise(() => v1.callTool({ name: "up/lookahead", arguments: { password: "x" } }))
      assert.isTrue(lookahead.isError)
      assert.include(textOf(lookahead), "arguments.user is required but missing")
      assert.isUndefined(seen.calls.get("lookahead"))
      const unchecked = yield* Effect.promise(() =>
        v1.callTool({ name: "up/lookahead", arguments: { user: "u", password: "x" } })
      )
      assert.isUndefined(unchecked.isError)
      assert.strictEqual(seen.calls.get("lookahead"), 1)
      for (const name of ["huge", "cycle", "deep"]) {
        const result = yield* Effect.promise(() => v1.callTool({ name: `up/${name}`, arguments: { p1: "x" } }))
        assert.isUndefined(result.isError, name)
        assert.strictEqual(textOf(result), `${name} ok: {"p1":"x"}`)
      }
      assert.strictEqual(yield* healthz, 200)
    })))

  it.effect("many invalid calls never count: the breaker stays closed, the session up, a valid call goes through", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen = yield* Fixture
      const v1 = yield* connectV1
      const health = yield* UpstreamHealth
      yield* waitUntil(
        Effect.map(health.get("up"), (s) => Option.isSome(s) && s.value.state === "healthy"),
        "the upstream to be healthy"
      )
      const initializes = seen.initializes
      const mistakes: ReadonlyArray<Record<string, unknown>> = [
        { quantity: "many" }, // the gateway's judgement
        { quantity: 0 },
        { quantity: 1, code: "b" },
        { quantity: 1, extra: true },
        { quantity: 500 } // the server's own: HTTP 422, JSON-RPC -32602
      ]
      for (let round = 0; round < 4; round++) {
        for (const name of ["rest_order", "up/order"]) {
          for (const args of mistakes) {
            const result = yield* call(v1, name, args)
            assert.isTrue(result.isError, `${name} ${JSON.stringify(args)}`)
            assert.notInclude(textOf(result), "breaker", name)
          }
        }
      }
      // the server's own judgement was asked each time; the gateway's never reached it
      assert.strictEqual(seen.rest.get("POST /orders"), 1 + 4)
      assert.strictEqual(seen.calls.get("order"), 2 + 4)

      const metrics = yield* HttpServer.addressFormattedWith((base) =>
        Effect.promise(() => fetch(new URL("/metrics", base)).then((r) => r.text()))
      )
      const shop = metrics.split("\n").filter((l) => l.startsWith("janus_breaker_state{") && l.includes("shop"))
      for (const line of shop) assert.match(line, /\s0$/, `the breaker is not closed: ${line}`)
      const status = Option.getOrThrow(yield* health.get("up"))
      assert.strictEqual(status.state, "healthy")
      assert.strictEqual(seen.initializes, initializes, "the upstream session was never restarted")

      const rest = yield* Effect.promise(() => v1.callTool({ name: "rest_order", arguments: { quantity: 3 } }))
      assert.isUndefined(rest.isError, textOf(rest))
      assert.include(textOf(rest), "\"quantity\":3")
      const mcp = yield* Effect.promise(() => v1.callTool({ name: "up/order", arguments: { quantity: 3 } }))
      assert.isUndefined(mcp.isError, textOf(mcp))
      assert.strictEqual(seen.rest.get("POST /orders"), 1 + 4 + 1)
    })))
})
