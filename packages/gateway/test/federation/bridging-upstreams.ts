/**
 * Upstreams for the bridging tests (a client of one revision, an upstream of
 * the other), on 127.0.0.1:
 *
 * - {@link legacyAsking}: the official SDK v1 `McpServer` over Streamable
 *   HTTP (2025 revisions, sessions) whose tools ask the client mid-call with
 *   server-to-client requests: `ask` (elicitation), `sample` (sampling),
 *   `interview` (elicitation, then sampling, then roots, with progress before
 *   each), `roots_later` (answers at once, then asks `roots/list` outside any
 *   request).
 * - {@link oddModern}: a 2026-07-28 server written by hand (the SDK v2 server
 *   refuses to produce these): `input_required` results that ask what the
 *   client did not declare, one that never stops asking, and one with
 *   neither `inputRequests` nor `requestState`.
 *
 * The 2026-07-28 upstream built with the SDK v2 is `conformance-upstream.ts`'s
 * `startModern` (sealed `requestState`, several rounds, several requests per
 * round).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema
} from "@modelcontextprotocol/sdk/types.js"

import { z } from "zod"
import { readJson, serveMcp, v1Sessions } from "./upstreams.ts"

export interface Observed {
  /** Calls whose server-to-client request was abandoned (the call was cancelled). */
  cancelled: number
  /** What `roots/list` outside a request was answered. */
  readonly roots: Array<unknown>
}

export interface TestUpstream {
  readonly url: string
  readonly observed: Observed
  readonly stop: () => Promise<void>
}

const colourSchema = {
  type: "object" as const,
  properties: { colour: { type: "string" as const } },
  required: ["colour"]
}

const legacyServer = (observed: Observed) => {
  const server = new McpServer({ name: "legacy-asking", version: "1.0.0" }, { capabilities: { tools: {} } })
  /** Sends a request to the client; a cancelled call is counted. */
  const asking = async <T>(send: () => Promise<T>, signal: AbortSignal): Promise<T> => {
    try {
      return await send()
    } catch (error) {
      if (signal.aborted) observed.cancelled++
      throw error
    }
  }
  server.registerTool("ask", { description: "Asks the user for a colour", inputSchema: {} }, async (_args, extra) => {
    const answer = await asking(() =>
      extra.sendRequest(
        { method: "elicitation/create", params: { message: "Favourite colour?", requestedSchema: colourSchema } },
        ElicitResultSchema,
        { timeout: 15 * 60_000 }
      ), extra.signal)
    return {
      content: [{
        type: "text",
        text: answer.action === "accept" ? `colour ${String(answer.content?.colour)}` : `no answer (${answer.action})`
      }]
    }
  })
  server.registerTool("sample", {
    description: "Asks the client's model",
    inputSchema: { prompt: z.string() }
  }, async ({ prompt }, extra) => {
    const answer = await asking(() =>
      extra.sendRequest({
        method: "sampling/createMessage",
        params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 50 }
      }, CreateMessageResultSchema), extra.signal)
    return {
      content: [{
        type: "text",
        text: `model ${answer.model} said: ${answer.content.type === "text" ? answer.content.text : "?"}`
      }]
    }
  })
  server.registerTool("interview", {
    description: "Asks a name, then the model, then the roots, reporting progress before each",
    inputSchema: {}
  }, async (_args, extra) => {
    const token = extra._meta?.progressToken
    const progress = (step: number, message: string) =>
      token === undefined ? Promise.resolve() : extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: step, total: 3, message }
      })
    await progress(1, "asking the name")
    const name = await asking(() =>
      extra.sendRequest({
        method: "elicitation/create",
        params: {
          message: "Your name?",
          requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
        }
      }, ElicitResultSchema), extra.signal)
    await progress(2, "asking the model")
    const greeting = await asking(() =>
      extra.sendRequest({
        method: "sampling/createMessage",
        params: {
          messages: [{ role: "user", content: { type: "text", text: `Greet ${String(name.content?.name)}` } }],
          maxTokens: 50
        }
      }, CreateMessageResultSchema), extra.signal)
    await progress(3, "asking the roots")
    const roots = await asking(() => extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema), extra.signal)
    return {
      content: [{
        type: "text",
        text: `${String(name.content?.name)}: ${greeting.content.type === "text" ? greeting.content.text : "?"} (${
          roots.roots.map((r) => r.uri).join(", ")
        })`
      }]
    }
  })
  server.registerTool("roots_later", {
    description: "Answers at once, then asks for roots outside any request",
    inputSchema: {}
  }, async () => {
    setTimeout(() => {
      server.server.listRoots().then(
        (roots) => observed.roots.push(roots),
        (error: Error) => observed.roots.push({ error: error.message })
      )
    }, 50)
    return { content: [{ type: "text", text: "asking later" }] }
  })
  return server
}

