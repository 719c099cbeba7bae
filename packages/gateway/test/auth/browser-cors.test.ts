/**
 * A browser-based MCP client on another origin, in a real browser (Debian's
 * Chromium, headless): from an allowed origin (a loopback one here) it
 * completes its preflights, starts a 2025-11-25 session and reads its id,
 * lists tools, opens the GET stream, makes a 2026-07-28 request, and reads a
 * 401 and its challenge; from an origin that is not allowed the browser gets
 * nothing at all (issue 15, item 9). The gateway runs with authentication on.
 */
import { afterAll, assert, beforeAll, layer } from "@effect/vitest"
import { ClientTokens } from "@janus/storage"
import { Effect, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { type Browser, chromium } from "playwright-core"
import * as GatewayTesting from "../../src/testing.ts"
import { browserAvailable, CHROMIUM } from "../studio/browser.ts"

const available = browserAvailable()
let browser: Browser | undefined
/** The page's own server: an empty document on loopback, reached as localhost and as `evil.test`. */
let pages: { server: Http.Server; port: number } | undefined

beforeAll(async () => {
  if (!available) return
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-dev-shm-usage",
      "--disable-gpu",
      "--no-first-run",
      // an origin that is not loopback, without DNS: the page's server under another name
      "--host-resolver-rules=MAP evil.test 127.0.0.1"
    ]
  })
  const server = Http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" })
    res.end("<!doctype html><title>client</title>")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  pages = { server, port: (server.address() as AddressInfo).port }
})

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => pages === undefined ? resolve() : pages.server.close(() => resolve()))
})

/** What the page's script saw. */
interface Seen {
  readonly initialize: { status: number; session: string | null; protocol: string | undefined }
  readonly list: { status: number; tools: number | undefined }
  readonly stream: { status: number; firstBytes: string }
  readonly stateless: { status: number; result: boolean }
  readonly unauthenticated: { status: number; challenge: string | null }
}

/** The client, as a page script: plain `fetch` with the headers MCP clients send. */
const client = async ({ gateway, token }: { gateway: string; token: string }): Promise<Seen> => {
  const json = { "content-type": "application/json", accept: "application/json, text/event-stream" }
  const auth = { authorization: `Bearer ${token}` }
  const init = await fetch(`${gateway}/mcp`, {
    method: "POST",
    headers: { ...json, ...auth, "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "page", version: "1" } }
    })
  })
  const session = init.headers.get("mcp-session-id")
  const initBody: any = await init.json()
  const sessionHeaders = { ...auth, "mcp-session-id": session ?? "", "mcp-protocol-version": "2025-11-25" }
  const list = await fetch(`${gateway}/mcp`, {
    method: "POST",
    headers: { ...json, ...sessionHeaders },
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} })
  })
  const listBody: any = await list.json()
  const controller = new AbortController()
  const stream = await fetch(`${gateway}/mcp`, {
    headers: { ...sessionHeaders, accept: "text/event-stream", "last-event-id": "get.0" },
    signal: controller.signal
  })
  const chunk = await stream.body!.getReader().read()
  controller.abort()
  const stateless = await fetch(`${gateway}/mcp`, {
    method: "POST",
    headers: { ...json, ...auth, "mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 3,
      method: "server/discover",
      params: {
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}
        }
      }
    })
  })
  const statelessBody: any = await stateless.json()
  const unauthenticated = await fetch(`${gateway}/mcp`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "ping" })
  })
  return {
    initialize: { status: init.status, session, protocol: initBody?.result?.protocolVersion },
    list: { status: list.status, tools: listBody?.result?.tools?.length },
    stream: { status: stream.status, firstBytes: new TextDecoder().decode(chunk.value) },
    stateless: { status: stateless.status, result: statelessBody?.result !== undefined },
    unauthenticated: { status: unauthenticated.status, challenge: unauthenticated.headers.get("www-authenticate") }
  }
}

const Gateway = GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false } })

layer(Gateway, { excludeTestServices: true, timeout: "60 seconds" })("a browser-based MCP client", (it) => {
  it.effect.skipIf(!available)(
    "on an allowed origin it connects and reads what it needs, a 401 included",
    () =>
      Effect.gen(function*() {
        const http = yield* HttpServer.HttpServer
        const gateway = http.address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${http.address.port}`
        const created = yield* ClientTokens.use((tokens) => tokens.create({ name: "browser client" }))
        const token = Redacted.value(created.plaintext)
        const seen = yield* Effect.promise(async () => {
          const page = await browser!.newPage()
          try {
            await page.goto(`http://localhost:${pages!.port}/`)
            return await page.evaluate(client, { gateway, token })
          } finally {
            await page.close()
          }
        })
        assert.strictEqual(seen.initialize.status, 200)
        assert.match(seen.initialize.session ?? "", /\S+/, "the session id is readable")
        assert.strictEqual(seen.initialize.protocol, "2025-11-25")
        assert.strictEqual(seen.list.status, 200)
        assert.isNumber(seen.list.tools)
        assert.strictEqual(seen.stream.status, 200)
        assert.include(seen.stream.firstBytes, "id: get.")
        assert.strictEqual(seen.stateless.status, 200)
        assert.isTrue(seen.stateless.result)
        assert.strictEqual(seen.unauthenticated.status, 401)
        assert.match(seen.unauthenticated.challenge ?? "", /^Bearer /, "the challenge is readable")
      })
  )

  it.effect.skipIf(!available)("on another origin the browser gets nothing", () =>
    Effect.gen(function*() {
      const http = yield* HttpServer.HttpServer
      const gateway = http.address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${http.address.port}`
      const created = yield* ClientTokens.use((tokens) => tokens.create({ name: "foreign page" }))
      const token = Redacted.value(created.plaintext)
      const outcome = yield* Effect.promise(async () => {
        const page = await browser!.newPage()
        try {
          await page.goto(`http://evil.test:${pages!.port}/`)
          return await page.evaluate(client, { gateway, token }).then(() => "read", (error: Error) => error.message)
        } finally {
          await page.close()
        }
      })
      assert.include(outcome, "Failed to fetch")
    }))
})
