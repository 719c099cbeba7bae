/**
 * Real upstream MCP servers for the federation tests, written with the
 * official SDKs and served on 127.0.0.1:
 *
 * - v1 `McpServer` over Streamable HTTP (2025 revisions, sessions, GET stream),
 * - v1 `McpServer` over the deprecated HTTP+SSE transport,
 * - v2 `McpServer` behind `createMcpHandler` (2026-07-28 only, stateless,
 *   `subscriptions/listen`, `input_required`).
 *
 * Each can be stopped and started again on the same port (a dead upstream),
 * and v1 Streamable HTTP can forget its sessions (404 on the next request).
 */
import { toNodeHandler } from "@modelcontextprotocol/node"
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { ElicitResultSchema, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js"
import {
  acceptedContent,
  createMcpHandler,
  inputRequired,
  McpServer as McpServerV2
} from "@modelcontextprotocol/server"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { z } from "zod"

/** What the upstreams observed, for assertions. */
export interface Observed {
  cancelled: number
  calls: number
  authorization: Array<string | undefined>
}

export interface Upstream {
  readonly url: string
  readonly observed: Observed
  /** Stops listening and drops every open connection. */
  readonly stop: () => Promise<void>
  /** Listens again on the same port. */
  readonly start: () => Promise<void>
}

/** A request's JSON body (undefined when empty). */
export const readJson = (req: IncomingMessage): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      try {
        resolve(text === "" ? undefined : JSON.parse(text))
      } catch (error) {
        reject(error)
      }
    })
    req.on("error", reject)
  })

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener("abort", () => {
      clearTimeout(timer)
      reject(new Error("aborted"))
    }, { once: true })
  })

const listen = async (
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  port = 0
): Promise<{ server: Server; port: number }> => {
  const server = createServer(handler)
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve())
  })
  return { server, port: (server.address() as AddressInfo).port }
}

const managed = async (
  path: string,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  observed: Observed,
  onStop: () => void = () => {}
): Promise<Upstream> => {
  let current = await listen(handler)
  const port = current.port
  let running = true
  return {
    url: `http://127.0.0.1:${port}${path}`,
    observed,
    stop: async () => {
      if (!running) return
      running = false
      onStop()
      current.server.closeAllConnections()
      await new Promise<void>((resolve) => current.server.close(() => resolve()))
    },
    start: async () => {
      if (running) return
      current = await listen(handler, port)
      running = true
    }
  }
}

// ---------------------------------------------------------------------------
// v1 (2025 revisions)
// ---------------------------------------------------------------------------

/** The tools of the v1 servers; `extra` tools are added to every live server. */
const v1Server = (observed: Observed, extraTools: Set<string>) => {
  const server = new McpServerV1(
    { name: "upstream-v1", version: "1.0.0" },
    { capabilities: { logging: {}, tools: { listChanged: true } } }
  )
  server.registerTool("echo", {
    description: "Echoes its text",
    inputSchema: { text: z.string() }
  }, async ({ text }) => {
    observed.calls++
    return { content: [{ type: "text", text }] }
  })
  server.registerTool("slow", {
    description: "Reports progress every delayMs, steps times",
    inputSchema: { steps: z.number(), delayMs: z.number() }
  }, async ({ delayMs, steps }, extra) => {
    const token = extra._meta?.progressToken
    try {
      for (let i = 1; i <= steps; i++) {
        await sleep(delayMs, extra.signal)
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: steps, message: `step ${i}` }
          })
        }
      }
    } catch {
      observed.cancelled++
      return { content: [{ type: "text", text: "cancelled" }], isError: true }
    }
    return { content: [{ type: "text", text: `done after ${steps}` }] }
  })
  server.registerTool("chatty", {
    description: "Logs a message, then answers",
    inputSchema: { text: z.string() }
  }, async ({ text }, extra) => {
    await extra.sendNotification({
      method: "notifications/message",
      params: { level: "info", logger: "chatty", data: `about to say ${text}` }
    })
    return { content: [{ type: "text", text }] }
  })
  server.registerTool("ask", {
    description: "Asks the user for a colour (elicitation)",
    inputSchema: {}
  }, async (_args, extra) => {
    const answer = await extra.sendRequest({
      method: "elicitation/create",
      params: {
        message: "Favourite colour?",
        requestedSchema: { type: "object", properties: { colour: { type: "string" } }, required: ["colour"] }
      }
    }, ElicitResultSchema)
    return {
      content: [{
        type: "text",
        text: answer.action === "accept" ? `colour ${String(answer.content?.colour)}` : `no answer (${answer.action})`
      }]
    }
  })
  for (const name of extraTools) {
    server.registerTool(name, { description: `added at runtime: ${name}`, inputSchema: {} }, async () => ({
      content: [{ type: "text", text: name }]
    }))
  }
  return server
}

