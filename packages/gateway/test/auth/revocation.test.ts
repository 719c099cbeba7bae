/**
 * Open streams end with their credential (issue 15, item 11): a client token
 * revoked or deleted on one replica ends, on every replica, the legacy `/sse`
 * stream, the 2025 GET stream and the 2026-07-28 `subscriptions/listen`
 * stream it opened; a revoked admin token ends its `GET /api/v1/events`; a
 * client token or an OAuth access token that expires ends its streams then.
 *
 * Two whole gateways (own pools, own listeners) on one real Postgres
 * database, with token caches that live an hour: only the change signal can
 * explain a stream ending within a second.
 */
import { assert, describe, layer } from "@effect/vitest"
import { AdminTokens, ClientTokens } from "@janus/storage"
import { layerPostgresOn, layerTestDatabase, requirePostgres, TestDatabase } from "@janus/storage/testing"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"
import { type AuthServer, authServer, claims, oauthLayer, rsa, sign } from "../oauth/support.ts"

const postgres = await requirePostgres()

/** One replica: a whole gateway on the test database; its URL and a runner for its storage services. */
const replica = Effect.gen(function*() {
  const db = yield* TestDatabase
  const context = yield* Layer.build(GatewayTesting.layer({
    storage: layerPostgresOn({ maxConnections: 4, configCacheTtl: "1 hour" }).pipe(
      Layer.provide(Layer.succeed(TestDatabase, db))
    ),
    config: {
      JANUS_ALLOW_ANONYMOUS: false,
      CONFIG_CACHE_TTL: Duration.hours(1),
      JANUS_SHUTDOWN_TIMEOUT: Duration.seconds(1)
    }
  }))
  const server = Context.get(context, HttpServer.HttpServer)
  const url = server.address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${server.address.port}`
  return {
    url,
    run: <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provide(effect, context as Context.Context<any>)
  }
})

/** An open event stream, read in the background until it ends. */
interface Open {
  readonly status: number
  readonly text: () => string
  /** When the body ended (epoch ms), if it did. */
  readonly endedAt: () => number | undefined
  readonly close: () => void
}

const open = (url: string, init: RequestInit) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<Open> => {
      const controller = new AbortController()
      const response = await fetch(url, { ...init, signal: controller.signal })
      let text = ""
      let endedAt: number | undefined
      if (response.body !== null && (response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        const reader = response.body.getReader()
        const decoder = new TextDecoder()
        void (async () => {
          for (;;) {
            const read = await reader.read().catch(() => ({ done: true as const, value: undefined }))
            if (read.value !== undefined) text += decoder.decode(read.value, { stream: true })
            if (read.done) break
          }
          endedAt = Date.now()
        })()
      } else {
        text = await response.text()
        endedAt = Date.now()
      }
      return { status: response.status, text: () => text, endedAt: () => endedAt, close: () => controller.abort() }
    }),
    (stream) => Effect.sync(() => stream.close())
  )

/** Waits until `stream` has ended, up to `ms`; how long after `since` it ended. */
const endsWithin = (stream: Open, since: number, ms: number, what: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (stream.endedAt() === undefined) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`${what} is still open after ${ms} ms`))
      yield* Effect.sleep("10 millis")
    }
    return stream.endedAt()! - since
  })

const STATELESS = "2026-07-28"
const json = { "content-type": "application/json", accept: "application/json, text/event-stream" }
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** The 2026-07-28 `subscriptions/listen` stream. */
const listen = (base: string, token: string) =>
  open(`${base}/mcp`, {
    method: "POST",
    headers: {
      ...json,
      ...bearer(token),
      "mcp-protocol-version": STATELESS,
      "mcp-method": "subscriptions/listen"
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "subscriptions/listen",
      params: {
        notifications: { toolsListChanged: true },
        _meta: {
          "io.modelcontextprotocol/protocolVersion": STATELESS,
          "io.modelcontextprotocol/clientCapabilities": {}
        }
      }
    })
  })

/** A 2025-11-25 session's standalone GET stream. */
const getStream = (base: string, token: string) =>
  Effect.gen(function*() {
    const initialized = yield* Effect.promise(() =>
      fetch(`${base}/mcp`, {
        method: "POST",
        headers: { ...json, ...bearer(token) },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } }
        })
      })
    )
    const session = initialized.headers.get("mcp-session-id")
    assert.isString(session, `initialize: ${initialized.status}`)
    return yield* open(`${base}/mcp`, {
      headers: { ...bearer(token), accept: "text/event-stream", "mcp-session-id": session! }
    })
  })

/** The deprecated HTTP+SSE transport's stream. */
const legacy = (base: string, token: string) =>
  open(`${base}/sse`, { headers: { ...bearer(token), accept: "text/event-stream" } })

/** Studio's event stream. */
const events = (base: string, token: string) =>
  open(`${base}/api/v1/events`, { headers: { ...bearer(token), accept: "text/event-stream" } })

const adminApi = (base: string, token: string, path: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${base}${path}`, { method: "POST", headers: bearer(token) })
    return response.status
  })

/** Streams a moment after they opened: every one is still open. */
const assertOpen = (streams: Record<string, Open>) =>
  Effect.gen(function*() {
    yield* Effect.sleep("300 millis")
    for (const [name, stream] of Object.entries(streams)) {
      assert.strictEqual(stream.status, 200, `${name}: ${stream.text()}`)
      assert.isUndefined(stream.endedAt(), `${name} ended early: ${stream.text()}`)
    }
  })

