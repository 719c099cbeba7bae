/** Virtual servers: named subsets of tools, each at /servers/{name}/mcp. */
import { useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { refresh, useResource } from "../store.ts"
import { confirmedDelete, DataTable, RowButton } from "../tables.tsx"
import { CardForm, ErrorBox, Page, TextField, useAction } from "../ui.tsx"

export const VirtualServers = () => {
  const servers = useResource("virtual-servers", () => listAll<any>("virtual-servers"))
  const [name, setName] = useState("")
  const [description, setDescription] = useState("")
  const [tools, setTools] = useState("")
  const action = useAction()
  const create = async (e: Event) => {
    e.preventDefault()
    const ok = await action.run(() =>
      request("POST", "virtual-servers", {
        body: { name, description, tools: tools.split(",").map((t) => t.trim()).filter((t) => t !== "") }
      })
    )
    if (ok !== undefined) {
      setName("")
      setTools("")
      setDescription("")
      refresh("virtual-servers")
    }
  }
  const remove = (s: any) => confirmedDelete(action, `Delete virtual server ${s.name}?`, "virtual-servers", s)
  return (
    <Page title="Virtual servers">
      <CardForm
        label="New virtual server"
        onSubmit={create}
        buttons={<button type="submit" disabled={action.busy}>Create virtual server</button>}
      >
        <TextField label="Name" value={name} onInput={setName} required />
        <TextField label="Description" value={description} onInput={setDescription} />
        <TextField label="Tools" value={tools} onInput={setTools} hint="Tool names, comma separated" />
      </CardForm>
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
              <code>/servers/{s.name}/mcp</code>
            </td>
            <td>{s.tools.join(", ")}</td>
            <td>
              <RowButton verb="Delete" name={s.name} class="danger" onClick={() => remove(s)} />
            </td>
          </>
        )}
      </DataTable>
    </Page>
  )
}
