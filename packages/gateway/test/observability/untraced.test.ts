/**
 * Trace context with no trace export (no tracer installed: Janus makes no
 * spans), over HTTP against the real composition, a loopback downstream and
 * an official SDK MCP server as upstream:
 *
 * - the caller's `traceparent` (sampled or not), `tracestate` and `baggage`
 *   reach the downstream and the upstream exactly as sent, and the audit
 *   record carries the caller's trace id;
 * - a request with no trace context, or a malformed one, sends none on: no
 *   made-up trace (before, effect's client span of the native tracer went
 *   out as a new trace flagged sampled, so a downstream sampling by its
 *   parent recorded every call), while the audit record still has a trace id;
 * - `OTEL_PROPAGATORS=b3multi`: the caller's `X-B3-*` go out as `X-B3-*`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { AuditLog, Connections } from "@janus/storage"
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { z } from "zod"
import { serveMcp, v1Sessions } from "../federation/upstreams.ts"
import { stateless } from "../mcp/http-client.ts"
import * as Downstream from "../support/Downstream.ts"
import * as ObservedGateway from "./support/ObservedGateway.ts"

const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base).href))

const TRACE_HEADERS = ["traceparent", "tracestate", "b3", "x-b3-traceid", "x-b3-spanid", "x-b3-sampled"]

/** An official SDK v1 MCP server with an `echo` tool, keeping the headers of every POST it receives. */
class HeaderUpstream extends Context.Service<HeaderUpstream, {
  readonly url: string
  readonly posts: Array<Record<string, string | Array<string> | undefined>>
}>()("test/untraced/HeaderUpstream") {}

const HeaderUpstreamLive = Layer.effect(
  HeaderUpstream,
  Effect.acquireRelease(
    Effect.promise(async () => {
      const posts: Array<Record<string, string | Array<string> | undefined>> = []
      const { handle } = v1Sessions(() => {
        const server = new McpServerV1({ name: "headers", version: "1.0.0" }, { capabilities: { tools: {} } })
        server.registerTool(
          "echo",
          { description: "Echoes its text", inputSchema: { text: z.string() } },
          async ({ text }) => ({ content: [{ type: "text", text }] })
        )
        return server
      })
      const served = await serveMcp((req, res) => {
        if (req.method === "POST") posts.push({ ...req.headers })
        return handle(req, res)
      })
      return { ...served, posts }
    }),
    (upstream) => Effect.promise(() => upstream.stop())
  )
)

const seedUpstream = Effect.gen(function*() {
  const upstream = yield* HeaderUpstream
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "headers",
    url: upstream.url,
    transport: "streamable-http",
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 10_000
  })
})

/** The name under which the gateway lists the upstream's `echo`, once it does. */
const upstreamEcho = Effect.gen(function*() {
  for (let i = 0; i < 100; i++) {
    const reply = yield* stateless(yield* mcpUrl, "tools/list", {})
    const echo = ((reply.body?.result?.tools ?? []) as Array<{ name: string }>).find((t) => t.name.endsWith("echo"))
    if (echo !== undefined) return echo.name
    yield* Effect.sleep("100 millis")
  }
  return yield* Effect.die(new Error("the upstream's echo tool was never listed"))
})

/** The audit record of the request that answered with `requestId`. */
const auditOf = (requestId: string | null) =>
  Effect.gen(function*() {
    const log = yield* AuditLog
    yield* log.flush
    const found = (yield* log.query({ limit: 1_000 })).items.filter((r) => r.requestId === requestId)
    assert.lengthOf(found, 1, `one audit record for request ${requestId}`)
    return found[0]!
  })

const gateway = (config: Parameters<typeof ObservedGateway.layer>[0] = {}) =>
  Layer.effectDiscard(Effect.andThen(ObservedGateway.seedPets(), seedUpstream)).pipe(
    Layer.provideMerge(ObservedGateway.layer(config)),
    Layer.provideMerge(Downstream.layer),
    Layer.provideMerge(HeaderUpstreamLive)
  )

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
const callerSpan = "00f067aa0ba902b7"

