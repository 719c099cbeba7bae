/** OpenAPI import: a document by upload, paste or URL; preview (plan and diff), then apply. */
import { useState } from "preact/hooks"
import { request } from "../api.ts"
import { Diff, type DiffLine } from "../diff.tsx"
import { refresh } from "../store.ts"
import { ErrorBox, Page, SelectField, TextField, useAction } from "../ui.tsx"

export const Import = () => {
  const [mode, setMode] = useState("text")
  const [text, setText] = useState("")
  const [url, setUrl] = useState("")
  const [name, setName] = useState("")
  const [baseUrl, setBaseUrl] = useState("")
  const [prefix, setPrefix] = useState("")
  const [egress, setEgress] = useState("")
  const [preview, setPreview] = useState<any>(undefined)
  const [applied, setApplied] = useState<any>(undefined)
  const action = useAction()
  const body = () => {
    const allow = egress.split(",").map((s) => s.trim()).filter((s) => s !== "")
    return {
      source: mode === "url" ? { url } : { text },
      connection: { name, ...(allow.length > 0 ? { egressAllowList: allow } : {}) },
      options: {
        ...(baseUrl !== "" ? { baseUrl } : {}),
        ...(prefix !== "" ? { namePrefix: prefix } : {})
      }
    }
  }
  const doPreview = async (e: Event) => {
    e.preventDefault()
    setApplied(undefined)
    const r = await action.run(() => request("POST", "openapi/import?dryRun=true", { body: body() }))
    setPreview(r)
  }
  const apply = async () => {
    const r = await action.run(() => request("POST", "openapi/import", { body: body() }))
    if (r !== undefined) {
      setApplied(r)
      setPreview(undefined)
      refresh("connections")
      refresh("endpoints")
    }
  }
  const upload = async (e: Event) => {
    const file = (e.currentTarget as HTMLInputElement).files?.[0]
    if (file !== undefined) setText(await file.text())
  }
  return (
    <Page title="OpenAPI import">
      <form class="card" onSubmit={doPreview} aria-label="OpenAPI document">
        <div class="grid">
          <SelectField
            label="Source"
            value={mode}
            options={[["text", "Upload or paste"], ["url", "URL"]]}
            onChange={setMode}
          />
          <TextField label="Connection name" value={name} onInput={setName} required />
          <TextField label="Base URL (overrides the document's servers)" value={baseUrl} onInput={setBaseUrl} />
          <TextField label="Tool name prefix" value={prefix} onInput={setPrefix} />
          <TextField
            label="Egress allow-list"
            value={egress}
            onInput={setEgress}
            hint="Comma separated; needed for private or loopback APIs"
          />
        </div>
        {mode === "url"
          ? <TextField label="Document URL" value={url} onInput={setUrl} type="url" required />
          : (
            <>
              <div class="field">
                <label for="openapi-file">Upload a document (JSON or YAML)</label>
                <input id="openapi-file" type="file" accept=".json,.yaml,.yml" onChange={upload} />
              </div>
              <TextField label="Document" value={text} onInput={setText} multiline rows={10} />
            </>
          )}
        <div class="buttons">
          <button type="submit" disabled={action.busy}>Preview</button>
        </div>
      </form>
      <ErrorBox error={action.error} />
      {preview !== undefined && (
        <div class="card" data-testid="import-preview">
          <h2>Preview: {preview.plan.title}</h2>
          <p>
            Connection <strong>{preview.connection.name}</strong> ({preview.connection.id === undefined
              ? "new"
              : "existing"}) at <code>{preview.connection.baseUrl}</code>
            {preview.connection.previousBaseUrl !== undefined &&
              (
                <>
                  , was <code>{preview.connection.previousBaseUrl}</code>
                </>
              )}
          </p>
          <Diff
            lines={[
              ...preview.diff.added.map((e: any): DiffLine => ({
                key: `a-${e.name}`,
                kind: "added",
                children: (
                  <>
                    {e.name} <code>{e.method} {e.pathTemplate}</code>
                  </>
                )
              })),
              ...preview.diff.changed.map((e: any): DiffLine => ({
                key: `c-${e.name}`,
                kind: "changed",
                children: `${e.name} (${e.fields.join(", ")})`
              })),
              ...preview.diff.removed.map((e: any): DiffLine => ({
                key: `r-${e.name}`,
                kind: "removed",
                children: (
                  <>
                    {e.name} <code>{e.method} {e.pathTemplate}</code>
                  </>
                )
              })),
              ...preview.diff.unchanged.map((n: string): DiffLine => ({
                key: `u-${n}`,
                kind: "unchanged",
                children: n
              }))
            ]}
          />
          {preview.plan.skipped.length > 0 && (
            <>
              <h3>Skipped</h3>
              <ul>
                {preview.plan.skipped.map((s: any) => (
                  <li key={`${s.method} ${s.path}`}>{s.method} {s.path}: {s.reason}</li>
                ))}
              </ul>
            </>
          )}
          {preview.plan.warnings.length > 0 && (
            <ul>{preview.plan.warnings.map((w: string) => <li key={w}>{w}</li>)}</ul>
          )}
          <div class="buttons">
            <button type="button" onClick={apply} disabled={action.busy}>Apply import</button>
          </div>
        </div>
      )}
      {applied !== undefined && (
        <p role="status" class="ok">
          Imported {applied.diff.added.length} new, {applied.diff.changed.length} changed, {applied.diff.removed.length}
          {" "}
          removed endpoint(s) into {applied.connection.name}.
        </p>
      )}
    </Page>
  )
}
