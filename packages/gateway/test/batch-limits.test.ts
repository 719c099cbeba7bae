/**
 * JSON-RPC batches (2025-03-26 sessions) are charged per message: every
 * message after the first costs one token of the per-IP and per-identity
 * limits, as a POST of its own would, and each tools/call in a batch takes its
 * own concurrency permit (tested with the cap in hot-path.test.ts). A refused message gets its own JSON-RPC error (and a
 * refused tools/call its audit record), the rest of the batch runs.
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog, ClientTokens } from "@janus/storage"
import { Effect, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { post } from "./mcp/http-client.ts"
import * as Downstream from "./support/Downstream.ts"
import { gateway } from "./support/PetsGateway.ts"

const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base).href))

/** A 2025-03-26 session (the revision that allows batches); its headers. */
const session = (authorization?: string) =>
  Effect.gen(function*() {
    const url = yield* mcpUrl
    const auth: Record<string, string> = authorization === undefined ? {} : { authorization }
    const reply = yield* post(url, {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "batcher", version: "1" } }
    }, auth)
    assert.strictEqual(reply.status, 200)
    return { ...auth, "mcp-session-id": reply.headers.get("mcp-session-id")! }
  })

const calls = (n: number, name = "get_pet", args: (i: number) => Record<string, unknown> = (i) => ({ id: `${i}` })) =>
  Array.from({ length: n }, (_, i) => ({
    jsonrpc: "2.0",
    id: i + 1,
    method: "tools/call",
    params: { name, arguments: args(i) }
  }))

interface Answer {
  readonly id: number
  readonly result?: { readonly isError?: boolean }
  readonly error?: { readonly code: number; readonly message: string; readonly data?: any }
}

const split = (answers: ReadonlyArray<Answer>) => ({
  ok: answers.filter((a) => a.result !== undefined && a.result.isError !== true),
  limited: answers.filter((a) => a.error?.data?.reason === "rate_limited"),
  shed: answers.filter((a) => a.error?.data?.reason === "shed")
})

/** A fresh client token (its own per-identity bucket) as an Authorization header. */
const token = (name: string) =>
  Effect.gen(function*() {
    const created = yield* (yield* ClientTokens).create({ name })
    return `Bearer ${Redacted.value(created.plaintext)}`
  })

layer(
  gateway({
    JANUS_ALLOW_ANONYMOUS: false,
    RATE_LIMIT_IDENTITY: 1,
    RATE_LIMIT_IDENTITY_BURST: 10
  }),
  { timeout: 60_000, excludeTestServices: true }
)("batches and the per-identity limit", (it) => {
  it.effect("each message of a batch is charged: a burst of 10 runs at most its tokens, the rest are refused", () =>
    Effect.gen(function*() {
      const url = yield* mcpUrl
      const downstream = yield* Downstream.Downstream
      const started = Date.now()
      const headers = yield* session(yield* token("batcher"))
      const reply = yield* post(url, calls(50), headers)
      const elapsed = Date.now() - started
      assert.strictEqual(reply.status, 200)
      const answers = reply.body as ReadonlyArray<Answer>
      assert.strictEqual(answers.length, 50)
      const { limited, ok } = split(answers)
      // initialize and the batch's POST took 2 of the burst of 10; the first message rides on the POST's
      // token, 8 more are left; a slow machine may have refilled 1 per second since the bucket was full
      assert.isAtLeast(ok.length, 9)
      assert.isAtMost(ok.length, 9 + Math.floor(elapsed / 1000))
      assert.strictEqual(ok.length + limited.length, 50)
      for (const refused of limited) {
        assert.strictEqual(refused.error!.code, -32000)
        assert.include(
          refused.error!.message,
          "Too many requests for this identity: the limit is 1 per second (burst 10)"
        )
        assert.isAbove(refused.error!.data.retryAfterMs, 0)
        assert.strictEqual(refused.error!.data.tool, "get_pet")
      }
      // refused calls sent nothing
      const sent = [...downstream.hits.entries()].filter(([key]) => key.startsWith("GET /pets/"))
      assert.strictEqual(sent.reduce((n, [, hits]) => n + hits, 0), ok.length)
      // and each was audited as rate_limited
      const audit = yield* AuditLog
      yield* audit.flush
      const records = (yield* audit.query({ limit: 1000, outcome: "rate_limited", tool: "get_pet" })).items
      assert.strictEqual(records.length, limited.length)
    }))

  it.effect("other methods of a batch are refused message by message too; dropped notifications make a 429", () =>
    Effect.gen(function*() {
      const url = yield* mcpUrl
      const started = Date.now()
      const headers = yield* session(yield* token("pinger"))
      const pings = Array.from({ length: 20 }, (_, i) => ({
        jsonrpc: "2.0",
        id: i + 1,
        method: i % 2 === 0 ? "ping" : "tools/list"
      }))
      const reply = yield* post(url, pings, headers)
      const elapsed = Date.now() - started
      const answers = reply.body as ReadonlyArray<Answer>
      const { limited, ok } = split(answers)
      assert.isAtLeast(ok.length, 9)
      assert.isAtMost(ok.length, 9 + Math.floor(elapsed / 1000))
      assert.strictEqual(ok.length + limited.length, 20)
      assert.strictEqual(limited[0]!.error!.code, -32000)
      assert.isAbove(limited[0]!.error!.data.retryAfterMs, 0)

      // notifications have no answer to carry a refusal: a batch that dropped some is 429
      const fresh = yield* session(yield* token("notifier"))
      const notes = Array.from({ length: 16 }, (_, i) => ({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: 9_000 + i }
      }))
      const dropped = yield* post(url, notes, fresh)
      assert.strictEqual(dropped.status, 429)
      assert.include(dropped.body.error.message, "Too many requests for this identity")
      assert.include(dropped.body.error.message, "notifications and responses of this batch were dropped")
      assert.isNotNull(dropped.headers.get("retry-after"))
    }))

  it.effect("a batch within the budget runs whole", () =>
    Effect.gen(function*() {
      const url = yield* mcpUrl
      const headers = yield* session(yield* token("small-batcher"))
      const reply = yield* post(url, calls(5), headers)
      const { limited, ok } = split(reply.body as ReadonlyArray<Answer>)
      assert.strictEqual(ok.length, 5)
      assert.strictEqual(limited.length, 0)
    }))
})

layer(
  gateway({ RATE_LIMIT_IP: 1, RATE_LIMIT_IP_BURST: 10 }),
  { timeout: 60_000, excludeTestServices: true }
)("batches and the per-IP limit", (it) => {
  it.effect("anonymous callers are limited by address, message by message", () =>
    Effect.gen(function*() {
      const url = yield* mcpUrl
      const started = Date.now()
      const headers = yield* session()
      const reply = yield* post(url, calls(40), headers)
      const elapsed = Date.now() - started
      const { limited, ok } = split(reply.body as ReadonlyArray<Answer>)
      assert.isAtLeast(ok.length, 9)
      assert.isAtMost(ok.length, 9 + Math.floor(elapsed / 1000))
      assert.strictEqual(ok.length + limited.length, 40)
      assert.include(
        limited[0]!.error!.message,
        "Too many requests from this address: the limit is 1 per second (burst 10)"
      )
    }))
})
