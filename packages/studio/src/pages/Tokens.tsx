/** Client and admin tokens: create (the token is shown once), scopes, revoke. */
import { useLayoutEffect, useRef, useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { MultiPick, useServerNames, useToolNames } from "../pickers.tsx"
import { refresh, useResource } from "../store.ts"
import { confirmedWrite, DataTable, RowButton } from "../tables.tsx"
import { toast } from "../toast.tsx"
import { rememberClientToken } from "../tryToken.tsx"
import { CardForm, CopyButton, ErrorBox, Page, TextField, time, useAction } from "../ui.tsx"

const list = (items: ReadonlyArray<string>) => items.length === 0 ? null : items

const ShownOnce = (props: { token: string; onClose: () => void }) => {
  const pre = useRef<HTMLPreElement>(null)
  useLayoutEffect(() => {
    pre.current?.scrollIntoView({ block: "center" })
    pre.current?.focus()
  }, [props.token])
  return (
    <div class="card shown-once" role="alert">
      <h2>Copy this token now</h2>
      <p>It is shown once: Janus stores only its hash.</p>
      <pre data-testid="new-token" tabIndex={0} ref={pre}>{props.token}</pre>
      <div class="buttons">
        <CopyButton text={props.token} label="Copy token" />
        <button type="button" class="secondary" onClick={props.onClose}>Done</button>
      </div>
    </div>
  )
}

/** A token's name and the prefix it is recognised by (the rest is never shown again). */
const TokenNameCells = (props: { token: any }) => (
  <>
    <td>{props.token.name}</td>
    <td>
      <code>{props.token.prefix}…</code>
    </td>
  </>
)

export const Tokens = () => {
  const clients = useResource("client-tokens", () => listAll<any>("client-tokens"))
  const admins = useResource("admin-tokens", () => listAll<any>("admin-tokens"))
  const [name, setName] = useState("")
  const [tools, setTools] = useState<Array<string>>([])
  const [servers, setServers] = useState<Array<string>>([])
  const toolNames = useToolNames()
  const serverNames = useServerNames()
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
    if (created === undefined) toast("error", "Client token not created: see the message above the form")
    else {
      toast("success", `Created client token ${name}`)
      rememberClientToken(name, created.token)
      setShown(created.token)
      setName("")
      setTools([])
      setServers([])
      refresh("client-tokens")
    }
  }
  const createAdmin = async (e: Event) => {
    e.preventDefault()
    const created = await action.run(() => request("POST", "admin-tokens", { body: { name: adminName } }))
    if (created !== undefined) {
      toast("success", `Created admin token ${adminName}`)
      setShown(created.token)
      setAdminName("")
      refresh("admin-tokens")
    }
  }
  const revoke = (kind: string, t: any) =>
    confirmedWrite(
      action,
      `Revoke ${t.name}? Calls with it are refused at once.`,
      kind,
      () => request("POST", `${kind}/${t.id}/revoke`),
      `Revoked ${t.name}`
    )
  const revokeButton = (kind: string, t: any) =>
    t.revokedAt === null && <RowButton verb="Revoke" name={t.name} class="danger" onClick={() => revoke(kind, t)} />
  // what a client token is limited to: label, choices, chosen, setter, what none chosen means, test id
  const scopes = [
    ["Allowed tools", toolNames, tools, setTools, "tool", "token-tools"],
    ["Allowed virtual servers", serverNames, servers, setServers, "virtual server", "token-servers"]
  ] as const
  return (
    <Page title="Tokens">
      {shown !== undefined && <ShownOnce token={shown} onClose={() => setShown(undefined)} />}
      <ErrorBox error={action.error ?? clients.error} />
      <CardForm
        label="New client token"
        onSubmit={create}
        buttons={<button type="submit" disabled={action.busy}>Create client token</button>}
      >
        <TextField
          label="Name"
          value={name}
          onInput={setName}
          required
          hint="Any text up to 128 characters; shown in the audit log"
        />
        {scopes.map(([label, options, value, onChange, every, testId]) => (
          <MultiPick
            key={testId}
            label={label}
            options={options}
            value={value}
            onChange={onChange}
            hint={`None chosen: every ${every}`}
            testId={testId}
          />
        ))}
        <TextField
          label="Expires at"
          value={expires}
          onInput={setExpires}
          type="datetime-local"
          hint="Empty: never expires"
        />
      </CardForm>
      <h2>Client tokens</h2>
      <DataTable
        testId="client-tokens"
        columns={["Name", "Prefix", "Scopes", "Expires", "Last used", "State", "Actions"]}
        rows={clients.data}
        empty="No client tokens."
        rowKey={(t) => t.id}
      >
        {(t) => (
          <>
            <TokenNameCells token={t} />
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
              {revokeButton("client-tokens", t)}
            </td>
          </>
        )}
      </DataTable>
      <h2>Admin tokens</h2>
      <form class="inline" onSubmit={createAdmin} aria-label="New admin token">
        <TextField label="Admin token name" value={adminName} onInput={setAdminName} required />
        <button type="submit" disabled={action.busy}>Create admin token</button>
      </form>
      <DataTable
        testId="admin-tokens"
        columns={["Name", "Prefix", "Last used", "State", "Actions"]}
        rows={admins.data}
        rowKey={(t) => t.id}
      >
        {(t) => (
          <>
            <TokenNameCells token={t} />
            <td>{time(t.lastUsedAt)}</td>
            <td>{t.revokedAt === null ? "active" : "revoked"}</td>
            <td>
              {revokeButton("admin-tokens", t)}
            </td>
          </>
        )}
      </DataTable>
    </Page>
  )
}
