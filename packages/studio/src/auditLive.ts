/**
 * The audit page's live rows, without the DOM (unit-tested): which live
 * events a view shows, how they merge with the stored page, and an admin
 * change's fields as diff lines.
 *
 * **Rules**
 *
 * - A row's key: an admin change is named by what both its `admin` event
 *   and its stored row hold (`at`, action, resource kind and id, version
 *   after; the gateway stamps both with the same `at`), a stored row by its
 *   id. A live call has neither and is never merged away.
 * - Merging keeps one row per key (the stored one wins over its live copy,
 *   the first live copy over a replayed one), newest first by `at` (ISO
 *   instants compare as text), at most `TAIL_MAX` live rows.
 * - `calls` events are call rows, `admin` events admin rows; a view of kind
 *   `call` shows no admin row and a view of kind `admin` no call row.
 * - An admin change's fields: `old` null or absent is an addition, `new`
 *   null or absent a removal, `"changed"` a credential that changed (its
 *   values are never recorded). `changes` comes parsed (event) or as the
 *   stored JSON text (API), which may have been cut: then it is shown as is.
 */

export const TAIL_MAX = 200

/** The kinds of audit record (the API's `kind` filter); `""` is every kind. */
export const KINDS = ["", "call", "admin", "auth"] as const
export type KindFilter = (typeof KINDS)[number]

/** The key that names `row` live and stored alike; `undefined` when nothing does (a live call). */
export const rowKey = (row: any): string | undefined => {
  if (row.kind === "admin") {
    return ["admin", row.at, row.action, row.resourceKind, row.resourceId ?? "", row.versionAfter ?? ""].join("|")
  }
  return row.id === undefined || row.id === null ? undefined : `id:${row.id}`
}

/** The live row of an event on `topic` a view of `kind` shows, or `undefined`. */
export const liveRow = (topic: string, data: unknown, kind: KindFilter): any => {
  if (typeof data !== "object" || data === null) return undefined
  if (topic === "calls" && (kind === "" || kind === "call")) return { kind: "call", ...data }
  if (topic === "admin" && (kind === "" || kind === "admin")) return { ...data, kind: "admin" }
  return undefined
}

const newestFirst = (a: any, b: any) => {
  const x = typeof a.at === "string" ? a.at : ""
  const y = typeof b.at === "string" ? b.at : ""
  return x < y ? 1 : x > y ? -1 : 0
}

/** `tail` with the live `row` added, unless a row of its key is there already (then `tail` itself). */
export const addLive = (tail: ReadonlyArray<any>, row: any): ReadonlyArray<any> => {
  const key = rowKey(row)
  if (key !== undefined && tail.some((r) => rowKey(r) === key)) return tail
  return [row, ...tail].sort(newestFirst).slice(0, TAIL_MAX)
}

/** The rows shown: the live `tail` over the stored `page`, one per key, newest first. */
export const shownRows = (tail: ReadonlyArray<any>, page: ReadonlyArray<any>): Array<any> => {
  const stored = new Set(page.map(rowKey).filter((k) => k !== undefined))
  const live = tail.filter((r) => {
    const key = rowKey(r)
    return key === undefined || !stored.has(key)
  })
  return [...live, ...page].sort(newestFirst)
}

export type ChangeKind = "added" | "changed" | "removed"

export interface ChangeLine {
  readonly key: string
  readonly kind: ChangeKind
  readonly text: string
}

const show = (v: unknown) => JSON.stringify(v) ?? "—"

/** An admin change's changed fields as lines, in field order. */
export const changeLines = (changes: unknown): Array<ChangeLine> => {
  let parsed = changes
  if (typeof changes === "string") {
    try {
      parsed = JSON.parse(changes)
    } catch {
      return [{ key: "raw", kind: "changed", text: changes }]
    }
  }
  if (typeof parsed !== "object" || parsed === null) return []
  return Object.entries(parsed).map(([field, change]): ChangeLine => {
    if (change === "changed") return { key: field, kind: "changed", text: `${field}: changed (value not recorded)` }
    const { new: after, old: before } = (change ?? {}) as { old?: unknown; new?: unknown }
    if (before === null || before === undefined) return { key: field, kind: "added", text: `${field}: ${show(after)}` }
    if (after === null || after === undefined) return { key: field, kind: "removed", text: `${field}: ${show(before)}` }
    return { key: field, kind: "changed", text: `${field}: ${show(before)} → ${show(after)}` }
  })
}

/** An admin change in words: `update connection pets`. */
export const changeTitle = (row: any): string =>
  // a refused admin write changed nothing: its title is the request it refused
  row.outcome === "refused" && typeof row.path === "string"
    ? `refused ${row.method ?? ""} ${row.path}`
    : [row.action, row.resourceKind?.replaceAll("_", " "), row.resourceName ?? row.resourceId].filter((p) =>
      typeof p === "string" && p !== ""
    ).join(" ")
