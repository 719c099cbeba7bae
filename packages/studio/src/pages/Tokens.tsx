/** Client and admin tokens: create (the token is shown once), scopes, revoke. */
import { useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { refresh, useResource } from "../store.ts"
import { ErrorBox, Page, TextField, time, useAction } from "../ui.tsx"

const list = (s: string) => {
  const items = s.split(",").map((x) => x.trim()).filter((x) => x !== "")
  return items.length === 0 ? null : items
}

const ShownOnce = (props: { token: string; onClose: () => void }) => (
  <div class="card shown-once" role="alert">
    <h2>Copy this token now</h2>
    <p>It is shown once: Janus stores only its hash.</p>
    <pre data-testid="new-token" tabIndex={0}>{props.token}</pre>
    <div class="buttons">
      <button type="button" onClick={() => void navigator.clipboard?.writeText(props.token)}>Copy</button>
      <button type="button" class="secondary" onClick={props.onClose}>Done</button>
    </div>
  </div>
)

export const Tokens = () => {
  const clients = useResource("client-tokens", () => listAll<any>("client-tokens"))
  const admins = useResource("admin-tokens", () => listAll<any>("admin-tokens"))
  const [name, setName] = useState("")
  const [tools, setTools] = useState("")
  const [servers, setServers] = useState("")
  const [expires, setExpires] = useState("")
  const [adminName, setAdminName] = useState("")
  const [shown, setShown] = useState<string | undefined>(undefined)
  const action = useAction()
  const create = async (e: Event) => {
    e.preventDefault()
    const created = await action.run(() =>
      request("POST", "client-tokens", {
        body: {
          name,
          allowedTools: list(tools),
          allowedVirtualServers: list(servers),
          expiresAt: expires === "" ? null : new Date(expires).toISOString()
        }
      })
    )
    if (created !== undefined) {
      setShown(created.token)
      setName("")
      refresh("client-tokens")
    }
  }
  const createAdmin = async (e: Event) => {
    e.preventDefault()
    const created = await action.run(() => request("POST", "admin-tokens", { body: { name: adminName } }))
    if (created !== undefined) {
      setShown(created.token)
      setAdminName("")
      refresh("admin-tokens")
    }
  }
  const revoke = async (kind: string, t: any) => {
    if (!confirm(`Revoke ${t.name}? Calls with it are refused at once.`)) return
    await action.run(() => request("POST", `${kind}/${t.id}/revoke`))
    refresh(kind)
  }
  return (
    <Page title="Tokens">
      {shown !== undefined && <ShownOnce token={shown} onClose={() => setShown(undefined)} />}
      <ErrorBox error={action.error ?? clients.error} />
      <form class="card" onSubmit={create} aria-label="New client token">
        <h2>New client token</h2>
        <div class="grid">
          <TextField label="Name" value={name} onInput={setName} required />
          <TextField label="Allowed tools" value={tools} onInput={setTools} hint="Comma separated; empty: all tools" />
          <TextField
            label="Allowed virtual servers"
            value={servers}
            onInput={setServers}
            hint="Comma separated; empty: all"
          />
          <TextField label="Expires at" value={expires} onInput={setExpires} type="datetime-local" />
        </div>
        <div class="buttons">
          <button type="submit" disabled={action.busy}>Create client token</button>
        </div>
      </form>
      <h2>Client tokens</h2>
      {clients.data?.length === 0 && <p>No client tokens.</p>}
      {clients.data !== undefined && clients.data.length > 0 && (
        <table data-testid="client-tokens">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Scopes</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {clients.data.map((t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td>
                  <code>{t.prefix}…</code>
                </td>
                <td>
                  {t.allowedTools === null ? "all tools" : `tools: ${t.allowedTools.join(", ")}`}
                  {t.allowedVirtualServers !== null && `; servers: ${t.allowedVirtualServers.join(", ")}`}
                </td>
                <td>{time(t.expiresAt)}</td>
                <td>{time(t.lastUsedAt)}</td>
                <td>
                  <span class={`badge ${t.active ? "closed" : "open"}`}>
                    {t.revokedAt !== null ? "revoked" : t.active ? "active" : "expired"}
                  </span>
                </td>
                <td>
                  {t.revokedAt === null && (
                    <button
                      type="button"
                      class="danger"
                      onClick={() => revoke("client-tokens", t)}
                      aria-label={`Revoke ${t.name}`}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Admin tokens</h2>
      <form class="inline" onSubmit={createAdmin} aria-label="New admin token">
        <TextField label="Admin token name" value={adminName} onInput={setAdminName} required />
        <button type="submit" disabled={action.busy}>Create admin token</button>
      </form>
      {admins.data !== undefined && (
        <table data-testid="admin-tokens">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {admins.data.map((t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td>
                  <code>{t.prefix}…</code>
                </td>
                <td>{time(t.lastUsedAt)}</td>
                <td>{t.revokedAt === null ? "active" : "revoked"}</td>
                <td>
                  {t.revokedAt === null && (
                    <button
                      type="button"
                      class="danger"
                      onClick={() => revoke("admin-tokens", t)}
                      aria-label={`Revoke ${t.name}`}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  )
}
