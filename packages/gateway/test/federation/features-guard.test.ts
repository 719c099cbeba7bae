/**
 * Resources and prompts pass the same guards as tools/call (issue #17), with
 * one gateway (anonymous loopback mode, REDACTION_ENABLED, per-IP limit 5 per
 * second, burst 20) in front of an SDK v1 upstream whose resource contents
 * and prompt messages carry a card number and an e-mail address.
 *
 * Expected:
 * - resources/read and prompts/get come back with the card number and the
 *   address replaced by `[REDACTED:…]` markers, the rest of the text intact,
 *   and the audit record counts the redactions;
 * - the per-IP limit refuses the excess of a batch of 60 resources/read and
 *   of 60 prompts/get with "Too many requests from this address", as it does
 *   tools/call.
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog, Connections } from "@janus/storage"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"
import { post } from "../mcp/http-client.ts"
import { serveMcp, v1Sessions } from "./upstreams.ts"

// put together at run time, so that no secret scanner mistakes this file for a leak
const CARD = ["4111", "1111", "1111", "1111"].join("")
const EMAIL = ["jane.doe", "example.com"].join("@")

const makeServer = () => {
  const server = new McpServer({ name: "leaky", version: "1.0.0" })
  server.registerResource("card", "leaky://card", { mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: `card ${CARD} of ${EMAIL}, kept` }]
  }))
  server.registerPrompt("card_prompt", { description: "a prompt that leaks" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: `pay with ${CARD}, mail ${EMAIL}, kept` } }]
  }))
  return server
}

class Leaky extends Context.Service<Leaky, { readonly url: string }>()("test/federation/features-guard/Leaky") {}

const LeakyLive = Layer.effect(
  Leaky,
  Effect.acquireRelease(
    Effect.promise(() => {
      const { handle, sessions } = v1Sessions(makeServer)
      return serveMcp(handle, () => sessions.clear())
    }),
    (u) => Effect.promise(() => u.stop())
  )
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "leaky",
    url: (yield* Leaky).url,
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 10_000,
    toolPrefix: ""
  })
}))

const TestLayer = Seed.pipe(
  Layer.provideMerge(GatewayTesting.layer({
    config: { REDACTION_ENABLED: true, RATE_LIMIT_IP: 5, RATE_LIMIT_IP_BURST: 20 }
  })),
  Layer.provideMerge(LeakyLive)
)

const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base).href))

/** A 2025-03-26 session (batches allowed): one request, or a batch. */
const session = Effect.gen(function*() {
  const url = yield* mcpUrl
  const init = yield* post(url, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "guard-test", version: "1" } }
  })
  assert.strictEqual(init.status, 200, init.text)
  const headers = { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-03-26" }
  let id = 1
  const rpc = (method: string, params: Record<string, unknown>) =>
    Effect.map(post(url, { jsonrpc: "2.0", id: id++, method, params }, headers), (reply) => {
      const body = reply.body ?? JSON.parse(reply.events.at(-1)?.data ?? "{}")
      return body as { result?: any; error?: { code: number; message: string; data?: any } }
    })
  const batch = (method: string, params: Record<string, unknown>, n: number) =>
    Effect.map(
      post(url, Array.from({ length: n }, () => ({ jsonrpc: "2.0", id: id++, method, params })), headers),
      (reply) => reply.body as ReadonlyArray<{ result?: any; error?: { message: string; data?: any } }>
    )
  return { rpc, batch }
})

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("resources and prompts under the guards", (it) => {
  it.effect("redaction covers resource contents and prompt messages, and is counted in the audit", () =>
    Effect.gen(function*() {
      const s = yield* session
      // the upstream is listed once its first discovery is done (few requests: the per-IP bucket is small)
      let read = yield* s.rpc("resources/read", { uri: "leaky://card" })
      for (let i = 0; i < 20 && read.result === undefined; i++) {
        yield* Effect.sleep("300 millis")
        read = yield* s.rpc("resources/read", { uri: "leaky://card" })
      }
      const text: string = read.result?.contents?.[0]?.text ?? JSON.stringify(read)
      assert.notInclude(text, CARD)
      assert.notInclude(text, EMAIL)
      assert.match(text, /^card \[REDACTED:[a-z_]+\] of \[REDACTED:[a-z_]+\], kept$/)
      assert.strictEqual(read.result.contents[0].uri, "leaky://card")

      const got = yield* s.rpc("prompts/get", { name: "card_prompt" })
      const message: string = got.result?.messages?.[0]?.content?.text ?? JSON.stringify(got)
      assert.notInclude(message, CARD)
      assert.notInclude(message, EMAIL)
      assert.match(message, /^pay with \[REDACTED:[a-z_]+\], mail \[REDACTED:[a-z_]+\], kept$/)
      assert.strictEqual(got.result.messages[0].role, "user")

      const audit = yield* AuditLog
      yield* audit.flush
      const records = (yield* audit.query({ limit: 100 })).items.filter((r) =>
        r.method === "resources/read" || r.method === "prompts/get"
      )
      const ok = records.filter((r) => r.outcome === "ok")
      assert.includeMembers(ok.map((r) => r.method), ["resources/read", "prompts/get"])
      assert.isTrue(ok.every((r) => r.redactions === 2), JSON.stringify(ok.map((r) => r.redactions)))
    }))

  it.effect("the per-IP limit refuses the excess of resources/read and prompts/get as it does tools/call", () =>
    Effect.gen(function*() {
      const s = yield* session
      for (
        const [method, params] of [
          ["resources/read", { uri: "leaky://card" }],
          ["prompts/get", { name: "card_prompt" }]
        ] as const
      ) {
        const started = Date.now()
        const answers = yield* s.batch(method, params, 60)
        const elapsed = Date.now() - started
        assert.strictEqual(answers.length, 60)
        const limited = answers.filter((a) => a.error?.data?.reason === "rate_limited")
        const ok = answers.filter((a) => a.result !== undefined)
        assert.strictEqual(ok.length + limited.length, 60, method)
        // at most the burst (20) and what 5 per second refills while the batch runs
        assert.isAtMost(ok.length, 20 + 5 * Math.ceil(elapsed / 1000), method)
        assert.isAtLeast(limited.length, 60 - 20 - 5 * Math.ceil(elapsed / 1000), method)
        assert.include(
          limited[0]!.error!.message,
          "Too many requests from this address: the limit is 5 per second (burst 20)"
        )
        yield* Effect.sleep("4 seconds")
      }
    }))
})
