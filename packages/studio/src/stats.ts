/**
 * Call statistics for the overview, folded from `calls` events (and seeded
 * from the audit log's latest records), over a chosen time range.
 *
 * **Rules**
 *
 * - Time is cut into `BUCKET_SECONDS` (10 s) buckets; the last 24 hours are
 *   kept, older buckets are dropped (memory stays bounded however long the
 *   page is open). A bucket keeps at most `MAX_SAMPLES` durations per tool
 *   (a uniform sample beyond), so p95 stays cheap under heavy traffic.
 * - Every figure is over one range (`RANGES`: 5 min, 1 h, 24 h), which the
 *   page names on it: calls per second is the range's calls divided by its
 *   length; the error rate counts every outcome other than `ok`; p95 is the
 *   nearest-rank 95th percentile of the range's durations.
 * - Per tool: calls, errors, error rate and p95 over the range; the errors
 *   by tool and outcome, most frequent first.
 * - The charts' series have one point per `step` of the range (10 s, 1 min,
 *   30 min): few enough that one call is a visible bar, not a hairline.
 */
export const BUCKET_SECONDS = 10
export const KEEP_SECONDS = 24 * 3600
export const MAX_SAMPLES = 1000

export type RangeId = "5m" | "1h" | "24h"
export interface Range {
  readonly id: RangeId
  /** Named on every figure: "last 5 min". */
  readonly label: string
  readonly seconds: number
  /** Seconds per chart point. */
  readonly step: number
}
export const RANGES: Readonly<Record<RangeId, Range>> = {
  "5m": { id: "5m", label: "last 5 min", seconds: 300, step: 10 },
  "1h": { id: "1h", label: "last hour", seconds: 3600, step: 60 },
  "24h": { id: "24h", label: "last 24 h", seconds: 86_400, step: 1800 }
}

export interface CallEvent {
  readonly tool: string
  readonly outcome: string
  readonly durationMs: number
  /** ISO time. */
  readonly at: string
}

export interface ToolBucket {
  readonly calls: number
  readonly errors: number
  readonly durations: ReadonlyArray<number>
  readonly outcomes: Readonly<Record<string, number>>
}

export interface Bucket {
  /** Start of the bucket, in seconds since the epoch (a multiple of BUCKET_SECONDS). */
  readonly second: number
  readonly tools: Readonly<Record<string, ToolBucket>>
}

export interface Stats {
  /** Buckets by ascending second. */
  readonly buckets: ReadonlyArray<Bucket>
}

export const empty: Stats = { buckets: [] }

/** Whether `value` is a call event as the gateway publishes it on topic `calls`. */
export const isCallEvent = (value: unknown): value is CallEvent => {
  if (typeof value !== "object" || value === null) return false
  const v = value as Record<string, unknown>
  // admin changes and refused authentications are audit rows too, with no tool: not calls
  return (v.kind === undefined || v.kind === "call") && typeof v.tool === "string" && v.tool !== "" &&
    typeof v.outcome === "string" && typeof v.durationMs === "number" && typeof v.at === "string"
}

const sample = (durations: ReadonlyArray<number>, seen: number, d: number): ReadonlyArray<number> => {
  if (durations.length < MAX_SAMPLES) return [...durations, d]
  const slot = Math.floor(Math.random() * seen)
  return slot < MAX_SAMPLES ? durations.with(slot, d) : durations
}

/** `stats` with `call` counted, and buckets older than 24 h (relative to `nowMs`) dropped. */
export const add = (stats: Stats, call: CallEvent, nowMs: number): Stats => {
  const at = Math.floor(Date.parse(call.at) / 1000)
  const second = at - (at % BUCKET_SECONDS)
  const oldest = Math.floor(nowMs / 1000) - KEEP_SECONDS
  const kept = stats.buckets[0] !== undefined && stats.buckets[0].second <= oldest
    ? stats.buckets.filter((b) => b.second > oldest)
    : stats.buckets
  if (!Number.isFinite(at) || second <= oldest) return { buckets: kept }
  const index = kept.findIndex((b) => b.second === second)
  const base: Bucket = index === -1 ? { second, tools: {} } : kept[index]!
  const t: ToolBucket = base.tools[call.tool] ?? { calls: 0, errors: 0, durations: [], outcomes: {} }
  const bucket: Bucket = {
    second,
    tools: {
      ...base.tools,
      [call.tool]: {
        calls: t.calls + 1,
        errors: t.errors + (call.outcome === "ok" ? 0 : 1),
        durations: sample(t.durations, t.calls + 1, call.durationMs),
        outcomes: { ...t.outcomes, [call.outcome]: (t.outcomes[call.outcome] ?? 0) + 1 }
      }
    }
  }
  const buckets = index === -1 ? [...kept, bucket].sort((a, b) => a.second - b.second) : kept.with(index, bucket)
  return { buckets }
}

