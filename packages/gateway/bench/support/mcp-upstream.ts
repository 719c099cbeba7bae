/**
 * The upstream of the federated benchmark: a minimal MCP server on the
 * official TypeScript SDK v2 (`createMcpHandler`, 2026-07-28, stateless) with
 * one tool, `echo`, and one resource, `bench://static-text` (1 KiB of text).
 *
 * Usage: node packages/gateway/bench/support/mcp-upstream.ts
 * Prints `{"url": "http://127.0.0.1:<port>/mcp"}` once listening.
 */
import { toNodeHandler } from "@modelcontextprotocol/node"
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as z from "zod"

const TEXT = "x".repeat(1_024)

const factory = () => {
  const server = new McpServer({ name: "federated-bench-upstream", version: "1.0.0" }, {
    capabilities: { tools: {}, resources: {} }
  })
  server.registerTool("echo", { description: "Echoes its text", inputSchema: z.object({ text: z.string() }) }, async (
    { text }
  ) => ({ content: [{ type: "text" as const, text }] }))
  server.registerResource("static-text", "bench://static-text", { mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: TEXT }]
  }))
  return server
}

const node = toNodeHandler(createMcpHandler(factory))
const server = createServer((req, res) => void node(req as never, res))
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` }))
})
process.on("SIGTERM", () => server.close(() => process.exit(0)))
