/**
 * The admin API from the browser: every request carries the admin token in
 * `Authorization` (never in a URL), JSON in and out, and a failure becomes an
 * `ApiError` with the API's own message (and field errors) to show.
 */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly fields: ReadonlyArray<{ readonly path: string; readonly message: string }>
  constructor(
    status: number,
    code: string,
    message: string,
    fields: ReadonlyArray<{ readonly path: string; readonly message: string }> = []
  ) {
    super(message)
    this.status = status
    this.code = code
    this.fields = fields
  }
}

const TOKEN_KEY = "janus.studio.token"

/** The admin token lives in sessionStorage: it ends with the tab, and is never written to a URL. */
export const session = {
  get: (): string | undefined => sessionStorage.getItem(TOKEN_KEY) ?? undefined,
  set: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY)
}

type Listener = () => void
const unauthorized = new Set<Listener>()
/** Called when the API refuses the token (401): the app signs out. */
export const onUnauthorized = (listener: Listener) => {
  unauthorized.add(listener)
  return () => unauthorized.delete(listener)
}

export interface RequestOptions {
  /** A JSON body. */
  body?: unknown
  /** A body sent as it is (e.g. a YAML document), with its content type. */
  text?: { readonly body: string; readonly contentType: string }
  headers?: Record<string, string>
  token?: string
}

export const request = async <A = any>(method: string, path: string, options: RequestOptions = {}): Promise<A> => {
  const text = await requestText(method, path, options)
  try {
    return (text === "" ? undefined : JSON.parse(text)) as A
  } catch {
    return undefined as A
  }
}

/** Like `request`, for a text answer (e.g. `?format=yaml`): the body as it came. */
export const requestText = async (method: string, path: string, options: RequestOptions = {}): Promise<string> => {
  const token = options.token ?? session.get()
  // the audit trail records Studio's changes as made through Studio
  const headers: Record<string, string> = {
    accept: "application/json",
    "x-janus-client": "studio",
    ...options.headers
  }
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  if (options.body !== undefined) headers["content-type"] = "application/json"
  if (options.text !== undefined) headers["content-type"] = options.text.contentType
  const response = await fetch(path.startsWith("/") ? path : `/api/v1/${path}`, {
    method,
    headers,
    body: options.text !== undefined
      ? options.text.body
      : options.body === undefined
      ? null
      : JSON.stringify(options.body),
    cache: "no-store"
  })
  const text = await response.text()
  if (!response.ok) {
    let body: any = undefined
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    if (response.status === 401 && options.token === undefined) { for (const l of unauthorized) l() }
    const error = body?.error ?? {}
    throw new ApiError(
      response.status,
      error.code ?? `http_${response.status}`,
      error.message ?? (text.slice(0, 200) || response.statusText),
      Array.isArray(error.fields) ? error.fields : []
    )
  }
  return text
}

/** Every item of a paginated list (follows `nextCursor`, bounded to 20 pages). */
export const listAll = async <A = any>(path: string): Promise<Array<A>> => {
  const items: Array<A> = []
  let cursor: string | null = null
  for (let i = 0; i < 20; i++) {
    const sep = path.includes("?") ? "&" : "?"
    const page: { items: Array<A>; nextCursor: string | null } = await request(
      "GET",
      cursor === null ? `${path}${sep}limit=100` : `${path}${sep}limit=100&cursor=${encodeURIComponent(cursor)}`
    )
    items.push(...page.items)
    cursor = page.nextCursor
    if (cursor === null) break
  }
  return items
}

/** A tools/call on `/mcp` (MCP 2026-07-28, stateless) with a client token: how "try a tool" calls. */
export const callTool = async (clientToken: string, name: string, args: Record<string, unknown>) =>
  mcp(clientToken, "tools/call", { name, arguments: args }, name)

/** tools/list on `/mcp` with a client token. */
export const listTools = async (clientToken: string) => {
  const tools: Array<{ name: string; description?: string; inputSchema?: unknown }> = []
  let cursor: string | undefined
  for (let i = 0; i < 20; i++) {
    const result = await mcp(clientToken, "tools/list", cursor === undefined ? {} : { cursor })
    tools.push(...(result.tools ?? []))
    cursor = result.nextCursor
    if (cursor === undefined || cursor === null) break
  }
  return tools
}

let rpcId = 0
const mcp = async (clientToken: string, method: string, params: Record<string, unknown>, name?: string) => {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${clientToken}`,
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": method
  }
  if (name !== undefined) headers["mcp-name"] = name
  const response = await fetch("/mcp", {
    method: "POST",
    headers,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: ++rpcId,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {},
          "io.modelcontextprotocol/clientInfo": { name: "janus-studio", version: "0.1.0" }
        }
      }
    })
  })
  const text = await response.text()
  const message = parseRpc(text, response.headers.get("content-type") ?? "")
  if (!response.ok && message === undefined) {
    let detail = text.slice(0, 300)
    try {
      const body = JSON.parse(text)
      detail = body?.error?.message ?? body?.error_description ?? detail
    } catch { /* not JSON */ }
    throw new ApiError(response.status, `http_${response.status}`, `/mcp answered ${response.status}: ${detail}`)
  }
  if (message?.error !== undefined) {
    const prefix = response.ok ? "" : `/mcp answered ${response.status}: `
    throw new ApiError(response.status, "jsonrpc", `${prefix}${message.error.message ?? "error"}`)
  }
  return message?.result ?? {}
}

/** The JSON-RPC response in a JSON or SSE body. */
const parseRpc = (text: string, contentType: string): any => {
  try {
    if (contentType.includes("text/event-stream")) {
      const datas = text.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim())
      for (const data of datas.reverse()) {
        const message = JSON.parse(data)
        if (message && ("result" in message || "error" in message)) return message
      }
      return undefined
    }
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