describe("no trace export", () => {
  layer(gateway(), { timeout: 60_000, excludeTestServices: true })("default propagators", (it) => {
    it.effect("passes the caller's trace context to the downstream as sent, and audits its trace id", () =>
      Effect.gen(function*() {
        const downstream = yield* Downstream.Downstream
        for (const flag of ["01", "00"]) {
          const reply = yield* stateless(yield* mcpUrl, "tools/call", { name: "get_pet", arguments: { id: "1" } }, {
            traceparent: `00-${traceId}-${callerSpan}-${flag}`,
            tracestate: "vendor=opaque",
            baggage: "tenant=acme"
          })
          assert.strictEqual(reply.status, 200)
          assert.strictEqual(downstream.lastHeaders["traceparent"], `00-${traceId}-${callerSpan}-${flag}`)
          assert.strictEqual(downstream.lastHeaders["tracestate"], "vendor=opaque")
          assert.strictEqual(downstream.lastHeaders["baggage"], "tenant=acme")
          assert.strictEqual((yield* auditOf(reply.headers.get("x-request-id"))).traceId, traceId)
        }
      }))

    it.effect("makes up no trace context for a caller that sent none, or a malformed one", () =>
      Effect.gen(function*() {
        const downstream = yield* Downstream.Downstream
        const sent: ReadonlyArray<Record<string, string>> = [
          {},
          { traceparent: "garbage", tracestate: "vendor=opaque" },
          { traceparent: `00-${"0".repeat(32)}-${callerSpan}-01` },
          { traceparent: `00-${traceId}-${callerSpan}-01\u0000` }
        ]
        for (const headers of sent) {
          const reply = yield* stateless(
            yield* mcpUrl,
            "tools/call",
            { name: "get_pet", arguments: { id: "2" } },
            headers
          ).pipe(Effect.catchDefect(() => Effect.succeed(undefined)))
          // fetch itself refuses a NUL in a header value: nothing was sent
          if (reply === undefined) continue
          assert.strictEqual(reply.status, 200, JSON.stringify(headers))
          for (const name of TRACE_HEADERS) {
            assert.isUndefined(downstream.lastHeaders[name], `${name} after ${JSON.stringify(headers)}`)
          }
          // a trace id of its own for the audit record, never sent on
          const record = yield* auditOf(reply.headers.get("x-request-id"))
          assert.match(record.traceId ?? "", /^[0-9a-f]{32}$/)
          assert.notStrictEqual(record.traceId, traceId)
        }
      }))

    it.effect("passes the caller's trace context to an upstream MCP server as sent, and none when it sent none", () =>
      Effect.gen(function*() {
        const upstream = yield* HeaderUpstream
        const echo = yield* upstreamEcho
        const before = upstream.posts.length
        const reply = yield* stateless(yield* mcpUrl, "tools/call", { name: echo, arguments: { text: "hi" } }, {
          traceparent: `00-${traceId}-${callerSpan}-01`,
          baggage: "tenant=acme"
        })
        assert.strictEqual(reply.status, 200)
        assert.deepStrictEqual(reply.body.result.content, [{ type: "text", text: "hi" }])
        const call = upstream.posts.slice(before).find((h) => h["traceparent"] !== undefined)
        assert.strictEqual(call?.["traceparent"], `00-${traceId}-${callerSpan}-01`)
        assert.strictEqual(call?.["baggage"], "tenant=acme")

        const after = upstream.posts.length
        const plain = yield* stateless(yield* mcpUrl, "tools/call", { name: echo, arguments: { text: "ho" } })
        assert.strictEqual(plain.status, 200)
        const posts = upstream.posts.slice(after)
        assert.isAbove(posts.length, 0)
        for (const headers of posts) assert.isUndefined(headers["traceparent"])
      }))
  })

  layer(gateway({ config: { OTEL_PROPAGATORS: ["b3multi", "baggage"] } }), {
    timeout: 60_000,
    excludeTestServices: true
  })(
    "OTEL_PROPAGATORS=b3multi,baggage",
    (it) => {
      it.effect("passes the caller's X-B3-* on as X-B3-*, and no W3C trace header", () =>
        Effect.gen(function*() {
          const downstream = yield* Downstream.Downstream
          const b3Trace = "80f198ee56343ba864fe8b2a57d3eff7"
          const reply = yield* stateless(yield* mcpUrl, "tools/call", { name: "get_pet", arguments: { id: "3" } }, {
            "x-b3-traceid": b3Trace,
            "x-b3-spanid": "e457b5a2e4d86bd1",
            "x-b3-sampled": "1",
            traceparent: `00-${traceId}-${callerSpan}-01`
          })
          assert.strictEqual(reply.status, 200)
          assert.strictEqual(downstream.lastHeaders["x-b3-traceid"], b3Trace)
          assert.strictEqual(downstream.lastHeaders["x-b3-spanid"], "e457b5a2e4d86bd1")
          assert.strictEqual(downstream.lastHeaders["x-b3-sampled"], "1")
          assert.isUndefined(downstream.lastHeaders["traceparent"])
          assert.isUndefined(downstream.lastHeaders["b3"])
          assert.strictEqual((yield* auditOf(reply.headers.get("x-request-id"))).traceId, b3Trace)
        }))
    }
  )
})
