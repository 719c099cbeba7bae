/**
 * The load generator: its own process, a keep-alive undici `Pool`, and
 * request bodies built before the clock starts.
 *
 * Usage: node packages/gateway/bench/support/loadgen.ts '<LoadConfig as JSON>'
 * or, served (`Processes.startLoadgen`: one process for many phases, no
 * start-up per phase), no argument and one LoadConfig per stdin line.
 *
 * One run is one phase: `concurrency` connections, a warm-up, then a measured
 * window of `durationMs`.
 *
 * - Closed loop (no `rate`): `concurrency` workers, each sending its next
 *   request as soon as the previous one is answered. Throughput counts the
 *   requests that completed inside the window; latency is recorded for the
 *   requests sent inside it.
 * - Open loop (`rate` requests/s): requests are sent on schedule (checked
 *   every millisecond), at most `concurrency` in flight. Latency is from send
 *   to the end of the response body; a request that could not be sent on time
 *   because every connection was busy is counted in `late`.
 *
 * Operations (`mode`):
 * - `direct`: `GET url` (the downstream itself);
 * - `call`: one MCP `tools/call` of `tool` with `args`, at `revision`:
 *   2026-07-28 is stateless (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
 *   headers and the `_meta` claim in every body); 2025-11-25 initializes one
 *   session per connection first (`Mcp-Session-Id`, when the server issues
 *   one) and sends the session id with every call;
 * - `list`: every page of `tools/list`, following `nextCursor`; one
 *   operation is the whole listing.
 *
 * A response is an error unless it is HTTP 2xx and (MCP) carries a JSON-RPC
 * `result` that is not a tool error; errors are counted and the first is kept.
 *
 * Prints one JSON line: {@link LoadResult}.
 */
import { resolve as resolvePath } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { Pool } from "undici"

export interface LoadConfig {
  readonly url: string
  readonly mode: "direct" | "call" | "list"
  readonly revision?: "2026-07-28" | "2025-11-25"
  readonly token?: string | undefined
  readonly tool?: string
  readonly args?: Record<string, unknown>
  readonly concurrency: number
  readonly warmupMs: number
  readonly durationMs: number
  /** Open loop at this many requests per second. */
  readonly rate?: number | undefined
  /** `list`: the number of tools a complete listing must have. */
  readonly expectTools?: number
}

export interface LoadResult {
  readonly concurrency: number
  readonly rate: number | null
  /** Requests completed inside the measured window, per second. */
  readonly rps: number
  /** Requests sent in total, warm-up included (for CPU per request). */
  readonly sent: number
  readonly measured: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
  readonly mean: number
  readonly errors: number
  readonly late: number
  readonly firstError: string | null
  /** Answers with HTTP 429 (a limiter refused), warm-up included. */
  readonly rateLimited: number
  /** This process' CPU time over the run, ms. */
  readonly cpuMs: number
  /** MCP: whether the server issued a session id on initialize (2025-11-25). */
  readonly sessions: number
}

