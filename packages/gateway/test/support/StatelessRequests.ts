/**
 * Raw 2026-07-28 requests to an MCP endpoint, for tests that look at the
 * wire the SDK clients hide: the per-request `_meta`, the standard headers
 * (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), and the answer as its
 * JSON-RPC messages (one for JSON, each event's for SSE).
 */

/** The `_meta` every 2026-07-28 request carries here: a client that can be asked for anything. */
export const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { elicitation: {}, sampling: {}, roots: {} }
}

export interface Answer {
  readonly status: number
  readonly type: string
  /** Every JSON-RPC message of the answer, in order. */
  readonly messages: ReadonlyArray<any>
  /** The response: the last message. */
  readonly body: any
}

/** POSTs `method` with `params` (its `_meta` is {@link META} with `meta` over it) to `url`. */
export const post = async (
  url: string | URL,
  method: string,
  params: Readonly<Record<string, unknown>>,
  options: {
    readonly token?: string | undefined
    readonly meta?: Readonly<Record<string, unknown>> | undefined
    readonly timeoutMs?: number | undefined
  } = {}
): Promise<Answer> => {
  const name = method === "tools/call" || method === "prompts/get" ? params.name : undefined
  const response = await fetch(url, {
    method: "POST",
    headers: {
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(typeof name === "string" ? { "mcp-name": name } : {})
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: { ...META, ...options.meta } } }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 30_000)
  })
  const type = response.headers.get("content-type") ?? ""
  const text = await response.text()
  const messages = type.includes("text/event-stream") ?
    text.split("\n").filter((line) => line.startsWith("data: ") && line.length > 6).map((line) =>
      JSON.parse(line.slice(6))
    ) :
    [JSON.parse(text)]
  return { status: response.status, type, messages, body: messages[messages.length - 1] }
}

/** The tool names a `tools/list` at `url` returns (its first page). */
export const toolNames = async (url: string | URL, token?: string): Promise<ReadonlyArray<string>> => {
  const answer = await post(url, "tools/list", {}, { token })
  return ((answer.body.result?.tools ?? []) as Array<{ name: string }>).map((tool) => tool.name)
}
