/**
 * `pnpm bench` / `npm run bench`: runs every benchmark in its own process, one
 * after another (this machine has two cores; running them at once would
 * measure their contention), prints a table, and writes a dated section to
 * BENCHMARKS.md with the commit, the machine and the exact command.
 *
 * A benchmark is a script that prints one JSON object on its last stdout line:
 * `{ "title": string, "results": { [metric]: number | string }, "notes"?: string[] }`.
 *
 * Usage: node scripts/bench.ts [name ...]   (no name: all)
 */
import { execFileSync, spawnSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { join } from "node:path"

const root = join(import.meta.dirname, "..")

const benches: Record<string, string> = {
  start: "packages/gateway/bench/start.ts",
  fanout: "packages/sse/bench/fanout.ts",
  stalled: "packages/sse/bench/stalled.ts",
  redaction: "packages/gateway/bench/redaction.ts",
  toolcall: "packages/gateway/bench/toolcall.ts",
  toollist: "packages/gateway/bench/toollist.ts",
  otel: "packages/gateway/bench/otel.ts",
  federated: "packages/gateway/bench/federated.ts",
  footprint: "packages/gateway/bench/footprint.ts",
  // ~7 s: in process, no gateway
  audit: "packages/gateway/bench/audit.ts",
  eventlog: "packages/storage/bench/eventlog.ts"
}

/** Time limits, ms (default 180 s): each bench bounds itself well below its own. */
const timeouts: Record<string, number> = {
  toolcall: 420_000,
  toollist: 240_000,
  otel: 420_000,
  federated: 240_000
}

interface BenchResult {
  readonly title: string
  readonly results: Record<string, number | string>
  readonly notes?: ReadonlyArray<string>
}

const selected = process.argv.slice(2)
const names = selected.length > 0 ? selected : Object.keys(benches)
for (const name of names) {
  if (!(name in benches)) {
    console.error(`unknown benchmark ${JSON.stringify(name)}; expected one of ${Object.keys(benches).join(", ")}`)
    process.exit(2)
  }
}

// The machine is shared: record how busy it was, so a reader can tell a slow run from a slow build.
const loadAtStart = loadavg()[0]!.toFixed(2)
const benchStarted = Date.now()
const sections: Array<string> = []
let failed = false
for (const name of names) {
  const script = benches[name]!
  console.error(`[bench] ${name}: node ${script}`)
  const started = Date.now()
  const run = spawnSync(process.execPath, ["--expose-gc", script], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: timeouts[name] ?? 180_000,
    maxBuffer: 64 * 1024 * 1024
  })
  const lastLine = run.stdout.trim().split("\n").pop() ?? ""
  let result: BenchResult
  try {
    result = JSON.parse(lastLine) as BenchResult
  } catch {
    console.error(`[bench] ${name} failed (exit ${run.status}, signal ${run.signal}); last line: ${lastLine}`)
    failed = true
    continue
  }
  const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ")
  const rows = Object.entries(result.results).map(([k, v]) =>
    `| ${cell(k)} | ${typeof v === "number" ? format(v) : cell(String(v))} |`
  )
  const section = [
    `### ${result.title}`,
    "",
    `\`node ${script}\` (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    "",
    "| metric | value |",
    "|---|---|",
    ...rows,
    ...(result.notes && result.notes.length > 0 ? ["", ...result.notes.map((n) => `- ${n}`)] : [])
  ].join("\n")
  console.log(section + "\n")
  sections.push(section)
}

function format(v: number): string {
  return Number.isInteger(v) ? v.toLocaleString("en-US") : v.toLocaleString("en-US", { maximumFractionDigits: 2 })
}

const commit = (() => {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim()
  } catch {
    return "unknown"
  }
})()
const header = [
  `## ${new Date().toISOString().slice(0, 10)}, commit ${commit}`,
  "",
  `Machine: ${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ` +
  `Node ${process.version}, ${process.platform}/${process.arch}.`,
  `Command: \`npm run bench${selected.length > 0 ? ` -- ${selected.join(" ")}` : ""}\``,
  `Load average (1 min) at start: ${loadAtStart}, at end: ${loadavg()[0]!.toFixed(2)}.`,
  // #19: the whole bench must run in under 10 minutes from a fresh clone; the reader sees whether it did
  `Whole run: ${((Date.now() - benchStarted) / 60_000).toFixed(1)} min.`
].join("\n")

const file = join(root, "BENCHMARKS.md")
const existing = (() => {
  try {
    return readFileSync(file, "utf8")
  } catch {
    return "# Benchmarks\n\nNewest first. Each section is one run of `npm run bench` on the machine it names.\n"
  }
})()
const marker = existing.indexOf("\n## ")
const head = marker === -1 ? existing.trimEnd() + "\n" : existing.slice(0, marker + 1)
const tail = marker === -1 ? "" : existing.slice(marker + 1)
writeFileSync(file, `${head}\n${header}\n\n${sections.join("\n\n")}\n\n${tail}`.replace(/\n{3,}/g, "\n\n"))
console.error(`[bench] wrote ${file}`)
process.exit(failed ? 1 : 0)
