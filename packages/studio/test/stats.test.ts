import { describe, expect, it } from "vitest"
import { parseBreakers } from "../src/breakers.ts"
import { nextDelay } from "../src/live.ts"
import * as Stats from "../src/stats.ts"

const t0 = Date.parse("2026-01-01T00:00:00Z")
const call = (offsetMs: number, outcome = "ok", durationMs = 10, tool = "get_pet"): Stats.CallEvent => ({
  tool,
  outcome,
  durationMs,
  at: new Date(t0 + offsetMs).toISOString()
})

describe("call statistics", () => {
  it("computes calls per second, error rate, p95 and per-tool figures over the range", () => {
    let s = Stats.empty
    for (let i = 0; i < 19; i++) s = Stats.add(s, call(i * 100, "ok", i + 1), t0 + 2000)
    s = Stats.add(s, call(1950, "error", 500, "create_pet"), t0 + 2000)
    const sum = Stats.summarize(s, t0 + 2000, Stats.RANGES["5m"])
    expect(sum.callsPerSecond).toBe(20 / 300)
    expect(sum.errorRate).toBe(1 / 20)
    expect(sum.p95Ms).toBe(19)
    expect(sum.tools).toEqual([
      { tool: "get_pet", calls: 19, errors: 0, errorRate: 0, p95Ms: 19 },
      { tool: "create_pet", calls: 1, errors: 1, errorRate: 1, p95Ms: 500 }
    ])
    expect(sum.errors).toEqual([{ tool: "create_pet", outcome: "error", count: 1 }])
    expect(sum.total).toBe(20)
  })

  it("a range counts only its own calls: 5 min, 1 h and 24 h", () => {
    const now = t0 + 3 * 3600_000
    let s = Stats.add(Stats.empty, call(3 * 3600_000 - 60_000), now)
    s = Stats.add(s, call(3 * 3600_000 - 30 * 60_000, "timeout"), now)
    s = Stats.add(s, call(3 * 3600_000 - 2 * 3600_000), now)
    expect(Stats.summarize(s, now, Stats.RANGES["5m"]).total).toBe(1)
    expect(Stats.summarize(s, now, Stats.RANGES["1h"])).toMatchObject({ total: 2, errorRate: 0.5 })
    expect(Stats.summarize(s, now, Stats.RANGES["24h"]).total).toBe(3)
  })

  it("counts shed, rate-limited and breaker-open calls, and drops buckets older than 24 h", () => {
    let s = Stats.add(Stats.empty, call(0, "shed"), t0)
    s = Stats.add(s, call(0, "rate_limited"), t0)
    s = Stats.add(s, call(0, "breaker_open"), t0)
    expect(Stats.summarize(s, t0)).toMatchObject({ shed: 1, rateLimited: 1, breakerOpen: 1 })
    const later = t0 + 24 * 3600 * 1000 + 10_000
    s = Stats.add(s, call(24 * 3600 * 1000 + 10_000), later)
    expect(s.buckets).toHaveLength(1)
    expect(Stats.summarize(s, later, Stats.RANGES["24h"])).toMatchObject({ shed: 0, total: 1 })
  })

  it("ignores calls older than 24 h and yields zero-filled series, one point per step", () => {
    const s = Stats.add(Stats.empty, call(-25 * 3600 * 1000), t0)
    expect(s.buckets).toHaveLength(0)
    const series = Stats.series(Stats.add(s, call(0, "error", 42), t0), t0, Stats.RANGES["5m"])
    expect(series.x).toHaveLength(30)
    expect(series.calls.at(-1)).toBe(1)
    expect(series.errors.at(-1)).toBe(1)
    expect(series.p95.at(-1)).toBe(42)
    expect(series.p95.at(-2)).toBeNull()
    expect(Stats.series(Stats.empty, t0, Stats.RANGES["1h"]).x).toHaveLength(60)
    expect(Stats.series(Stats.empty, t0, Stats.RANGES["24h"]).x).toHaveLength(48)
  })

  it("keeps at most 1000 durations per tool and bucket", () => {
    let s = Stats.empty
    for (let i = 0; i < 1500; i++) s = Stats.add(s, call(0, "ok", i), t0)
    expect(s.buckets[0]!.tools.get_pet!.durations).toHaveLength(1000)
    expect(s.buckets[0]!.tools.get_pet!.calls).toBe(1500)
  })

  it("percentile is nearest-rank", () => {
    expect(Stats.percentile([], 95)).toBeUndefined()
    expect(Stats.percentile([5, 1, 3], 50)).toBe(3)
    expect(Stats.percentile(Array.from({ length: 100 }, (_, i) => i + 1), 95)).toBe(95)
  })

  it("recognises call events", () => {
    expect(Stats.isCallEvent(call(0))).toBe(true)
    expect(Stats.isCallEvent({ tool: "x" })).toBe(false)
    // an admin change or a refused authentication is an audit row, not a call
    expect(Stats.isCallEvent({ ...call(0), kind: "admin", tool: "" })).toBe(false)
    expect(Stats.isCallEvent({ ...call(0), kind: "auth" })).toBe(false)
  })
})

describe("breaker states from /metrics", () => {
  it("reads janus_breaker_state per connection", () => {
    const text =
      "# HELP x\njanus_breaker_state{connection=\"pets\"} 2\njanus_breaker_state{connection=\"b\",x=\"y\"} 0\n"
    expect(parseBreakers(text)).toEqual([{ connection: "pets", state: "open" }, { connection: "b", state: "closed" }])
  })
})

describe("reconnect delay", () => {
  it("uses the server's retry first, then backs off to a cap", () => {
    expect(nextDelay(3000, 0)).toBe(3000)
    expect(nextDelay(0, 0)).toBe(0)
    expect(nextDelay(3000, 1)).toBe(6000)
    expect(nextDelay(0, 1)).toBe(1000)
    expect(nextDelay(3000, 10)).toBe(30_000)
  })
})
