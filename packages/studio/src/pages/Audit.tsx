/**
 * Audit: filters (also from the URL: the overview links here with
 * `?tool=…&outcome=…`, and `?kind=admin` opens the admin changes), keyset
 * pages (the API's cursor), a live tail that adds matching `calls` and
 * `admin` events as they arrive (no polling; merged with the stored page by
 * auditLive.ts, so a change shown live and then stored is one row), a
 * refetch of the page on a resync (the stream's gap marker: events were
 * lost), callers by name, admin changes with their diff, a detail view per
 * row, and the filtered rows exported as CSV or JSON.
 */
import { useEffect, useState } from "preact/hooks"
import { request } from "../api.ts"
import { callerMatches, callerOf, toCsv } from "../audit.ts"
import { addLive, changeLines, changeTitle, type KindFilter, KINDS, liveRow, shownRows } from "../auditLive.ts"
import { CallDetail, ChangeDetail, download, exportRows, useTokenNames } from "../auditRows.tsx"
import { Diff } from "../diff.tsx"
import { onEvent, onResync } from "../store.ts"
import { DataTable, RowButton } from "../tables.tsx"
import { toast } from "../toast.tsx"
import { CardForm, CheckField, ErrorBox, Page, SelectField, TextField, time, useAction } from "../ui.tsx"

const OUTCOMES = [
  "",
  "ok",
  "error",
  "denied",
  "invalid",
  "rate_limited",
  "shed",
  "breaker_open",
  "timeout",
  "unauthenticated",
  "refused"
]
const KIND_OPTIONS: ReadonlyArray<readonly [KindFilter, string]> = [
  ["", "Every kind"],
  ["call", "Calls"],
  ["admin", "Admin changes"],
  ["auth", "Refused authentications"]
]

interface Filters {
  kind: KindFilter
  tool: string
  outcome: string
  identity: string
  connection: string
  /** `datetime-local` values (local time), sent as ISO instants. */
  from: string
  to: string
}

const emptyFilters: Filters = { kind: "", tool: "", outcome: "", identity: "", connection: "", from: "", to: "" }
const fromUrl = (): Filters => {
  const q = new URLSearchParams(location.search)
  return {
    ...emptyFilters,
    kind: KINDS.find((k) => k === q.get("kind")) ?? "",
    tool: q.get("tool") ?? "",
    outcome: OUTCOMES.find((o) => o === q.get("outcome")) ?? "",
    identity: q.get("identity") ?? "",
    connection: q.get("connection") ?? ""
  }
}
const instant = (local: string) => new Date(local).toISOString()

const matches = (f: Filters, r: any, names: ReadonlyMap<string, string>) =>
  (f.tool === "" || r.tool === f.tool) && (f.outcome === "" || r.outcome === f.outcome) &&
  callerMatches(f.identity, r, names) && (f.connection === "" || r.connection === f.connection) &&
  (f.from === "" || r.at >= instant(f.from)) && (f.to === "" || r.at < instant(f.to))

