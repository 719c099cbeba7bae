/**
 * Redaction benchmark: `node packages/gateway/bench/redaction.ts`.
 *
 * Times the redaction of a 1 MB adversarial payload (long digit runs, near-miss
 * e-mails `a@a@a@…`, runs of `-----BEGIN`, broken JWTs and Slack tokens, deep
 * JSON) and of a 1 MB benign JSON payload, each also at 4 MB to show that the
 * cost grows linearly (a ratio near 4). Prints one JSON document: for every
 * case the median wall-clock time in ms, the throughput in MB/s, and the least
 * CPU time (`cpu_ms`, which a busy shared machine does not inflate).
 *
 * `JSON.parse` alone is timed on the same JSON payloads as a baseline. The
 * text cases show the scanner itself, ratio ≈ 4. A JSON payload made of
 * hundreds of thousands of tiny containers (the deep chains) grows somewhat
 * faster than 4x: the work per container is constant, but walking and
 * rebuilding an object graph that no longer fits the CPU caches costs more
 * per container (V8's own `JSON.parse` does the same from about 8 MB).
 */
import { Result } from "effect"
import { makeEngine } from "../src/redaction/index.ts"

const MB = 1_000_000

const builtins = Result.getOrThrow(makeEngine({ enabled: true }))
// Typical custom patterns.
const withCustom = Result.getOrThrow(makeEngine({
  enabled: true,
  patterns: [
    { name: "employee_id", pattern: "EMP-\\d{6}" },
    { name: "ticket", pattern: "(?i)tkt[-_]?[0-9a-f]{6,8}" }
  ]
}))
// The worst accepted shape for finding every match: an optional prefix, on text where it matches everywhere.
const worstCustom = Result.getOrThrow(makeEngine({
  enabled: true,
  detectors: [],
  patterns: [{ name: "account", pattern: "(?:\\d{1,8}-)?\\d{4}" }]
}))

const fill = (unit: string, bytes: number): string => unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes)

/** Plain-text adversarial inputs, one per detector weakness. */
const adversarialTexts = (bytes: number): Record<string, string> => ({
  digit_run: fill("1", bytes),
  digit_groups: fill("4111 ", bytes),
  near_miss_emails: fill("a@", bytes),
  dotted_emails: fill("a.a@a.", bytes),
  begin_runs: fill("-----BEGIN ", bytes),
  private_key_headers: fill("-----BEGIN PRIVATE KEY-----", bytes),
  broken_jwts: fill("eyJ-", bytes),
  broken_slack: fill("xoxb-", bytes),
  dashes: fill("-", bytes),
  bearer_prose: fill("Bearer tokens ", bytes),
  credential_keys: fill("password: \"api_key=x-api-key-", bytes),
  unterminated_quotes: fill("password: \"password: \"", bytes),
  janus_and_sk_prefixes: fill("jns_-sk-a-", bytes)
})

/** Nested arrays `depth` deep around one string. */
const deep = (depth: number, leaf: string): string => "[".repeat(depth) + JSON.stringify(leaf) + "]".repeat(depth)

/** One JSON document of about `bytes` bytes: every adversarial input, and a quarter in chains nested 10,000 deep. */
const adversarialJson = (bytes: number): string => {
  const part = Math.floor(bytes / 8)
  const fields = [
    `"digits":${JSON.stringify(fill("1", part))}`,
    `"groups":${JSON.stringify(fill("4111 ", part))}`,
    `"emails":${JSON.stringify(fill("a@", part))}`,
    `"begins":${JSON.stringify(fill("-----BEGIN ", part))}`,
    `"jwts":${JSON.stringify(fill("eyJ-", part))}`,
    `"mixed":${JSON.stringify(fill("a@a.1 4111-1111-1111-1111 -----BEGIN xoxb-1 ", part))}`
  ]
  const deepParts: Array<string> = []
  let used = fields.reduce((n, f) => n + f.length, 0)
  while (used < bytes) {
    const piece = deep(10_000, "owner jane@corp.io")
    deepParts.push(piece)
    used += piece.length + 1
  }
  return `{${fields.join(",")},"deep":[${deepParts.join(",")}]}`
}

/** A realistic API response of about `bytes` bytes with nothing to redact. */
const benignJson = (bytes: number): string => {
  const items: Array<unknown> = []
  let used = 2
  for (let i = 0; used < bytes; i++) {
    const item = {
      id: i,
      uuid: `7f9c${(i * 2_654_435_761 >>> 0).toString(16).padStart(8, "0")}-0a1b-4c2d-8e3f-${
        i.toString().padStart(12, "0")
      }`,
      name: `Product number ${i}`,
      description: "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.",
      price: 1234.56 + i,
      tags: ["alpha", "beta", "gamma"],
      created_at: "2024-01-15T10:00:00.000Z",
      active: i % 2 === 0,
      dimensions: { width: 12, height: 7.5, unit: "cm" }
    }
    used += JSON.stringify(item).length + 1
    items.push(item)
  }
  return JSON.stringify({ items, next: null })
}