/**
 * Serves `handler` on an ephemeral loopback port; its URL is `/mcp` there.
 * A handler that throws gets a 500; `stop` runs `onStop`, then drops every
 * connection.
 */
export const serveMcp = async (
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<unknown> | void,
  onStop: () => void = () => {}
): Promise<{ readonly url: string; readonly stop: () => Promise<void> }> => {
  const server = createServer((req, res) => {
    Promise.resolve(handler(req, res)).catch(() => {
      if (!res.headersSent) res.writeHead(500).end()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stop: async () => {
      onStop()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/**
 * A request handler serving SDK v1 servers over Streamable HTTP with
 * sessions: `makeServer` builds one per `initialize`; a request for an
 * unknown session is 404, anything else without a session 400.
 */
export const v1Sessions = (makeServer: () => McpServerV1) => {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const sessionId = req.headers["mcp-session-id"] as string | undefined
    const body = req.method === "POST" ? await readJson(req) : undefined
    const existing = sessionId === undefined ? undefined : sessions.get(sessionId)
    if (existing !== undefined) return existing.handleRequest(req, res, body)
    if (sessionId === undefined && req.method === "POST" && isInitializeRequest(body)) {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, transport)
        }
      })
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
      }
      await makeServer().connect(transport)
      return transport.handleRequest(req, res, body)
    }
    res.writeHead(sessionId === undefined ? 400 : 404, { "content-type": "application/json" }).end(
      JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no such session" }, id: null })
    )
  }
  return { handle, sessions }
}

export interface V1Upstream extends Upstream {
  /** Registers a tool on every live server: each sends tools/list_changed. */
  readonly addTool: (name: string) => void
  /** Forgets every session: the next request with a session id gets 404. */
  readonly forgetSessions: () => void
}

/** v1 `McpServer` over Streamable HTTP with sessions, optionally requiring a bearer token. */
export const v1StreamableHttp = async (options: { readonly requireToken?: string } = {}): Promise<V1Upstream> => {
  const observed: Observed = { cancelled: 0, calls: 0, authorization: [] }
  const extraTools = new Set<string>()
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServerV1 }>()
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    observed.authorization.push(req.headers.authorization)
    if (options.requireToken !== undefined && req.headers.authorization !== `Bearer ${options.requireToken}`) {
      res.writeHead(401).end()
      return
    }
    const sessionId = req.headers["mcp-session-id"] as string | undefined
    const body = req.method === "POST" ? await readJson(req) : undefined
    const existing = sessionId === undefined ? undefined : sessions.get(sessionId)
    if (existing !== undefined) return existing.transport.handleRequest(req, res, body)
    if (sessionId !== undefined) {
      res.writeHead(404, { "content-type": "application/json" }).end(
        JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null })
      )
      return
    }
    if (req.method === "POST" && isInitializeRequest(body)) {
      const server = v1Server(observed, extraTools)
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, server })
        }
      })
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
      }
      await server.connect(transport)
      return transport.handleRequest(req, res, body)
    }
    res.writeHead(400, { "content-type": "application/json" }).end(
      JSON.stringify({
        jsonrpc: "2.0",
        error: { code: -32000, message: "Bad Request: Server not initialized" },
        id: null
      })
    )
  }
  const upstream = await managed("/mcp", (req, res) => void handler(req, res), observed, () => sessions.clear())
  return {
    ...upstream,
    addTool: (name) => {
      extraTools.add(name)
      for (const { server } of sessions.values()) {
        server.registerTool(name, { description: `added at runtime: ${name}`, inputSchema: {} }, async () => ({
          content: [{ type: "text", text: name }]
        }))
      }
    },
    forgetSessions: () => sessions.clear()
  }
}

