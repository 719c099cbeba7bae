/**
 * tools/call overhead, side by side, and where the gateway's time goes.
 *
 * Four processes on loopback, besides this one (which only orchestrates):
 * - the downstream: a bare `node:http` server answering `GET /pets/{id}` with
 *   a small JSON object (`support/downstream.ts`);
 * - Janus: `node src/bin.ts serve` on a temp JANUS_HOME seeded through
 *   storage with one REST endpoint `get_pet` and a client token
 *   (`support/seed.ts`);
 * - the official-SDK server: a minimal MCP server on
 *   `@modelcontextprotocol/server` v2 making the same downstream call
 *   (`support/sdk-server.ts`);
 * - the floor of Janus's own stack: effect's HTTP server and HttpClient on
 *   undici with one route making the same downstream call and nothing else
 *   (`support/effect-floor.ts`), 2026-07-28 only: what any gateway on this
 *   stack pays, so Janus's own cost per call is Janus minus the floor;
 * - the load generator (`support/loadgen.ts`): one process for every point
 *   of 1. and 2. (one phase after another), its own for each warm-up, the
 *   profile and the span runs.
 *
 * Measured, one after the other, interleaved per concurrency level so the
 * three targets see the same machine:
 * 1. closed-loop throughput and p50/p99 at concurrency 1, 16, 64 of
 *    (a) the downstream called directly, (b) Janus, (c) the SDK server, for
 *    2026-07-28 (stateless) and 2025-11-25 (session) clients; the ratios b/a
 *    and b/c; and the CPU each server process spent per call (from /proc,
 *    steadier than wall-clock numbers on a shared machine);
 * 2. the latency Janus adds at half its maximum throughput: (a) and (b) open
 *    loop at the same fixed rate, p50 and p99 compared; and, at that rate,
 *    what the effect floor adds (2026-07-28): the framework's share of it;
 * 3. a CPU profile (`--cpu-prof`) of a second Janus process under load at
 *    concurrency 16, cut to the load's time window and summarised by top
 *    self-time functions and by hot-path step (`support/profile.ts`);
 * 4. a per-step breakdown of one call from Janus's own spans: a third Janus
 *    process exports OTLP to a receiver in this process, at concurrency 1
 *    (`support/spans.ts`).
 *
 * Auth: every MCP request carries `Authorization: Bearer <client token>` (a
 * token made by the seed step); a tools/call without it tells whether this
 * build enforces authentication (the result says which). The limiters stay on
 * with limits far above the benchmark's load (RATE_LIMIT_* default to
 * 1,000,000 here unless set in the environment), so their cost is measured
 * but they never refuse; 429s are counted. Janus inherits the rest of the
 * environment.
 *
 * Every server process is warmed once at the start, all at once (its
 * first calls compile the hot path); each point then has its own short
 * warm-up (new connections, and the 2025-11-25 sessions).
 *
 * Environment: BENCH_DURATION_MS (3000), BENCH_WARMUP_MS (500),
 * BENCH_FIRST_WARMUP_MS (1500, the one warm-up of every server at once),
 * BENCH_LEVELS (1,16,64), BENCH_PROFILE_MS (3000; 0 skips the profile),
 * BENCH_SPANS_MS (2000; 0 skips the span breakdown), BENCH_RUNTIME (`node`,
 * the default: Janus with Node's defaults, comparable with earlier runs;
 * `image`: with deploy/Dockerfile's memory settings, `support/runtime.ts`).
 *
 * Run: node packages/gateway/bench/toolcall.ts
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import type { LoadConfig, LoadResult } from "./support/loadgen.ts"
import {
  benchDir,
  type Child,
  cpuMsOf,
  freePort,
  type Loadgen,
  rssOf,
  runNode,
  spawnNode,
  startLoadgen,
  waitForOk
} from "./support/Processes.ts"
import { type CpuProfile, formatShares, summarize } from "./support/profile.ts"
import * as Runtime from "./support/runtime.ts"
import * as Spans from "./support/spans.ts"

// #19 (the whole `npm run bench` under 10 minutes): 3 s points after 500 ms, every server warmed once at the
// start (were 5 s after 1 s each)
const DURATION = Number(process.env.BENCH_DURATION_MS ?? 3_000)
const WARMUP = Number(process.env.BENCH_WARMUP_MS ?? 500)
const FIRST_WARMUP = Number(process.env.BENCH_FIRST_WARMUP_MS ?? 1_500)
const LEVELS = (process.env.BENCH_LEVELS ?? "1,16,64").split(",").map(Number)
const PROFILE_MS = Number(process.env.BENCH_PROFILE_MS ?? 3_000)
const SPANS_MS = Number(process.env.BENCH_SPANS_MS ?? 2_000)
const REVISIONS = ["2026-07-28", "2025-11-25"] as const
type Revision = typeof REVISIONS[number]

const support = (name: string) => join(benchDir, "support", name)
const benchStarted = performance.now()
const log = (message: string) =>
  console.error(`[toolcall ${((performance.now() - benchStarted) / 1000).toFixed(1)} s] ${message}`)
const children: Array<Child> = []
const home = mkdtempSync(join(tmpdir(), "janus-bench-toolcall-"))

const stopAll = async () => {
  await Promise.all(children.splice(0).map((child) => child.stop()))
  rmSync(home, { recursive: true, force: true })
}
process.on("SIGTERM", () => void stopAll().then(() => process.exit(143)))

/**
 * The limiters run on every call but must not refuse the benchmark's own load (one identity, one IP):
 * their limits are set high unless the environment sets them.
 */
