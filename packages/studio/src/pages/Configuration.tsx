/**
 * Configuration as code: export the whole configuration as a document
 * (YAML or JSON, no secret or token values), and paste a document to
 * preview its plan as a diff, then apply exactly that plan (the apply names
 * the basis of the preview, so a change made meanwhile refuses it).
 */
import { useState } from "preact/hooks"
import { ApiError, request, requestText } from "../api.ts"
import { Diff, type DiffLine } from "../diff.tsx"
import { CheckField, ErrorBox, Page, TextField, useAction } from "../ui.tsx"

const NOUNS: Record<string, string> = {
  secrets: "secret",
  connections: "connection",
  endpoints: "endpoint",
  virtualServers: "virtual server",
  clientTokens: "client token"
}
const KINDS: Record<string, DiffLine["kind"]> = { add: "added", change: "changed", remove: "removed" }

interface Change {
  readonly section: string
  readonly name: string
  readonly action: "add" | "change" | "remove"
  readonly fields: ReadonlyArray<string>
}

interface Plan {
  readonly changes: ReadonlyArray<Change>
  readonly unchanged: number
  readonly prune: boolean
  readonly warnings: ReadonlyArray<string>
}

interface Applied {
  readonly basis: string
  readonly applied: boolean
  readonly plan: Plan
  readonly issuedTokens: ReadonlyArray<{ readonly name: string; readonly token: string }>
}

const lines = (plan: Plan): Array<DiffLine> => [
  ...plan.changes.map((c): DiffLine => ({
    key: `${c.action} ${c.section} ${c.name}`,
    kind: KINDS[c.action]!,
    children: `${NOUNS[c.section] ?? c.section} ${c.name}` +
      (c.action === "change" ? ` (${c.fields.join(", ")})` : "") +
      (c.action === "remove" && !plan.prune ? " (not in the document; kept without prune)" : "")
  })),
  { key: "unchanged", kind: "unchanged", children: `${plan.unchanged} unchanged` }
]

const count = (plan: Plan, action: Change["action"]) => plan.changes.filter((c) => c.action === action).length

/** The problems of a refused document, one per line with its path. */
const Problems = (props: { error: unknown }) => {
  const error = props.error
  if (!(error instanceof ApiError) || error.code !== "invalid_configuration") return <ErrorBox error={error} />
  return (
    <div class="alert" role="alert" data-testid="configuration-problems">
      <p>The document cannot be applied; nothing was changed:</p>
      <ul>
        {error.fields.map((f) => (
          <li key={`${f.path} ${f.message}`}>
            <code>{f.path === "" ? "(document)" : f.path}</code>: {f.message}
          </li>
        ))}
      </ul>
    </div>
  )
}

export const Configuration = () => {
  const [text, setText] = useState("")
  const [prune, setPrune] = useState(false)
  const [preview, setPreview] = useState<Applied | undefined>(undefined)
  const [applied, setApplied] = useState<Applied | undefined>(undefined)
  const exporting = useAction()
  const action = useAction()

  const download = (format: "yaml" | "json") =>
    exporting.run(async () => {
      const body = await requestText("GET", `config/export?format=${format}`)
      const url = URL.createObjectURL(
        new Blob([body], { type: format === "yaml" ? "application/yaml" : "application/json" })
      )
      const link = document.createElement("a")
      link.href = url
      link.download = `janus.${format}`
      link.click()
      setTimeout(() => URL.revokeObjectURL(url), 0)
    })

  const edit = (next: () => void) => {
    next()
    setPreview(undefined)
  }
  const send = (dryRun: boolean, basis?: string) =>
    request<Applied>("POST", `config/apply?dryRun=${dryRun}&prune=${prune}`, {
      text: { body: text, contentType: "application/yaml" },
      headers: basis === undefined ? {} : { "if-match": `"${basis}"` }
    })
  const doPreview = async (e: Event) => {
    e.preventDefault()
    setApplied(undefined)
    setPreview(await action.run(() => send(true)))
  }
  const apply = async () => {
    const result = await action.run(() => send(false, preview!.basis))
    if (result !== undefined) {
      setApplied(result)
      setPreview(undefined)
    }
  }

  return (
    <Page
      title="Configuration"
      actions={
        <div class="buttons">
          <button type="button" onClick={() => download("yaml")} disabled={exporting.busy}>Export YAML</button>
          <button type="button" class="secondary" onClick={() => download("json")} disabled={exporting.busy}>
            Export JSON
          </button>
        </div>
      }
    >
      <ErrorBox error={exporting.error} />
      <p>
        The whole configuration as one document (<code>janus export</code>,{" "}
        <code>janus apply -f</code>): names, never secret or token values. Paste a document to see what applying it
        would change.
      </p>
      <form class="card" onSubmit={doPreview} aria-label="Configuration document">
        <TextField
          label="Document (YAML or JSON)"
          value={text}
          onInput={(v) => edit(() => setText(v))}
          multiline
          rows={16}
          required
        />
        <CheckField
          label="Remove what the document does not name (prune)"
          checked={prune}
          onChange={(v) => edit(() => setPrune(v))}
        />
        <div class="buttons">
          <button type="submit" disabled={action.busy || text.trim() === ""}>Preview</button>
        </div>
      </form>
      <Problems error={action.error} />
      {preview !== undefined && (
        <div class="card" data-testid="configuration-preview">
          <h2>
            Plan: {count(preview.plan, "add")} to add, {count(preview.plan, "change")} to change,{" "}
            {count(preview.plan, "remove")} to remove
          </h2>
          <Diff lines={lines(preview.plan)} label="Plan" />
          {preview.plan.warnings.length > 0 && (
            <ul class="warnings">{preview.plan.warnings.map((w) => <li key={w}>{w}</li>)}</ul>
          )}
          <div class="buttons">
            <button
              type="button"
              onClick={apply}
              disabled={action.busy || preview.plan.changes.every((c) => c.action === "remove" && !prune)}
            >
              Apply this plan
            </button>
          </div>
        </div>
      )}
      {applied !== undefined && (
        <>
          <p role="status" class="ok">
            Applied: {count(applied.plan, "add")} added, {count(applied.plan, "change")} changed,{" "}
            {applied.plan.prune ? count(applied.plan, "remove") : 0} removed.
          </p>
          {applied.issuedTokens.length > 0 && (
            <div class="card" data-testid="issued-tokens">
              <h2>New client tokens (shown once: store them now)</h2>
              <ul>
                {applied.issuedTokens.map((t) => (
                  <li key={t.name}>
                    {t.name}: <code>{t.token}</code>
                  </li>
                ))}
              </ul>
            </div>
          )}
        </>
      )}
    </Page>
  )
}
