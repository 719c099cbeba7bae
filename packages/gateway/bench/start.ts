/**
 * Embedded start-up: time from process spawn to `/readyz` answering 200, on a
 * fresh JANUS_HOME (first start: creates the database, runs migrations, makes
 * the master key and the first admin token) and on the same home again
 * (restart), and the resident memory of the idle process.
 *
 * Run: node packages/gateway/bench/start.ts
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

const bin = join(import.meta.dirname, "..", "src", "bin.ts")
const runs = Number(process.env.BENCH_START_RUNS ?? 5)

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

const rssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024
}

/**
 * Starts `janus serve` on `home` until ready; with `idleRss`, its RSS 1 s later (the restart's: the first
 * start's is not reported, so it does not wait for it).
 */
async function startOnce(home: string, idleRss: boolean): Promise<{ readyMs: number; rssIdle: number }> {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(process.execPath, [bin, "serve"], {
    env: { ...process.env, JANUS_HOME: home, JANUS_PORT: String(port), LOG_LEVEL: "warn" },
    stdio: ["ignore", "ignore", "inherit"]
  })
  try {
    const deadline = started + 60_000
    for (;;) {
      if (performance.now() > deadline) throw new Error("gateway not ready within 60 s")
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false)
      if (ok) break
      await new Promise((r) => setTimeout(r, 5))
    }
    const readyMs = performance.now() - started
    if (!idleRss) return { readyMs, rssIdle: Number.NaN }
    await new Promise((r) => setTimeout(r, 1_000))
    return { readyMs, rssIdle: rssOf(child.pid!) }
  } finally {
    child.kill("SIGTERM")
    await new Promise((r) => child.once("exit", r))
  }
}

const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const first: Array<number> = []
const restart: Array<number> = []
const rss: Array<number> = []
for (let i = 0; i < runs; i++) {
  const home = mkdtempSync(join(tmpdir(), "janus-bench-start-"))
  try {
    first.push((await startOnce(home, false)).readyMs)
    const again = await startOnce(home, true)
    restart.push(again.readyMs)
    rss.push(again.rssIdle)
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}

console.log(JSON.stringify({
  title: "Embedded start (spawn to /readyz 200)",
  results: {
    "first start, median ms": Math.round(median(first)),
    "first start, max ms": Math.round(Math.max(...first)),
    "restart, median ms": Math.round(median(restart)),
    "restart, max ms": Math.round(Math.max(...restart)),
    "idle RSS after restart, median MiB": Number((median(rss) / 2 ** 20).toFixed(1))
  },
  notes: [`${runs} runs, each on a fresh JANUS_HOME in the temp directory; target: restart to ready <= 1.5 s`]
}))
