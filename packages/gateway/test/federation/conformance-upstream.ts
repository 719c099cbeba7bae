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
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { CreateMessageResultSchema, ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js"
import {
  acceptedContent,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  McpServer as McpServerV2
} from "@modelcontextprotocol/server"
import { z } from "zod"
import { serveMcp, v1Sessions } from "./upstreams.ts"

// a 1x1 red PNG and a tiny WAV header
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const makeServer = () => {
  const server = new McpServer(
    { name: "conformance-upstream", version: "1.0.0" },
    { capabilities: { logging: {}, tools: {} } }
  )
  server.registerTool("test_simple_text", { description: "Returns simple text" }, async () => ({
    content: [{ type: "text", text: "This is a simple text response for testing." }]
  }))
  server.registerTool("test_image_content", { description: "Returns an image" }, async () => ({
    content: [{ type: "image", data: PNG, mimeType: "image/png" }]
  }))
  server.registerTool("test_audio_content", { description: "Returns audio" }, async () => ({
    content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }]
  }))
  const resource = {
    type: "resource" as const,
    resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." }
  }
  server.registerTool("test_embedded_resource", { description: "Returns an embedded resource" }, async () => ({
    content: [resource]
  }))
  server.registerTool("test_multiple_content_types", { description: "Returns text, image and resource" }, async () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      resource
    ]
  }))
  server.registerTool("test_tool_with_logging", { description: "Logs three messages" }, async (extra) => {
    for (const data of ["Tool execution started", "Tool processing data", "Tool execution completed"]) {
      await extra.sendNotification({ method: "notifications/message", params: { level: "info", data } })
      await sleep(50)
    }
    return { content: [{ type: "text", text: "Tool with logging executed successfully" }] }
  })
  server.registerTool("test_error_handling", { description: "Always fails" }, async () => ({
    isError: true,
    content: [{ type: "text", text: "This tool intentionally returns an error for testing" }]
  }))
  server.registerTool("test_tool_with_progress", { description: "Reports progress" }, async (extra) => {
    const token = extra._meta?.progressToken
    for (const progress of [0, 50, 100]) {
      if (token !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress, total: 100, message: `Completed step ${progress}` }
        })
      }
      await sleep(50)
    }
    return { content: [{ type: "text", text: String(token ?? "no token") }] }
  })
  server.registerTool("test_sampling", {
    description: "Asks the client to sample",
    inputSchema: { prompt: z.string() }
  }, async ({ prompt }, extra) => {
    const result = await extra.sendRequest({
      method: "sampling/createMessage",
      params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 100 }
    }, CreateMessageResultSchema)
    const text = result.content.type === "text" ? result.content.text : "(not text)"
    return { content: [{ type: "text", text: `LLM response: ${text}` }] }
  })
  server.registerTool("test_elicitation", {
    description: "Asks the user",
    inputSchema: { message: z.string() }
  }, async ({ message }, extra) => {
    const result = await extra.sendRequest({
      method: "elicitation/create",
      params: {
        message,
        requestedSchema: {
          type: "object",
          properties: { username: { type: "string" }, email: { type: "string" } },
          required: ["username", "email"]
        }
      }
    }, ElicitResultSchema)
    return { content: [{ type: "text", text: `User response: action=${result.action}` }] }
  })
  return server
}

export interface ConformanceUpstream {
  readonly url: string
  readonly stop: () => Promise<void>
}

/** Starts the upstream on an ephemeral loopback port (`/mcp`). */
export const start = async (): Promise<ConformanceUpstream> => {
  const { handle, sessions } = v1Sessions(makeServer)
  return serveMcp(handle, () => sessions.clear())
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
    capabilities: { tools: {} },
    requestState: { verify: (state, ctx) => codec.verify(state, ctx) }
  })
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
