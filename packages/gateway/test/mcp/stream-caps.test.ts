/**
 * The per-identity cap on long-lived streams (`MCP_MAX_STREAMS_PER_CALLER`,
 * here 3) and Studio's event-stream cap (16 per admin identity), on a whole
 * gateway over real HTTP: the GET stream, legacy `/sse`, `subscriptions/listen`
 * and a virtual server's stream share one count per identity; one more is 429
 * with the cap and the count, audited; another identity is untouched; a
 * permit comes back when a stream ends (client abort, session deleted,
 * credential revoked); concurrent opens never take more than the cap.
 */
import { assert, describe, layer } from "@effect/vitest"
import { AdminTokens, AuditLog, ClientTokens, VirtualServers } from "@janus/storage"
import { Effect, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { McpGuard } from "../../src/mcp/Guard.ts"
import * as GatewayTesting from "../../src/testing.ts"

const CAP = 3

const TestLayer = GatewayTesting.layer({
  config: { JANUS_ALLOW_ANONYMOUS: false, MCP_MAX_STREAMS_PER_CALLER: CAP }
})

const base = HttpServer.addressFormattedWith((address) => Effect.succeed(address))

/** An open response, read in the background until it ends. */
interface Open {
  readonly status: number
  readonly headers: Headers
  readonly text: () => string
  readonly ended: () => boolean
  readonly close: () => void
}

const open = (url: string, init: RequestInit) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<Open> => {
      const controller = new AbortController()
      const response = await fetch(url, { ...init, signal: controller.signal })
      let text = ""
      let ended = false
      if (response.status === 200 && (response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        const reader = response.body!.getReader()
        const decoder = new TextDecoder()
        void (async () => {
          for (;;) {
            const read = await reader.read().catch(() => ({ done: true as const, value: undefined }))
            if (read.value !== undefined) text += decoder.decode(read.value, { stream: true })
            if (read.done) break
          }
          ended = true
        })()
      } else {
        text = await response.text()
        ended = true
      }
      return {
        status: response.status,
        headers: response.headers,
        text: () => text,
        ended: () => ended,
        close: () => controller.abort()
      }
    }),
    (stream) => Effect.sync(() => stream.close())
  )

const STATELESS = "2026-07-28"
const json = { "content-type": "application/json", accept: "application/json, text/event-stream" }
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

const listen = (token: string, path = "/mcp", id: number = 7) =>
  Effect.flatMap(base, (url) =>
    open(`${url}${path}`, {
      method: "POST",
      headers: { ...json, ...bearer(token), "mcp-protocol-version": STATELESS, "mcp-method": "subscriptions/listen" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "subscriptions/listen",
        params: {
          notifications: { toolsListChanged: true },
          _meta: {
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientCapabilities": {}
          }
        }
      })
    }))