/** v1 `McpServer` over the deprecated HTTP+SSE transport (`/sse` + `/messages`). */
export const v1Sse = async (): Promise<Upstream> => {
  const observed: Observed = { cancelled: 0, calls: 0, authorization: [] }
  const transports = new Map<string, SSEServerTransport>()
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res)
      transports.set(transport.sessionId, transport)
      res.on("close", () => transports.delete(transport.sessionId))
      await v1Server(observed, new Set()).connect(transport)
      return
    }
    if (req.method === "POST" && url.pathname === "/messages") {
      const transport = transports.get(url.searchParams.get("sessionId") ?? "")
      if (transport === undefined) {
        res.writeHead(404).end("unknown session")
        return
      }
      return transport.handlePostMessage(req, res, await readJson(req))
    }
    res.writeHead(404).end()
  }
  return managed("/sse", (req, res) => void handler(req, res), observed, () => transports.clear())
}

// ---------------------------------------------------------------------------
// v2 (2026-07-28)
// ---------------------------------------------------------------------------

export interface V2Upstream extends Upstream {
  /** Sends tools/list_changed on open listen streams after adding a tool. */
  readonly addTool: (name: string) => void
}

/** v2 `McpServer` behind `createMcpHandler` (2026-07-28 only), optionally requiring a bearer token. */
export const v2Modern = async (options: { readonly requireToken?: string } = {}): Promise<V2Upstream> => {
  const observed: Observed = { cancelled: 0, calls: 0, authorization: [] }
  const extraTools = new Set<string>()
  const factory = () => {
    const server = new McpServerV2({ name: "upstream-v2", version: "2.0.0" }, {
      capabilities: { tools: { listChanged: true }, logging: {} }
    })
    server.registerTool("echo", {
      description: "Echoes its text",
      inputSchema: z.object({ text: z.string() })
    }, async ({ text }) => {
      observed.calls++
      return { content: [{ type: "text", text }] }
    })
    server.registerTool("slow", {
      description: "Reports progress every delayMs, steps times",
      inputSchema: z.object({ steps: z.number(), delayMs: z.number() })
    }, async ({ delayMs, steps }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken
      try {
        for (let i = 1; i <= steps; i++) {
          await sleep(delayMs, ctx.mcpReq.signal)
          if (token !== undefined) {
            await ctx.mcpReq.notify({
              method: "notifications/progress",
              params: { progressToken: token, progress: i, total: steps }
            })
          }
        }
      } catch {
        observed.cancelled++
        return { content: [{ type: "text", text: "cancelled" }], isError: true }
      }
      return { content: [{ type: "text", text: `done after ${steps}` }] }
    })
    server.registerTool("deploy", {
      description: "Asks for confirmation (input_required), then deploys",
      inputSchema: z.object({ env: z.string() })
    }, async ({ env }, ctx) => {
      const confirmation = z.object({ confirm: z.boolean() })
      const confirmed = acceptedContent(ctx.mcpReq.inputResponses, "confirm", confirmation)
      if (confirmed?.confirm !== true) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: confirmation })
          }
        })
      }
      return { content: [{ type: "text", text: `deployed to ${env}` }] }
    })
    server.registerTool("region_echo", {
      description: "Echoes a region mirrored in a header",
      inputSchema: z.object({ region: z.string().meta({ "x-mcp-header": "Region" }) })
    }, async ({ region }) => ({ content: [{ type: "text", text: `region ${region}` }] }))
    for (const name of extraTools) {
      server.registerTool(name, { description: `added at runtime: ${name}` }, async () => ({
        content: [{ type: "text", text: name }]
      }))
    }
    return server
  }
  const handler = createMcpHandler(factory, { legacy: "reject", keepAliveMs: 1_000 })
  const node = toNodeHandler(handler)
  const upstream = await managed("/mcp", (req, res) => {
    observed.authorization.push(req.headers.authorization)
    if (options.requireToken !== undefined && req.headers.authorization !== `Bearer ${options.requireToken}`) {
      res.writeHead(401).end()
      return
    }
    void node(req as never, res)
  }, observed)
  return {
    ...upstream,
    addTool: (name) => {
      extraTools.add(name)
      handler.notify.toolsChanged()
    }
  }
}

/** An OAuth token endpoint (client credentials) on loopback. */
export const tokenEndpoint = async (options: {
  readonly clientId: string
  readonly clientSecret: string
  readonly token: string
  readonly expiresIn?: number
}): Promise<
  { readonly url: string; readonly requests: Array<URLSearchParams>; readonly stop: () => Promise<void> }
