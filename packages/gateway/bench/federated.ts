/**
 * A federated `tools/call` and `resources/read` through Janus vs the same
 * upstream called directly: the latency Janus adds (p50, p99).
 *
 * Three processes on loopback besides this one:
 * - the upstream: an official-SDK v2 MCP server (2026-07-28, stateless) with
 *   the tool `echo` and the resource `bench://static-text`, 1 KiB
 *   (`support/mcp-upstream.ts`);
 * - Janus: `node src/bin.ts serve` on a temp JANUS_HOME seeded through storage
 *   with a `kind: mcp` connection to it and a client token
 *   (`support/seed-federated.ts`); limits far above the load;
 * - this process: the load, closed loop over a keep-alive undici `Pool`, the
 *   request bodies built before the clock starts.
 *
 * Both servers are warmed once at the start (every operation, c=8: their
 * first calls compile the hot path), Janus for longer: its call path reaches
 * its steady speed only after some 10,000 calls per operation (V8 tiering
 * up effect's runtime and the call path). With 1 s per operation the first
 * round measured a Janus still compiling (2026-12-02, c=1 tools/call p50
 * 2.05 ms in round 1, 1.58 ms in round 3; after 12 s per operation, 1.33 ms
 * in round 1). Each round then measures, for each
 * operation and concurrency level, the upstream directly then Janus (same
 * requests, 2026-07-28 headers and `_meta`; Janus's with
 * `Authorization: Bearer`), each after a short warm-up of its own (new
 * connections);
 * the table gives the median over rounds of each p50 / p99 and the
 * difference (what Janus adds). Any answer other than HTTP 200 with a
 * JSON-RPC `result` counts as an error.
 *
 * Environment: BENCH_ROUNDS (3), BENCH_DURATION_MS (2000), BENCH_WARMUP_MS (250),
 * BENCH_FIRST_WARMUP_MS (1000, the upstream's, per operation), BENCH_JANUS_WARMUP_MS
 * (6000, Janus's, per operation), BENCH_LEVELS (1,8).
 *
 * Prints the table on stderr and, last on stdout, the JSON line
 * `scripts/bench.ts` reads (`npm run bench federated`).
 *
 * Run: node packages/gateway/bench/federated.ts
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { join } from "node:path"
import { Pool } from "undici"
import { benchDir, type Child, freePort, gatewayBin, runNode, spawnNode, waitForOk } from "./support/Processes.ts"

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
// #19 (the whole `npm run bench` under 10 minutes): 2 s windows, the servers warmed once at the start
const DURATION = Number(process.env.BENCH_DURATION_MS ?? 2_000)
const WARMUP = Number(process.env.BENCH_WARMUP_MS ?? 250)
const FIRST_WARMUP = Number(process.env.BENCH_FIRST_WARMUP_MS ?? 1_000)
const JANUS_WARMUP = Number(process.env.BENCH_JANUS_WARMUP_MS ?? 6_000)
const LEVELS = (process.env.BENCH_LEVELS ?? "1,8").split(",").map(Number)

const benchStarted = performance.now()
const log = (message: string) =>
  console.error(`[federated ${((performance.now() - benchStarted) / 1000).toFixed(1)} s] ${message}`)
const support = (name: string) => join(benchDir, "support", name)
const children: Array<Child> = []
const home = mkdtempSync(join(tmpdir(), "janus-bench-federated-"))

interface Operation {
  readonly label: string
  readonly method: string
  readonly name: string
  readonly params: Record<string, unknown>
}

const OPERATIONS: ReadonlyArray<Operation> = [
  { label: "tools/call echo", method: "tools/call", name: "echo", params: { name: "echo", arguments: { text: "hi" } } },
  {
    label: "resources/read (1 KiB)",
    method: "resources/read",
    name: "bench://static-text",
    params: { uri: "bench://static-text" }
  }
]

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "federated-bench", version: "1.0.0" }
}

interface Window {
  readonly p50: number
  readonly p99: number
  readonly rps: number
  readonly errors: number
  readonly firstError: string | null
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** Closed loop: `concurrency` workers for `warmup` ms, then `duration` ms measured. */
const measure = async (
  url: string,
  token: string | undefined,
  op: Operation,
  concurrency: number,
  warmup = WARMUP,
  duration = DURATION
): Promise<Window> => {
  const target = new URL(url)
  const pool = new Pool(target.origin, { connections: concurrency, pipelining: 1 })
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": op.method,
    "mcp-name": op.name,
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
  }
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: op.method, params: { ...op.params, _meta: META } })
  const latencies: Array<number> = []
  let errors = 0
  let firstError: string | null = null
  const start = performance.now()
  const measuredFrom = start + warmup
  const end = measuredFrom + duration
  const worker = async () => {
    while (performance.now() < end) {
      const sent = performance.now()
      try {
        const response = await pool.request({ method: "POST", path: target.pathname, headers, body })
        const text = await response.body.text()
        const ok = response.statusCode === 200 && text.includes("\"result\"") && !text.includes("\"isError\":true")
        if (!ok) {
          errors++
          firstError ??= `${response.statusCode} ${text.slice(0, 200)}`
        }
      } catch (error) {
        errors++
        firstError ??= String(error)
      }
      if (sent >= measuredFrom) latencies.push(performance.now() - sent)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  await pool.close()
  latencies.sort((a, b) => a - b)
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    rps: latencies.length / (duration / 1000),
    errors,
    firstError
  }
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const ms = (value: number) => value.toFixed(2)

const main = async () => {
  const load = loadavg()[0]!
  log("starting the upstream")
  const upstream = spawnNode(support("mcp-upstream.ts"))
  children.push(upstream)
  const upstreamUrl = (await upstream.announced).url as string
  log("seeding JANUS_HOME through storage")
  const { token } = await runNode(support("seed-federated.ts"), [home, upstreamUrl]) as { token: string }
  const port = await freePort()
  const janus = spawnNode(gatewayBin, ["serve"], {
    env: {
      JANUS_HOME: home,
      JANUS_PORT: String(port),
      JANUS_HOST: "127.0.0.1",
      JANUS_DEMO: "false",
      DATABASE_URL: undefined,
      RATE_LIMIT_IP: process.env.RATE_LIMIT_IP ?? "1000000",
      RATE_LIMIT_IP_BURST: process.env.RATE_LIMIT_IP_BURST ?? "1000000",
      RATE_LIMIT_IDENTITY: process.env.RATE_LIMIT_IDENTITY ?? "1000000",
      RATE_LIMIT_IDENTITY_BURST: process.env.RATE_LIMIT_IDENTITY_BURST ?? "1000000"
    },
    stderr: false
  })
  children.push(janus)
  await waitForOk(`http://127.0.0.1:${port}/readyz`, 120_000, janus)
  const janusUrl = `http://127.0.0.1:${port}/mcp`
  // federation lists the upstream shortly after start: wait until both operations answer through Janus
  for (let i = 0; i < 200; i++) {
    const probes = await Promise.all(OPERATIONS.map((op) => measureOnce(janusUrl, token, op)))
    if (probes.every(Boolean)) break
    await new Promise((r) => setTimeout(r, 100))
  }
  log(`warming both servers, every operation: the upstream ${FIRST_WARMUP} ms, Janus ${JANUS_WARMUP} ms each`)
  for (const op of OPERATIONS) {
    if (FIRST_WARMUP > 0) await measure(upstreamUrl, undefined, op, 8, 0, FIRST_WARMUP)
    if (JANUS_WARMUP > 0) await measure(janusUrl, token, op, 8, 0, JANUS_WARMUP)
  }
  const results_ = new Map<string, Array<{ direct: Window; janus: Window }>>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const op of OPERATIONS) {
      for (const level of LEVELS) {
        const direct = await measure(upstreamUrl, undefined, op, level)
        const through = await measure(janusUrl, token, op, level)
        const key = `${op.label}\u0000${level}`
        results_.set(key, [...(results_.get(key) ?? []), { direct, janus: through }])
        log(
          `round ${round + 1} ${op.label} c=${level}: direct p50 ${ms(direct.p50)} p99 ${ms(direct.p99)}; ` +
            `janus p50 ${ms(through.p50)} p99 ${ms(through.p99)}; errors ${direct.errors}/${through.errors}` +
            `${through.firstError === null ? "" : ` (${through.firstError})`}`
        )
      }
    }
  }
  const commit = (() => {
    try {
      return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim()
    } catch {
      return "unknown"
    }
  })()
  const rows = [...results_].map(([key, runs]) => {
    const [label, level] = key.split("\u0000")
    const d50 = median(runs.map((r) => r.direct.p50))
    const d99 = median(runs.map((r) => r.direct.p99))
    const j50 = median(runs.map((r) => r.janus.p50))
    const j99 = median(runs.map((r) => r.janus.p99))
    const errors = runs.reduce((n, r) => n + r.direct.errors + r.janus.errors, 0)
    return `| ${label} | ${level} | ${ms(d50)} / ${ms(d99)} | ${ms(j50)} / ${ms(j99)} | +${ms(j50 - d50)} / +${
      ms(j99 - d99)
    } | ${Math.round(median(runs.map((r) => r.janus.rps)))} | ${errors} |`
  })
  // the table for a reader (stderr), and the JSON line `scripts/bench.ts` reads (stdout)
  console.error([
    `Date: ${new Date().toISOString()}, commit ${commit}`,
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, ${
      Math.round(totalmem() / 2 ** 30)
    } GiB, Node ${process.version}, ` +
    `load average (1 min) ${load.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end`,
    `Command: BENCH_ROUNDS=${ROUNDS} BENCH_DURATION_MS=${DURATION} BENCH_WARMUP_MS=${WARMUP} BENCH_LEVELS=${
      LEVELS.join(",")
    } node packages/gateway/bench/federated.ts`,
    "",
    "| operation | concurrency | direct p50 / p99 ms | through Janus p50 / p99 ms | added p50 / p99 ms | Janus calls/s | errors |",
    "|---|---|---|---|---|---|---|",
    ...rows
  ].join("\n"))
  const results: Record<string, number | string> = {}
  for (const [key, runs] of results_) {
    const [label, level] = key.split("\u0000")
    const name = `${label} c=${level}`
    results[`${name} direct p50 / p99 ms`] = `${ms(median(runs.map((r) => r.direct.p50)))} / ${
      ms(median(runs.map((r) => r.direct.p99)))
    }`
    results[`${name} Janus p50 / p99 ms`] = `${ms(median(runs.map((r) => r.janus.p50)))} / ${
      ms(median(runs.map((r) => r.janus.p99)))
    }`
    results[`${name} added p50 ms`] = Number(
      ms(median(runs.map((r) => r.janus.p50)) - median(runs.map((r) => r.direct.p50)))
    )
    results[`${name} added p99 ms`] = Number(
      ms(median(runs.map((r) => r.janus.p99)) - median(runs.map((r) => r.direct.p99)))
    )
  }
  console.log(JSON.stringify({
    title: "Federated tools/call and resources/read: through Janus vs the upstream directly",
    results,
    notes: [
      `median over ${ROUNDS} rounds of ${DURATION} ms windows, each after a ${WARMUP} ms warm-up; both servers ` +
      `first warmed once (every operation, c=8, the upstream ${FIRST_WARMUP} ms and Janus ${JANUS_WARMUP} ms each); ` +
      `load average ${load.toFixed(2)} at start`
    ]
  }))
}

/** One request through Janus: whether it answered with a result. */
const measureOnce = async (url: string, token: string, op: Operation) => {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": op.method,
      "mcp-name": op.name,
      authorization: `Bearer ${token}`
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: op.method, params: { ...op.params, _meta: META } })
  }).catch(() => undefined)
  const text = await response?.text()
  return response?.status === 200 && text !== undefined && text.includes("\"result\"")
}

try {
  await main()
} finally {
  for (const child of children.reverse()) await child.stop()
  rmSync(home, { recursive: true, force: true })
}
