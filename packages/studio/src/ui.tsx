/**
 * Small shared pieces: navigation, labelled form controls, error display.
 * Every control has a visible `<label>`; errors are announced (`role=alert`).
 */
import type { ComponentChildren } from "preact"
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks"
import { ApiError } from "./api.ts"
import { copy } from "./toast.tsx"

const routeListeners = new Set<() => void>()
export const navigate = (path: string) => {
  if (path === location.pathname + location.search) return
  history.pushState(null, "", path)
  for (const l of routeListeners) l()
}
addEventListener("popstate", () => {
  for (const l of routeListeners) l()
})
export const usePath = () => {
  const [path, setPath] = useState(location.pathname)
  useEffect(() => {
    const l = () => setPath(location.pathname)
    routeListeners.add(l)
    return () => void routeListeners.delete(l)
  }, [])
  return path
}

export const Link = (props: { href: string; children: ComponentChildren; current?: boolean }) => (
  <a
    href={props.href}
    aria-current={props.current ? "page" : undefined}
    onClick={(e) => {
      if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return
      e.preventDefault()
      navigate(props.href)
    }}
  >
    {props.children}
  </a>
)

let ids = 0
const useId = () => useState(() => `f${++ids}`)[0]

export const TextField = (
  props: {
    label: string
    value: string
    onInput: (value: string) => void
    type?: "text" | "password" | "number" | "url" | "datetime-local" | undefined
    required?: boolean | undefined
    placeholder?: string | undefined
    hint?: string | undefined
    error?: string | undefined
    multiline?: boolean | undefined
    rows?: number | undefined
  }
) => {
  const id = useId()
  const common = {
    id,
    value: props.value,
    required: props.required,
    placeholder: props.placeholder,
    "aria-invalid": props.error !== undefined ? true : undefined,
    "aria-describedby": props.hint !== undefined || props.error !== undefined ? `${id}-hint` : undefined,
    onInput: (e: Event) => props.onInput((e.currentTarget as HTMLInputElement | HTMLTextAreaElement).value)
  }
  return (
    <div class="field">
      <label for={id}>{props.label}{props.required ? " *" : ""}</label>
      {props.multiline
        ? <textarea {...common} rows={props.rows ?? 6} spellcheck={false} />
        : <input {...common} type={(props.type ?? "text") as "text"} autocomplete="off" />}
      {(props.hint !== undefined || props.error !== undefined) && (
        <small id={`${id}-hint`} class={props.error !== undefined ? "error" : "hint"}>
          {props.error ?? props.hint}
        </small>
      )}
    </div>
  )
}

/**
 * A form's draft of text fields, and the API's verdict on its last save (`error`). `set(key)` sets one field;
 * `bind(key, path)` is what a `TextField` of that field takes: its value, its setter, and the message the API
 * gave for `path` (default: the key) or a path under it.
 */
export const useDraft = <D extends { readonly [K in keyof D]: string }>(initial: D, error: unknown) => {
  const [d, setD] = useState(initial)
  const set = (key: keyof D) => (value: string) => setD({ ...d, [key]: value })
  const fieldError = (path: string): string | undefined =>
    (error as any)?.fields?.find((f: any) => f.path === path || f.path.startsWith(`${path}.`))?.message
  const bind = (key: keyof D & string, path: string = key) => ({
    value: d[key],
    onInput: set(key),
    error: fieldError(path)
  })
  return { d, set, fieldError, bind }
}

export const SelectField = (
  props: {
    label: string
    value: string
    options: ReadonlyArray<string | readonly [string, string]>
    onChange: (value: string) => void
    hint?: string | undefined
    error?: string | undefined
  }
) => {
  const id = useId()
  const described = props.hint !== undefined || props.error !== undefined
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        value={props.value}
        onChange={(e) => props.onChange(e.currentTarget.value)}
        aria-invalid={props.error !== undefined ? true : undefined}
        aria-describedby={described ? `${id}-hint` : undefined}
      >
        {props.options.map((o) => {
          const [value, text] = typeof o === "string" ? [o, o] : o
          return <option key={value} value={value}>{text}</option>
        })}
      </select>
      {described && (
        <small id={`${id}-hint`} class={props.error !== undefined ? "error" : "hint"}>
          {props.error ?? props.hint}
        </small>
      )}
    </div>
  )
}

