/**
 * What the gateway refuses about a request's framing before any route reads
 * it (`http/RequestFraming.ts`), and how much of a client's URI its answers
 * echo: a content-coded body is 415 with `Accept-Encoding: identity` on
 * `/mcp` and `/api/v1` (never a parse error, never a 5xx), a URI beyond
 * 8 KiB is 414, and no error body repeats more than 200 characters of the
 * client's path or query.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpServer } from "effect/http"
import { gzipSync } from "node:zlib"
import * as GatewayTesting from "../src/testing.ts"
import { adminToken, suiteOptions } from "./admin/support.ts"

const baseUrl = HttpServer.addressFormattedWith((url) => Effect.succeed(url))

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

const send = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(async (): Promise<Answer> => {
      const response = await fetch(`${base}${path}`, init)
      return { status: response.status, headers: response.headers, text: await response.text() }
    }))

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "framing", version: "1" } }
})

const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" }

layer(GatewayTesting.layer(), suiteOptions)("request framing", (it) => {
  it.effect("a gzip body on /mcp is 415 with Accept-Encoding: identity, as a JSON-RPC error", () =>
    Effect.gen(function*() {
      const answer = yield* send("/mcp", {
        method: "POST",
        headers: { ...mcpHeaders, "content-encoding": "gzip" },
        body: gzipSync(initialize)
      })
      assert.strictEqual(answer.status, 415, answer.text)
      assert.strictEqual(answer.headers.get("accept-encoding"), "identity")
      const body = JSON.parse(answer.text)
      assert.strictEqual(body.jsonrpc, "2.0")
      assert.include(body.error.message, "Content-Encoding gzip")
      assert.include(body.error.message, "identity")
    }))

  it.effect("any coding but identity is 415 on /mcp, a virtual server's /mcp and /api/v1", () =>
    Effect.gen(function*() {
      const token = yield* adminToken()
      for (const coding of ["br", "deflate", "GZIP", "gzip, identity", "zstd"]) {
        const mcp = yield* send("/mcp", {
          method: "POST",
          headers: { ...mcpHeaders, "content-encoding": coding },
          body: initialize
        })
        assert.strictEqual(mcp.status, 415, `${coding}: ${mcp.text}`)
        const server = yield* send("/servers/some-server/mcp", {
          method: "POST",
          headers: { ...mcpHeaders, "content-encoding": coding },
          body: initialize
        })
        assert.strictEqual(server.status, 415, `${coding}: ${server.text}`)
        const admin = yield* send("/api/v1/connections", {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-encoding": coding },
          body: JSON.stringify({ kind: "rest", name: "coded", baseUrl: "https://api.example.com" })
        })
        assert.strictEqual(admin.status, 415, `${coding}: ${admin.text}`)
        assert.strictEqual(admin.headers.get("accept-encoding"), "identity")
        const problem = JSON.parse(admin.text)
        assert.strictEqual(problem.error.code, "unsupported_content_encoding")
        assert.include(problem.error.message, "identity")
      }
      // nothing was created
      const list = yield* send("/api/v1/connections", { headers: { authorization: `Bearer ${token}` } })
      assert.notInclude(list.text, "coded")
    }))

  it.effect("Content-Encoding: identity is served as if absent", () =>
    Effect.gen(function*() {
      const answer = yield* send("/mcp", {
        method: "POST",
        headers: { ...mcpHeaders, "content-encoding": "identity" },
        body: initialize
      })
      assert.strictEqual(answer.status, 200, answer.text)
    }))

  it.effect("an unknown /api/v1 route does not echo a long path beyond 200 characters", () =>
    Effect.gen(function*() {
      const token = yield* adminToken()
      const long = "pp/".repeat(2_000)
      const answer = yield* send(`/api/v1/${long}?q=${"q".repeat(1_000)}`, {
        headers: { authorization: `Bearer ${token}` }
      })
      assert.strictEqual(answer.status, 404, answer.text.slice(0, 300))
      assert.notInclude(answer.text, "pp/".repeat(67))
      assert.notInclude(answer.text, "q".repeat(201))
      assert.include(answer.text, "/api/v1/pp/pp/")
      assert.include(answer.text, "(6008 characters)")
      const allowed = yield* send(`/api/v1/connections/${"x/".repeat(3_000)}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${token}` }
      })
      assert.isBelow(allowed.text.length, 1_000, allowed.text.slice(0, 300))
    }))

  it.effect("no other answer repeats a long URI either", () =>
    Effect.gen(function*() {
      const long = "z".repeat(7_000)
      for (
        const [path, init] of [
          [`/mcp?${long}`, { method: "POST", headers: mcpHeaders, body: "{" }],
          [`/mcp/${long}`, { method: "POST", headers: mcpHeaders, body: initialize }],
          [`/servers/${long}/mcp`, { method: "POST", headers: mcpHeaders, body: initialize }],
          [`/${long}`, {}],
          [`/assets/${long}.js`, {}]
        ] as const
      ) {
        const answer = yield* send(path, init)
        assert.isBelow(answer.status, 500, `${path.slice(0, 40)}: ${answer.text.slice(0, 300)}`)
        assert.notInclude(answer.text, "z".repeat(201), `${path.slice(0, 40)}: ${answer.status}`)
      }
    }))

  it.effect("a URI longer than 8 KiB is 414 on every route, probes included", () =>
    Effect.gen(function*() {
      for (
        const path of [`/mcp?${"a".repeat(8_192)}`, `/api/v1/${"b".repeat(9_000)}`, `/healthz?${"c".repeat(8_200)}`]
      ) {
        const answer = yield* send(path)
        assert.strictEqual(answer.status, 414, answer.text.slice(0, 300))
        assert.isBelow(answer.text.length, 600)
        assert.include(answer.text, "8192")
      }
      // at the bound, served
      const atBound = yield* send(`/healthz?${"d".repeat(8_192 - "/healthz?".length)}`)
      assert.strictEqual(atBound.status, 200, atBound.text.slice(0, 300))
    }))
})
