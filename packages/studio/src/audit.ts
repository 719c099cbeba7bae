/**
 * Audit rows for people, without the DOM (unit-tested): a caller by name,
 * the identity filter from a name, and the CSV export.
 *
 * Rules: a row's `tokenName` (from the audit trail, when it has one) wins;
 * otherwise a `token:<id>` identity is named from the token lists; an
 * identity that names nothing is shown as it is. A CSV cell a spreadsheet
 * would run as a formula (`=`, `+`, `-`, `@`, tab, CR first) is prefixed
 * with `'`.
 */

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
