/**
 * Property-based fuzzing of /mcp (fast-check): random and malformed bodies,
 * headers and methods never crash the process, never get a 5xx for a client's
 * mistake, and never leak internals (stack traces, class names, SQL, paths).
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpServer } from "effect/http"
import fc from "fast-check"
import * as GatewayTesting from "../../src/testing.ts"

const RUNS = Number(process.env.MCP_FUZZ_RUNS ?? 400)

const leak = /\bat [\w.<>]+ \(|node:internal|\/src\/|\.ts:\d+|TypeError|ReferenceError|SqlError|SELECT |INSERT |Cause\(/

const jsonRpcish = fc.record({
  jsonrpc: fc.oneof(fc.constant("2.0"), fc.string(), fc.integer()),
  id: fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.object()),
  method: fc.oneof(
    fc.constantFrom("initialize", "tools/list", "tools/call", "ping", "server/discover", "notifications/cancelled"),
    fc.string()
  ),
  params: fc.oneof(fc.object(), fc.jsonValue(), fc.constant(undefined))
}, { requiredKeys: [] })

const body = fc.oneof(
  fc.string(),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  jsonRpcish.map((v) => JSON.stringify(v)),
  fc.array(jsonRpcish, { maxLength: 5 }).map((v) => JSON.stringify(v)),
  fc.uint8Array({ maxLength: 256 }).map((bytes) => Buffer.from(bytes).toString("latin1"))
)

const headers = fc.record({
  "content-type": fc.constantFrom("application/json", "text/plain", "application/json; charset=utf-8", ""),
  accept: fc.constantFrom("application/json, text/event-stream", "application/json", "*/*", ""),
  "mcp-protocol-version": fc.constantFrom("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "1999-01-01", ""),
  "mcp-method": fc.oneof(fc.constantFrom("tools/list", "tools/call"), fc.string({ maxLength: 20 })),
  "mcp-session-id": fc.oneof(fc.constant(""), fc.string({ maxLength: 40 }))
}, { requiredKeys: [] })

const method = fc.constantFrom("POST", "GET", "DELETE", "PUT", "OPTIONS")

layer(GatewayTesting.layer(), { timeout: 120_000, excludeTestServices: true })("/mcp fuzz", (it) => {
  it.effect("random requests never give a 5xx, never hang, and never leak internals", () =>
    Effect.gen(function*() {
      const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base)))
      const sanitize = (h: Record<string, string>) =>
        Object.fromEntries(Object.entries(h).filter(([, v]) => v !== "" && /^[\t\x20-\x7e]*$/.test(v)))
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(method, headers, body, async (m, h, b) => {
            const response = await fetch(url, {
              method: m,
              headers: sanitize(h as Record<string, string>),
              ...(m === "GET" || m === "OPTIONS" ? {} : { body: b }),
              signal: AbortSignal.timeout(5_000)
            })
            // a stream (GET or a streamed POST) is not read to its end: its first bytes are enough
            const text = response.headers.get("content-type")?.startsWith("text/event-stream")
              ? ""
              : await response.text()
            if (response.status >= 500) throw new Error(`5xx ${response.status} for ${m} ${JSON.stringify(h)}: ${text}`)
            if (leak.test(text)) throw new Error(`internal detail leaked: ${text.slice(0, 300)}`)
            await response.body?.cancel().catch(() => undefined)
          }),
          { numRuns: RUNS }
        )
      )
      // the process is still serving
      const ping = yield* Effect.promise(() => fetch(new URL("/healthz", url)))
      assert.strictEqual(ping.status, 200)
    }))
})
