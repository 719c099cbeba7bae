/** Overview: health, live call statistics from `calls` events, charts, breaker states. */
import { useEffect, useMemo, useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { parseBreakers } from "../breakers.ts"
import { Chart } from "../Chart.tsx"
import { McpEndpoint } from "../snippets.tsx"
import * as Stats from "../stats.ts"
import { onCall, refresh, useResource } from "../store.ts"
import { DataTable } from "../tables.tsx"
import { Page } from "../ui.tsx"

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
    const since = new Date(Date.now() - Stats.WINDOW_SECONDS * 1000).toISOString()
    const page = await request<{ items: Array<any> }>("GET", `audit?limit=500&from=${encodeURIComponent(since)}`)
    for (const r of page.items.reverse()) {
      if (!Stats.isCallEvent(r)) continue
      seeded = Stats.add(seeded, r, Date.now())
      if (r.at > newest) newest = r.at
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
  held = undefined
  started = false
}

const fmt = (n: number | undefined, digits = 1) => n === undefined ? "—" : n.toFixed(digits)

export const Overview = () => {
  const [stats, setStats] = useState(shared)
  const [now, setNow] = useState(Date.now())
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
  const health = useResource("health", async () => ({ live: await probe("/healthz"), ready: await probe("/readyz") }))
  const breakers = useResource("breakers", async () => {
    const [text, connections] = await Promise.all([
      fetch("/metrics", { cache: "no-store" }).then((r) => r.text()),
      listAll<any>("connections")
    ])
    const states = new Map(parseBreakers(text).map((b) => [b.connection, b.state]))
    return connections.map((c) => ({ name: c.name, kind: c.kind, state: states.get(c.name) ?? "closed" }))
  })
  const summary = Stats.summarize(stats, now)
  const data = useMemo(() => Stats.series(stats, now), [stats, Math.floor(now / 1000)])
  const tiles: Array<[string, string, string]> = [
    ["calls-per-second", "Calls per second", fmt(summary.callsPerSecond, 2)],
    ["error-rate", "Error rate", summary.errorRate === undefined ? "—" : `${(summary.errorRate * 100).toFixed(1)} %`],
    ["p95", "p95 latency", summary.p95Ms === undefined ? "—" : `${summary.p95Ms} ms`],
    ["total", `Calls (last ${Stats.WINDOW_SECONDS / 60} min)`, String(summary.total)],
    ["shed", "Shed", String(summary.shed)],
    ["rate-limited", "Rate limited", String(summary.rateLimited)],
    ["breaker-open", "Breaker open", String(summary.breakerOpen)]
  ]
  return (
    <Page title="Overview">
      <div class="tiles" role="list">
        <div class="tile" role="listitem">
          <span class="tile-label">Health</span>
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
      <section class="card" aria-labelledby="connect-title">
        <h2 id="connect-title">Connect a client</h2>
        <p class="hint">
          Every tool a client token allows, over MCP (Streamable HTTP); a virtual server has its own URL.
        </p>
        <McpEndpoint path="/mcp" name="janus" testId="mcp-url" />
      </section>
      <div class="charts">
        <Chart
          title="Calls and errors per second"
          unit="calls/s"
          series={[{ label: "calls", stroke: "#2563eb", fill: "rgba(37,99,235,0.12)" }, {
            label: "errors",
            stroke: "#dc2626"
          }]}
          data={[data.x, data.calls, data.errors]}
        />
        <Chart
          title="p95 latency per second"
          unit="ms"
          series={[{ label: "p95 ms", stroke: "#7c3aed", points: true }]}
          data={[data.x, data.p95]}
        />
      </div>
      <div class="columns">
        <div>
          <h2>Top tools</h2>
          <DataTable
            testId="top-tools"
            columns={["Tool", "Calls"]}
            rows={summary.topTools}
            empty="No calls in the last five minutes."
            rowKey={([tool]) => tool}
          >
            {([tool, n]) => (
              <>
                <td>{tool}</td>
                <td>{n}</td>
              </>
            )}
          </DataTable>
        </div>
        <div>
          <h2>Circuit breakers</h2>
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
    </Page>
  )
}