> => {
  const requests: Array<URLSearchParams> = []
  const { port, server } = await listen((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"))
      requests.push(form)
      const expected = `Basic ${Buffer.from(`${options.clientId}:${options.clientSecret}`).toString("base64")}`
      if (req.headers.authorization !== expected || form.get("grant_type") !== "client_credentials") {
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "invalid_client" }))
        return
      }
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({ access_token: options.token, token_type: "Bearer", expires_in: options.expiresIn ?? 3600 })
      )
    })
  })
  return {
    url: `http://127.0.0.1:${port}/token`,
    requests,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** Starts an upstream for the scope of a test layer. */
export const scoped = <U extends { readonly stop: () => Promise<void> }>(start: () => Promise<U>) =>
  Effect.acquireRelease(Effect.promise(start), (u) => Effect.promise(() => u.stop()))

/** How {@link v2Listen} answers `subscriptions/listen`. */
export type ListenMode = "ndjson" | "status500" | "closeAtOnce"

/**
 * A v2 `McpServer` (2026-07-28) whose `subscriptions/listen` answers are
 * replaced: `ndjson` answers 200 `application/json` with one JSON-RPC frame
 * per line (the acknowledgement first, then `tools/list_changed` when a tool
 * is added), as some servers do; `status500` answers HTTP 500;
 * `closeAtOnce` answers 200 `text/event-stream` and ends the stream at once.
 * Every other request goes to the SDK. It also has a prompt (`greet`) and a
 * resource (`test://<mode>/static`); `addPrompt` / `addResource` add more
 * (announced like tools).
 */
export const v2Listen = async (mode: ListenMode): Promise<
  V2Upstream & {
    readonly listens: () => number
    readonly addPrompt: (name: string) => void
    readonly addResource: (uri: string) => void
  }
> => {
  const observed: Observed = { cancelled: 0, calls: 0, authorization: [] }
  const extraTools = new Set<string>()
  const extraPrompts = new Set<string>()
  const extraResources = new Set<string>()
  const open = new Set<ServerResponse>()
  let listens = 0
  const factory = () => {
    const server = new McpServerV2({ name: `upstream-${mode}`, version: "2.0.0" }, {
      capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } }
    })
    for (const name of ["greet", ...extraPrompts]) {
      server.registerPrompt(name, { description: `prompt ${name}` }, async () => ({
        messages: [{ role: "user", content: { type: "text", text: `${name} from ${mode}` } }]
      }))
    }
    for (const uri of [`test://${mode}/static`, ...extraResources]) {
      server.registerResource(uri, uri, { mimeType: "text/plain" }, async () => ({
        contents: [{ uri, mimeType: "text/plain", text: `${uri} of ${mode}` }]
      }))
    }
    server.registerTool("echo", {
      description: "Echoes its text",
      inputSchema: z.object({ text: z.string() })
    }, async ({ text }) => {
      observed.calls++
      return { content: [{ type: "text", text }] }
    })
    for (const name of extraTools) {
      server.registerTool(name, { description: `added at runtime: ${name}` }, async () => ({
        content: [{ type: "text", text: name }]
      }))
    }
    return server
  }
  const node = toNodeHandler(createMcpHandler(factory, { legacy: "reject" }))
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const body = req.method === "POST" ? await readJson(req) : undefined
    const message = body as { method?: string; id?: unknown; params?: { notifications?: unknown } } | undefined
    if (message?.method !== "subscriptions/listen") return node(req as never, res, body)
    listens++
    switch (mode) {
      case "status500":
        res.writeHead(500, { "content-type": "text/plain" }).end("listen is broken here")
        return
      case "closeAtOnce":
        res.writeHead(200, { "content-type": "text/event-stream" }).end()
        return
      case "ndjson":
        res.writeHead(200, { "content-type": "application/json" })
        res.write(
          `${
            JSON.stringify({
              jsonrpc: "2.0",
              method: "notifications/subscriptions/acknowledged",
              params: { notifications: message.params?.notifications ?? {} }
            })
          }\n`
        )
        open.add(res)
        res.on("close", () => open.delete(res))
    }
  }
  const upstream = await managed("/mcp", (req, res) => void handler(req, res), observed, () => open.clear())
  return {
    ...upstream,
    listens: () => listens,
    addTool: (name) => {
      extraTools.add(name)
      for (const res of open) {
        res.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" })}\n`)
      }
    },
    addPrompt: (name) => {
      extraPrompts.add(name)
      for (const res of open) {
        res.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/prompts/list_changed" })}\n`)
      }
    },
    addResource: (uri) => {
      extraResources.add(uri)
      for (const res of open) {
        res.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/resources/list_changed" })}\n`)
      }
    }
  }
}
