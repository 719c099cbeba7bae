/**
 * A raw HTTP client for protocol tests: JSON-RPC POSTs with chosen headers and
 * an SSE reader that keeps event ids.
 */
import { Effect } from "effect"

export const STATELESS = "2026-07-28"

export interface SseEvent {
  readonly id: string | undefined
  readonly retry: number | undefined
  readonly data: string
}

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly events: ReadonlyArray<SseEvent>
  readonly text: string
}

/** Parses complete SSE events out of `buffer`; returns the rest. */
const parseEvents = (buffer: string, out: Array<SseEvent>): string => {
  let index: number
  while ((index = buffer.indexOf("\n\n")) !== -1) {
    const block = buffer.slice(0, index)
    buffer = buffer.slice(index + 2)
    let id: string | undefined
    let retry: number | undefined
    const data: Array<string> = []
    let sawField = false
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue
      const colon = line.indexOf(":")
      const field = colon === -1 ? line : line.slice(0, colon)
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
      sawField = true
      if (field === "id") id = value
      else if (field === "retry") retry = Number(value)
      else if (field === "data") data.push(value)
    }
    if (sawField) out.push({ id, retry, data: data.join("\n") })
  }
  return buffer
}

/** Reads an SSE body until `until` holds, the body ends, or `timeoutMs` passes. */
export const readSse = async (
  response: Response,
  options: { readonly until?: (events: ReadonlyArray<SseEvent>) => boolean; readonly timeoutMs?: number } = {}
): Promise<ReadonlyArray<SseEvent>> => {
  const events: Array<SseEvent> = []
  if (response.body === null) return events
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  const timer = setTimeout(() => reader.cancel().catch(() => {}), options.timeoutMs ?? 5000)
  try {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }))
      if (value !== undefined) buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), events)
      if (options.until?.(events) === true) {
        await reader.cancel().catch(() => {})
        break
      }
      if (done) break
    }
  } finally {
    clearTimeout(timer)
  }
  return events
}

export const request = (
  url: string,
  init: RequestInit & {
    readonly sse?: { readonly until?: (events: ReadonlyArray<SseEvent>) => boolean; readonly timeoutMs?: number }
  }
): Effect.Effect<Reply> =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const type = response.headers.get("content-type") ?? ""
    if (type.includes("text/event-stream")) {
      const events = await readSse(response, init.sse)
      return { status: response.status, headers: response.headers, body: undefined, events, text: "" }
    }
    const text = await response.text()
    let body: any = undefined
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, headers: response.headers, body, events: [], text }
  })

const baseHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" }

let nextId = 1

/** A raw JSON-RPC POST. */
export const post = (
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  sse?: { readonly until?: (events: ReadonlyArray<SseEvent>) => boolean; readonly timeoutMs?: number }
) =>
  request(url, {
    method: "POST",
    headers: { ...baseHeaders, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(sse === undefined ? {} : { sse })
  })

export const meta = (extra: Record<string, unknown> = {}) => ({
  "io.modelcontextprotocol/protocolVersion": STATELESS,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw-test", version: "1.0.0" },
  ...extra
})

/** A conformant 2026-07-28 request (headers mirror the body). */
export const stateless = (
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  sse?: { readonly until?: (events: ReadonlyArray<SseEvent>) => boolean; readonly timeoutMs?: number }
) => {
  const name = method === "tools/call" || method === "prompts/get" ?
    params.name :
    method === "resources/read" ?
    params.uri :
    undefined
  return post(
    url,
    { jsonrpc: "2.0", id: nextId++, method, params: { ...params, _meta: meta(params._meta as any) } },
    {
      "mcp-protocol-version": STATELESS,
      "mcp-method": method,
      ...(typeof name === "string" ? { "mcp-name": name } : {}),
      ...headers
    },
    sse
  )
}

/** Starts a 2025-era session; its id. */
export const initialize = (url: string, protocolVersion = "2025-11-25") =>
  Effect.map(
    post(url, {
      jsonrpc: "2.0",
      id: nextId++,
      method: "initialize",
      params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw-test", version: "1.0.0" } }
    }),
    (reply) => reply.headers.get("mcp-session-id")!
  )

/** A request on a 2025-era session. */
export const stateful = (
  url: string,
  sessionId: string,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  sse?: { readonly until?: (events: ReadonlyArray<SseEvent>) => boolean; readonly timeoutMs?: number }
) =>
  post(
    url,
    { jsonrpc: "2.0", id: nextId++, method, params },
    { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25", ...headers },
    sse
  )
