/**
 * What a gateway costs to keep running: resident memory idle and after load,
 * and bytes allocated and CPU spent per tools/call, on each backing store.
 *
 * For the embedded database and for Postgres (a database of its own, created
 * and dropped here; skipped with a printed reason when no Postgres answers):
 * 1. `janus serve` is started on a freshly seeded store (one REST endpoint
 *    `get_pet`, a client token: `support/seed.ts`), preloaded with
 *    `support/alloc-probe.mjs`;
 * 2. idle: RSS 5 s after `/readyz` answers 200 (median of 5 samples a second
 *    apart);
 * 3. load: the toolcall bench's closed loop (c=64, then c=16) for both
 *    revisions; at c=16 the allocation per call (bytes allocated on the JS
 *    heap over the window / calls sent, V8 `GCProfiler`), the collections in
 *    the window (count and pauses, young and full) and CPU per call (/proc)
 *    are measured;
 * 4. loaded: RSS right after the load, and again 5 s later.
 *
 * Steps 1 and 2 run for both stores at once (an idle process' resident
 * memory does not depend on what else runs); the loads, and what follows
 * each, run one store after the other.
 *
 * Then the same c=16 window against the effect floor (`support/effect-floor.ts`:
 * effect's HTTP server and HttpClient making the same downstream call, no
 * auth, limits, audit or MCP checks), preloaded with the same probe: what any
 * gateway on this stack allocates and spends per call before doing its job,
 * the floor under Janus's figures.
 *
 * Targets (issue #19): at most 30 KB allocated per tools/call; embedded idle
 * at most 300 MiB and at most 450 MiB after load; Postgres idle at most
 * 150 MiB and at most 300 MiB after load.
 *
 * Environment: BENCH_FOOTPRINT_MS (4000 per load window), BENCH_WARMUP_MS
 * (1000), BENCH_FOOTPRINT_STORES (embedded,postgres), BENCH_RUNTIME
 * (`image`, the default: the gateway runs with the memory settings of
 * deploy/Dockerfile's runtime stage, as it is shipped; `node`: Node's
 * defaults; `support/runtime.ts`), BENCH_NODE_ARGS (extra
 * Node flags for the gateway, space-separated, e.g. a heap flag to compare); the Postgres server is
 * the tests' (`JANUS_TEST_DATABASE_URL`, default the local one).
 *
 * Run: node packages/gateway/bench/footprint.ts
 */
import { SecretBox } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import type { LoadConfig, LoadResult } from "./support/loadgen.ts"
import * as Processes from "./support/Processes.ts"
import * as Runtime from "./support/runtime.ts"

const WINDOW = Number(process.env.BENCH_FOOTPRINT_MS ?? 4_000)
const WARMUP = Number(process.env.BENCH_WARMUP_MS ?? 1_000)
const STORES = (process.env.BENCH_FOOTPRINT_STORES ?? "embedded,postgres").split(",")
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")
/** The gateway's runtime environment (`support/runtime.ts`): the image's by default, what is shipped. */
const RUNTIME = Runtime.runtimeOf("image")
const RUNTIME_ENV = Runtime.envOf(RUNTIME)
const ENTRY = Runtime.entryOf(RUNTIME)
const REVISIONS = ["2026-07-28", "2025-11-25"] as const

const support = (name: string) => join(Processes.benchDir, "support", name)
const benchStarted = performance.now()
const log = (message: string) =>
  console.error(`[footprint ${((performance.now() - benchStarted) / 1000).toFixed(1)} s] ${message}`)
const mib = (bytes: number) => Math.round(bytes / 2 ** 20)
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const children: Array<Processes.Child> = []
const cleanups: Array<() => Promise<void>> = []

const stopAll = async () => {
  await Promise.all(children.splice(0).map((child) => child.stop()))
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
}
process.on("SIGTERM", () => void stopAll().then(() => process.exit(143)))

const limits = {
  RATE_LIMIT_IP: "1000000",
  RATE_LIMIT_IP_BURST: "1000000",
  RATE_LIMIT_IDENTITY: "1000000",
  RATE_LIMIT_IDENTITY_BURST: "1000000"
}

/** RSS of `pid`: the median of 5 samples a second apart. */
const settledRss = async (pid: number) => {
  const samples: Array<number> = []
  for (let i = 0; i < 5; i++) {
    await Processes.sleep(1_000)
    samples.push(Processes.rssOf(pid))
  }
  return median(samples)
}

/** The loadgen process of every window, started once (a process start per window cost ~0.5 s each). */
let loadgen: Processes.Loadgen | undefined
const runLoad = (config: LoadConfig) => {
  if (loadgen === undefined) {
    loadgen = Processes.startLoadgen(support("loadgen.ts"))
    children.push(loadgen.child)
  }
  return loadgen.run(config) as unknown as Promise<LoadResult>
}

