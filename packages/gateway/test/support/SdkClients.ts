/**
 * The official MCP SDK clients connected to the gateway under test, for the
 * scope: v1 (`@modelcontextprotocol/sdk`, the 2025 revisions) and v2
 * (`@modelcontextprotocol/client`, pinned to 2026-07-28).
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { HttpServer } from "effect/http"

/** The gateway's `/mcp` URL. */
export const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base)))

/** An SDK v1 client (2025 revisions), closed with the scope. */
export const v1 = Effect.acquireRelease(
  Effect.flatMap(mcpUrl, (url) =>
    Effect.promise(async () => {
      const client = new ClientV1({ name: "v1", version: "1.0.0" })
      await client.connect(new TransportV1(url))
      return client
    })),
  (client) => Effect.promise(() => client.close())
)

/** An SDK v2 client speaking 2026-07-28, closed with the scope. */
export const v2 = Effect.acquireRelease(
  Effect.flatMap(mcpUrl, (url) =>
    Effect.promise(async () => {
      const client = new ClientV2({ name: "v2", version: "2.0.0" }, {
        versionNegotiation: { mode: { pin: "2026-07-28" } }
      })
      await client.connect(new TransportV2(url))
      return client
    })),
  (client) => Effect.promise(() => client.close())
)