export const Audit = () => {
  const [filters, setFilters] = useState<Filters>(fromUrl)
  const [applied, setApplied] = useState(filters)
  const [rows, setRows] = useState<Array<any>>([])
  const [tail, setTail] = useState<ReadonlyArray<any>>([])
  const [cursors, setCursors] = useState<Array<string | null>>([null])
  const [next, setNext] = useState<string | null>(null)
  const [live, setLive] = useState(true)
  const [open, setOpen] = useState<any>(undefined)
  const action = useAction()
  const exporting = useAction()
  const names = useTokenNames()
  const queryOf = (f: Filters) => {
    const q = new URLSearchParams()
    for (const [k, v] of Object.entries(f)) {
      // the caller field is the API's `caller` filter: a substring of the identity, name, subject or client
      if (v !== "") q.set(k === "identity" ? "caller" : k, k === "from" || k === "to" ? instant(v) : v)
    }
    return q
  }

  const load = async (f: Filters, cursor: string | null) => {
    const q = queryOf(f)
    q.set("limit", "25")
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
    return onEvent((topic, data) => {
      const row = liveRow(topic, data, applied.kind)
      if (row !== undefined && matches(applied, row, names)) setTail((t) => addLive(t, row))
    })
  }, [live, applied, names.size])
  // a resync means events were lost: the stored page is the truth again
  useEffect(() =>
    onResync(() => {
      setTail([])
      void load(applied, cursors[cursors.length - 1]!)
    }), [applied, cursors])
  const exportAs = (format: "csv" | "json") =>
    exporting.run(async () => {
      const rows = await exportRows(queryOf(applied), names)
      if (format === "json") download("janus-audit.json", "application/json", JSON.stringify(rows, null, 2))
      else download("janus-audit.csv", "text/csv", toCsv(rows))
      toast("success", `Exported ${rows.length} call(s) as ${format.toUpperCase()}`)
    })

  const set = (k: keyof Filters) => (v: string) => setFilters({ ...filters, [k]: v })
  const apply = (e: Event) => {
    e.preventDefault()
    setTail([])
    setApplied(filters)
    setCursors([null])
  }
  const firstPage = cursors.length === 1
  const shown = firstPage ? shownRows(tail, rows) : rows
  const noun = applied.kind === "admin"
    ? "admin changes"
    : applied.kind === "auth"
    ? "refused authentications"
    : "calls"
  return (
    <Page
      title="Audit"
      actions={
        <div class="buttons">
          <button type="button" class="secondary" onClick={() => exportAs("csv")} disabled={exporting.busy}>
            Export CSV
          </button>
          <button type="button" class="secondary" onClick={() => exportAs("json")} disabled={exporting.busy}>
            Export JSON
          </button>
        </div>
      }
    >
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
        <SelectField label="Kind" value={filters.kind} options={KIND_OPTIONS} onChange={set("kind")} />
        <TextField label="Tool" value={filters.tool} onInput={set("tool")} />
        <SelectField label="Outcome" value={filters.outcome} options={OUTCOMES} onChange={set("outcome")} />
        <TextField
          label="Caller"
          value={filters.identity}
          onInput={set("identity")}
          hint="Part of a token's name, of token:<id>, or of an OAuth subject or client"
        />
        <TextField label="Connection" value={filters.connection} onInput={set("connection")} />
        <TextField label="From" type="datetime-local" value={filters.from} onInput={set("from")} />
        <TextField label="To" type="datetime-local" value={filters.to} onInput={set("to")} />
      </CardForm>
      <ErrorBox error={action.error ?? exporting.error} />
      {open !== undefined && open.kind === "admin" && (
        <ChangeDetail
          row={open}
          caller={callerOf(open, names)}
          onClose={() => setOpen(undefined)}
        />
      )}
      {open !== undefined && open.kind !== "admin" && (
        <CallDetail
          row={open}
          caller={callerOf(open, names)}
          onClose={() => setOpen(undefined)}
        />
      )}
      <p class="hint" aria-live="polite">
        {firstPage && live ? `Live: ${tail.length} new row(s) since this page loaded.` : ""}
      </p>
      <DataTable
        testId="audit"
        columns={[
          "Time",
          "Tool or change",
          "Outcome",
          "Caller",
          "Connection",
          "Status",
          "Duration",
          "Bytes in/out",
          "Details"
        ]}
        rows={shown}
        empty={action.busy ? null : `No ${noun} match these filters (and none arrived live since).`}
        rowKey={(r, i) => `${r.id ?? "live"}-${i}`}
        rowClass={(r) => r.id === undefined ? "live-row" : undefined}
      >
        {(r) =>
          r.kind === "admin" ? <AdminCells row={r} caller={callerOf(r, names)} onOpen={() => setOpen(r)} /> : (
            <>
              <td>{time(r.at)}</td>
              <td>{r.tool}</td>
              <td>
                <span class={`badge ${r.outcome === "ok" ? "closed" : "open"}`}>{r.outcome}</span>
                {typeof r.reason === "string" && r.reason !== "" ? <>{r.reason}</> : null}
              </td>
              <td title={r.identity}>{callerOf(r, names)}</td>
              <td>{r.connection ?? "—"}</td>
              <td>{r.status ?? "—"}</td>
              <td>{r.durationMs} ms</td>
              <td>{r.bytesIn}/{r.bytesOut}</td>
              <td class="buttons">
                <RowButton
                  verb="Details"
                  name={`${r.tool} at ${time(r.at)}`}
                  class="secondary"
                  onClick={() => setOpen(r)}
                />
              </td>
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

/** An admin change's cells: what changed (with its diff) where a call has its tool, who, and how. */
const AdminCells = (props: { row: any; caller: string; onOpen: () => void }) => {
  const { row } = props
  const title = changeTitle(row)
  return (
    <>
      <td>{time(row.at)}</td>
      <td>
        <strong>{title}</strong>
        <Diff lines={changeLines(row.changes).map((l) => ({ ...l, children: l.text }))} label={`Changes: ${title}`} />
      </td>
      <td>
        <span class={`badge ${row.outcome === "ok" ? "closed" : "open"}`}>{row.outcome}</span>
        {typeof row.reason === "string" && row.reason !== "" ? <>{row.reason}</> : null}
      </td>
      <td title={row.identity}>
        {props.caller}
        {typeof row.interface === "string" && row.interface !== "" ? ` via ${row.interface}` : ""}
      </td>
      <td>—</td>
      <td>{row.status ?? "—"}</td>
      <td>—</td>
      <td>—</td>
      <td class="buttons">
        <RowButton verb="Details" name={`${title} at ${time(row.at)}`} class="secondary" onClick={props.onOpen} />
      </td>
    </>
  )
}
