/**
 * Pickers for references (tools, virtual servers, secrets): the operator
 * chooses among what exists instead of typing names separated by commas,
 * so a typo cannot be saved. A chosen name that no longer exists stays
 * listed (marked "not found") so an edit never drops it unseen.
 */
import { listAll } from "./api.ts"
import { useResource } from "./store.ts"

let ids = 0

/** A group of checkboxes, one per option; `value` holds the chosen ones in the order of `options`. */
export const MultiPick = (
  props: {
    label: string
    options: ReadonlyArray<string>
    value: ReadonlyArray<string>
    onChange: (value: Array<string>) => void
    hint?: string | undefined
    error?: string | undefined
    testId?: string | undefined
  }
) => {
  const base = `pick${++ids}`
  const all = [...props.options, ...props.value.filter((v) => !props.options.includes(v))]
  const toggle = (name: string, on: boolean) =>
    props.onChange(all.filter((o) => o === name ? on : props.value.includes(o)))
  return (
    <fieldset class="field pick" data-testid={props.testId} aria-describedby={`${base}-hint`}>
      <legend>{props.label}</legend>
      {all.length === 0
        ? <p class="hint">Nothing to choose from yet.</p>
        : (
          <div class="pick-list">
            {all.map((o, i) => (
              <label key={o} for={`${base}-${i}`}>
                <input
                  id={`${base}-${i}`}
                  type="checkbox"
                  checked={props.value.includes(o)}
                  onChange={(e) => toggle(o, e.currentTarget.checked)}
                />
                <code>{o}</code>
                {!props.options.includes(o) && <span class="error">(not found)</span>}
              </label>
            ))}
          </div>
        )}
      <small id={`${base}-hint`} class={props.error === undefined ? "hint" : "error"}>
        {props.error ?? props.hint ?? ""}
      </small>
    </fieldset>
  )
}

/** Every name a tool list may use: endpoints, and `<mcp connection>/*` for each upstream MCP server. */
export const useToolNames = (): ReadonlyArray<string> => {
  const endpoints = useResource("endpoints", () => listAll<any>("endpoints"))
  const connections = useResource("connections", () => listAll<any>("connections"))
  return [
    ...(endpoints.data ?? []).map((e) => e.name as string).sort(),
    ...(connections.data ?? []).filter((c) => c.kind === "mcp").map((c) => `${c.name}/*`).sort()
  ]
}

export const useServerNames = (): ReadonlyArray<string> =>
  (useResource("virtual-servers", () => listAll<any>("virtual-servers")).data ?? []).map((s) => s.name as string)

export const useSecretNames = (): ReadonlyArray<string> =>
  (useResource("secrets", () => listAll<any>("secrets")).data ?? []).map((s) => s.name as string)