const limits = {
  RATE_LIMIT_IP: process.env.RATE_LIMIT_IP ?? "1000000",
  RATE_LIMIT_IP_BURST: process.env.RATE_LIMIT_IP_BURST ?? "1000000",
  RATE_LIMIT_IDENTITY: process.env.RATE_LIMIT_IDENTITY ?? "1000000",
  RATE_LIMIT_IDENTITY_BURST: process.env.RATE_LIMIT_IDENTITY_BURST ?? "1000000"
}

const startJanus = async (
  port: number,
  nodeArgs: ReadonlyArray<string> = [],
  extraEnv: Record<string, string> = {}
): Promise<Child> => {
  const child = spawnNode(ENTRY.bin, ["serve"], {
    nodeArgs: [...ENTRY.nodeArgs, ...nodeArgs],
    env: {
      ...RUNTIME_ENV,
      ...extraEnv,
      JANUS_HOME: home,
      JANUS_PORT: String(port),
      JANUS_HOST: "127.0.0.1",
      JANUS_DEMO: "false",
      // the seed wrote the embedded database: never a Postgres from the caller's environment
      DATABASE_URL: "",
      LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
      ...limits
    }
  })
  children.push(child)
  await waitForOk(`http://127.0.0.1:${port}/readyz`, 120_000, child)
  return child
}

const stop = async (child: Child) => {
  children.splice(children.indexOf(child), 1)
  await child.stop()
}

/** The loadgen process of every point, started once (a process start per point cost ~0.5 s each). */
let loadgen: Loadgen | undefined

/** One point; `server` is the process whose CPU per request is reported. */
const load = async (
  config: Omit<LoadConfig, "warmupMs" | "durationMs">,
  server: Child
): Promise<LoadResult & { readonly serverCpuUsPerCall: number }> => {
  if (loadgen === undefined) {
    loadgen = startLoadgen(support("loadgen.ts"))
    children.push(loadgen.child)
  }
  const cpuBefore = cpuMsOf(server.pid)
  const result = await loadgen.run({ warmupMs: WARMUP, durationMs: DURATION, ...config }) as unknown as LoadResult
  const serverCpuUsPerCall = Math.round((1000 * (cpuMsOf(server.pid) - cpuBefore)) / Math.max(1, result.sent))
  return { ...result, serverCpuUsPerCall }
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits })
const ms = (n: number) => n < 10 ? n.toFixed(2) : n.toFixed(1)
const ratio = (x: number, y: number) => y === 0 ? 0 : Math.round((100 * x) / y) / 100

