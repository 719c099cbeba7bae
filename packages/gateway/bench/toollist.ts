/**
 * tools/list latency with 1,000 tools: a JANUS_HOME seeded through storage
 * with 1,000 REST endpoints (realistic descriptions and input schemas), then
 * `janus serve` on it, and a load generator in its own process listing every
 * page (following `nextCursor`) one listing after another, for a 2026-07-28
 * (stateless) and a 2025-11-25 (session) client.
 *
 * Reported: the first listing after start (cold: the catalog is built and its
 * pages encoded on first use), then p50/p99 of a whole listing and the pages
 * it took, and the listing's size on the wire.
 *
 * Environment: BENCH_TOOLS (1000), BENCH_DURATION_MS (3000), BENCH_WARMUP_MS (500).
 *
 * Run: node packages/gateway/bench/toollist.ts
 */
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import type { LoadResult } from "./support/loadgen.ts"
import {
  benchDir,
  type Child,
  freePort,
  gatewayBin,
  rssOf,
  runNode,
  spawnNode,
  waitForOk
} from "./support/Processes.ts"

const TOOLS = Number(process.env.BENCH_TOOLS ?? 1_000)
// #19 (the whole `npm run bench` under 10 minutes): 3 s of listings (about 250 at ~10 ms each here), after
// the two by fetch
const DURATION = Number(process.env.BENCH_DURATION_MS ?? 3_000)
const WARMUP = Number(process.env.BENCH_WARMUP_MS ?? 500)
const support = (name: string) => join(benchDir, "support", name)
const log = (message: string) => console.error(`[toollist] ${message}`)

const home = mkdtempSync(join(tmpdir(), "janus-bench-toollist-"))
let janus: Child | undefined
const results: Record<string, number | string> = {}
const notes: Array<string> = []

process.on("SIGTERM", () =>
  void (janus?.stop() ?? Promise.resolve()).then(() => {
    rmSync(home, { recursive: true, force: true })
    process.exit(143)
  }))

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {}
}

/** One whole stateless listing with fetch: its time, pages and bytes. */
const listOnce = async (url: string, token: string) => {
  const started = performance.now()
  let cursor: string | undefined
  let pages = 0
  let bytes = 0
  let tools = 0
  do {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${token}`,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list"
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: pages + 1,
        method: "tools/list",
        params: cursor === undefined ? { _meta: META } : { cursor, _meta: META }
      })
    })
    const text = await response.text()
    if (response.status !== 200) throw new Error(`tools/list: HTTP ${response.status} ${text.slice(0, 300)}`)
    const result = (JSON.parse(text) as { result: { tools: Array<unknown>; nextCursor?: string } }).result
    pages++
    bytes += text.length
    tools += result.tools.length
    cursor = result.nextCursor
  } while (cursor !== undefined)
  return { ms: performance.now() - started, pages, bytes, tools }
}

try {
  const loadAtStart = loadavg()[0]!.toFixed(2)
  log(`seeding ${TOOLS} endpoints through storage`)
  // No downstream: tools/list never calls one.
  const seeded = await runNode(support("seed.ts"), [home, "http://127.0.0.1:9", String(TOOLS - 1)], {
    timeoutMs: 300_000
  })
  const token = seeded.token as string
  results["tools"] = seeded.tools as number
  results["seeding through storage, s"] = Math.round((seeded.ms as number) / 100) / 10

  const port = await freePort()
  const url = `http://127.0.0.1:${port}/mcp`
  log("starting Janus")
  janus = spawnNode(gatewayBin, ["serve"], {
    env: {
      JANUS_HOME: home,
      JANUS_PORT: String(port),
      JANUS_HOST: "127.0.0.1",
      JANUS_DEMO: "false",
      DATABASE_URL: "",
      LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
      // one client listing back to back: the limiters stay on, above this load, unless the environment sets them
      RATE_LIMIT_IP: process.env.RATE_LIMIT_IP ?? "1000000",
      RATE_LIMIT_IP_BURST: process.env.RATE_LIMIT_IP_BURST ?? "1000000",
      RATE_LIMIT_IDENTITY: process.env.RATE_LIMIT_IDENTITY ?? "1000000",
      RATE_LIMIT_IDENTITY_BURST: process.env.RATE_LIMIT_IDENTITY_BURST ?? "1000000"
    }
  })
  await waitForOk(`http://127.0.0.1:${port}/readyz`, 120_000, janus)

  const cold = await listOnce(url, token)
  if (cold.tools !== TOOLS) throw new Error(`the listing has ${cold.tools} tools, expected ${TOOLS}`)
  const warm = await listOnce(url, token)
  results["first listing after start (cold), ms"] = Math.round(cold.ms * 10) / 10
  results["pages per listing"] = cold.pages
  results["listing size, KiB"] = Math.round(cold.bytes / 1024)

  for (const revision of ["2026-07-28", "2025-11-25"] as const) {
    log(`listing for ${DURATION} ms at ${revision}`)
    const r = await runNode(support("loadgen.ts"), [
      JSON.stringify({
        url,
        mode: "list",
        revision,
        token,
        concurrency: 1,
        warmupMs: WARMUP,
        durationMs: DURATION,
        expectTools: TOOLS
      })
    ], { timeoutMs: WARMUP + DURATION + 120_000 }) as unknown as LoadResult
    if (r.errors > 0) notes.push(`PROBLEM: ${revision}: ${r.errors} failed listings; first: ${r.firstError}`)
    results[`${revision} whole listing p50; p99 ms`] = `${r.p50.toFixed(2)}; ${r.p99.toFixed(2)}`
    results[`${revision} per page p50, ms`] = Math.round((100 * r.p50) / cold.pages) / 100
    results[`${revision} listings measured`] = r.measured
  }
  results["Janus RSS with the catalog loaded, MiB"] = Math.round(rssOf(janus.pid) / 2 ** 20)
  notes.push(
    `${TOOLS} tools (one REST connection, GET endpoints with 3-argument schemas); pages of the gateway's default ` +
      `size; one listing at a time from a loadgen process (undici, keep-alive), ${WARMUP} ms warm-up then ${DURATION} ms`,
    `second listing (fetch, warm) ${warm.ms.toFixed(1)} ms; load average (1 min) at start ${loadAtStart}, at end ${
      loadavg()[0]!.toFixed(2)
    }`
  )
} catch (error) {
  notes.push(`PROBLEM: ${error instanceof Error ? error.stack : String(error)}`)
  results.error = String(error instanceof Error ? error.message : error)
  process.exitCode = 1
} finally {
  await janus?.stop()
  rmSync(home, { recursive: true, force: true })
}

console.log(JSON.stringify({ title: `tools/list with ${TOOLS.toLocaleString("en-US")} tools`, results, notes }))
