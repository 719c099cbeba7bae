/**
 * Audit rows in the page: token names for callers (see audit.ts), a call's
 * details, an admin change's details (its diff from auditLive.ts), and the export of the filtered rows. Nothing here changes what is
 * stored: arguments are shown only when the record holds them.
 */
import { useLayoutEffect, useRef } from "preact/hooks"
import { listAll, request } from "./api.ts"
import { callerOf } from "./audit.ts"
import { changeLines, changeTitle } from "./auditLive.ts"
import { Diff } from "./diff.tsx"
import { useResource } from "./store.ts"
import { time } from "./ui.tsx"

/** `token:<id>` → the token's name, for client and admin tokens. */
export const useTokenNames = (): ReadonlyMap<string, string> => {
  const clients = useResource("client-tokens", () => listAll<any>("client-tokens"))
  const admins = useResource("admin-tokens", () => listAll<any>("admin-tokens"))
  return new Map([...(clients.data ?? []), ...(admins.data ?? [])].map((t) => [`token:${t.id}`, t.name as string]))
}

const bytes = (n: unknown) => typeof n === "number" ? `${n} B` : "—"

/** A record's panel: scrolled into view and focused when it opens, its fields as a list, then `children`. */
const Detail = (props: {
  kind: "Call" | "Change"
  /** The record shown: a new one scrolls and focuses the panel again. */
  record: unknown
  id: unknown
  title: preact.ComponentChildren
  label: string
  testId: string
  items: ReadonlyArray<readonly [string, preact.ComponentChildren]>
  onClose: () => void
  children: preact.ComponentChildren
}) => {
  const box = useRef<HTMLElement>(null)
  useLayoutEffect(() => {
    box.current?.scrollIntoView({ block: "nearest" })
    box.current?.focus()
  }, [props.record])
  return (
    <section class="card detail" aria-label={props.label} tabIndex={-1} ref={box} data-testid={props.testId}>
      <div class="page-head">
        <h2>{props.kind} {props.id === undefined ? "(live)" : `#${props.id}`}: {props.title}</h2>
        <button type="button" class="secondary" onClick={props.onClose}>Close</button>
      </div>
      <dl>
        {props.items.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      {props.children}
    </section>
  )
}

/** One call's record, in full. */
export const CallDetail = (props: { row: any; caller: string; onClose: () => void }) => {
  const { row } = props
  const items: Array<[string, preact.ComponentChildren]> = [
    ["Time", time(row.at)],
    ["Tool", row.tool],
    ["Outcome", row.outcome],
    ...(typeof row.reason === "string" && row.reason !== "" ? [["Reason", row.reason] as [string, string]] : []),
    ["Caller", `${props.caller}${props.caller === row.identity ? "" : ` (${row.identity})`}`],
    ["Connection", row.connection ?? "—"],
    ["Upstream status", row.status ?? "— (no upstream answer)"],
    ["Request id", row.requestId ?? "— (not recorded)"],
    ["Trace id", row.traceId ?? "—"],
    ["Duration", `${row.durationMs} ms`],
    ["Bytes in / out", `${bytes(row.bytesIn)} / ${bytes(row.bytesOut)}`],
    ["Redactions", String(row.redactions ?? 0)],
    ["Error", row.error ?? row.errorMessage ?? (row.outcome === "ok" ? "—" : "— (no text recorded)")]
  ]
  return (
    <Detail
      kind="Call"
      record={row}
      id={row.id}
      title={row.tool}
      label={`Call ${row.id ?? ""} details`}
      testId="call-detail"
      items={items}
      onClose={props.onClose}
    >
      <h3>Arguments (as stored)</h3>
      {row.arguments === undefined || row.arguments === null
        ? <p class="hint">Not stored: the audit log keeps sizes and counts only ({bytes(row.bytesIn)} in).</p>
        : <pre tabIndex={0}>{JSON.stringify(row.arguments, null, 2)}</pre>}
    </Detail>
  )
}

const orDash = (v: unknown) => v === null || v === undefined || v === "" ? "—" : String(v)

/** One admin change's record, in full: who, through what, from where, and every changed field. */
export const ChangeDetail = (props: { row: any; caller: string; onClose: () => void }) => {
  const { row } = props
  const title = changeTitle(row)
  const items: Array<[string, string]> = [
    ["Time", time(row.at)],
    ["Change", title],
    ...(row.outcome === "refused"
      ? [["Refused", `${orDash(row.status)}: ${orDash(row.reason)}`] as [string, string]]
      : []),
    ["Actor", `${props.caller}${props.caller === row.identity ? "" : ` (${row.identity})`}`],
    ["Interface", orDash(row.interface)],
    ["Resource id", orDash(row.resourceId)],
    ["Version", `${orDash(row.versionBefore)} → ${orDash(row.versionAfter)}`],
    ["Request id", orDash(row.requestId)],
    ["Client IP", orDash(row.clientIp)]
  ]
  return (
    <Detail
      kind="Change"
      record={row}
      id={row.id}
      title={title}
      label={`Change ${title} details`}
      testId="change-detail"
      items={items}
      onClose={props.onClose}
    >
      <h3>Fields changed</h3>
      <Diff
        lines={changeLines(row.changes).map((l) => ({ ...l, children: l.text }))}
        label={`Fields changed: ${title}`}
      />
    </Detail>
  )
}

/** Every stored row matching `query` (at most 10 pages of 500), with its caller named. */
export const exportRows = async (query: URLSearchParams, names: ReadonlyMap<string, string>) => {
  const rows: Array<any> = []
  let cursor: string | null = null
  for (let i = 0; i < 10; i++) {
    const q = new URLSearchParams(query)
    q.set("limit", "500")
    if (cursor !== null) q.set("cursor", cursor)
    const page: { items: Array<any>; nextCursor: string | null } = await request("GET", `audit?${q}`)
    rows.push(...page.items.map((r) => ({ ...r, caller: callerOf(r, names) })))
    cursor = page.nextCursor
    if (cursor === null) break
  }
  return rows
}

export const download = (name: string, type: string, body: string) => {
  const url = URL.createObjectURL(new Blob([body], { type }))
  const link = document.createElement("a")
  link.href = url
  link.download = name
  link.click()
  setTimeout(() => URL.revokeObjectURL(url), 0)
}