const results: Record<string, number | string> = {}
const notes: Array<string> = []
/** Janus's runtime environment (`support/runtime.ts`): Node's by default, comparable with earlier runs. */
const RUNTIME = Runtime.runtimeOf("node")
const RUNTIME_ENV = Runtime.envOf(RUNTIME)
const ENTRY = Runtime.entryOf(RUNTIME)
const problems: Array<string> = []
const check = (label: string, r: LoadResult) => {
  if (r.errors > 0 || r.rateLimited > 0) {
    problems.push(`${label}: ${r.errors} errors of ${r.measured}, ${r.rateLimited} HTTP 429; first: ${r.firstError}`)
  }
}

try {
  const loadAtStart = loadavg()[0]!.toFixed(2)
  log("starting the downstream; then the SDK server and the effect floor while JANUS_HOME is seeded through storage")
  const downstream = spawnNode(support("downstream.ts"))
  children.push(downstream)
  const downstreamUrl = (await downstream.announced).url as string
  const sdk = spawnNode(support("sdk-server.ts"), [downstreamUrl])
  children.push(sdk)
  const floor = spawnNode(support("effect-floor.ts"), [downstreamUrl])
  children.push(floor)
  const [seeded, sdkAnnounced, floorAnnounced] = await Promise.all([
    runNode(support("seed.ts"), [home, downstreamUrl, "0"]),
    sdk.announced,
    floor.announced
  ])
  const sdkUrl = sdkAnnounced.url as string
  const floorUrl = floorAnnounced.url as string
  const token = seeded.token as string
  const port = await freePort()
  const janusUrl = `http://127.0.0.1:${port}/mcp`
  log("starting Janus")
  let janus = await startJanus(port)

  // Does this build enforce authentication? A tools/call without the token answers 401 if so.
  const probe = await fetch(janusUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "get_pet"
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "get_pet",
        arguments: { id: "7" },
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}
        }
      }
    })
  })
  await probe.text()
  const authOn = probe.status === 401
  results["auth on Janus"] = authOn
    ? "on: a tools/call without a token is 401; the bench sends a client token"
    : `off: a tools/call without a token is ${probe.status} (anonymous admission); the token is sent anyway`
  results["limiters on Janus (per IP, per identity; requests/s)"] =
    `${limits.RATE_LIMIT_IP}, ${limits.RATE_LIMIT_IDENTITY} (on, set above the load; builds without limiters ignore them)`

  const targets = (revision: Revision) => ({
    janus: { url: janusUrl, mode: "call", revision, token } as const,
    sdk: { url: sdkUrl, mode: "call", revision } as const
  })
  const table = new Map<string, LoadResult & { readonly serverCpuUsPerCall: number }>()

  // Fresh processes: their first calls compile the hot path. Warm every server once, all at once, rather than
  // each point for long; not measured.
  if (FIRST_WARMUP > 0) {
    log(`warming every server at once for ${FIRST_WARMUP} ms`)
    await Promise.all([
      { url: floorUrl, mode: "call", revision: "2026-07-28" } as const,
      ...REVISIONS.flatMap((revision) => [targets(revision).janus, targets(revision).sdk])
    ].map((target) =>
      runNode(support("loadgen.ts"), [
        JSON.stringify({ ...target, concurrency: 8, warmupMs: 0, durationMs: FIRST_WARMUP })
      ])
    ))
  }

  for (const concurrency of LEVELS) {
    log(`concurrency ${concurrency}: direct`)
    const direct = await load({ url: `${downstreamUrl}/pets/7`, mode: "direct", concurrency }, downstream)
    table.set(`direct c=${concurrency}`, direct)
    check(`direct c=${concurrency}`, direct)
    log(`concurrency ${concurrency}: effect floor`)
    const viaFloor = await load({ url: floorUrl, mode: "call", revision: "2026-07-28", concurrency }, floor)
    table.set(`floor c=${concurrency}`, viaFloor)
    check(`floor c=${concurrency}`, viaFloor)
    for (const revision of REVISIONS) {
      const { janus: b, sdk: c } = targets(revision)
      log(`concurrency ${concurrency}: Janus ${revision}`)
      const viaJanus = await load({ ...b, concurrency }, janus)
      log(`concurrency ${concurrency}: SDK server ${revision}`)
      const viaSdk = await load({ ...c, concurrency }, sdk)
      table.set(`janus ${revision} c=${concurrency}`, viaJanus)
      table.set(`sdk ${revision} c=${concurrency}`, viaSdk)
      check(`Janus ${revision} c=${concurrency}`, viaJanus)
      check(`SDK ${revision} c=${concurrency}`, viaSdk)
    }
  }

  for (const revision of REVISIONS) {
    for (const concurrency of LEVELS) {
      const a = table.get(`direct c=${concurrency}`)!
      const b = table.get(`janus ${revision} c=${concurrency}`)!
      const c = table.get(`sdk ${revision} c=${concurrency}`)!
      const key = `${revision} c=${concurrency}`
      // (no "|" anywhere: the runner writes a Markdown table)
      results[`${key} calls/s (direct; Janus; SDK)`] = `${fmt(a.rps)}; ${fmt(b.rps)}; ${fmt(c.rps)}`
      results[`${key} p50/p99 ms (direct; Janus; SDK)`] = `${ms(a.p50)}/${ms(a.p99)}; ${ms(b.p50)}/${ms(b.p99)}; ${
        ms(c.p50)
      }/${ms(c.p99)}`
      results[`${key} throughput b/a, b/c`] = `${ratio(b.rps, a.rps)}, ${ratio(b.rps, c.rps)}`
      results[`${key} server CPU µs/call (downstream; Janus; SDK)`] =
        `${a.serverCpuUsPerCall}; ${b.serverCpuUsPerCall}; ${c.serverCpuUsPerCall}`
    }
  }

  for (const concurrency of LEVELS) {
    const d = table.get(`floor c=${concurrency}`)!
    const b = table.get(`janus 2026-07-28 c=${concurrency}`)!
    results[`effect floor c=${concurrency}: calls/s; p50/p99 ms; server CPU µs/call`] = `${fmt(d.rps)}; ${ms(d.p50)}/${
      ms(d.p99)
    }; ${d.serverCpuUsPerCall}`
    results[`2026-07-28 c=${concurrency} Janus's own CPU µs/call (Janus - floor); Janus/floor throughput`] = `${
      b.serverCpuUsPerCall - d.serverCpuUsPerCall
    }; ${ratio(b.rps, d.rps)}`
  }
  results[`effect floor max calls/s (best of c=${LEVELS.join(",")})`] = Math.max(
    ...LEVELS.map((c) => table.get(`floor c=${c}`)!.rps)
  )

  // Half of Janus' best closed-loop throughput, open loop, for the direct call and through Janus.
  for (const revision of REVISIONS) {
    const best = Math.max(...LEVELS.map((c) => table.get(`janus ${revision} c=${c}`)!.rps))
    const bestSdk = Math.max(...LEVELS.map((c) => table.get(`sdk ${revision} c=${c}`)!.rps))
    const rate = Math.max(1, Math.round(best / 2))
    log(`${revision}: open loop at ${rate}/s (half of ${best}/s), direct and through Janus`)
    const a = await load(
      { url: `${downstreamUrl}/pets/7`, mode: "direct", concurrency: 64, rate },
      downstream
    )
    const b = await load({ ...targets(revision).janus, concurrency: 64, rate }, janus)
    check(`direct at ${rate}/s`, a)
    check(`Janus ${revision} at ${rate}/s`, b)
    results[`${revision} Janus max calls/s (best of c=${LEVELS.join(",")})`] = best
    results[`${revision} Janus / SDK max throughput`] = ratio(best, bestSdk)
    results[`${revision} Janus adds at ${fmt(rate)}/s (half max), p50; p99 ms`] = `${ms(b.p50 - a.p50)}; ${
      ms(b.p99 - a.p99)
    } (direct ${ms(a.p50)}/${ms(a.p99)}, Janus ${ms(b.p50)}/${ms(b.p99)}, ${b.rps}/s achieved, ${b.late} sent late)`
    if (revision === "2026-07-28") {
      // the framework's own share of that latency: the effect floor at the same rate
      const d = await load({ url: floorUrl, mode: "call", revision, concurrency: 64, rate }, floor)
      check(`floor at ${rate}/s`, d)
      results[`effect floor adds at ${fmt(rate)}/s (Janus's half max), p50; p99 ms`] = `${ms(d.p50 - a.p50)}; ${
        ms(d.p99 - a.p99)
      } (floor ${ms(d.p50)}/${ms(d.p99)}, ${d.rps}/s achieved, ${d.late} sent late)`
    }
  }
  results["Janus RSS after the runs, MiB"] = Math.round(rssOf(janus.pid) / 2 ** 20)
  await stop(janus)

  if (PROFILE_MS > 0) {
    log("profiling Janus under load (--cpu-prof)")
    const profileDir = join(tmpdir(), "janus-bench-profiles")
    rmSync(profileDir, { recursive: true, force: true })
    mkdirSync(profileDir, { recursive: true })
    janus = await startJanus(port, ["--cpu-prof", "--cpu-prof-dir", profileDir, "--cpu-prof-interval", "500"])
    const windows: Array<{ revision: Revision; fromUs: number; toUs: number; rps: number }> = []
    for (const revision of REVISIONS) {
      const fromUs = Number(process.hrtime.bigint() / 1000n)
      const r = await runNode(support("loadgen.ts"), [
        JSON.stringify({ ...targets(revision).janus, concurrency: 16, warmupMs: 500, durationMs: PROFILE_MS })
      ]) as unknown as LoadResult
      windows.push({ revision, fromUs: fromUs + 1_000_000, toUs: Number(process.hrtime.bigint() / 1000n), rps: r.rps })
    }
    await stop(janus)
    const file = readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
    if (file === undefined) {
      problems.push("no .cpuprofile was written (did Janus exit cleanly on SIGTERM?)")
    } else {
      const profile = JSON.parse(readFileSync(join(profileDir, file), "utf8")) as CpuProfile
      for (const w of windows) {
        const s = summarize(profile, w)
        const label = `profile ${w.revision} (c=16, ${fmt(w.rps)} calls/s under the profiler, ${
          fmt(s.windowMs)
        } ms window, ${s.idlePct}% idle)`
        results[`${w.revision} profile: top categories (self time)`] = formatShares(s.selfByCategory, 6)
        results[`${w.revision} profile: PGlite on the event loop, longest run; runs of 10 ms or more`] =
          `${s.pgliteLongestMs} ms; ${s.pgliteRunsOver10Ms}`
        notes.push(`${label}, self time by category: ${formatShares(s.selfByCategory, 14)}`)
        notes.push(
          `${label}, charged to the innermost Janus frame on the stack (where there is one; effect's trampoline ` +
            `hides most callers): ${formatShares(s.byStep.filter((x) => !x.name.startsWith("outside")), 10)}`
        )
        notes.push(
          `${label}, top self-time functions: ${s.topSelf.slice(0, 12).map((f) => `${f.name} ${f.pct}%`).join("; ")}`
        )
      }
      notes.push(`raw profile: ${join(profileDir, file)} (open in Chrome DevTools or speedscope)`)
    }
  }

  if (SPANS_MS > 0) {
    log("per-step breakdown from Janus's spans (OTLP to a receiver in this process), concurrency 1")
    const receiver = await Spans.startReceiver()
    try {
      // OTLP/JSON: the receiver does not decode protobuf, the gateway's default protocol
      janus = await startJanus(port, [], Spans.receiverEnv(receiver, 200))
      // a fresh process: the first calls compile the hot path; not measured
      await runNode(support("loadgen.ts"), [
        JSON.stringify({ ...targets("2026-07-28").janus, concurrency: 4, warmupMs: 0, durationMs: FIRST_WARMUP })
      ])
      for (const revision of REVISIONS) {
        receiver.spans.length = 0
        // the loadgen's own warm-up starts after its process does: traces from before this are left out
        const measuredFrom = Date.now() + 500
        const r = await runNode(support("loadgen.ts"), [
          JSON.stringify({ ...targets(revision).janus, concurrency: 1, warmupMs: 500, durationMs: SPANS_MS })
        ]) as unknown as LoadResult
        // the exporter sends every 200 ms: wait until the last calls' spans stop arriving
        for (let seen = -1, i = 0; seen !== receiver.spans.length && i < 20; i++) {
          seen = receiver.spans.length
          await new Promise((r) => setTimeout(r, 400))
        }
        const { calls, rootP50Micros, steps } = Spans.breakdown(receiver.spans, measuredFrom)
        results[`${revision} where a call's time goes, c=1 (self µs per call, from spans)`] = steps.map((s) =>
          `${s.step} ${s.selfMicros}`
        ).join("; ")
        const unreadable = [...receiver.unreadable].map(([type, n]) => `${n} ${type}`).join(", ")
        if (calls === 0) {
          problems.push(
            `spans ${revision}: no complete trace (${receiver.spans.length} spans received` +
              `${unreadable === "" ? "" : `; export requests not read: ${unreadable}`})`
          )
        }
        notes.push(
          `spans ${revision}: ${fmt(calls)} complete traces at c=1 (${ms(r.p50)} ms p50 at the client, ` +
            `${ms(rootP50Micros / 1000)} ms p50 of the POST /mcp span, with OTLP/JSON export on); mean per call, ` +
            `self / total µs (the selves add up to the mean POST /mcp span, ${
              fmt(steps.reduce((n, s) => n + s.selfMicros, 0))
            } µs): ${steps.map((s) => `${s.step} ${s.selfMicros} / ${s.totalMicros}`).join("; ")}`
        )
      }
      await stop(janus)
    } finally {
      await receiver.close()
    }
  }

  notes.unshift(
    `duration ${DURATION} ms after ${WARMUP} ms warm-up per point, every server first warmed once for ` +
      `${FIRST_WARMUP} ms (all at once, c=8); one loadgen process for all points, a new undici Pool per point (` +
      "keep-alive, one connection per concurrent caller); 2025-11-25: one session per connection (Janus issues " +
      "Mcp-Session-Id; the SDK's default createMcpHandler serves 2025 statelessly and issues none)",
    "direct = the downstream alone; the SDK server calls it with global fetch, Janus with its pooled undici client " +
      "(egress guard, breaker, audit of every call, Studio calls event)",
    "effect floor = effect's HTTP server + HttpClient (undici) with one route making the same downstream call, no " +
      "MCP checks, auth, limits, audit or metrics: the framework's own cost per call on this machine",
    "server CPU µs/call = CPU time of that server process over the run (/proc, warm-up included) / requests sent: " +
      "steadier than throughput on a shared machine",
    `load average (1 min) at start ${loadAtStart}, at end ${
      loadavg()[0]!.toFixed(2)
    }; the machine's cores are shared ` +
      "by the load generator, the downstream and the server under test",
    `Janus's runtime environment: ${Runtime.describe(RUNTIME)} (BENCH_RUNTIME)`
  )
  notes.push(...problems.map((p) => `PROBLEM: ${p}`))
} catch (error) {
  problems.push(String(error instanceof Error ? error.stack : error))
  notes.push(...problems.map((p) => `PROBLEM: ${p}`))
  results.error = String(error instanceof Error ? error.message : error)
  process.exitCode = 1
} finally {
  await stopAll()
}

console.log(JSON.stringify({ title: "tools/call overhead: direct vs Janus vs official SDK v2 server", results, notes }))
