/**
 * Tools: REST endpoints (create, edit, delete) and every tool a client token sees
 * (endpoints and federated upstream tools), with a "try it" form generated
 * from the tool's input schema. A try goes through `/mcp` with a client
 * token, i.e. the real hot path: it is limited, audited and shows up live.
 */
import { useLayoutEffect, useRef, useState } from "preact/hooks"
import { callTool, listAll, listTools } from "../api.ts"
import { emptyEndpointDraft, endpointBody, type EndpointDraft, endpointDraftOf } from "../drafts.ts"
import { argumentsOf, type Field, fieldsOf, type Values } from "../schemaForm.ts"
import { useResource } from "../store.ts"
import { confirmedDelete, DataTable, RowButton, useSave } from "../tables.tsx"
import { TokenChooser } from "../tryToken.tsx"
import { CardForm, CheckField, ErrorBox, Page, SelectField, TextField, useAction, useDraft } from "../ui.tsx"

const CLIENT_TOKEN_KEY = "janus.studio.clientToken"

const EndpointForm = (
  props: { connections: Array<any>; initial: EndpointDraft; editing?: any; onDone: () => void }
) => {
  const rest = props.connections.filter((c) => c.kind === "rest")
  const action = useSave("endpoints", props.editing)
  const { d, set, bind } = useDraft(props.initial, action.error)
  const submit = async (e: Event) => {
    e.preventDefault()
    if (await action.save(() => endpointBody(d, props.editing))) props.onDone()
  }
  return (
    <CardForm
      focus
      label={props.editing ? `Edit ${props.editing.name}` : "New endpoint"}
      onSubmit={submit}
      error={action.error}
      buttons={
        <>
          <button type="submit" disabled={action.busy || d.connectionId === ""}>
            {props.editing ? "Save" : "Create endpoint"}
          </button>
          <button type="button" class="secondary" onClick={props.onDone}>Cancel</button>
        </>
      }
    >
      <SelectField
        label="Connection"
        value={d.connectionId}
        options={rest.map((c) => [c.id, c.name] as const)}
        onChange={set("connectionId")}
      />
      <TextField label="Tool name" {...bind("name")} required />
      <SelectField
        label="Method"
        value={d.method}
        options={["GET", "POST", "PUT", "PATCH", "DELETE"]}
        onChange={set("method")}
      />
      <TextField
        label="Path template"
        {...bind("pathTemplate")}
        required
        hint="e.g. /pets/{id}"
      />
      <TextField label="Description" value={d.description} onInput={set("description")} />
      <TextField
        label="Input schema (JSON Schema)"
        {...bind("schema", "inputSchema")}
        multiline
      />
      <TextField
        label="Argument locations (JSON)"
        {...bind("args", "arguments")}
        multiline
        rows={3}
        hint={"e.g. {\"id\": \"path\", \"q\": \"query\"}; others go to the query (GET) or the body"}
      />
    </CardForm>
  )
}

const FieldInput = (
  props: {
    field: Field
    value: string | boolean | undefined
    error?: string | undefined
    set: (v: string | boolean) => void
  }
) => {
  const { field } = props
  const label = `${field.name}${field.description ? ` — ${field.description}` : ""}`
  if (field.kind === "boolean") {
    return <CheckField label={label} checked={props.value === true} onChange={props.set} />
  }
  if (field.kind === "enum") {
    return (
      <SelectField
        label={label}
        value={typeof props.value === "string" ? props.value : ""}
        options={field.required ? field.options : ["", ...field.options]}
        onChange={props.set}
      />
    )
  }
  return (
    <TextField
      label={label}
      value={typeof props.value === "string" ? props.value : ""}
      onInput={(v) => props.set(v)}
      required={field.required}
      type={field.kind === "number" || field.kind === "integer" ? "number" : "text"}
      multiline={field.kind === "json"}
      rows={3}
      error={props.error}
      hint={field.kind === "json" ? "JSON" : undefined}
    />
  )
}