/** Nearest-rank percentile (`p` in 0..100) of `values`; `undefined` when empty. */
export const percentile = (values: ReadonlyArray<number>, p: number): number | undefined => {
  if (values.length === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length))
  return sorted[rank - 1]
}

export interface ToolSummary {
  readonly tool: string
  readonly calls: number
  readonly errors: number
  /** 0..1 */
  readonly errorRate: number
  readonly p95Ms: number | undefined
}

export interface Summary {
  readonly range: Range
  readonly callsPerSecond: number
  /** 0..1, `undefined` without calls. */
  readonly errorRate: number | undefined
  readonly p95Ms: number | undefined
  /** Every tool called in the range, most called first. */
  readonly tools: ReadonlyArray<ToolSummary>
  /** Failed calls by tool and outcome, most frequent first. */
  readonly errors: ReadonlyArray<{ readonly tool: string; readonly outcome: string; readonly count: number }>
  readonly shed: number
  readonly rateLimited: number
  readonly breakerOpen: number
  readonly total: number
}

const inRange = (stats: Stats, nowMs: number, range: Range) => {
  const now = Math.floor(nowMs / 1000)
  return stats.buckets.filter((b) => b.second + BUCKET_SECONDS > now - range.seconds && b.second <= now)
}

/** The overview's numbers at `nowMs` over `range`. */
export const summarize = (stats: Stats, nowMs: number, range: Range = RANGES["5m"]): Summary => {
  const byTool = new Map<string, { calls: number; errors: number; durations: Array<number> }>()
  const outcomes = new Map<string, number>()
  const errors = new Map<string, { tool: string; outcome: string; count: number }>()
  for (const b of inRange(stats, nowMs, range)) {
    for (const [tool, t] of Object.entries(b.tools)) {
      const acc = byTool.get(tool) ?? { calls: 0, errors: 0, durations: [] }
      acc.calls += t.calls
      acc.errors += t.errors
      acc.durations.push(...t.durations)
      byTool.set(tool, acc)
      for (const [o, n] of Object.entries(t.outcomes)) {
        outcomes.set(o, (outcomes.get(o) ?? 0) + n)
        if (o === "ok") continue
        const key = `${tool}\u0000${o}`
        errors.set(key, { tool, outcome: o, count: (errors.get(key)?.count ?? 0) + n })
      }
    }
  }
  const all = [...byTool.values()]
  const total = all.reduce((n, t) => n + t.calls, 0)
  const failed = all.reduce((n, t) => n + t.errors, 0)
  return {
    range,
    callsPerSecond: total / range.seconds,
    errorRate: total === 0 ? undefined : failed / total,
    p95Ms: percentile(all.flatMap((t) => t.durations), 95),
    tools: [...byTool].map(([tool, t]) => ({
      tool,
      calls: t.calls,
      errors: t.errors,
      errorRate: t.errors / t.calls,
      p95Ms: percentile(t.durations, 95)
    })).sort((a, b) => b.calls - a.calls || a.tool.localeCompare(b.tool)),
    errors: [...errors.values()].sort((a, b) => b.count - a.count || a.tool.localeCompare(b.tool)),
    shed: outcomes.get("shed") ?? 0,
    rateLimited: outcomes.get("rate_limited") ?? 0,
    breakerOpen: outcomes.get("breaker_open") ?? 0,
    total
  }
}

/** One point per `range.step` seconds over the range ending at `nowMs`, zero-filled: for the charts. */
export const series = (stats: Stats, nowMs: number, range: Range = RANGES["5m"]) => {
  const now = Math.floor(nowMs / 1000)
  const last = now - (now % range.step)
  const first = last - range.seconds + range.step
  const points = range.seconds / range.step
  const calls = Array<number>(points).fill(0)
  const errors = Array<number>(points).fill(0)
  const durations: Array<Array<number>> = Array.from({ length: points }, () => [])
  for (const b of inRange(stats, nowMs, range)) {
    const i = Math.floor((b.second - first) / range.step)
    if (i < 0 || i >= points) continue
    for (const t of Object.values(b.tools)) {
      calls[i]! += t.calls
      errors[i]! += t.errors
      durations[i]!.push(...t.durations)
    }
  }
  const x = Array.from({ length: points }, (_, i) => first + i * range.step)
  const p95 = durations.map((d) => percentile(d, 95) ?? null)
  return { x, calls, errors, p95 }
}