export const CheckField = (props: { label: string; checked: boolean; onChange: (value: boolean) => void }) => {
  const id = useId()
  return (
    <div class="field check">
      <input
        id={id}
        type="checkbox"
        checked={props.checked}
        onChange={(e) => props.onChange(e.currentTarget.checked)}
      />
      <label for={id}>{props.label}</label>
    </div>
  )
}

export const describeError = (error: unknown): string => {
  if (error instanceof ApiError) {
    // a field's message the API's message already says is not said twice
    const fields = error.fields.filter((f) => !error.message.includes(f.message.replace(/^Expected /, "")))
      .map((f) => `${f.path}: ${f.message}`).join("; ")
    return fields === "" ? error.message : `${error.message} (${fields})`
  }
  return error instanceof Error ? error.message : String(error)
}

export const ErrorBox = (props: { error: unknown }) =>
  props.error === undefined || props.error === null
    ? null
    : <p class="alert" role="alert">{describeError(props.error)}</p>

export const Page = (props: { title: string; children: ComponentChildren; actions?: ComponentChildren }) => {
  useEffect(() => {
    document.title = `${props.title} · Janus Studio`
  }, [props.title])
  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>{props.title}</h1>
        {props.actions}
      </div>
      {props.children}
    </section>
  )
}

/**
 * A form on a card: its fields in a grid, then its action's error, then its
 * buttons. `label` names the form and, unless `heading` is false, heads it.
 */
export const CardForm = (
  props: {
    label: string
    heading?: boolean | undefined
    /** Opened by a button (new, edit): scrolled to, and focus moves to its first field. */
    focus?: boolean | undefined
    onSubmit: (e: Event) => void
    error?: unknown
    buttons: ComponentChildren
    children: ComponentChildren
  }
) => {
  const form = useRef<HTMLFormElement>(null)
  // a layout effect: focus moves in the same task as the form appears, before paint, so no keystroke lands
  // on the button that opened it
  useLayoutEffect(() => {
    if (props.focus !== true || form.current === null) return
    form.current.scrollIntoView({ block: "start" })
    form.current.querySelector<HTMLElement>("input:not([type=hidden]), select, textarea")?.focus()
  }, [])
  return (
    <form class="card" onSubmit={props.onSubmit} aria-label={props.label} ref={form}>
      {props.heading !== false && <h2>{props.label}</h2>}
      <div class="grid">{props.children}</div>
      <ErrorBox error={props.error} />
      <div class="buttons">{props.buttons}</div>
    </form>
  )
}

/** Runs an async action, tracking busy state and the error to show. */
export const useAction = () => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  async function run<A>(action: () => Promise<A>): Promise<A | undefined> {
    setBusy(true)
    setError(undefined)
    try {
      return await action()
    } catch (e) {
      setError(e)
      return undefined
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, run, setError }
}

/** The rule of a connection, virtual server or secret name, shown before a mistake. */
export const NAME_RULE = "1 to 64 letters, digits, _ . or -, starting with a letter or digit; no spaces"

export const time = (iso: string | null | undefined) =>
  iso === null || iso === undefined ? "—" : new Date(iso).toLocaleString()

/** A button that copies `text`; it says "Copied" for two seconds (and a toast says so). */
export const CopyButton = (props: { text: string; label?: string | undefined; class?: string | undefined }) => {
  const [copied, setCopied] = useState(false)
  const label = props.label ?? "Copy"
  return (
    <button
      type="button"
      class={props.class}
      aria-label={copied ? `Copied: ${label}` : label}
      onClick={async () => {
        if (await copy(props.text)) {
          setCopied(true)
          setTimeout(() => setCopied(false), 2000)
        }
      }}
    >
      {copied ? "Copied ✓" : label}
    </button>
  )
}
