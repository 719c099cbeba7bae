/**
 * An upstream for the conformance scenarios `tools-call-*`, written with the
 * official SDK v1 (`McpServer`, Streamable HTTP with sessions, 2025
 * revisions), on 127.0.0.1: the tools those scenarios call, by their bare
 * names, as the suite's own everything-server describes them; and
 * {@link startModern}, an SDK v2 server (2026-07-28) with the
 * `input_required` tools of the `input-required-result-*` scenarios (HMAC-sealed
 * `requestState` through the SDK's codec).
 */
import { toNodeHandler } from "@modelcontextprotocol/node"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import {
  acceptedContent,
  completable,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  McpServer as McpServerV2,
  ResourceTemplate
} from "@modelcontextprotocol/server"
import type { IncomingMessage, ServerResponse } from "node:http"
import { registerFeatures } from "./conformance-features.ts"
import { makeServer } from "./conformance-server.ts"
import { readJson, serveMcp, v1Sessions } from "./upstreams.ts"

export interface ConformanceUpstream {
  readonly url: string
  readonly stop: () => Promise<void>
}

/** Starts the upstream on an ephemeral loopback port (`/mcp`). */
export const start = async (tag = ""): Promise<ConformanceUpstream> => {
  const { handle, sessions } = v1Sessions(() => makeServer(tag))
  return serveMcp(handle, () => sessions.clear())
}

/** The same server over the deprecated HTTP+SSE transport: its URL is the SSE endpoint (`/sse`). */
export const startSse = async (): Promise<ConformanceUpstream> => {
  const transports = new Map<string, SSEServerTransport>()
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res)
      transports.set(transport.sessionId, transport)
      res.on("close", () => transports.delete(transport.sessionId))
      await makeServer().connect(transport)
      return
    }
    const transport = transports.get(url.searchParams.get("sessionId") ?? "")
    if (req.method !== "POST" || url.pathname !== "/messages" || transport === undefined) {
      res.writeHead(404).end()
      return
    }
    return transport.handlePostMessage(req, res, await readJson(req))
  }
  const served = await serveMcp(handle, () => transports.clear())
  return { url: served.url.replace(/\/mcp$/, "/sse"), stop: served.stop }
}

interface FlowState {
  readonly tool: string
  readonly round: number
}

/** HMAC-sealed `requestState` (the SDK's codec): a tampered state is refused with -32602 before the handler runs. */
const codec = createRequestStateCodec<FlowState>({ key: "conformance-upstream-request-state-key-0123456789" })

const confirmSchema = { type: "object" as const, properties: { ok: { type: "boolean" as const } } }
const nameSchema = { type: "object" as const, properties: { name: { type: "string" as const } }, required: ["name"] }