/** What `support/alloc-probe.mjs` reports about the collections in its window. */
interface GcPauses {
  readonly count: number
  readonly totalMs: number
  readonly maxMs: number
}
interface GcSummary {
  readonly windowMs: number
  readonly young: GcPauses
  readonly full: GcPauses
}

const gcCell = ({ full, windowMs, young }: GcSummary) => {
  const perSecond = (n: number) => (1000 * n / Math.max(1, windowMs)).toFixed(1)
  const mean = (p: GcPauses) => (p.count === 0 ? 0 : p.totalMs / p.count).toFixed(2)
  return `${young.count} (${perSecond(young.count)}/s); ${mean(young)}; ${young.maxMs.toFixed(2)}; ` +
    `${(100 * young.totalMs / Math.max(1, windowMs)).toFixed(1)}%; ${full.count}; ${full.maxMs.toFixed(2)}`
}

/** Allocation, CPU and collections per call over one window at c=16 (the probe counts from the first SIGUSR2 to the second). */
const measured = async (janus: Processes.Child, config: LoadConfig) => {
  await runLoad({ ...config, durationMs: WARMUP, warmupMs: 0 })
  const reports = janus.lines.length
  janus.process.kill("SIGUSR2")
  const cpuBefore = Processes.cpuMsOf(janus.pid)
  const result = await runLoad({ ...config, warmupMs: 0 })
  const cpuMs = Processes.cpuMsOf(janus.pid) - cpuBefore
  janus.process.kill("SIGUSR2")
  await janus.waitForLine(/"allocatedBytes"/, 30_000)
  for (let i = 0; i < 100 && !janus.lines.slice(reports).some((l) => l.includes("\"allocatedBytes\"")); i++) {
    await Processes.sleep(50)
  }
  const line = janus.lines.slice(reports).find((l) => l.includes("\"allocatedBytes\""))!
  const report = JSON.parse(line) as { allocatedBytes: number; gc: GcSummary }
  const calls = Math.max(1, result.sent)
  return {
    gc: report.gc,
    kbPerCall: report.allocatedBytes / 1024 / calls,
    cpuUsPerCall: (1000 * cpuMs) / calls,
    rps: result.rps,
    errors: result.errors
  }
}

const results: Record<string, string | number> = {}
const notes: Array<string> = []

/** Steps 1 and 2: a seeded store, its gateway started, and its idle RSS; undefined when the store is skipped. */
const startStore = async (store: string, downstreamUrl: string) => {
  const home = mkdtempSync(join(tmpdir(), "janus-bench-footprint-"))
  cleanups.push(async () => rmSync(home, { recursive: true, force: true }))
  const env: Record<string, string> = { DATABASE_URL: "" }
  if (store === "postgres") {
    const scope = await Effect.runPromise(Scope.make())
    cleanups.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
    const created = await Effect.runPromise(
      Effect.result(Layer.buildWithScope(StorageTesting.layerTestDatabase, scope))
    )
    if (created._tag === "Failure") {
      notes.push(`postgres: skipped, no database could be created (${String(created.failure)})`)
      return
    }
    env.DATABASE_URL = Redacted.value(Context.get(created.success, StorageTesting.TestDatabase).url)
    env.JANUS_MASTER_KEY = SecretBox.encodeKey(SecretBox.generateKey())
  }
  const seeded = await Processes.runNode(support("seed.ts"), [home, downstreamUrl, "0"], { env })
  const token = seeded.token as string
  const port = await Processes.freePort()
  log(`${store}: starting Janus`)
  const janus = Processes.spawnNode(ENTRY.bin, ["serve"], {
    nodeArgs: [...ENTRY.nodeArgs, "--import", support("alloc-probe.mjs"), ...NODE_ARGS],
    env: {
      ...env,
      JANUS_HOME: home,
      JANUS_PORT: String(port),
      JANUS_HOST: "127.0.0.1",
      JANUS_DEMO: "false",
      LOG_LEVEL: "warn",
      ...RUNTIME_ENV,
      ...limits
    }
  })
  children.push(janus)
  await Processes.waitForOk(`http://127.0.0.1:${port}/readyz`, 180_000, janus)
  await Processes.sleep(5_000)
  const idle = await settledRss(janus.pid)
  log(`${store}: idle RSS ${mib(idle)} MiB`)
  return { store, janus, port, token, idle }
}

