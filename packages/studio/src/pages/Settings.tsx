/** Settings: the effective configuration (secrets masked by the gateway) and write-only secrets. */
import { useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { refresh, useResource } from "../store.ts"
import { ErrorBox, Page, TextField, time, useAction } from "../ui.tsx"

export const Settings = () => {
  const config = useResource("config", () => request<{ settings: Record<string, unknown> }>("GET", "config"))
  const secrets = useResource("secrets", () => listAll<any>("secrets"))
  const [name, setName] = useState("")
  const [value, setValue] = useState("")
  const action = useAction()
  const save = async (e: Event) => {
    e.preventDefault()
    const ok = await action.run(() => request("PUT", `secrets/${encodeURIComponent(name)}`, { body: { value } }))
    if (ok !== undefined || action.error === undefined) {
      setValue("")
      refresh("secrets")
    }
  }
  return (
    <Page title="Settings">
      <h2>Effective configuration</h2>
      <ErrorBox error={config.error} />
      {config.data !== undefined && (
        <table data-testid="config">
          <thead>
            <tr>
              <th scope="col">Setting</th>
              <th scope="col">Value</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(config.data.settings).map(([k, v]) => (
              <tr key={k}>
                <td>
                  <code>{k}</code>
                </td>
                <td>
                  <code>{typeof v === "string" ? v : JSON.stringify(v)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Secrets</h2>
      <p>Secret values are write-only: Janus never shows them again.</p>
      <form class="card" onSubmit={save} aria-label="Set a secret">
        <div class="grid">
          <TextField label="Secret name" value={name} onInput={setName} required />
          <TextField label="Secret value" value={value} onInput={setValue} type="password" required />
        </div>
        <ErrorBox error={action.error} />
        <div class="buttons">
          <button type="submit" disabled={action.busy}>Save secret</button>
        </div>
      </form>
      {secrets.data !== undefined && secrets.data.length > 0 && (
        <table data-testid="secrets">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Value</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {secrets.data.map((s) => (
              <tr key={s.id}>
                <td>{s.name}</td>
                <td>••••••••</td>
                <td>{time(s.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  )
}