const modernServer = () => {
  const server = new McpServerV2({ name: "conformance-upstream-v2", version: "2.0.0" }, {
    capabilities: { tools: {}, resources: {}, prompts: {}, completions: {} },
    requestState: { verify: (state, ctx) => codec.verify(state, ctx) }
  })
  registerFeatures(server as never, { ResourceTemplate, completable } as never)
  const stateOf = (ctx: { readonly mcpReq: { readonly requestState: () => unknown } }, tool: string) => {
    const state = ctx.mcpReq.requestState() as FlowState | string | undefined
    return typeof state === "object" && state !== null && state.tool === tool ? state.round : 0
  }
  for (const tool of ["test_input_required_result_request_state", "test_input_required_result_tampered_state"]) {
    server.registerTool(tool, { description: "Asks for confirmation with a sealed requestState" }, async (ctx) => {
      if (stateOf(ctx, tool) === 1 && acceptedContent(ctx.mcpReq.inputResponses, "confirm") !== undefined) {
        return { content: [{ type: "text", text: "state-ok: confirmed" }] }
      }
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: "Please confirm", requestedSchema: confirmSchema }) },
        requestState: await codec.mint({ tool, round: 1 }, ctx)
      })
    })
  }
  server.registerTool("test_input_required_result_multi_round", {
    description: "Two elicitation rounds, then a result"
  }, async (ctx) => {
    const tool = "test_input_required_result_multi_round"
    const round = stateOf(ctx, tool)
    if (round === 2 && acceptedContent(ctx.mcpReq.inputResponses, "step2") !== undefined) {
      return { content: [{ type: "text", text: "multi-round complete" }] }
    }
    if (round === 1 && acceptedContent(ctx.mcpReq.inputResponses, "step1") !== undefined) {
      return inputRequired({
        inputRequests: {
          step2: inputRequired.elicit({
            message: "Step 2: What is your favourite colour?",
            requestedSchema: { type: "object", properties: { color: { type: "string" } }, required: ["color"] }
          })
        },
        requestState: await codec.mint({ tool, round: 2 }, ctx)
      })
    }
    return inputRequired({
      inputRequests: {
        step1: inputRequired.elicit({ message: "Step 1: What is your name?", requestedSchema: nameSchema })
      },
      requestState: await codec.mint({ tool, round: 1 }, ctx)
    })
  })
  server.registerTool("test_input_required_result_capabilities", {
    description: "Asks only for what the client declared it can answer"
  }, async (ctx) => {
    // the 2026-07-28 per-request envelope (the SDK lifts it out of `_meta`)
    const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined
    const caps = (envelope?.["io.modelcontextprotocol/clientCapabilities"] ?? {}) as Record<string, unknown>
    if (ctx.mcpReq.inputResponses !== undefined) return { content: [{ type: "text", text: "answered" }] }
    const inputRequests: Record<string, ReturnType<typeof inputRequired.listRoots>> = {}
    if (caps.elicitation !== undefined) {
      inputRequests.user_name = inputRequired.elicit({ message: "What is your name?", requestedSchema: nameSchema })
    }
    if (caps.sampling !== undefined) {
      inputRequests.greeting = inputRequired.createMessage({
        messages: [{ role: "user", content: { type: "text", text: "Say hello" } }],
        maxTokens: 50
      })
    }
    if (Object.keys(inputRequests).length === 0) return { content: [{ type: "text", text: "nothing to ask" }] }
    return inputRequired({ inputRequests })
  })
  server.registerTool("test_input_required_result_multiple_inputs", {
    description: "Asks for an elicitation, a sampling and the roots at once"
  }, async (ctx) => {
    const tool = "test_input_required_result_multiple_inputs"
    const responses = ctx.mcpReq.inputResponses ?? {}
    if (
      stateOf(ctx, tool) === 1 && acceptedContent(responses, "user_name") !== undefined &&
      "greeting" in responses && "client_roots" in responses
    ) {
      return { content: [{ type: "text", text: "all inputs received" }] }
    }
    return inputRequired({
      inputRequests: {
        user_name: inputRequired.elicit({ message: "What is your name?", requestedSchema: nameSchema }),
        greeting: inputRequired.createMessage({
          messages: [{ role: "user", content: { type: "text", text: "Say hello" } }],
          maxTokens: 50
        }),
        client_roots: inputRequired.listRoots()
      },
      requestState: await codec.mint({ tool, round: 1 }, ctx)
    })
  })
  server.registerTool("test_input_required_result_elicitation", {
    description: "Asks for the user's name (input_required elicitation)"
  }, async (ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, "user_name")
    if (answer === undefined || typeof answer.name !== "string") {
      return inputRequired({
        inputRequests: {
          user_name: inputRequired.elicit({
            message: "What is your name?",
            requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
          })
        }
      })
    }
    return { content: [{ type: "text", text: `Hello, ${answer.name}!` }] }
  })
  server.registerTool("test_input_required_result_sampling", {
    description: "Asks the client to sample (input_required)"
  }, async (ctx) => {
    const answer = ctx.mcpReq.inputResponses?.capital_question as
      | { readonly content?: { readonly type?: string; readonly text?: string } }
      | undefined
    if (answer?.content?.type !== "text") {
      return inputRequired({
        inputRequests: {
          capital_question: inputRequired.createMessage({
            messages: [{ role: "user", content: { type: "text", text: "What is the capital of France?" } }],
            maxTokens: 100
          })
        }
      })
    }
    return { content: [{ type: "text", text: `Sampling said: ${answer.content.text}` }] }
  })
  server.registerTool("test_input_required_result_list_roots", {
    description: "Asks the client for its roots (input_required)"
  }, async (ctx) => {
    const answer = ctx.mcpReq.inputResponses?.client_roots as
      | { readonly roots?: ReadonlyArray<{ readonly uri: string }> }
      | undefined
    if (!Array.isArray(answer?.roots)) {
      return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } })
    }
    return { content: [{ type: "text", text: `Roots: ${answer.roots.map((r) => r.uri).join(", ")}` }] }
  })
  return server
}

/** The SDK v2 upstream behind `createMcpHandler` (2026-07-28 only), on an ephemeral loopback port. */
export const startModern = async (): Promise<ConformanceUpstream> => {
  const node = toNodeHandler(createMcpHandler(modernServer, { legacy: "reject", keepAliveMs: 1_000 }))
  return serveMcp((req, res) => node(req as never, res))
}
