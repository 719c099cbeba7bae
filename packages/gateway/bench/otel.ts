/**
 * The cost of OpenTelemetry export per tools/call: CPU and JavaScript heap
 * allocation of the gateway process per call, with export off, on at 100 %
 * and on at 1 % (`parentbased_traceidratio`), for effect's own exporter
 * (`http/protobuf`) and for the OpenTelemetry SDK bridge (`grpc`), side by
 * side in one run.
 *
 * Run: node packages/gateway/bench/otel.ts (or `npm run bench`)
 *
 * - Five `janus serve` processes run at once (off; effect 100 %, 1 %; SDK
 *   100 %, 1 %), each on its own seeded JANUS_HOME, all calling the same
 *   loopback downstream and exporting to one loopback collector
 *   (`support/otlp-sink.ts`, its own process).
 * - Rounds: in each round every mode gets one measured window, in a rotating
 *   order, so a change in the machine's load hits every mode alike; the
 *   figures are the median over rounds, and the ratio to "off" is taken per
 *   round before the median.
 * - CPU per call: the gateway process's CPU time (/proc) over the window /
 *   calls sent. Allocation per call: bytes allocated on its heap over the
 *   window (`support/alloc-probe.mjs`) / calls sent.
 * - Load: `support/loadgen.ts` (one process for every window), closed loop,
 *   `BENCH_OTEL_CONCURRENCY` connections (default 4), 2026-07-28 stateless
 *   tools/call of `get_pet`.
 * - One home is seeded and copied for the other four; the five gateways
 *   are started a core's worth at a time, then warmed once, all at once
 *   (their first calls compile the hot path); each window then has a short
 *   warm-up of its own (new connections).
 *
 * Environment: BENCH_OTEL_ROUNDS (default 5), BENCH_OTEL_WINDOW_MS (2000),
 * BENCH_OTEL_WARMUP_MS (250), BENCH_OTEL_FIRST_WARMUP_MS (1500),
 * BENCH_OTEL_CONCURRENCY (4).
 *
 * Prints one JSON object: `{ title, results, notes }` (the runner's format).
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import type { LoadConfig, LoadResult } from "./support/loadgen.ts"
import {
  benchDir,
  type Child,
  cpuMsOf,
  freePort,
  gatewayBin,
  inParallel,
  type Loadgen,
  runNode,
  spawnNode,
  startLoadgen,
  waitForOk
} from "./support/Processes.ts"

// #19 (the whole `npm run bench` under 10 minutes): 2 s windows, each gateway warmed once at the start
const ROUNDS = Number(process.env.BENCH_OTEL_ROUNDS ?? 5)
const WINDOW = Number(process.env.BENCH_OTEL_WINDOW_MS ?? 2_000)
const WARMUP = Number(process.env.BENCH_OTEL_WARMUP_MS ?? 250)
const FIRST_WARMUP = Number(process.env.BENCH_OTEL_FIRST_WARMUP_MS ?? 1_500)
const CONCURRENCY = Number(process.env.BENCH_OTEL_CONCURRENCY ?? 4)

const support = (name: string) => join(benchDir, "support", name)
const benchStarted = performance.now()
const log = (message: string) =>
  console.error(`[otel ${((performance.now() - benchStarted) / 1000).toFixed(1)} s] ${message}`)
const children: Array<Child> = []
const homes: Array<string> = []

const stopAll = async () => {
  await Promise.all(children.splice(0).map((child) => child.stop()))
  for (const home of homes) rmSync(home, { recursive: true, force: true })
}
process.on("SIGTERM", () => void stopAll().then(() => process.exit(143)))

interface Mode {
  readonly name: string
  readonly env: (sink: { readonly http: string; readonly grpc: string }) => Record<string, string>
}

const exporting = (protocol: "http/protobuf" | "grpc", ratio: string) => (sink: { http: string; grpc: string }) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: protocol === "grpc" ? sink.grpc : sink.http,
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
  OTEL_TRACES_SAMPLER_ARG: ratio,
  OTEL_BSP_SCHEDULE_DELAY: "1000",
  OTEL_METRIC_EXPORT_INTERVAL: "5000"
})

const MODES: ReadonlyArray<Mode> = [
  { name: "off", env: () => ({}) },
  { name: "effect 100 %", env: exporting("http/protobuf", "1") },
  { name: "effect 1 %", env: exporting("http/protobuf", "0.01") },
  { name: "SDK 100 %", env: exporting("grpc", "1") },
  { name: "SDK 1 %", env: exporting("grpc", "0.01") }
]

const limits = {
  RATE_LIMIT_IP: "1000000",
  RATE_LIMIT_IP_BURST: "1000000",
  RATE_LIMIT_IDENTITY: "1000000",
  RATE_LIMIT_IDENTITY_BURST: "1000000"
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The loadgen process of every window, started once (a process start per window cost ~0.5 s each). */
let loadgen: Loadgen | undefined