/** The SDK v1 upstream (2025 revisions) whose tools ask the client mid-call. */
export const legacyAsking = async (): Promise<TestUpstream> => {
  const observed: Observed = { cancelled: 0, roots: [] }
  const { handle, sessions } = v1Sessions(() => legacyServer(observed))
  const { stop, url } = await serveMcp(handle, () => sessions.clear())
  return { url, observed, stop }
}

// ---------------------------------------------------------------------------
// A 2026-07-28 server by hand
// ---------------------------------------------------------------------------

const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "odd-modern", version: "1.0.0" } }

const tools = ["elicit_anyway", "sample_anyway", "roots_anyway", "endless", "neither"].map((name) => ({
  name,
  description: `odd input_required: ${name}`,
  inputSchema: { type: "object" }
}))

/** Counts of `tools/call` requests per tool, and the last `inputResponses` each got. */
export interface OddObserved {
  readonly calls: Map<string, number>
  readonly responses: Map<string, unknown>
}

const text = (value: string) => ({
  content: [{ type: "text", text: value }],
  resultType: "complete",
  _meta: SERVER_INFO
})

const inputRequired = (key: string, method: string, params?: Record<string, unknown>) => ({
  resultType: "input_required",
  inputRequests: { [key]: params === undefined ? { method } : { method, params } },
  _meta: SERVER_INFO
})

const oddCall = (name: string, responses: Record<string, any> | undefined) => {
  switch (name) {
    case "elicit_anyway":
      return responses === undefined ?
        inputRequired("confirm", "elicitation/create", {
          message: "Sure?",
          requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } }
        }) :
        text(`elicitation ${String(responses.confirm?.action)}`)
    case "sample_anyway":
      return responses === undefined ?
        inputRequired("model", "sampling/createMessage", {
          messages: [{ role: "user", content: { type: "text", text: "hi" } }],
          maxTokens: 10
        }) :
        text("sampled")
    case "roots_anyway":
      return responses === undefined ?
        inputRequired("where", "roots/list") :
        text(`${String(responses.where?.roots?.length)} roots`)
    case "endless":
      return inputRequired("again", "elicitation/create", {
        message: "Once more?",
        requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } }
      })
    default:
      return { resultType: "input_required", _meta: SERVER_INFO }
  }
}

/** A 2026-07-28 upstream written by hand, answering JSON to every POST. */
export const oddModern = async (): Promise<TestUpstream & { readonly odd: OddObserved }> => {
  const odd: OddObserved = { calls: new Map(), responses: new Map() }
  const { stop, url } = await serveMcp(async (req, res) => {
    const message = (req.method === "POST" ? await readJson(req) : undefined) as
      | { id?: number; method?: string; params?: Record<string, any> }
      | undefined
    const reply = (result: unknown) =>
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({ jsonrpc: "2.0", id: message?.id ?? null, result })
      )
    switch (message?.method) {
      case "server/discover":
        return reply({
          supportedVersions: ["2026-07-28"],
          capabilities: { tools: {} },
          resultType: "complete",
          _meta: SERVER_INFO
        })
      case "tools/list":
        return reply({ tools, ttlMs: 0, cacheScope: "public", resultType: "complete", _meta: SERVER_INFO })
      case "tools/call": {
        const name = String(message.params?.name)
        odd.calls.set(name, (odd.calls.get(name) ?? 0) + 1)
        odd.responses.set(name, message.params?.inputResponses)
        return reply(oddCall(name, message.params?.inputResponses))
      }
      default:
        res.writeHead(404, { "content-type": "application/json" }).end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: message?.id ?? null,
            error: { code: -32601, message: `Method not found: ${message?.method}` }
          })
        )
    }
  }, () => {})
  return { url, observed: { cancelled: 0, roots: [] }, odd, stop }
}
