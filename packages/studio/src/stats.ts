/**
 * Live call statistics for the overview, folded from `calls` events (and
 * seeded from the audit log's latest records).
 *
 * **Rules**
 *
 * - Time is cut into one-second buckets; the last `WINDOW_SECONDS` are kept,
 *   older buckets are dropped (memory stays bounded however long the page is
 *   open).
 * - Calls per second and the error rate are over the last `RATE_SECONDS`
 *   (a rate over one second is too jumpy to read); an error is any outcome
 *   other than `ok`.
 * - p95 latency is the nearest-rank 95th percentile of the durations in the
 *   last `RATE_SECONDS`.
 * - Shed, rate-limited and breaker-open calls are counted over the window.
 */
export const WINDOW_SECONDS = 300
export const RATE_SECONDS = 10

export interface CallEvent {
  readonly tool: string
  readonly outcome: string
  readonly durationMs: number
  /** ISO time. */
  readonly at: string
}

export interface Bucket {
  /** Second since the epoch. */
  readonly second: number
  readonly calls: number
  readonly errors: number
  readonly durations: ReadonlyArray<number>
  readonly tools: Readonly<Record<string, number>>
  readonly outcomes: Readonly<Record<string, number>>
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
  return typeof v.tool === "string" && typeof v.outcome === "string" && typeof v.durationMs === "number" &&
    typeof v.at === "string"
}

/** `stats` with `call` counted, and buckets older than the window (relative to `nowMs`) dropped. */
export const add = (stats: Stats, call: CallEvent, nowMs: number): Stats => {
  const second = Math.floor(Date.parse(call.at) / 1000)
  const oldest = Math.floor(nowMs / 1000) - WINDOW_SECONDS + 1
  const kept = stats.buckets.filter((b) => b.second >= oldest)
  if (!Number.isFinite(second) || second < oldest) return { buckets: kept }
  const index = kept.findIndex((b) => b.second === second)
  const base: Bucket = index === -1
    ? { second, calls: 0, errors: 0, durations: [], tools: {}, outcomes: {} }
    : kept[index]!
  const bucket: Bucket = {
    second,
    calls: base.calls + 1,
    errors: base.errors + (call.outcome === "ok" ? 0 : 1),
    durations: [...base.durations, call.durationMs],
    tools: { ...base.tools, [call.tool]: (base.tools[call.tool] ?? 0) + 1 },
    outcomes: { ...base.outcomes, [call.outcome]: (base.outcomes[call.outcome] ?? 0) + 1 }
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

export interface Summary {
  readonly callsPerSecond: number
  /** 0..1, `undefined` without calls. */
  readonly errorRate: number | undefined
  readonly p95Ms: number | undefined
  readonly topTools: ReadonlyArray<readonly [string, number]>
  readonly shed: number
  readonly rateLimited: number
  readonly breakerOpen: number
  readonly total: number
}

/** The overview's numbers at `nowMs`. */
export const summarize = (stats: Stats, nowMs: number): Summary => {
  const now = Math.floor(nowMs / 1000)
  const recent = stats.buckets.filter((b) => b.second > now - RATE_SECONDS && b.second <= now)
  const window = stats.buckets.filter((b) => b.second > now - WINDOW_SECONDS)
  const calls = recent.reduce((n, b) => n + b.calls, 0)
  const errors = recent.reduce((n, b) => n + b.errors, 0)
  const tools = new Map<string, number>()
  const outcomes = new Map<string, number>()
  for (const b of window) {
    for (const [t, n] of Object.entries(b.tools)) tools.set(t, (tools.get(t) ?? 0) + n)
    for (const [o, n] of Object.entries(b.outcomes)) outcomes.set(o, (outcomes.get(o) ?? 0) + n)
  }
  return {
    callsPerSecond: calls / RATE_SECONDS,
    errorRate: calls === 0 ? undefined : errors / calls,
    p95Ms: percentile(recent.flatMap((b) => b.durations), 95),
    topTools: [...tools].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5),
    shed: outcomes.get("shed") ?? 0,
    rateLimited: outcomes.get("rate_limited") ?? 0,
    breakerOpen: outcomes.get("breaker_open") ?? 0,
    total: window.reduce((n, b) => n + b.calls, 0)
  }
}

/** Per-second series over the window ending at `nowMs`, zero-filled: for the charts. */
export const series = (stats: Stats, nowMs: number) => {
  const now = Math.floor(nowMs / 1000)
  const byS = new Map(stats.buckets.map((b) => [b.second, b]))
  const x: Array<number> = []
  const calls: Array<number> = []
  const errors: Array<number> = []
  const p95: Array<number | null> = []
  for (let s = now - WINDOW_SECONDS + 1; s <= now; s++) {
    const b = byS.get(s)
    x.push(s)
    calls.push(b?.calls ?? 0)
    errors.push(b?.errors ?? 0)
    p95.push(b === undefined ? null : percentile(b.durations, 95) ?? null)
  }
  return { x, calls, errors, p95 }
}
