/**
 * Audit rows for people, without the DOM (unit-tested): a caller by name,
 * the caller filter of the live tail, and the CSV export.
 *
 * **Rules**
 *
 * - A row's `callerName` (the audit trail's name of the caller as it was at
 *   the time) wins; otherwise a `token:<id>` identity is named from the token
 *   lists; an identity that names nothing is shown as it is.
 * - A CSV cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab,
 *   CR first) is prefixed with `'`.
 */

/** The caller as a person reads it. */
export const callerOf = (row: any, names: ReadonlyMap<string, string>): string => {
  if (typeof row.callerName === "string" && row.callerName !== "") return row.callerName
  if (typeof row.tokenName === "string" && row.tokenName !== "") return row.tokenName
  const name = names.get(row.identity)
  if (name !== undefined) return name
  if (typeof row.identity === "string" && row.identity.startsWith("oauth:")) return row.identity.slice(6)
  return row.identity ?? "—"
}

/**
 * Whether `row` is a caller `typed` names, as the API's `caller` filter
 * decides it for stored rows: a case-insensitive substring of the identity,
 * the caller's name, subject or client, or the token's name from the lists.
 */
export const callerMatches = (typed: string, row: any, names: ReadonlyMap<string, string>): boolean => {
  if (typed === "") return true
  const needle = typed.toLowerCase()
  return [row.identity, row.callerName, row.callerSubject, row.callerClient, row.tokenName, names.get(row.identity)]
    .some((value) => typeof value === "string" && value.toLowerCase().includes(needle))
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

export const csvCell = (v: unknown) => {
  const text = v === null || v === undefined ? "" : String(v)
  // a cell a spreadsheet would run as a formula is quoted as text
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll("\"", "\"\"")}"` : safe
}

export const toCsv = (rows: ReadonlyArray<any>) =>
  [COLUMNS.join(","), ...rows.map((r) => COLUMNS.map((c) => csvCell(r[c])).join(","))].join("\r\n") + "\r\n"
