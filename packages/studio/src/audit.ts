/**
 * Audit rows for people, without the DOM (unit-tested): a caller by name,
 * the caller filter of the live tail, and the CSV export.
 *
 * **Rules**
 *
 * - A row's `callerName` (the audit trail's name of the caller as it was at
 *   the time) wins; otherwise a `token:<id>` identity is named from the token
 *   lists; an identity that names nothing is shown as it is.
 * - The CSV export has the columns an operator reads first (id, at, tool,
 *   outcome, identity, caller), then every other field the rows carry, in
 *   the API's order; an object field is its JSON.
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

/** The columns an operator reads first; every other field the rows carry follows, in the API's order. */
const LEADING = ["id", "at", "tool", "outcome", "identity", "caller"]

export const csvCell = (v: unknown) => {
  const text = v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v)
  // a cell a spreadsheet would run as a formula is quoted as text
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll("\"", "\"\"")}"` : safe
}

/** The rows as CSV: the leading columns, then every other field any row has (so nothing exported is lost). */
export const toCsv = (rows: ReadonlyArray<any>) => {
  const columns = [...LEADING]
  const seen = new Set(columns)
  for (const row of rows) {
    for (const key of Object.keys(row)) {
      if (!seen.has(key)) {
        seen.add(key)
        columns.push(key)
      }
    }
  }
  return [columns.join(","), ...rows.map((r) => columns.map((c) => csvCell(r[c])).join(","))].join("\r\n") + "\r\n"
}
