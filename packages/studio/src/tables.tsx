/**
 * Tables of resources and the actions on their rows.
 *
 * **Rules**
 *
 * - A column header is a `th scope=col`.
 * - A row's button is named after its verb and the row (`Delete pets`), so it
 *   is found by role and name.
 * - A destructive write (delete, revoke) is confirmed first, its failure shows
 *   in the page's error box, and the list is refetched whatever the outcome.
 * - An edit replaces the item only at the version its form was opened with.
 */
import type { ComponentChildren } from "preact"
import { useLayoutEffect, useRef, useState } from "preact/hooks"
import { ApiError, request } from "./api.ts"
import { refresh } from "./store.ts"
import { toast } from "./toast.tsx"
import { useAction } from "./ui.tsx"

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
    /** false: the table keeps its columns on a phone and scrolls inside its box. */
    cards?: boolean | undefined
    /** The row's cells. */
    children: (row: T) => ComponentChildren
  }
) {
  const { rows } = props
  const table = useRef<HTMLTableElement>(null)
  // each cell is labelled with its column, which the phone layout shows before the value (a row is a card)
  useLayoutEffect(() => {
    for (const tr of table.current?.tBodies[0]?.rows ?? []) {
      for (const [i, td] of [...tr.cells].entries()) td.dataset.label = props.columns[i] ?? ""
    }
  })
  if (rows === undefined) return null
  if (rows.length === 0 && props.empty !== undefined) {
    return props.empty === null
      ? null
      : <p class="empty" data-testid={props.testId && `${props.testId}-empty`}>{props.empty}</p>
  }
  return (
    <div class="table-box">
      <table data-testid={props.testId} ref={table} class={props.cards === false ? undefined : "cards"}>
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
    </div>
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
  write: () => Promise<unknown>,
  done?: string
) => {
  if (!confirm(question)) return
  const ok = await action.run(async () => {
    await write()
    return true
  })
  if (ok === true && done !== undefined) toast("success", done)
  if (ok === undefined) toast("error", `${question.replace(/\?.*$/, "")}: failed (see the message on the page)`)
  refresh(collection)
}

/** Deletes `item` from `collection` once confirmed, only if it is still at the version on screen (`if-match`). */
export const confirmedDelete = (
  action: Pick<ReturnType<typeof useAction>, "run">,
  question: string,
  collection: string,
  item: { readonly id: string; readonly version: number | string; readonly name?: string }
) =>
  confirmedWrite(
    action,
    question,
    collection,
    () => request("DELETE", `${collection}/${item.id}`, { headers: { "if-match": `"${item.version}"` } }),
    `Deleted ${item.name ?? "it"}`
  )

/**
 * A create/edit form's save: POSTs to `collection`, or PUTs over `editing`
 * only if it is still at the version the form was opened with (`if-match`),
 * not the one the live list shows by now, so a change made meanwhile is a
 * 409 and never overwritten unseen. A 409 shows the API's detail, refetches
 * the list and moves the form to the stored version: saving again is then a
 * deliberate overwrite. `save` answers whether the write succeeded.
 */
export const useSave = (
  collection: string,
  editing: { readonly id: string; readonly version: number | string } | undefined
) => {
  const action = useAction()
  const [version, setVersion] = useState(editing?.version)
  const save = async (body: () => unknown): Promise<boolean> => {
    let name = ""
    const saved = await action.run(async () => {
      const b = body() as { name?: string }
      name = b.name ?? ""
      if (editing === undefined) return request("POST", collection, { body: b })
      try {
        return await request("PUT", `${collection}/${editing.id}`, {
          body: b,
          headers: { "if-match": `"${version}"` }
        })
      } catch (e) {
        if (!(e instanceof ApiError && e.code === "version_conflict")) throw e
        refresh(collection)
        const current = await request<{ version: number }>("GET", `${collection}/${editing.id}`).catch(() => undefined)
        if (current === undefined) throw e
        setVersion(current.version)
        throw new ApiError(
          e.status,
          e.code,
          `${e.message}. It was re-read (version ${current.version}): Save again to replace it with this form, or Cancel.`,
          e.fields
        )
      }
    })
    if (saved === undefined) {
      toast("error", `${editing === undefined ? "Not created" : "Not saved"}: see the form for what to fix`)
      return false
    }
    toast("success", `${editing === undefined ? "Created" : "Saved"} ${name}`)
    refresh(collection)
    return true
  }
  return { ...action, save }
}
