/** Settings: the effective configuration (secrets masked by the gateway) and write-only secrets. */
import { useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { refresh, useResource } from "../store.ts"
import { confirmedWrite, DataTable, RowButton } from "../tables.tsx"
import { toast } from "../toast.tsx"
import { CardForm, ErrorBox, NAME_RULE, Page, TextField, time, useAction } from "../ui.tsx"

export const Settings = () => {
  const config = useResource(
    "config",
    () =>
      request<{ variables: Array<{ name: string; value: unknown; description: string; source: string }> }>(
        "GET",
        "config"
      )
  )
  const secrets = useResource("secrets", () => listAll<any>("secrets"))
  const [name, setName] = useState("")
  const [value, setValue] = useState("")
  const action = useAction()
  const remove = (secret: { name: string; version: number }) =>
    confirmedWrite(
      action,
      `Delete secret ${secret.name}? Connections that use it fail until it is set again.`,
      "secrets",
      () =>
        request("DELETE", `secrets/${encodeURIComponent(secret.name)}`, {
          headers: { "if-match": `"${secret.version}"` }
        }),
      `Deleted secret ${secret.name}`
    )
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
      <p class="hint">
        Each environment variable Janus read at start: its value (secrets hidden), where it came from, and what it does.
      </p>
      <DataTable
        testId="config"
        columns={["Variable", "Value", "Source", "Meaning"]}
        rows={config.data?.variables}
        rowKey={(v) => v.name}
      >
        {(v) => (
          <>
            <td>
              <code>{v.name}</code>
            </td>
            <td>
              {v.value === null || v.value === "" ? <span class="hint">(unset)</span> : <code>{String(v.value)}</code>}
            </td>
            <td>
              <span class={`badge source-${v.source.replace(" ", "-")}`}>{v.source}</span>
            </td>
            <td class="meaning">{v.description}</td>
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
        <TextField label="Secret name" value={name} onInput={setName} required hint={NAME_RULE} />
        <TextField label="Secret value" value={value} onInput={setValue} type="password" required />
      </CardForm>
      <DataTable
        testId="secrets"
        columns={["Name", "Value", "Updated", "Actions"]}
        rows={secrets.data}
        empty="No secrets yet."
        rowKey={(s) => s.id ?? s.name}
      >
        {(s) => (
          <>
            <td>{s.name}</td>
            <td>••••••••</td>
            <td>{time(s.updatedAt)}</td>
            <td class="buttons">
              <RowButton verb="Delete" name={s.name} class="danger" onClick={() => remove(s)} />
            </td>
          </>
        )}
      </DataTable>
    </Page>
  )
}