const median = (xs: Array<number>): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * Times `f` `runs` times after one warm-up: the median wall-clock time, and
 * the least CPU time of the process (which other processes on a shared
 * machine do not inflate; scaling is computed from it).
 */
const time = (f: () => unknown, runs: number): { readonly wall: number; readonly cpu: number } => {
  f()
  const wall: Array<number> = []
  const cpu: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const cpuStart = process.cpuUsage()
    const start = performance.now()
    f()
    wall.push(performance.now() - start)
    const used = process.cpuUsage(cpuStart)
    cpu.push((used.user + used.system) / 1000)
  }
  return { wall: median(wall), cpu: Math.min(...cpu) }
}

interface Row {
  readonly case: string
  readonly mb: number
  readonly ms: number
  readonly mb_per_s: number
  readonly cpu_ms: number
  readonly redactions: number
}

const rows: Array<Row> = []
const round = (n: number, digits: number) => Number(n.toFixed(digits))
const measure = (name: string, bytes: number, f: () => number, runs: number): number => {
  const redactions = f()
  const { cpu, wall } = time(f, runs)
  rows.push({
    case: name,
    mb: round(bytes / MB, 2),
    ms: round(wall, 2),
    mb_per_s: round(bytes / MB / (wall / 1000), 1),
    cpu_ms: round(cpu, 2),
    redactions
  })
  return cpu
}

const totalOf = (r: Result.Result<{ readonly total: number }, unknown>): number =>
  Result.isSuccess(r) ? r.success.total : -1

const scaling: Record<string, number> = {}
const started = performance.now()

const series: Record<string, Array<number>> = {}
const run = (name: string, bytes: number, f: () => number, runs = 5): void => {
  ;(series[name] ??= []).push(measure(name, bytes, f, runs))
}

for (const size of [1, 4]) {
  const adversarial = adversarialJson(size * MB)
  const benign = benignJson(size * MB)
  const parsed = JSON.parse(benign)
  run("baseline: JSON.parse of the adversarial JSON", adversarial.length, () => (JSON.parse(adversarial), 0))
  run("baseline: JSON.parse of the benign JSON", benign.length, () => (JSON.parse(benign), 0))
  run("builtins: adversarial JSON text", adversarial.length, () => totalOf(builtins.redactJsonText(adversarial)))
  run("builtins: benign JSON text", benign.length, () => totalOf(builtins.redactJsonText(benign)))
  run("builtins: benign JSON value (already parsed)", benign.length, () => totalOf(builtins.redactJson(parsed)))
  for (const [name, text] of Object.entries(adversarialTexts(size * MB))) {
    run(`builtins: text ${name}`, text.length, () => builtins.redactText(text).total)
  }
  run(
    "builtins+2 custom: adversarial JSON text",
    adversarial.length,
    () => totalOf(withCustom.redactJsonText(adversarial))
  )
  run("builtins+2 custom: benign JSON text", benign.length, () => totalOf(withCustom.redactJsonText(benign)))
  const digits = fill("1", size * MB)
  run(
    "worst custom pattern: text digit_run, a match every 4 bytes",
    digits.length,
    () => worstCustom.redactText(digits).total,
    3
  )
}
for (const [name, [one, four]] of Object.entries(series)) scaling[name] = Number((four! / one!).toFixed(2))

const ratios = Object.values(scaling)
console.log(JSON.stringify(
  {
    node: process.version,
    timing: "ms: median wall clock of 5 runs after a warm-up; cpu_ms: least process CPU time; scaling from cpu_ms",
    cases: rows,
    scaling_4mb_over_1mb: scaling,
    scaling_summary: {
      min: Math.min(...ratios),
      max: Math.max(...ratios),
      mean: Number((ratios.reduce((a, b) => a + b, 0) / ratios.length).toFixed(2))
    },
    seconds: Number(((performance.now() - started) / 1000).toFixed(1))
  },
  null,
  2
))

// The last line is what `scripts/bench.ts` reads: `{ title, results, notes }` (the document above is the detail).
const summary: Record<string, string> = {}
for (const row of rows) {
  if (row.mb > 2) continue
  summary[`${row.case}, 1 MB: ms; MB/s; cpu ms; x at 4 MB`] = `${row.ms}; ${row.mb_per_s}; ${row.cpu_ms}; ${
    scaling[row.case] ?? "-"
  }`
}
console.log(JSON.stringify({
  title: "Redaction of 1 MB payloads (and the 4 MB / 1 MB cost ratio)",
  results: summary,
  notes: [
    "ms: median wall clock of 5 runs after a warm-up; cpu ms: least process CPU time; x at 4 MB: cpu ms at 4 MB / at 1 MB (linear is 4)",
    `scaling over all cases: min ${Math.min(...ratios)}, max ${Math.max(...ratios)}`
  ]
}))
