/** Overview: health, live call statistics from `calls` events, charts, breaker states. */
import { useEffect, useMemo, useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { parseBreakers } from "../breakers.ts"
import { Chart } from "../Chart.tsx"
import { McpEndpoint } from "../snippets.tsx"
import * as Stats from "../stats.ts"
import { onCall, refresh, useResource } from "../store.ts"
import { DataTable } from "../tables.tsx"
import { Link, Page } from "../ui.tsx"

const probe = async (path: string) => {
  const response = await fetch(path, { cache: "no-store" })
  const body = await response.json().catch(() => ({}))
  return { ok: response.ok, status: response.status, detail: body.reason ?? body.status ?? "" }
}

// The stats outlive a page switch: they are fed by the one stream, not by this page. They are
// seeded from the audit log once per sign-in; live calls that arrive before the seed is in are
// held, and only those newer than the newest seeded record are added (no call counted twice).
let shared: Stats.Stats = Stats.empty
let held: Array<Stats.CallEvent> | undefined = undefined
let started = false
const statListeners = new Set<() => void>()
const MAX_HELD = 10_000
let lastBreakerRefresh = 0
/** The seed stopped at this many records: older calls of the range are not counted (said on the page). */
const SEED_PAGES = 10
let seedCapped: string | undefined = undefined
let range: Stats.RangeId = "5m"
onCall((data) => {
  if (!Stats.isCallEvent(data)) return
  if (held !== undefined) {
    if (held.length < MAX_HELD) held.push(data)
    return
  }
  shared = Stats.add(shared, data, Date.now())
  for (const l of statListeners) l()
  // a failing call may have moved a breaker: refetch the breaker states, at most every 2 s
  if (data.outcome !== "ok" && Date.now() - lastBreakerRefresh > 2000) {
    lastBreakerRefresh = Date.now()
    refresh("breakers")
  }
})

/** Starts the statistics for this sign-in: seeds them from the audit log's latest records. */
export const startStats = async () => {
  if (started) return
  started = true
  held = []
  let seeded = Stats.empty
  let newest = ""
  try {
    const since = new Date(Date.now() - Stats.KEEP_SECONDS * 1000).toISOString()
    let cursor: string | null = null
    for (let i = 0; i < SEED_PAGES; i++) {
      const q: string = `audit?kind=call&limit=500&from=${encodeURIComponent(since)}${
        cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`
      }`
      const page = await request<{ items: Array<any>; nextCursor: string | null }>("GET", q)
      for (const r of page.items) {
        if (!Stats.isCallEvent(r)) continue
        seeded = Stats.add(seeded, r, Date.now())
        if (r.at > newest) newest = r.at
      }
      cursor = page.nextCursor
      if (cursor === null) break
      if (i === SEED_PAGES - 1) seedCapped = page.items.at(-1)?.at
    }
  } catch {
    // no seed: the live calls alone
  }
  for (const call of held) if (call.at > newest) seeded = Stats.add(seeded, call, Date.now())
  held = undefined
  shared = seeded
  for (const l of statListeners) l()
}

export const resetStats = () => {
  shared = Stats.empty
  seedCapped = undefined
  held = undefined
  started = false
}

const fmt = (n: number | undefined, digits = 1) => n === undefined ? "—" : n.toFixed(digits)

const percent = (rate: number | undefined) => rate === undefined ? "—" : `${(rate * 100).toFixed(1)} %`
const auditLink = (params: Record<string, string>) => `/audit?${new URLSearchParams(params)}`

export const Overview = () => {
  const [stats, setStats] = useState(shared)
  const [now, setNow] = useState(Date.now())
  const [rangeId, setRangeId] = useState<Stats.RangeId>(range)
  useEffect(() => {
    const l = () => setStats(shared)
    statListeners.add(l)
    void startStats()
    // the clock moves the window; no request is made
    const tick = setInterval(() => setNow(Date.now()), 1000)
    return () => {
      statListeners.delete(l)
      clearInterval(tick)
    }
  }, [])
  const chosen = Stats.RANGES[rangeId]
  const health = useResource("health", async () => ({ live: await probe("/healthz"), ready: await probe("/readyz") }))
  const breakers = useResource("breakers", async () => {
    const [text, connections] = await Promise.all([
      fetch("/metrics", { cache: "no-store" }).then((r) => r.text()),
      listAll<any>("connections")
    ])
    const states = new Map(parseBreakers(text).map((b) => [b.connection, b.state]))
    return connections.map((c) => ({ name: c.name, kind: c.kind, state: states.get(c.name) ?? "closed" }))
  })
  const summary = Stats.summarize(stats, now, chosen)
  const data = useMemo(() => Stats.series(stats, now, chosen), [stats, Math.floor(now / 1000), rangeId])
  const w = chosen.label
  const tiles: Array<[string, string, string]> = [
    ["calls-per-second", `Calls per second (${w})`, fmt(summary.callsPerSecond, 2)],
    ["error-rate", `Error rate (${w})`, percent(summary.errorRate)],
    ["p95", `p95 latency (${w})`, summary.p95Ms === undefined ? "—" : `${summary.p95Ms} ms`],
    ["total", `Calls (${w})`, String(summary.total)],
    ["shed", `Shed (${w})`, String(summary.shed)],
    ["rate-limited", `Rate limited (${w})`, String(summary.rateLimited)],
    ["breaker-open", `Breaker open (${w})`, String(summary.breakerOpen)]
  ]
  const step = chosen.step >= 60 ? `${chosen.step / 60} min` : `${chosen.step} s`
  return (
    <Page
      title="Overview"
      actions={
        <div class="range" role="group" aria-label="Time range">
          {(Object.values(Stats.RANGES)).map((r) => (
            <button
              type="button"
              key={r.id}
              class={r.id === rangeId ? undefined : "secondary"}
              aria-pressed={r.id === rangeId}
              onClick={() => {
                range = r.id
                setRangeId(r.id)
              }}
            >
              {r.id === "5m" ? "5 min" : r.id === "1h" ? "1 hour" : "24 hours"}
            </button>
          ))}
        </div>
      }
    >
      <p class="hint" data-testid="range-note">
        Figures over the {w}, from the audit log and live calls since.
        {seedCapped !== undefined &&
          ` Only the latest ${SEED_PAGES * 500} calls were read: calls before ${
            new Date(seedCapped).toLocaleString()
          } are not counted.`}
      </p>
      <div class="tiles" role="list">
        <div class="tile" role="listitem">
          <span class="tile-label">Health (now)</span>
          <span class="tile-value" data-testid="health">
            {health.data === undefined
              ? "…"
              : health.data.ready.ok
              ? "ready"
              : `not ready: ${health.data.ready.detail}`}
          </span>
        </div>
        {tiles.map(([id, label, value]) => (
          <div class="tile" role="listitem" key={id}>
            <span class="tile-label">{label}</span>
            <span class="tile-value" data-testid={id}>{value}</span>
          </div>
        ))}
      </div>
      <div class="charts">
        <Chart
          key={`calls-${rangeId}`}
          title={`Calls and errors per ${step} (${w})`}
          unit="calls"
          step={chosen.step}
          series={[{ label: "calls", stroke: "#2563eb", fill: "rgba(37,99,235,0.35)", bars: true }, {
            label: "errors",
            stroke: "#dc2626",
            fill: "rgba(220,38,38,0.6)",
            bars: true
          }]}
          data={[data.x, data.calls, data.errors]}
        />
        <Chart
          key={`p95-${rangeId}`}
          title={`p95 latency per ${step} (${w})`}
          unit="ms"
          least={5}
          step={chosen.step}
          series={[{ label: "p95 ms", stroke: "#7c3aed", points: true }]}
          data={[data.x, data.p95]}
        />
      </div>
      <div class="columns">
        <div>
          <h2>Tools ({w})</h2>
          <DataTable
            testId="top-tools"
            columns={["Tool", "Calls", "Error rate", "p95"]}
            rows={summary.tools}
            empty={`No calls in the ${w}.`}
            rowKey={(t) => t.tool}
          >
            {(t) => (
              <>
                <td>
                  <Link href={auditLink({ tool: t.tool })}>{t.tool}</Link>
                </td>
                <td>{t.calls}</td>
                <td>{percent(t.errorRate)}</td>
                <td>{t.p95Ms === undefined ? "—" : `${t.p95Ms} ms`}</td>
              </>
            )}
          </DataTable>
          <h2>Errors ({w})</h2>
          <DataTable
            testId="top-errors"
            columns={["Tool", "Outcome", "Calls"]}
            rows={summary.errors.slice(0, 10)}
            empty={`No failed calls in the ${w}.`}
            rowKey={(e) => `${e.tool}-${e.outcome}`}
          >
            {(e) => (
              <>
                <td>
                  <Link href={auditLink({ tool: e.tool, outcome: e.outcome })}>{e.tool}</Link>
                </td>
                <td>{e.outcome}</td>
                <td>{e.count}</td>
              </>
            )}
          </DataTable>
        </div>
        <div>
          <h2>Circuit breakers (now)</h2>
          <DataTable
            columns={["Connection", "Kind", "Breaker"]}
            rows={breakers.data ?? []}
            empty="No connections."
            rowKey={(b) => b.name}
          >
            {(b) => (
              <>
                <td>{b.name}</td>
                <td>{b.kind}</td>
                <td>
                  <span class={`badge ${b.state}`}>{b.state}</span>
                </td>
              </>
            )}
          </DataTable>
        </div>
      </div>
      <section class="card" aria-labelledby="connect-title">
        <h2 id="connect-title">Connect a client</h2>
        <p class="hint">
          Every tool a client token allows, over MCP (Streamable HTTP); a virtual server has its own URL.
        </p>
        <McpEndpoint path="/mcp" name="janus" testId="mcp-url" />
      </section>
    </Page>
  )
}
