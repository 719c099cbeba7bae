/** Connections: list with breaker health and upstream MCP state, create, edit, delete, test. */
import { useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { parseBreakers } from "../breakers.ts"
import { refresh, useResource } from "../store.ts"
import { confirmedDelete, DataTable, RowButton } from "../tables.tsx"
import { CardForm, ErrorBox, Page, SelectField, TextField, useAction } from "../ui.tsx"

interface Draft {
  kind: string
  name: string
  description: string
  url: string
  scheme: string
  secret: string
  header: string
  username: string
  timeoutMs: string
  egress: string
}

const emptyDraft: Draft = {
  kind: "rest",
  name: "",
  description: "",
  url: "",
  scheme: "none",
  secret: "",
  header: "",
  username: "",
  timeoutMs: "30000",
  egress: ""
}

const draftOf = (c: any): Draft => ({
  kind: c.kind,
  name: c.name,
  description: c.description ?? "",
  url: c.kind === "rest" ? c.baseUrl : c.url,
  scheme: c.auth?.scheme ?? "none",
  secret: c.auth?.secret ?? "",
  header: c.auth?.header ?? "",
  username: c.auth?.username ?? "",
  timeoutMs: String(c.timeoutMs ?? 30000),
  egress: (c.egressAllowList ?? []).join(", ")
})

const bodyOf = (d: Draft) => {
  const auth = d.scheme === "none"
    ? { scheme: "none" }
    : d.scheme === "bearer"
    ? { scheme: "bearer", secret: d.secret }
    : d.scheme === "header"
    ? { scheme: "header", header: d.header, secret: d.secret }
    : { scheme: "basic", username: d.username, secret: d.secret }
  const egress = d.egress.split(",").map((s) => s.trim()).filter((s) => s !== "")
  return {
    kind: d.kind,
    name: d.name,
    description: d.description,
    ...(d.kind === "rest" ? { baseUrl: d.url } : { url: d.url }),
    auth,
    timeoutMs: Number(d.timeoutMs),
    egressAllowList: egress.length === 0 ? null : egress
  }
}

const ConnectionForm = (props: { initial: Draft; editing?: any; onDone: () => void }) => {
  const [d, setD] = useState(props.initial)
  const action = useAction()
  const set = (k: keyof Draft) => (v: string) => setD({ ...d, [k]: v })
  const fieldError = (path: string) =>
    (action.error as any)?.fields?.find((f: any) => f.path === path || f.path.startsWith(`${path}.`))?.message
  const submit = async (e: Event) => {
    e.preventDefault()
    const ok = await action.run(() =>
      props.editing === undefined
        ? request("POST", "connections", { body: bodyOf(d) })
        : request("PUT", `connections/${props.editing.id}`, {
          body: bodyOf(d),
          headers: { "if-match": `"${props.editing.version}"` }
        })
    )
    if (ok !== undefined) {
      refresh("connections")
      props.onDone()
    }
  }
  return (
    <CardForm
      label={props.editing ? `Edit ${props.editing.name}` : "New connection"}
      onSubmit={submit}
      error={action.error}
      buttons={
        <>
          <button type="submit" disabled={action.busy}>{props.editing ? "Save" : "Create connection"}</button>
          <button type="button" class="secondary" onClick={props.onDone}>Cancel</button>
        </>
      }
    >
      <SelectField
        label="Kind"
        value={d.kind}
        options={[["rest", "REST API"], ["mcp", "Upstream MCP server"]]}
        onChange={set("kind")}
      />
      <TextField label="Name" value={d.name} onInput={set("name")} required error={fieldError("name")} />
      <TextField
        label={d.kind === "rest" ? "Base URL" : "MCP server URL"}
        value={d.url}
        onInput={set("url")}
        required
        type="url"
        error={fieldError(d.kind === "rest" ? "baseUrl" : "url")}
      />
      <TextField label="Description" value={d.description} onInput={set("description")} />
      <SelectField
        label="Auth scheme"
        value={d.scheme}
        options={["none", "bearer", "header", "basic"]}
        onChange={set("scheme")}
      />
      {d.scheme !== "none" && (
        <TextField label="Secret name" value={d.secret} onInput={set("secret")} error={fieldError("auth")} />
      )}
      {d.scheme === "header" && <TextField label="Header name" value={d.header} onInput={set("header")} />}
      {d.scheme === "basic" && <TextField label="Username" value={d.username} onInput={set("username")} />}
      <TextField
        label="Timeout (ms)"
        value={d.timeoutMs}
        onInput={set("timeoutMs")}
        type="number"
        error={fieldError("timeoutMs")}
      />
      <TextField
        label="Egress allow-list"
        value={d.egress}
        onInput={set("egress")}
        hint="Hosts, .suffixes or CIDRs, comma separated; empty uses the global policy"
        error={fieldError("egressAllowList")}
      />
    </CardForm>
  )
}

export const Connections = () => {
  const connections = useResource("connections", () => listAll<any>("connections"))
  const breakers = useResource("breakers", async () => {
    const text = await fetch("/metrics", { cache: "no-store" }).then((r) => r.text())
    return parseBreakers(text)
  })
  const upstreams = useResource("upstreams", () => request<{ items: Array<any> }>("GET", "upstreams"))
  const [editing, setEditing] = useState<any | "new" | undefined>(undefined)
  const [tests, setTests] = useState<Record<string, { ok: boolean; detail: string } | "running">>({})
  const action = useAction()
  const stateOf = (name: string) => breakers.data?.find((b: any) => b.connection === name)?.state ?? "closed"
  const remove = (c: any) => confirmedDelete(action, `Delete connection ${c.name} and its endpoints?`, "connections", c)
  const upstreamOf = (c: any) => upstreams.data?.items.find((u) => u.connectionId === c.id)
  const test = async (c: any) => {
    setTests((t) => ({ ...t, [c.id]: "running" }))
    const result = await request<{ ok: boolean; detail: string }>("POST", `connections/${c.id}/test`).catch((
      e: Error
    ) => ({ ok: false, detail: e.message }))
    setTests((t) => ({ ...t, [c.id]: result }))
    if (c.kind === "mcp") refresh("upstreams")
  }
  return (
    <Page
      title="Connections"
      actions={<button type="button" onClick={() => setEditing("new")}>New connection</button>}
    >
      {editing !== undefined && (
        <ConnectionForm
          key={editing === "new" ? "new" : editing.id}
          initial={editing === "new" ? emptyDraft : draftOf(editing)}
          editing={editing === "new" ? undefined : editing}
          onDone={() => setEditing(undefined)}
        />
      )}
      <ErrorBox error={connections.error ?? action.error} />
      <DataTable
        testId="connections"
        columns={["Name", "Kind", "URL", "Auth", "Health", "Actions"]}
        rows={connections.data}
        empty="No connections yet."
        rowKey={(c) => c.id}
      >
        {(c) => (
          <>
            <td>{c.name}</td>
            <td>{c.kind === "mcp" ? `mcp (${c.transport})` : "rest"}</td>
            <td>
              <code>{c.kind === "rest" ? c.baseUrl : c.url}</code>
            </td>
            <td>{c.auth.scheme}</td>
            <td>
              <span class={`badge ${stateOf(c.name)}`}>breaker {stateOf(c.name)}</span>
              {c.kind === "mcp" && (
                <div>
                  <span class={`badge ${upstreamOf(c)?.state === "healthy" ? "closed" : "open"}`}>
                    upstream {upstreamOf(c)?.state ?? "unknown"}
                  </span>
                  {upstreamOf(c)?.toolCount !== undefined && ` ${upstreamOf(c).toolCount} tool(s)`}
                </div>
              )}
              {tests[c.id] !== undefined && (
                <div role="status" data-testid={`test-${c.name}`}>
                  {tests[c.id] === "running"
                    ? "Testing…"
                    : `${(tests[c.id] as any).ok ? "OK" : "Failed"}: ${(tests[c.id] as any).detail}`}
                </div>
              )}
            </td>
            <td class="buttons">
              <RowButton verb="Test" name={c.name} class="secondary" onClick={() => test(c)} />
              <RowButton verb="Edit" name={c.name} class="secondary" onClick={() => setEditing(c)} />
              <RowButton verb="Delete" name={c.name} class="danger" onClick={() => remove(c)} />
            </td>
          </>
        )}
      </DataTable>
    </Page>
  )
}