/** Steps 3 and 4: the load on a started store, then its RSS. */
const loadStore = async ({ idle, janus, port, store, token }: NonNullable<Awaited<ReturnType<typeof startStore>>>) => {
  let peak = 0
  const url = `http://127.0.0.1:${port}/mcp`
  for (const revision of REVISIONS) {
    const base = { url, mode: "call", revision, token, warmupMs: WARMUP, durationMs: WINDOW } as const
    // c=64 first: it warms the revision's call path, so the c=16 window measures a compiled one (a fresh
    // process's first seconds of calls allocate and spend more while V8 is still tiering it up)
    log(`${store}: ${revision} c=64`)
    const heavy = await runLoad({ ...base, concurrency: 64 })
    peak = Math.max(peak, Processes.rssOf(janus.pid))
    log(`${store}: ${revision} c=16 (allocation, CPU)`)
    const m = await measured(janus, { ...base, concurrency: 16 })
    peak = Math.max(peak, Processes.rssOf(janus.pid))
    results[`${store} ${revision} c=16: KB allocated/call; CPU µs/call; calls/s`] = `${m.kbPerCall.toFixed(1)}; ${
      Math.round(m.cpuUsPerCall)
    }; ${Math.round(m.rps)}`
    results[
      `${store} ${revision} c=16 GC: scavenges (per s); mean, max pause ms; share of the window; full GCs; max pause ms`
    ] = gcCell(m.gc)
    if (m.errors + heavy.errors > 0) notes.push(`${store} ${revision}: ${m.errors + heavy.errors} errors`)
  }
  const loaded = Processes.rssOf(janus.pid)
  const after = await settledRss(janus.pid)
  results[`${store} RSS MiB: idle; right after load (peak seen); 5 s later`] = `${mib(idle)}; ${mib(loaded)} (${
    mib(peak)
  }); ${mib(after)}`
  await janus.stop()
  children.splice(children.indexOf(janus), 1)
}

/** The effect floor's allocation and CPU per call, the same window and probe as a store's 2026-07-28 c=16. */
const measureFloor = async (downstreamUrl: string) => {
  log("effect floor: 2026-07-28 c=64, then c=16 (allocation, CPU)")
  const floor = Processes.spawnNode(support("effect-floor.ts"), [downstreamUrl], {
    nodeArgs: ["--import", support("alloc-probe.mjs")],
    env: RUNTIME_ENV
  })
  children.push(floor)
  const url = (await floor.announced).url as string
  // warmed as a store's revision is: a c=64 window first
  await runLoad({ url, mode: "call", revision: "2026-07-28", concurrency: 64, warmupMs: 0, durationMs: WINDOW })
  const m = await measured(floor, {
    url,
    mode: "call",
    revision: "2026-07-28",
    concurrency: 16,
    warmupMs: WARMUP,
    durationMs: WINDOW
  })
  results["effect floor 2026-07-28 c=16: KB allocated/call; CPU µs/call; calls/s"] = `${m.kbPerCall.toFixed(1)}; ${
    Math.round(m.cpuUsPerCall)
  }; ${Math.round(m.rps)}`
  if (m.errors > 0) notes.push(`effect floor: ${m.errors} errors`)
  await floor.stop()
  children.splice(children.indexOf(floor), 1)
}

try {
  const loadAtStart = loadavg()[0]!.toFixed(2)
  const downstream = Processes.spawnNode(support("downstream.ts"))
  children.push(downstream)
  const downstreamUrl = (await downstream.announced).url as string
  // nothing is measured but idle memory until both are up: start them at once (one after the other took 20 s more)
  const started = await Promise.all(STORES.map((store) => startStore(store, downstreamUrl)))
  for (const store of started) if (store !== undefined) await loadStore(store)
  await measureFloor(downstreamUrl)
  notes.unshift(
    `each store: idle RSS 5 s after ready (median of 5 samples; both stores started and idle at once); load, one ` +
      `store after the other = c=64 for ${WINDOW} ms, then c=16 for ${WINDOW} ms (measured: ` +
      `allocation from alloc-probe, CPU from /proc, after a ${WARMUP} ms warm-up), ` +
      "for 2026-07-28 (stateless) and 2025-11-25 (a session per connection); then the effect floor " +
      "(support/effect-floor.ts, its sources, the image's memory settings), c=64 then c=16, measured the same way",
    `load average (1 min) at start ${loadAtStart}, at end ${loadavg()[0]!.toFixed(2)}`,
    `gateway Node flags: ${NODE_ARGS.length === 0 ? "none" : NODE_ARGS.join(" ")}; runtime environment: ${
      Runtime.describe(RUNTIME)
    }`
  )
} catch (error) {
  notes.push(`PROBLEM: ${error instanceof Error ? error.stack : String(error)}`)
  process.exitCode = 1
} finally {
  await stopAll()
}

console.log(JSON.stringify({ title: "footprint: memory and allocation per tools/call", results, notes }))
