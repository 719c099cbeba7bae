/** Connections: list with breaker health and upstream MCP state, create, edit, delete, test. */
import { useState } from "preact/hooks"
import { listAll, request } from "../api.ts"
import { parseBreakers } from "../breakers.ts"
import { useSecretNames } from "../pickers.tsx"
import { refresh, useResource } from "../store.ts"
import { confirmedDelete, DataTable, RowButton, useSave } from "../tables.tsx"
import { CardForm, ErrorBox, NAME_RULE, Page, SelectField, TextField, useAction, useDraft } from "../ui.tsx"

interface Draft {
  kind: string
  name: string
  description: string
  url: string
  /** mcp: streamable-http, sse or stdio */
  transport: string
  /** stdio: the program, then one argument per line */
  command: string
  args: string
  /** stdio: KEY=VALUE per line; KEY=secret:NAME gives the value of secret NAME */
  env: string
  cwd: string
  pollIntervalMs: string
  /** mcp: how upstream tool names are exposed: `<name>/` (default), a prefix of one's own, or none */
  prefixMode: string
  prefix: string
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
  transport: "streamable-http",
  command: "",
  args: "",
  env: "",
  cwd: "",
  pollIntervalMs: "30000",
  prefixMode: "default",
  prefix: "",
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
  url: c.kind === "rest" ? c.baseUrl : c.url ?? "",
  transport: c.transport ?? "streamable-http",
  command: c.command ?? "",
  args: (c.args ?? []).join("\n"),
  env: Object.entries(c.env ?? {}).map(([k, v]: [string, any]) =>
    typeof v === "string" ? `${k}=${v}` : `${k}=secret:${v.secret}`
  ).join("\n"),
  cwd: c.cwd ?? "",
  pollIntervalMs: String(c.pollIntervalMs ?? 30000),
  prefixMode: c.toolPrefix === null || c.toolPrefix === undefined ? "default" : c.toolPrefix === "" ? "none" : "custom",
  prefix: c.toolPrefix ?? "",
  scheme: c.auth?.scheme ?? "none",
  secret: c.auth?.secret ?? "",
  header: c.auth?.header ?? "",
  username: c.auth?.username ?? "",
  timeoutMs: String(c.timeoutMs ?? 30000),
  egress: (c.egressAllowList ?? []).join(", ")
})

const lines = (text: string) => text.split("\n").map((l) => l.trim()).filter((l) => l !== "")

/** `KEY=VALUE` lines; `KEY=secret:NAME` references a secret. */
const envOf = (text: string) => {
  const env: Record<string, string | { secret: string }> = {}
  for (const line of lines(text)) {
    const eq = line.indexOf("=")
    const key = eq === -1 ? line : line.slice(0, eq)
    const value = eq === -1 ? "" : line.slice(eq + 1)
    env[key] = value.startsWith("secret:") ? { secret: value.slice("secret:".length) } : value
  }
  return env
}

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
    ...(d.kind === "rest"
      ? { baseUrl: d.url }
      : d.transport === "stdio"
      ? {
        transport: "stdio",
        command: d.command,
        args: lines(d.args),
        env: envOf(d.env),
        cwd: d.cwd.trim() === "" ? null : d.cwd.trim()
      }
      : { url: d.url, transport: d.transport }),
    ...(d.kind === "mcp"
      ? {
        pollIntervalMs: Number(d.pollIntervalMs),
        toolPrefix: d.prefixMode === "default" ? null : d.prefixMode === "none" ? "" : d.prefix
      }
      : {}),
    auth,
    timeoutMs: Number(d.timeoutMs),
    egressAllowList: egress.length === 0 ? null : egress
  }
}

