/**
 * Audit: filters, keyset pages (the API's cursor), and a live tail that
 * prepends matching `calls` events as they arrive (no polling).
 */
import { useEffect, useState } from "preact/hooks"
import { request } from "../api.ts"
import { onCall } from "../store.ts"
import { DataTable } from "../tables.tsx"
import { CardForm, CheckField, ErrorBox, Page, SelectField, TextField, time, useAction } from "../ui.tsx"

const OUTCOMES = ["", "ok", "error", "denied", "invalid", "rate_limited", "shed", "breaker_open", "timeout"]
const TAIL_MAX = 200

interface Filters {
  tool: string
  outcome: string
  identity: string
  connection: string
  /** `datetime-local` values (local time), sent as ISO instants. */
  from: string
  to: string
}

const emptyFilters: Filters = { tool: "", outcome: "", identity: "", connection: "", from: "", to: "" }
const instant = (local: string) => new Date(local).toISOString()

const matches = (f: Filters, r: any) =>
  (f.tool === "" || r.tool === f.tool) && (f.outcome === "" || r.outcome === f.outcome) &&
  (f.identity === "" || r.identity === f.identity) && (f.connection === "" || r.connection === f.connection) &&
  (f.from === "" || r.at >= instant(f.from)) && (f.to === "" || r.at < instant(f.to))

export const Audit = () => {
  const [filters, setFilters] = useState<Filters>(emptyFilters)
  const [applied, setApplied] = useState(filters)
  const [rows, setRows] = useState<Array<any>>([])
  const [tail, setTail] = useState<Array<any>>([])
  const [cursors, setCursors] = useState<Array<string | null>>([null])
  const [next, setNext] = useState<string | null>(null)
  const [live, setLive] = useState(true)
  const action = useAction()

  const load = async (f: Filters, cursor: string | null) => {
    const q = new URLSearchParams({ limit: "25" })
    for (const [k, v] of Object.entries(f)) if (v !== "") q.set(k, k === "from" || k === "to" ? instant(v) : v)
    if (cursor !== null) q.set("cursor", cursor)
    const page = await action.run(() => request<{ items: Array<any>; nextCursor: string | null }>("GET", `audit?${q}`))
    if (page !== undefined) {
      setRows(page.items)
      setNext(page.nextCursor)
    }
  }
  useEffect(() => {
    void load(applied, cursors[cursors.length - 1]!)
  }, [applied, cursors])
  useEffect(() => {
    if (!live) return
    return onCall((data) => {
      if (matches(applied, data)) setTail((t) => [data, ...t].slice(0, TAIL_MAX))
    })
  }, [live, applied])

  const set = (k: keyof Filters) => (v: string) => setFilters({ ...filters, [k]: v })
  const apply = (e: Event) => {
    e.preventDefault()
    setTail([])
    setApplied(filters)
    setCursors([null])
  }
  const firstPage = cursors.length === 1
  const shown = firstPage ? [...tail, ...rows] : rows
  return (
    <Page title="Audit">
      <CardForm
        label="Audit filters"
        heading={false}
        onSubmit={apply}
        buttons={
          <>
            <button type="submit">Apply filters</button>
            <CheckField label="Live tail" checked={live} onChange={setLive} />
          </>
        }
      >
        <TextField label="Tool" value={filters.tool} onInput={set("tool")} />
        <SelectField label="Outcome" value={filters.outcome} options={OUTCOMES} onChange={set("outcome")} />
        <TextField label="Identity" value={filters.identity} onInput={set("identity")} />
        <TextField label="Connection" value={filters.connection} onInput={set("connection")} />
        <TextField label="From" type="datetime-local" value={filters.from} onInput={set("from")} />
        <TextField label="To" type="datetime-local" value={filters.to} onInput={set("to")} />
      </CardForm>
      <ErrorBox error={action.error} />
      <p class="hint" aria-live="polite">
        {firstPage && live ? `Live: ${tail.length} new call(s) since this page loaded.` : ""}
      </p>
      <DataTable
        testId="audit"
        columns={["Time", "Tool", "Outcome", "Identity", "Connection", "Status", "Duration", "Bytes in/out"]}
        rows={shown}
        rowKey={(r, i) => `${r.id ?? "live"}-${i}`}
        rowClass={(r) => r.id === undefined ? "live-row" : undefined}
      >
        {(r) => (
          <>
            <td>{time(r.at)}</td>
            <td>{r.tool}</td>
            <td>
              <span class={`badge ${r.outcome === "ok" ? "closed" : "open"}`}>{r.outcome}</span>
            </td>
            <td>{r.identity}</td>
            <td>{r.connection ?? "—"}</td>
            <td>{r.status ?? "—"}</td>
            <td>{r.durationMs} ms</td>
            <td>{r.bytesIn}/{r.bytesOut}</td>
          </>
        )}
      </DataTable>
      <nav class="buttons" aria-label="Audit pages">
        <button type="button" class="secondary" disabled={firstPage} onClick={() => setCursors(cursors.slice(0, -1))}>
          Newer
        </button>
        <button type="button" class="secondary" disabled={next === null} onClick={() => setCursors([...cursors, next])}>
          Older
        </button>
      </nav>
    </Page>
  )
}