const measure = async (janus: Child, config: LoadConfig) => {
  if (loadgen === undefined) {
    loadgen = startLoadgen(support("loadgen.ts"))
    children.push(loadgen.child)
  }
  const allocated = janus.lines.length
  janus.process.kill("SIGUSR2")
  const cpuBefore = cpuMsOf(janus.pid)
  const result = await loadgen.run(config) as unknown as LoadResult
  const cpuMs = cpuMsOf(janus.pid) - cpuBefore
  janus.process.kill("SIGUSR2")
  const line = await janus.waitForLine(/"allocatedBytes"/, 30_000)
  // the newest report (waitForLine finds the first match; later windows append new lines)
  const report = janus.lines.slice(allocated).reverse().find((l) => l.includes("\"allocatedBytes\"")) ?? line
  const bytes = (JSON.parse(report) as { allocatedBytes: number }).allocatedBytes
  const calls = Math.max(1, result.sent)
  return { cpuUs: (1000 * cpuMs) / calls, allocKb: bytes / 1024 / calls, rps: result.rps, errors: result.errors }
}

try {
  const loadAtStart = loadavg()[0]!.toFixed(2)
  const downstream = spawnNode(support("downstream.ts"))
  children.push(downstream)
  const downstreamUrl = (await downstream.announced).url as string
  const sinkChild = spawnNode(support("otlp-sink.ts"))
  children.push(sinkChild)
  const sink = (await sinkChild.announced) as { http: string; grpc: string }

  // Nothing is measured yet. Seeding makes a database (PGlite's initdb and the migrations), the longest step of
  // all: seed one home and copy it for the others (the same rows, master key and token; each gateway owns its
  // copy), then start the five a core's worth at a time. One after another, this took over half a minute.
  log("seeding one JANUS_HOME through storage")
  const seedHome = mkdtempSync(join(tmpdir(), "janus-bench-otel-"))
  homes.push(seedHome)
  const token = (await runNode(support("seed.ts"), [seedHome, downstreamUrl, "0"])).token as string
  // every copy is made before any gateway opens the original
  const modeHomes = MODES.map((_, index) => {
    if (index === 0) return seedHome
    const home = mkdtempSync(join(tmpdir(), "janus-bench-otel-"))
    homes.push(home)
    cpSync(seedHome, home, { recursive: true })
    return home
  })
  log("starting the five gateways on copies of it, one per core at a time")
  const gateways = await inParallel(MODES, async (mode, index) => {
    const home = modeHomes[index]!
    const port = await freePort()
    const child = spawnNode(gatewayBin, ["serve"], {
      nodeArgs: ["--import", support("alloc-probe.mjs")],
      env: {
        ...mode.env(sink),
        JANUS_HOME: home,
        JANUS_PORT: String(port),
        JANUS_HOST: "127.0.0.1",
        JANUS_DEMO: "false",
        DATABASE_URL: "",
        LOG_LEVEL: "warn",
        ...limits
      }
    })
    children.push(child)
    await waitForOk(`http://127.0.0.1:${port}/readyz`, 180_000, child)
    return { mode, child, url: `http://127.0.0.1:${port}/mcp`, token }
  })
  const loadOf = (gateway: typeof gateways[number]) => ({
    url: gateway.url,
    mode: "call",
    revision: "2026-07-28",
    token: gateway.token,
    tool: "get_pet",
    args: { id: "7" },
    concurrency: CONCURRENCY
  } as const)
  if (FIRST_WARMUP > 0) {
    log(`warming the five at once for ${FIRST_WARMUP} ms`)
    await Promise.all(gateways.map((gateway) =>
      runNode(support("loadgen.ts"), [
        JSON.stringify({ ...loadOf(gateway), warmupMs: 0, durationMs: FIRST_WARMUP })
      ])
    ))
  }

  const samples = new Map<string, Array<{ cpuUs: number; allocKb: number; rps: number }>>()
  const ratios = new Map<string, Array<{ cpu: number; alloc: number }>>()
  let errors = 0
  for (let round = 0; round < ROUNDS; round++) {
    const order = gateways.map((_, i) => gateways[(i + round) % gateways.length]!)
    const thisRound = new Map<string, { cpuUs: number; allocKb: number; rps: number }>()
    for (const gateway of order) {
      log(`round ${round + 1}/${ROUNDS}: ${gateway.mode.name}`)
      const r = await measure(gateway.child, { ...loadOf(gateway), warmupMs: WARMUP, durationMs: WINDOW })
      errors += r.errors
      thisRound.set(gateway.mode.name, r)
      samples.set(gateway.mode.name, [...(samples.get(gateway.mode.name) ?? []), r])
    }
    const off = thisRound.get("off")!
    for (const [name, r] of thisRound) {
      ratios.set(name, [...(ratios.get(name) ?? []), { cpu: r.cpuUs / off.cpuUs, alloc: r.allocKb / off.allocKb }])
    }
  }

  const results: Record<string, string | number> = {}
  const pct = (ratio: number) => `${ratio >= 1 ? "+" : ""}${((ratio - 1) * 100).toFixed(1)} %`
  for (const mode of MODES) {
    const s = samples.get(mode.name)!
    const r = ratios.get(mode.name)!
    results[`${mode.name}: CPU µs/call; KB allocated/call; calls/s (medians)`] = `${
      median(s.map((x) => x.cpuUs)).toFixed(0)
    }; ${median(s.map((x) => x.allocKb)).toFixed(1)}; ${median(s.map((x) => x.rps)).toFixed(0)}`
    if (mode.name !== "off") {
      results[`${mode.name} vs off: CPU; allocation (median of per-round ratios)`] = `${
        pct(median(r.map((x) => x.cpu)))
      }; ${pct(median(r.map((x) => x.alloc)))}`
    }
  }
  results["errors"] = errors
  const loadAtEnd = loadavg()[0]!.toFixed(2)
  const notes = [
    `${ROUNDS} rounds, each mode one ${WINDOW} ms window per round after ${WARMUP} ms warm-up, rotating order; ` +
    `closed loop, ${CONCURRENCY} connections; five gateways running at once, each first warmed once for ` +
    `${FIRST_WARMUP} ms (all at once)`,
    `load average (1 min) at start ${loadAtStart}, at end ${loadAtEnd}`,
    "effect = effect's OTLP exporter (http/protobuf); SDK = @effect/opentelemetry NodeSdk with the OpenTelemetry " +
    "SDK's gRPC exporters; both with parentbased_traceidratio, new traces (no traceparent sent)"
  ]
  console.log(JSON.stringify({
    title: "OpenTelemetry export: CPU and allocation per tools/call, off / 100 % / 1 %",
    results,
    notes
  }))
} finally {
  await stopAll()
}