const ConnectionForm = (props: { initial: Draft; editing?: any; onDone: () => void }) => {
  const action = useSave("connections", props.editing)
  const secrets = useSecretNames()
  const { d, set, fieldError, bind } = useDraft(props.initial, action.error)
  const submit = async (e: Event) => {
    e.preventDefault()
    if (await action.save(() => bodyOf(d))) props.onDone()
  }
  return (
    <CardForm
      focus
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
      <TextField
        label="Name"
        {...bind("name")}
        required
        hint={NAME_RULE}
      />
      {d.kind === "mcp" && (
        <SelectField
          label="Transport"
          value={d.transport}
          options={[
            ["streamable-http", "Streamable HTTP"],
            ["sse", "HTTP+SSE (deprecated)"],
            ["stdio", "stdio (a program Janus runs)"]
          ]}
          onChange={set("transport")}
        />
      )}
      {d.kind === "mcp" && d.transport === "stdio"
        ? (
          <>
            <TextField
              label="Command"
              {...bind("command")}
              required
              hint="An executable on the gateway's PATH or an absolute path, allowed by JANUS_STDIO_COMMANDS"
            />
            <TextField
              label="Arguments"
              {...bind("args")}
              multiline
              rows={3}
              hint="One per line"
            />
            <TextField
              label="Environment"
              {...bind("env")}
              multiline
              rows={3}
              hint="KEY=VALUE per line; KEY=secret:NAME passes the value of secret NAME"
            />
            <TextField label="Working directory" {...bind("cwd")} />
          </>
        )
        : (
          <TextField
            label={d.kind === "rest" ? "Base URL" : "MCP server URL"}
            {...bind("url", d.kind === "rest" ? "baseUrl" : "url")}
            required
            type="url"
          />
        )}
      {d.kind === "mcp" && (
        <TextField
          label="Poll interval (ms)"
          {...bind("pollIntervalMs")}
          type="number"
          hint="How often lists are fetched again while the server offers no working change notifications"
        />
      )}
      {d.kind === "mcp" && (
        <SelectField
          label="Tool naming"
          value={d.prefixMode}
          options={[
            ["default", `Prefixed with ${d.name === "" ? "<name>" : d.name}/ (default)`],
            ["custom", "Prefixed with a prefix of my own"],
            ["none", "No prefix (names must not clash with other tools)"]
          ]}
          onChange={set("prefixMode")}
          hint="How clients see this server's tools"
        />
      )}
      {d.kind === "mcp" && d.prefixMode === "custom" && (
        <TextField
          label="Tool prefix"
          {...bind("prefix", "toolPrefix")}
          required
          hint="Put before each upstream tool's name, e.g. gh_ or github."
        />
      )}
      <TextField label="Description" value={d.description} onInput={set("description")} />
      <SelectField
        label="Auth scheme"
        value={d.scheme}
        options={["none", "bearer", "header", "basic"]}
        onChange={set("scheme")}
      />
      {d.scheme !== "none" && (
        <SelectField
          label="Secret"
          value={d.secret}
          options={[
            ["", "(choose a secret)"],
            ...secrets.map((n) => [n, n] as const),
            ...(d.secret !== "" && !secrets.includes(d.secret) ? [[d.secret, `${d.secret} (not found)`] as const] : [])
          ]}
          onChange={set("secret")}
          hint={secrets.length === 0
            ? "No secrets yet: add one under Settings first (the credential is sent from it)"
            : "The credential sent upstream; secrets are set under Settings"}
          error={fieldError("auth")}
        />
      )}
      {d.scheme === "header" && <TextField label="Header name" value={d.header} onInput={set("header")} />}
      {d.scheme === "basic" && <TextField label="Username" value={d.username} onInput={set("username")} />}
      <TextField
        label="Timeout (ms)"
        {...bind("timeoutMs")}
        type="number"
      />
      <TextField
        label="Egress allow-list"
        {...bind("egress", "egressAllowList")}
        hint="Hosts, .suffixes or CIDRs, comma separated; empty uses the global policy"
      />
    </CardForm>
  )
}

interface TestResult {
  readonly ok: boolean
  readonly detail: string
  /** The HTTP status a REST base URL answered. */
  readonly status?: number
}

/** A test's verdict, coloured: an answer of 4xx or 5xx is reachable, but not a success. */
const TestOutcome = (props: { result: TestResult | "running"; name: string }) => {
  const r = props.result
  const [tone, word] = r === "running"
    ? ["", "Testing…"]
    : !r.ok
    ? ["bad", "Failed"]
    : r.status !== undefined && r.status >= 400
    ? ["warn", "Reachable, but not a success"]
    : ["good", "OK"]
  return (
    <div role="status" data-testid={`test-${props.name}`} class={`outcome ${tone}`} data-outcome={tone}>
      {r === "running" ? word : `${word}: ${tone === "warn" ? r.detail.replace(/^reachable: /, "") : r.detail}`}
    </div>
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
  const [tests, setTests] = useState<Record<string, TestResult | "running">>({})
  const action = useAction()
  const stateOf = (name: string) => breakers.data?.find((b: any) => b.connection === name)?.state ?? "closed"
  const remove = (c: any) => confirmedDelete(action, `Delete connection ${c.name} and its endpoints?`, "connections", c)
  const upstreamOf = (c: any) => upstreams.data?.items.find((u) => u.connectionId === c.id)
  const test = async (c: any) => {
    setTests((t) => ({ ...t, [c.id]: "running" }))
    const result = await request<TestResult>("POST", `connections/${c.id}/test`).catch((
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
              <code>
                {c.kind === "rest" ? c.baseUrl : c.transport === "stdio" ? [c.command, ...c.args].join(" ") : c.url}
              </code>
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
                  {upstreamOf(c)?.promptCount > 0 && ` · ${upstreamOf(c).promptCount} prompt(s)`}
                  {upstreamOf(c)?.resourceCount > 0 && ` · ${upstreamOf(c).resourceCount} resource(s)`}
                  {upstreamOf(c)?.pid != null && ` · pid ${upstreamOf(c).pid}`}
                  {upstreamOf(c)?.collisions?.length > 0 && (
                    <div class="hint" data-testid={`collisions-${c.name}`}>
                      shares{" "}
                      {upstreamOf(c).collisions.map((x: { kind: string; name: string; view: string }) =>
                        `${x.kind} ${x.name} (${x.view})`
                      ).join(", ")} with another upstream: see /api/v1/upstreams
                    </div>
                  )}
                  {upstreamOf(c)?.changeChannel === "closed" && (
                    <div class="hint" data-testid={`channel-${c.name}`}>
                      changes polled every {upstreamOf(c).pollIntervalMs / 1000} s ({upstreamOf(c).changeChannelDetail})
                    </div>
                  )}
                  {upstreamOf(c)?.state === "unhealthy" && upstreamOf(c)?.lastError != null && (
                    <div class="error" data-testid={`upstream-error-${c.name}`}>{upstreamOf(c).lastError}</div>
                  )}
                </div>
              )}
              {tests[c.id] !== undefined && <TestOutcome result={tests[c.id]!} name={c.name} />}
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
