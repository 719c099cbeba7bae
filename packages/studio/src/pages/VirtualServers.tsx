/** Virtual servers: named subsets of tools, each at /servers/{name}/mcp; create, edit, delete. */
import { useState } from "preact/hooks"
import { listAll } from "../api.ts"
import { emptyServerDraft, serverBody, type ServerDraft, serverDraftOf } from "../drafts.ts"
import { MultiPick, useToolNames } from "../pickers.tsx"
import { McpEndpoint } from "../snippets.tsx"
import { useResource } from "../store.ts"
import { confirmedDelete, DataTable, RowButton, useSave } from "../tables.tsx"
import { CardForm, ErrorBox, NAME_RULE, Page, TextField, useAction, useDraft } from "../ui.tsx"

/** The create form, always on the page; an edit takes its place until saved or cancelled. */
const ServerForm = (props: { initial: ServerDraft; editing?: any; onDone: () => void }) => {
  const action = useSave("virtual-servers", props.editing)
  const tools = useToolNames()
  const { d, set } = useDraft(props.initial, action.error)
  const submit = async (e: Event) => {
    e.preventDefault()
    if (await action.save(() => serverBody(d, props.editing))) props.onDone()
  }
  return (
    <CardForm
      focus={props.editing !== undefined}
      label={props.editing ? `Edit ${props.editing.name}` : "New virtual server"}
      onSubmit={submit}
      error={action.error}
      buttons={props.editing
        ? (
          <>
            <button type="submit" disabled={action.busy}>Save</button>
            <button type="button" class="secondary" onClick={props.onDone}>Cancel</button>
          </>
        )
        : <button type="submit" disabled={action.busy}>Create virtual server</button>}
    >
      <TextField
        label="Name"
        value={d.name}
        onInput={set("name")}
        required
        hint={`${NAME_RULE}; its URL is /servers/{name}/mcp`}
      />
      <TextField label="Description" value={d.description} onInput={set("description")} />
      <MultiPick
        label="Tools"
        options={tools}
        value={d.tools.split(",").map((t) => t.trim()).filter((t) => t !== "")}
        onChange={(v) => set("tools")(v.join(", "))}
        hint="Endpoints, or every tool of an upstream MCP server (<connection>/*)"
        testId="server-tools"
      />
    </CardForm>
  )
}

export const VirtualServers = () => {
  const servers = useResource("virtual-servers", () => listAll<any>("virtual-servers"))
  const [editing, setEditing] = useState<any>(undefined)
  // a new key after each create empties the create form
  const [created, setCreated] = useState(0)
  const action = useAction()
  const remove = (s: any) => confirmedDelete(action, `Delete virtual server ${s.name}?`, "virtual-servers", s)
  return (
    <Page title="Virtual servers">
      {editing === undefined
        ? <ServerForm key={`new-${created}`} initial={emptyServerDraft} onDone={() => setCreated((n) => n + 1)} />
        : (
          <ServerForm
            key={editing.id}
            initial={serverDraftOf(editing)}
            editing={editing}
            onDone={() => setEditing(undefined)}
          />
        )}
      <ErrorBox error={action.error ?? servers.error} />
      <DataTable
        testId="virtual-servers"
        columns={["Name", "MCP URL", "Tools", "Actions"]}
        rows={servers.data}
        empty="No virtual servers."
        rowKey={(s) => s.id}
      >
        {(s) => (
          <>
            <td>{s.name}</td>
            <td>
              <McpEndpoint path={`/servers/${s.name}/mcp`} name={s.name} testId={`mcp-url-${s.name}`} />
            </td>
            <td>{s.tools.join(", ")}</td>
            <td class="buttons">
              <RowButton verb="Edit" name={s.name} class="secondary" onClick={() => setEditing(s)} />
              <RowButton verb="Delete" name={s.name} class="danger" onClick={() => remove(s)} />
            </td>
          </>
        )}
      </DataTable>
    </Page>
  )
}
