/**
 * The SDK v1 server of the conformance scenarios (`tools-call-*`,
 * `resources-*`, `prompts-*`, `completion-complete`): the tools, resources,
 * templates, prompts and completions as the suite's own everything-server
 * describes them, with resource subscriptions. Plain JavaScript apart from
 * types: `conformance-stdio.ts` runs it under Node's type stripping.
 */
import { completable } from "@modelcontextprotocol/sdk/server/completable.js"
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js"
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { z } from "zod"
import { registerFeatures } from "./conformance-features.ts"

// a 1x1 red PNG and a tiny WAV header
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A fresh server (one per session); `tag` ends its resource and prompt texts (to tell two apart). */
export const makeServer = (tag = "") => {
  const server = new McpServer(
    { name: "conformance-upstream", version: "1.0.0" },
    { capabilities: { logging: {}, tools: {}, resources: { subscribe: true }, prompts: {}, completions: {} } }
  )
  registerFeatures(server, { ResourceTemplate, completable } as never, tag)
  // not a scenario's: tells subscribers that test://watched-resource changed
  server.registerTool("touch_watched", { description: "Changes test://watched-resource" }, async () => {
    await server.server.sendResourceUpdated({ uri: "test://watched-resource" })
    return { content: [{ type: "text", text: "touched" }] }
  })
  server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}))
  server.server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}))
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
