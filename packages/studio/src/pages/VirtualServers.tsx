/** Virtual servers: named subsets of tools, each at /servers/{name}/mcp. */
import { useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { refresh, useResource } from "../store.ts"
import { ErrorBox, Page, TextField, useAction } from "../ui.tsx"

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
  const remove = async (s: any) => {
    if (!confirm(`Delete virtual server ${s.name}?`)) return
    await action.run(() => request("DELETE", `virtual-servers/${s.id}`, { headers: { "if-match": `"${s.version}"` } }))
    refresh("virtual-servers")
  }
  return (
    <Page title="Virtual servers">
      <form class="card" onSubmit={create} aria-label="New virtual server">
        <h2>New virtual server</h2>
        <div class="grid">
          <TextField label="Name" value={name} onInput={setName} required />
          <TextField label="Description" value={description} onInput={setDescription} />
          <TextField label="Tools" value={tools} onInput={setTools} hint="Tool names, comma separated" />
        </div>
        <div class="buttons">
          <button type="submit" disabled={action.busy}>Create virtual server</button>
        </div>
      </form>
      <ErrorBox error={action.error ?? servers.error} />
      {servers.data?.length === 0 && <p>No virtual servers.</p>}
      {servers.data !== undefined && servers.data.length > 0 && (
        <table data-testid="virtual-servers">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">MCP URL</th>
              <th scope="col">Tools</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {servers.data.map((s) => (
              <tr key={s.id}>
                <td>{s.name}</td>
                <td>
                  <code>/servers/{s.name}/mcp</code>
                </td>
                <td>{s.tools.join(", ")}</td>
                <td>
                  <button type="button" class="danger" onClick={() => remove(s)} aria-label={`Delete ${s.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  )
}