describe.skipIf(!postgres)("open streams end with their credential, on every replica", () => {
  layer(layerTestDatabase, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("a client token revoked on A ends its /sse, GET and listen streams on B (and on A) within 1 s", () =>
      Effect.gen(function*() {
        const a = yield* replica
        const b = yield* replica
        const operator = Redacted.value(
          (yield* a.run(AdminTokens.use((t) => t.create({ name: "operator" })))).plaintext
        )
        const revoked = yield* a.run(ClientTokens.use((t) => t.create({ name: "to revoke" })))
        const kept = yield* a.run(ClientTokens.use((t) => t.create({ name: "kept" })))
        const token = Redacted.value(revoked.plaintext)
        const other = Redacted.value(kept.plaintext)

        const doomed = {
          "legacy /sse on B": yield* legacy(b.url, token),
          "2025 GET stream on B": yield* getStream(b.url, token),
          "2026 listen on B": yield* listen(b.url, token),
          "2026 listen on A": yield* listen(a.url, token)
        }
        const survivors = {
          "legacy /sse of another token on B": yield* legacy(b.url, other),
          "2026 listen of another token on B": yield* listen(b.url, other)
        }
        yield* assertOpen({ ...doomed, ...survivors })

        assert.strictEqual(yield* adminApi(a.url, operator, `/api/v1/client-tokens/${revoked.token.id}/revoke`), 200)
        const revokedAt = Date.now()
        for (const [name, stream] of Object.entries(doomed)) {
          const after = yield* endsWithin(stream, revokedAt, 5_000, name)
          console.log(`${name} ended ${after} ms after the revocation`)
          assert.isBelow(after, 1_000, `${name} ended ${after} ms after the revocation`)
        }
        // a reconnect is refused, and the other token's streams are untouched
        assert.strictEqual((yield* listen(b.url, token)).status, 401)
        yield* assertOpen(survivors)

        // deleting a token ends its streams too
        const deleted = yield* Effect.promise(() =>
          fetch(`${a.url}/api/v1/client-tokens/${kept.token.id}`, { method: "DELETE", headers: bearer(operator) })
        )
        assert.strictEqual(deleted.status, 204)
        const deletedAt = Date.now()
        for (const [name, stream] of Object.entries(survivors)) {
          assert.isBelow(yield* endsWithin(stream, deletedAt, 5_000, name), 1_000, name)
        }
      }))

    it.effect("an admin token revoked on A ends its GET /api/v1/events on B within 1 s; another's stays", () =>
      Effect.gen(function*() {
        const a = yield* replica
        const b = yield* replica
        const create = (name: string) => a.run(AdminTokens.use((t) => t.create({ name })))
        const watcher = yield* create("watcher")
        const other = Redacted.value((yield* create("other watcher")).plaintext)
        const operator = Redacted.value((yield* create("operator")).plaintext)
        const doomed = yield* events(b.url, Redacted.value(watcher.plaintext))
        const kept = yield* events(b.url, other)
        yield* assertOpen({ doomed, kept })

        assert.strictEqual(yield* adminApi(a.url, operator, `/api/v1/admin-tokens/${watcher.token.id}/revoke`), 200)
        const revokedAt = Date.now()
        assert.isBelow(yield* endsWithin(doomed, revokedAt, 5_000, "the revoked token's event stream"), 1_000)
        yield* assertOpen({ kept })
      }))

    it.effect("a client token's streams end when it expires", () =>
      Effect.gen(function*() {
        const a = yield* replica
        const expiresAt = new Date(Date.now() + 2_000)
        const created = yield* a.run(ClientTokens.use((t) => t.create({ name: "short-lived", expiresAt })))
        const token = Redacted.value(created.plaintext)
        const streams = { listen: yield* listen(a.url, token), legacy: yield* legacy(a.url, token) }
        yield* assertOpen(streams)
        for (const [name, stream] of Object.entries(streams)) {
          const after = yield* endsWithin(stream, expiresAt.getTime(), 5_000, name)
          assert.isAtLeast(after, 0, `${name} ended before the token expired`)
          assert.isBelow(after, 1_000, `${name} ended ${after} ms after expiry`)
        }
      }))
  })
})

/** The loopback authorization server of the OAuth suite. */
class TestAuthServer extends Context.Service<TestAuthServer, AuthServer>()("test/auth/revocation/TestAuthServer") {}

const withOAuth = Layer.unwrap(
  Effect.map(Effect.service(TestAuthServer), (server) =>
    GatewayTesting.layer({
      // no clock skew: the stream ends at `exp` itself
      extra: oauthLayer(server, { clockSkew: Duration.zero }),
      config: { JANUS_ALLOW_ANONYMOUS: false, JANUS_SHUTDOWN_TIMEOUT: Duration.seconds(1) }
    }))
).pipe(Layer.provideMerge(Layer.effect(TestAuthServer, authServer())))

layer(withOAuth, { excludeTestServices: true, timeout: "60 seconds" })("OAuth-authenticated streams", (it) => {
  it.effect("a listen stream and an admin event stream end when their access token expires", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      const http = yield* HttpServer.HttpServer
      const base = http.address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${http.address.port}`
      const now = Math.floor(Date.now() / 1000)
      const exp = now + 3
      const tools = yield* sign(rsa.RS256!, claims(server, now, { exp, scope: "mcp:tools" }))
      const admin = yield* sign(rsa.RS256!, claims(server, now, { exp, scope: "janus:admin" }))
      const streams = { listen: yield* listen(base, tools), events: yield* events(base, admin) }
      yield* assertOpen(streams)
      for (const [name, stream] of Object.entries(streams)) {
        const after = yield* endsWithin(stream, exp * 1_000, 6_000, name)
        assert.isAtLeast(after, 0, `${name} ended before the token expired`)
        assert.isBelow(after, 1_000, `${name} ended ${after} ms after expiry`)
      }
    }))
})
