/**
 * What a team would write by hand instead of Janus: a minimal MCP server on
 * the official TypeScript SDK v2 (`@modelcontextprotocol/server`
 * `createMcpHandler`, mounted on `node:http` with `@modelcontextprotocol/node`
 * `toNodeHandler`) with one tool, `get_pet`, that makes the same downstream
 * call as the gateway's endpoint, with the global `fetch` (undici, keep-alive).
 *
 * It serves 2026-07-28 requests statelessly and 2025-era requests with the
 * SDK's default stateless fallback (a fresh server per request; `initialize`
 * answers without a session id). No auth, no limits, no audit.
 *
 * Usage: node packages/gateway/bench/support/sdk-server.ts <downstream-url>
 * Prints `{"url": "http://127.0.0.1:<port>/mcp"}` once listening.
 */
import { toNodeHandler } from "@modelcontextprotocol/node"
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as z from "zod"

const downstream = process.argv[2]
if (downstream === undefined) throw new Error("usage: sdk-server.ts <downstream-url>")

const factory = () => {
  const server = new McpServer({ name: "sdk-bench", version: "1.0.0" })
  server.registerTool(
    "get_pet",
    {
      description: "Fetch a pet by id",
      inputSchema: z.object({ id: z.string(), tag: z.string().optional() }),
      annotations: { readOnlyHint: true, idempotentHint: true }
    },
    async ({ id }) => {
      const response = await fetch(`${downstream}/pets/${encodeURIComponent(id)}`)
      const data = await response.json() as Record<string, unknown>
      return { content: [{ type: "text" as const, text: JSON.stringify(data) }], structuredContent: data }
    }
  )
  return server
}

const handle = toNodeHandler(createMcpHandler(factory))
const http = createServer((req, res) => {
  if (req.url === "/mcp" || req.url?.startsWith("/mcp?")) {
    // IncomingMessage declares `method?` and `url?`; the adapter's structural type wants them (a server's always has)
    void handle(req as typeof req & { method: string; url: string }, res)
    return
  }
  res.writeHead(req.url === "/healthz" ? 200 : 404).end()
})
http.keepAliveTimeout = 60_000
http.headersTimeout = 65_000
http.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` }))
})
process.on("SIGTERM", () => {
  http.closeAllConnections()
  http.close(() => process.exit(0))
})
