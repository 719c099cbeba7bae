/** Settings: the effective configuration (secrets masked by the gateway) and write-only secrets. */
import { useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { refresh, useResource } from "../store.ts"
import { DataTable } from "../tables.tsx"
import { toast } from "../toast.tsx"
import { CardForm, ErrorBox, Page, TextField, time, useAction } from "../ui.tsx"

export const Settings = () => {
  const config = useResource("config", () => request<{ settings: Record<string, unknown> }>("GET", "config"))
  const secrets = useResource("secrets", () => listAll<any>("secrets"))
  const [name, setName] = useState("")
  const [value, setValue] = useState("")
  const action = useAction()
  const save = async (e: Event) => {
    e.preventDefault()
    const ok = await action.run(async () => {
      await request("PUT", `secrets/${encodeURIComponent(name)}`, { body: { value } })
      return true
    })
    if (ok === true) {
      toast("success", `Saved secret ${name}`)
      setValue("")
      refresh("secrets")
    } else toast("error", `Secret ${name} not saved: see the form`)
  }
  return (
    <Page title="Settings">
      <h2>Effective configuration</h2>
      <ErrorBox error={config.error} />
      <DataTable
        testId="config"
        columns={["Setting", "Value"]}
        rows={config.data === undefined ? undefined : Object.entries(config.data.settings)}
        rowKey={([k]) => k}
      >
        {([k, v]) => (
          <>
            <td>
              <code>{k}</code>
            </td>
            <td>
              <code>{typeof v === "string" ? v : JSON.stringify(v)}</code>
            </td>
          </>
        )}
      </DataTable>
      <h2>Secrets</h2>
      <p>Secret values are write-only: Janus never shows them again.</p>
      <CardForm
        label="Set a secret"
        heading={false}
        onSubmit={save}
        error={action.error}
        buttons={<button type="submit" disabled={action.busy}>Save secret</button>}
      >
        <TextField label="Secret name" value={name} onInput={setName} required />
        <TextField label="Secret value" value={value} onInput={setValue} type="password" required />
      </CardForm>
      <DataTable
        testId="secrets"
        columns={["Name", "Value", "Updated"]}
        rows={secrets.data}
        empty={null}
        rowKey={(s) => s.id}
      >
        {(s) => (
          <>
            <td>{s.name}</td>
            <td>••••••••</td>
            <td>{time(s.updatedAt)}</td>
          </>
        )}
      </DataTable>
    </Page>
  )
}