/** A new 2025-11-25 session's id. */
const session = (token: string) =>
  Effect.flatMap(base, (url) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}/mcp`, {
        method: "POST",
        headers: { ...json, ...bearer(token) },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } }
        })
      })
      await response.text()
      const id = response.headers.get("mcp-session-id")
      if (id === null) throw new Error(`initialize: ${response.status}`)
      return id
    }))

/** The standalone GET stream of `sessionId`. */
const getStream = (token: string, sessionId: string) =>
  Effect.flatMap(base, (url) =>
    open(`${url}/mcp`, {
      headers: {
        ...bearer(token),
        accept: "text/event-stream",
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25"
      }
    }))

const legacy = (token: string, path = "/sse") =>
  Effect.flatMap(base, (url) => open(`${url}${path}`, { headers: { ...bearer(token), accept: "text/event-stream" } }))

const events = (token: string) =>
  Effect.flatMap(
    base,
    (url) => open(`${url}/api/v1/events`, { headers: { ...bearer(token), accept: "text/event-stream" } })
  )

const clientToken = (name: string) =>
  Effect.map(
    Effect.flatMap(Effect.service(ClientTokens), (tokens) => tokens.create({ name })),
    (created) => ({ id: created.token.id, value: Redacted.value(created.plaintext) })
  )

const adminToken = (name: string) =>
  Effect.map(
    Effect.flatMap(Effect.service(AdminTokens), (tokens) => tokens.create({ name })),
    (created) => ({ id: created.token.id, value: Redacted.value(created.plaintext) })
  )

/** Wall-clock wait (the suite runs without the TestClock, but say so). */
const liveSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

const held = (identity: string) => Effect.map(Effect.service(McpGuard), (guard) => guard.openStreams!(identity))

/** Waits until `identity` holds `n` permits (the server notices a closed socket a moment later). */
const waitForHeld = (identity: string, n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && (yield* held(identity)) !== n; i++) yield* liveSleep(10)
    assert.strictEqual(yield* held(identity), n, `${identity} holds ${n} stream permits`)
  })

const assertStreaming = (streams: Record<string, Open>) =>
  Effect.gen(function*() {
    yield* liveSleep(100)
    for (const [name, stream] of Object.entries(streams)) {
      assert.strictEqual(stream.status, 200, `${name}: ${stream.text()}`)
      assert.isFalse(stream.ended(), `${name} ended early: ${stream.text()}`)
    }
  })

/** The 429 of the cap: JSON-RPC error with the cap, the count and what to do. */
const assertRefused = (refused: Open, id: number | null) => {
  assert.strictEqual(refused.status, 429, refused.text())
  assert.strictEqual(refused.headers.get("retry-after"), "5")
  const body = JSON.parse(refused.text())
  assert.strictEqual(body.id, id)
  assert.strictEqual(body.error.code, -32000)
  assert.include(body.error.message, `holds ${CAP} of the ${CAP} long-lived streams`)
  assert.include(body.error.message, `MCP_MAX_STREAMS_PER_CALLER=${CAP}`)
  assert.include(body.error.message, "close one of them")
}

describe("open streams per identity", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("every kind of stream counts; one more is 429, audited; another identity still opens streams", () =>
      Effect.gen(function*() {
        const a = yield* clientToken("streams a")
        const b = yield* clientToken("streams b")
        const server = yield* (yield* VirtualServers).create({ name: "capped", tools: [] })
        const streams = {
          "2026 listen": yield* listen(a.value),
          "2025 GET stream": yield* getStream(a.value, yield* session(a.value)),
          "legacy /sse of a virtual server": yield* legacy(a.value, `/servers/${server.name}/sse`)
        }
        yield* assertStreaming(streams)
        assert.strictEqual(yield* held(`token:${a.id}`), CAP)

        // one more of any kind, on /mcp or a virtual server's URL, is refused
        assertRefused(yield* listen(a.value, "/mcp", 42), 42)
        assertRefused(yield* listen(a.value, `/servers/${server.name}/mcp`, 43), 43)
        assertRefused(yield* getStream(a.value, yield* session(a.value)), null)
        assertRefused(yield* legacy(a.value), null)
        assert.strictEqual(yield* held(`token:${a.id}`), CAP, "refusals take no permit")
        yield* assertStreaming(streams)

        // another identity is untouched
        const others = {
          listen: yield* listen(b.value),
          legacy: yield* legacy(b.value),
          get: yield* getStream(b.value, yield* session(b.value))
        }
        yield* assertStreaming(others)

        // audited like the other refusals: an auth row, rate_limited, bucket streams, naming the identity
        const log = yield* AuditLog
        yield* log.flush
        const rows = (yield* log.query({ limit: 1_000 })).items.filter((r) =>
          r.kind === "auth" && r.bucket === "streams"
        )
        assert.isAtLeast(rows.length, 1)
        assert.strictEqual(rows[0]!.identity, `token:${a.id}`)
        assert.strictEqual(rows[0]!.outcome, "rate_limited")
        assert.strictEqual(rows[0]!.status, 429)
        assert.notInclude(JSON.stringify(rows), a.value, "the token never reaches the audit")
      }))

    it.effect("a permit comes back when a stream ends: client abort, session deleted, token revoked", () =>
      Effect.gen(function*() {
        const a = yield* clientToken("streams closing")
        const identity = `token:${a.id}`
        const sessionId = yield* session(a.value)
        const first = yield* listen(a.value)
        const get = yield* getStream(a.value, sessionId)
        yield* legacy(a.value)
        yield* assertStreaming({ first, get })
        assertRefused(yield* listen(a.value), 7)

        // the client goes away: its permit is free, the next open succeeds
        first.close()
        yield* waitForHeld(identity, CAP - 1)
        const next = yield* listen(a.value)
        yield* assertStreaming({ next })
        assertRefused(yield* listen(a.value), 7)

        // the session is deleted: its GET stream ends and gives its permit back
        const url = yield* base
        const deleted = yield* Effect.promise(() =>
          fetch(`${url}/mcp`, {
            method: "DELETE",
            headers: { ...bearer(a.value), "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
          })
        )
        assert.strictEqual(deleted.status, 204)
        yield* waitForHeld(identity, CAP - 1)
        yield* assertStreaming({ again: yield* listen(a.value) })

        // the token is revoked: every stream it opened ends, and every permit comes back
        const operator = yield* adminToken("operator")
        const revoked = yield* Effect.promise(() =>
          fetch(`${url}/api/v1/client-tokens/${a.id}/revoke`, { method: "POST", headers: bearer(operator.value) })
        )
        assert.strictEqual(revoked.status, 200)
        yield* waitForHeld(identity, 0)
      }))

    it.effect("hostile: 40 concurrent opens of one identity take exactly the cap", () =>
      Effect.gen(function*() {
        const a = yield* clientToken("streams race")
        const identity = `token:${a.id}`
        const opened = yield* Effect.forEach(
          Array.from({ length: 40 }, (_, i) => i),
          (i) => i % 2 === 0 ? listen(a.value, "/mcp", i) : legacy(a.value),
          { concurrency: "unbounded" }
        )
        const statuses = opened.map((o) => o.status)
        assert.strictEqual(statuses.filter((s) => s === 200).length, CAP, statuses.join(","))
        assert.strictEqual(statuses.filter((s) => s === 429).length, 40 - CAP, statuses.join(","))
        assert.strictEqual(yield* held(identity), CAP)
        // all closed at once: every permit comes back
        for (const o of opened) o.close()
        yield* waitForHeld(identity, 0)
        yield* assertStreaming({ after: yield* listen(a.value) })
      }))

    it.effect("Studio: one admin identity holds at most 16 event streams; another admin is untouched", () =>
      Effect.gen(function*() {
        const admin = yield* adminToken("watcher")
        const other = yield* adminToken("other watcher")
        const mine = yield* Effect.forEach(Array.from({ length: 16 }), () => events(admin.value))
        yield* assertStreaming(Object.fromEntries(mine.map((s, i) => [`events ${i}`, s])))
        const refused = yield* events(admin.value)
        assert.strictEqual(refused.status, 429, refused.text())
        assert.strictEqual(refused.headers.get("retry-after"), "5")
        const problem = JSON.parse(refused.text())
        assert.include(JSON.stringify(problem), "too_many_streams")
        assert.include(JSON.stringify(problem), "holds 16 of the 16 event streams")
        yield* assertStreaming({ other: yield* events(other.value) })
        // closing one frees its permit
        mine[0]!.close()
        let reopened: Open | undefined
        for (let i = 0; i < 100; i++) {
          reopened = yield* events(admin.value)
          if (reopened.status === 200) break
          yield* liveSleep(20)
        }
        yield* assertStreaming({ reopened: reopened! })
      }))
  })
})

// A cap must be configured to exist: the gateway's default is 16.
describe("the default", () => {
  layer(GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false } }), { excludeTestServices: true })((it) => {
    it.effect("is 16 streams per identity", () =>
      Effect.gen(function*() {
        const a = yield* clientToken("default cap")
        const streams = yield* Effect.forEach(Array.from({ length: 16 }), () => listen(a.value))
        assert.deepStrictEqual(streams.map((s) => s.status), Array.from({ length: 16 }, () => 200))
        const refused = yield* listen(a.value)
        assert.strictEqual(refused.status, 429, refused.text())
        assert.include(refused.text(), "MCP_MAX_STREAMS_PER_CALLER=16")
      }))
  })
})