const TryTool = (props: { tool: { name: string; inputSchema?: unknown }; token: string }) => {
  const fields = fieldsOf(props.tool.inputSchema)
  const [values, setValues] = useState<Values>({})
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [result, setResult] = useState<unknown>(undefined)
  const action = useAction()
  const shown = useRef<HTMLDivElement>(null)
  // the result (or the error) may open below the fold: scroll to it and move focus there, so it is seen and read
  useLayoutEffect(() => {
    if (result === undefined && action.error === undefined) return
    shown.current?.scrollIntoView({ block: "nearest" })
    shown.current?.focus()
  }, [result, action.error])
  const submit = async (e: Event) => {
    e.preventDefault()
    const parsed = argumentsOf(fields, values)
    if (!parsed.ok) {
      setErrors({ ...parsed.errors })
      return
    }
    setErrors({})
    setResult(undefined)
    const r = await action.run(() => callTool(props.token, props.tool.name, parsed.args))
    if (r !== undefined) setResult(r)
  }
  return (
    <form class="card" onSubmit={submit} aria-label={`Try ${props.tool.name}`}>
      <h2>Try {props.tool.name}</h2>
      {fields.map((f) => (
        <FieldInput
          key={f.name}
          field={f}
          value={values[f.name]}
          error={errors[f.name]}
          set={(v) => setValues({ ...values, [f.name]: v })}
        />
      ))}
      <div class="buttons">
        <button type="submit" disabled={action.busy}>Call {props.tool.name}</button>
      </div>
      <div ref={shown} tabIndex={-1} class="result-box" data-testid="try-outcome">
        <ErrorBox error={action.error} />
        {result !== undefined && (
          <div
            class={(result as any)?.isError ? "result tool-error" : "result"}
            role={(result as any)?.isError ? "alert" : undefined}
          >
            <h3>{(result as any)?.isError ? "Tool error: the tool ran and reported a failure" : "Result"}</h3>
            <pre data-testid="tool-result" tabIndex={0}>{JSON.stringify(result, null, 2)}</pre>
          </div>
        )}
      </div>
    </form>
  )
}

export const Tools = () => {
  const endpoints = useResource("endpoints", () => listAll<any>("endpoints"))
  const connections = useResource("connections", () => listAll<any>("connections"))
  const [token, setTokenState] = useState(() => sessionStorage.getItem(CLIENT_TOKEN_KEY) ?? "")
  const tools = useResource(
    `tools/${token === "" ? "-" : token.slice(0, 12)}`,
    async () => token === "" ? undefined : listTools(token)
  )
  const [editing, setEditing] = useState<any | "new" | undefined>(undefined)
  const [trying, setTrying] = useState<any>(undefined)
  const action = useAction()
  const names = new Map((connections.data ?? []).map((c) => [c.id, c.name]))
  const useToken = (chosen: string) => {
    sessionStorage.setItem(CLIENT_TOKEN_KEY, chosen)
    setTokenState(chosen)
    setTrying(undefined)
  }
  const remove = (ep: any) => confirmedDelete(action, `Delete endpoint ${ep.name}?`, "endpoints", ep)
  return (
    <Page title="Tools" actions={<button type="button" onClick={() => setEditing("new")}>New endpoint</button>}>
      {editing !== undefined && connections.data !== undefined && (
        <EndpointForm
          key={editing === "new" ? "new" : editing.id}
          connections={connections.data}
          initial={editing === "new"
            ? emptyEndpointDraft(connections.data.find((c) => c.kind === "rest")?.id ?? "")
            : endpointDraftOf(editing)}
          editing={editing === "new" ? undefined : editing}
          onDone={() => setEditing(undefined)}
        />
      )}
      <ErrorBox error={endpoints.error ?? action.error} />
      <h2>REST endpoints</h2>
      <DataTable
        testId="endpoints"
        columns={["Tool", "Connection", "Request", "Actions"]}
        rows={endpoints.data}
        empty="No endpoints yet."
        rowKey={(ep) => ep.id}
      >
        {(ep) => (
          <>
            <td>{ep.name}</td>
            <td>{names.get(ep.connectionId) ?? ep.connectionId}</td>
            <td>
              <code>{ep.method} {ep.pathTemplate}</code>
            </td>
            <td class="buttons">
              <RowButton verb="Edit" name={ep.name} class="secondary" onClick={() => setEditing(ep)} />
              <RowButton verb="Delete" name={ep.name} class="danger" onClick={() => remove(ep)} />
            </td>
          </>
        )}
      </DataTable>
      <h2>Tools as a client sees them</h2>
      <TokenChooser current={token} onUse={useToken} />
      <ErrorBox error={tools.error} />
      <DataTable testId="tools" columns={["Tool", "Description", "Actions"]} rows={tools.data} rowKey={(t) => t.name}>
        {(t) => (
          <>
            <td>{t.name}</td>
            <td>{t.description ?? ""}</td>
            <td>
              <RowButton verb="Try" name={t.name} onClick={() => setTrying(t)} />
            </td>
          </>
        )}
      </DataTable>
      {trying !== undefined && <TryTool key={trying.name} tool={trying} token={token} />}
    </Page>
  )
}