/** One phase on its own pool; everything it counts is its own. */
export const run = async (config: LoadConfig): Promise<LoadResult> => {
  const url = new URL(config.url)
  const pool = new Pool(url.origin, {
    connections: config.concurrency,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    keepAliveMaxTimeout: 60_000
  })
  const path = url.pathname + url.search
  const cpuStart = process.cpuUsage()

  type Headers = Record<string, string>

  const baseHeaders = (): Headers => {
    const headers: Headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream"
    }
    if (config.token !== undefined) headers.authorization = `Bearer ${config.token}`
    return headers
  }

  const META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": { name: "janus-bench", version: "1.0.0" }
  }

  interface Reply {
    readonly status: number
    readonly text: string
    readonly headers: Record<string, string | Array<string> | undefined>
  }

  let rateLimited = 0
  const send = async (method: "GET" | "POST", headers: Headers, body?: string): Promise<Reply> => {
    const response = await pool.request({ method, path, headers, body: body ?? null })
    if (response.statusCode === 429) rateLimited++
    const text = await response.body.text()
    return { status: response.statusCode, text, headers: response.headers }
  }

  /** The JSON-RPC message of an MCP reply, whether the body is JSON or an SSE stream. */
  const messageOf = (text: string): Record<string, any> | undefined => {
    const trimmed = text.trimStart()
    if (trimmed.startsWith("{")) return JSON.parse(trimmed) as Record<string, any>
    let found: Record<string, any> | undefined
    for (const line of text.split("\n")) {
      if (!line.startsWith("data:")) continue
      const data = line.slice(5).trim()
      if (data === "") continue
      const message = JSON.parse(data) as Record<string, any>
      if ("result" in message || "error" in message) found = message
    }
    return found
  }

  let firstError: string | null = null
  const fail = (what: string): false => {
    firstError ??= what.slice(0, 400)
    return false
  }

  const callOk = (reply: Reply): boolean => {
    if (reply.status < 200 || reply.status >= 300) return fail(`HTTP ${reply.status}: ${reply.text}`)
    // Cheap checks on the hot loop; the full parse only when something looks wrong.
    if (reply.text.includes("\"result\"") && !reply.text.includes("\"isError\":true")) return true
    return fail(`HTTP ${reply.status}: ${reply.text}`)
  }

  // --- sessions (2025-11-25) ----------------------------------------------------

  let sessionsIssued = 0
  const initialize = async (): Promise<string | undefined> => {
    const headers = baseHeaders()
    const reply = await send(
      "POST",
      headers,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "janus-bench", version: "1.0.0" }
        }
      })
    )
    if (reply.status !== 200 || messageOf(reply.text)?.result === undefined) {
      throw new Error(`initialize failed: HTTP ${reply.status} ${reply.text.slice(0, 300)}`)
    }
    const raw = reply.headers["mcp-session-id"]
    const session = Array.isArray(raw) ? raw[0] : raw
    const next: Headers = { ...headers, "mcp-protocol-version": "2025-11-25" }
    if (session !== undefined) {
      sessionsIssued++
      next["mcp-session-id"] = session
    }
    const ack = await send("POST", next, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))
    if (ack.status !== 202 && ack.status !== 200) throw new Error(`notifications/initialized: HTTP ${ack.status}`)
    return session
  }

  // --- operations -----------------------------------------------------------------

  type Operation = (slot: number) => Promise<boolean>

  let nextId = 1
  const tool = config.tool ?? "get_pet"
  const args = config.args ?? { id: "7" }

  const makeOperation = async (): Promise<Operation> => {
    if (config.mode === "direct") {
      const headers: Headers = {}
      return async () => {
        const reply = await send("GET", headers)
        return reply.status === 200 || fail(`HTTP ${reply.status}: ${reply.text}`)
      }
    }
    const stateless = config.revision !== "2025-11-25"
    // One header set per connection slot: a 2025 session each, or the same stateless headers.
    const slots: Array<Headers> = []
    for (let i = 0; i < config.concurrency; i++) {
      if (stateless) {
        slots.push({ ...baseHeaders(), "mcp-protocol-version": "2026-07-28" })
      } else {
        const session = await initialize()
        const headers: Headers = { ...baseHeaders(), "mcp-protocol-version": "2025-11-25" }
        if (session !== undefined) headers["mcp-session-id"] = session
        slots.push(headers)
      }
    }
    if (config.mode === "call") {
      const callHeaders = slots.map((h) => stateless ? { ...h, "mcp-method": "tools/call", "mcp-name": tool } : h)
      const params = JSON.stringify(
        stateless ? { name: tool, arguments: args, _meta: META } : { name: tool, arguments: args }
      )
      const head = "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":" + params + ",\"id\":"
      return async (slot) => callOk(await send("POST", callHeaders[slot % callHeaders.length]!, head + nextId++ + "}"))
    }
    const listHeaders = slots.map((h) => stateless ? { ...h, "mcp-method": "tools/list" } : h)
    return async (slot) => {
      let cursor: string | undefined
      let tools = 0
      for (let page = 0; page < 10_000; page++) {
        const params: Record<string, unknown> = stateless ? { _meta: META } : {}
        if (cursor !== undefined) params.cursor = cursor
        const reply = await send(
          "POST",
          listHeaders[slot % listHeaders.length]!,
          JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: "tools/list", params })
        )
        if (reply.status !== 200) return fail(`HTTP ${reply.status}: ${reply.text}`)
        const result = messageOf(reply.text)?.result as { tools?: Array<unknown>; nextCursor?: string } | undefined
        if (result?.tools === undefined) return fail(`tools/list: ${reply.text}`)
        tools += result.tools.length
        cursor = result.nextCursor
        if (cursor === undefined) break
      }
      if (config.expectTools !== undefined && tools !== config.expectTools) {
        return fail(`tools/list returned ${tools} tools, expected ${config.expectTools}`)
      }
      return true
    }
  }

  // --- the run --------------------------------------------------------------------

  const operation = await makeOperation()
  // One untimed request per connection: connections open, the server's first-call paths run.
  await Promise.all(Array.from({ length: config.concurrency }, (_, i) => operation(i)))

  const latencies: Array<number> = []
  let sent = config.concurrency // the untimed first requests above
  let errors = 0
  let completedInWindow = 0
  let late = 0
  const started = performance.now()
  const windowStart = started + config.warmupMs
  const windowEnd = windowStart + config.durationMs

  const timed = async (slot: number): Promise<void> => {
    const t0 = performance.now()
    sent++
    let ok: boolean
    try {
      ok = await operation(slot)
    } catch (error) {
      ok = fail(String(error))
    }
    const t1 = performance.now()
    if (t0 >= windowStart && t0 < windowEnd) {
      latencies.push(t1 - t0)
      if (!ok) errors++
    }
    if (t1 >= windowStart && t1 < windowEnd) completedInWindow++
  }

  if (config.rate === undefined) {
    await Promise.all(Array.from({ length: config.concurrency }, async (_, slot) => {
      while (performance.now() < windowEnd) await timed(slot)
    }))
  } else {
    const interval = 1000 / config.rate
    await new Promise<void>((resolve) => {
      let due = started
      let inflight = 0
      let slot = 0
      const tick = () => {
        const now = performance.now()
        if (now >= windowEnd) {
          const drain = () => (inflight === 0 ? resolve() : setTimeout(drain, 1))
          return drain()
        }
        while (due <= now) {
          if (inflight >= config.concurrency) {
            // every connection busy: this request goes out late (or is skipped when hopelessly behind)
            if (due >= windowStart) late++
            if (now - due > 1_000) due = now
            break
          }
          inflight++
          due += interval
          void timed(slot++).finally(() => inflight--)
        }
        setTimeout(tick, 1)
      }
      tick()
    })
  }

  const sorted = Float64Array.from(latencies).sort()
  const q = (p: number) => sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
  const round = (n: number) => Math.round(n * 1000) / 1000
  const cpu = process.cpuUsage(cpuStart)
  const result: LoadResult = {
    concurrency: config.concurrency,
    rate: config.rate ?? null,
    rps: Math.round(completedInWindow / (config.durationMs / 1000)),
    sent,
    measured: sorted.length,
    p50: round(q(0.5)),
    p90: round(q(0.9)),
    p99: round(q(0.99)),
    max: round(sorted.length === 0 ? 0 : sorted[sorted.length - 1]!),
    mean: round(sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length)),
    errors,
    late,
    firstError,
    rateLimited,
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    sessions: sessionsIssued
  }
  await pool.close()
  return result
}

if (process.argv[1] !== undefined && resolvePath(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv[2] !== undefined) {
    console.log(JSON.stringify(await run(JSON.parse(process.argv[2]) as LoadConfig)))
  } else {
    // served: one LoadConfig per stdin line, one LoadResult line each, in order, until stdin closes
    for await (const line of createInterface({ input: process.stdin })) {
      if (line.trim() !== "") console.log(JSON.stringify(await run(JSON.parse(line) as LoadConfig)))
    }
  }
}
