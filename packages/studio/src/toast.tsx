/**
 * Toasts: a short word after an action (created, saved, deleted, copied, or
 * why it failed), in one live region so a screen reader reads it too.
 *
 * **Rules**
 *
 * - A success is `role=status` and goes after 5 s; a failure is `role=alert`
 *   and goes after 12 s (what to fix stays at the form).
 * - At most 4 are shown; the oldest goes first.
 * - A toast never takes a click meant for what is under it: only its dismiss
 *   button is clickable.
 */
import { useEffect, useState } from "preact/hooks"

export type ToastKind = "success" | "error"
interface Toast {
  readonly id: number
  readonly kind: ToastKind
  readonly text: string
}

let toasts: ReadonlyArray<Toast> = []
let nextId = 0
const listeners = new Set<() => void>()
const publish = () => {
  for (const l of listeners) l()
}

export const dismiss = (id: number) => {
  toasts = toasts.filter((t) => t.id !== id)
  publish()
}

/** Shows `text` as a toast of `kind`. */
export const toast = (kind: ToastKind, text: string) => {
  const id = ++nextId
  toasts = [...toasts, { id, kind, text }].slice(-4)
  publish()
  setTimeout(() => dismiss(id), kind === "success" ? 5000 : 12_000)
}

/** Copies `text` to the clipboard and says so (or why not). */
export const copy = async (text: string, what = "Copied") => {
  try {
    await navigator.clipboard.writeText(text)
    toast("success", what)
    return true
  } catch {
    toast("error", "The browser refused the clipboard: select the text and copy it by hand")
    return false
  }
}

export const Toasts = () => {
  const [, setTick] = useState(0)
  useEffect(() => {
    const l = () => setTick((n) => n + 1)
    listeners.add(l)
    return () => void listeners.delete(l)
  }, [])
  return (
    <div class="toasts" aria-live="polite">
      {toasts.map((t) => (
        <div
          key={t.id}
          class={`toast ${t.kind}`}
          role={t.kind === "error" ? "alert" : "status"}
          data-testid={`toast-${t.kind}`}
        >
          <span>{t.text}</span>
          <button type="button" class="secondary" aria-label="Dismiss" onClick={() => dismiss(t.id)}>×</button>
        </div>
      ))}
    </div>
  )
}
