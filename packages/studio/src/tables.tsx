/**
 * Tables of resources and the actions on their rows.
 *
 * Rules: a column header is a `th scope=col`; a row's button is named after
 * its verb and the row (`Delete pets`), so it is found by role and name; a
 * destructive write (delete, revoke) is confirmed first, its failure shows in
 * the page's error box, and the list is refetched whatever the outcome.
 */
import type { ComponentChildren } from "preact"
import { request } from "./api.ts"
import { refresh } from "./store.ts"
import type { useAction } from "./ui.tsx"

/** A table with one header row of `columns` and a row per item, or what `empty` says instead. */
export function DataTable<T>(
  props: {
    testId?: string | undefined
    columns: ReadonlyArray<string>
    /** `undefined` (not loaded, or failed): nothing is shown. */
    rows: ReadonlyArray<T> | undefined
    /** What stands instead of a table with no rows (`null`: nothing); without it, an empty table. */
    empty?: string | null | undefined
    rowKey: (row: T, index: number) => string
    rowClass?: ((row: T) => string | undefined) | undefined
    /** The row's cells. */
    children: (row: T) => ComponentChildren
  }
) {
  const { rows } = props
  if (rows === undefined) return null
  if (rows.length === 0 && props.empty !== undefined) return props.empty === null ? null : <p>{props.empty}</p>
  return (
    <table data-testid={props.testId}>
      <thead>
        <tr>
          {props.columns.map((c) => <th key={c} scope="col">{c}</th>)}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, i) => (
          <tr key={props.rowKey(row, i)} class={props.rowClass?.(row)}>
            {props.children(row)}
          </tr>
        ))}
      </tbody>
    </table>
  )
}

/** A row's button, named `{verb} {name}` for assistive technology and tests. */
export const RowButton = (
  props: { verb: string; name: string; onClick: () => void; class?: "danger" | "secondary" | undefined }
) => (
  <button type="button" class={props.class} onClick={props.onClick} aria-label={`${props.verb} ${props.name}`}>
    {props.verb}
  </button>
)

/**
 * Asks `question`; if confirmed, runs `write` through the page's `action`
 * and refetches `collection` (also after a failure: the row may be gone).
 */
export const confirmedWrite = async (
  action: Pick<ReturnType<typeof useAction>, "run">,
  question: string,
  collection: string,
  write: () => Promise<unknown>
) => {
  if (!confirm(question)) return
  await action.run(write)
  refresh(collection)
}

/** Deletes `item` from `collection` once confirmed, only if it is still at the version on screen (`if-match`). */
export const confirmedDelete = (
  action: Pick<ReturnType<typeof useAction>, "run">,
  question: string,
  collection: string,
  item: { readonly id: string; readonly version: number | string }
) =>
  confirmedWrite(
    action,
    question,
    collection,
    () => request("DELETE", `${collection}/${item.id}`, { headers: { "if-match": `"${item.version}"` } })
  )
