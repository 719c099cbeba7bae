/**
 * Audit rows for people: a caller shown by its token's name (or OAuth
 * subject), a call's details, and the export of the filtered rows.
 *
 * Rules: a row's `tokenName` (from the audit trail, when it has one) wins;
 * otherwise a `token:<id>` identity is named from the token lists; an
 * identity that names nothing is shown as it is. Nothing here changes what
 * is stored: arguments are shown only when the record holds them.
 */
import { useEffect, useRef } from "preact/hooks"
import { listAll, request } from "./api.ts"
import { useResource } from "./store.ts"
import { time } from "./ui.tsx"

/** `token:<id>` → the token's name, for client and admin tokens. */
export const useTokenNames = (): ReadonlyMap<string, string> => {
  const clients = useResource("client-tokens", () => listAll<any>("client-tokens"))
  const admins = useResource("admin-tokens", () => listAll<any>("admin-tokens"))
  return new Map([...(clients.data ?? []), ...(admins.data ?? [])].map((t) => [`token:${t.id}`, t.name as string]))
}

/** The caller as a person reads it. */
export const callerOf = (row: any, names: ReadonlyMap<string, string>): string => {
  if (typeof row.tokenName === "string" && row.tokenName !== "") return row.tokenName
  const name = names.get(row.identity)
  if (name !== undefined) return name
  if (typeof row.identity === "string" && row.identity.startsWith("oauth:")) return row.identity.slice(6)
  return row.identity ?? "—"
}

/**
 * The identity filter as the API takes it: a token's exact name becomes its
 * `token:<id>`; anything else is sent as typed.
 */
export const identityFilter = (typed: string, names: ReadonlyMap<string, string>): string => {
  for (const [identity, name] of names) if (name === typed) return identity
  return typed
}

const bytes = (n: unknown) => typeof n === "number" ? `${n} B` : "—"

/** One call's record, in full. */
export const CallDetail = (props: { row: any; caller: string; onClose: () => void }) => {
  const { row } = props
  const box = useRef<HTMLElement>(null)
  useEffect(() => {
    box.current?.scrollIntoView({ block: "nearest" })
    box.current?.focus()
  }, [row])
  const items: Array<[string, preact.ComponentChildren]> = [
    ["Time", time(row.at)],
    ["Tool", row.tool],
    ["Outcome", row.outcome],
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
    <section
      class="card detail"
      aria-label={`Call ${row.id ?? ""} details`}
      tabIndex={-1}
      ref={box}
      data-testid="call-detail"
    >
      <div class="page-head">
        <h2>Call {row.id === undefined ? "(live)" : `#${row.id}`}: {row.tool}</h2>
        <button type="button" class="secondary" onClick={props.onClose}>Close</button>
      </div>
      <dl>
        {items.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <h3>Arguments (as stored)</h3>
      {row.arguments === undefined || row.arguments === null
        ? <p class="hint">Not stored: the audit log keeps sizes and counts only ({bytes(row.bytesIn)} in).</p>
        : <pre tabIndex={0}>{JSON.stringify(row.arguments, null, 2)}</pre>}
    </section>
  )
}

const COLUMNS = [
  "id",
  "at",
  "tool",
  "outcome",
  "identity",
  "caller",
  "connection",
  "status",
  "durationMs",
  "bytesIn",
  "bytesOut",
  "redactions",
  "requestId",
  "traceId"
] as const

const csvCell = (v: unknown) => {
  const text = v === null || v === undefined ? "" : String(v)
  // a cell a spreadsheet would run as a formula is quoted as text
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll("\"", "\"\"")}"` : safe
}

export const toCsv = (rows: ReadonlyArray<any>) =>
  [COLUMNS.join(","), ...rows.map((r) => COLUMNS.map((c) => csvCell(r[c])).join(","))].join("\r\n") + "\r\n"

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
