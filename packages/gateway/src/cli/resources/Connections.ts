/**
 * `janus connection add|list|remove`: REST APIs, upstream MCP servers over
 * HTTP, and MCP servers Janus runs itself (stdio).
 *
 * **Rules**
 *
 * - `connection add` takes exactly one of `--base-url` (REST), `--mcp-url`
 *   (MCP over HTTP) or `--stdio -- PROGRAM ARGS`; a flag that does not apply
 *   to the chosen kind is refused, naming it (`--transport`, `--tool-prefix`
 *   with MCP only; `--env`, `--env-secret`, `--cwd` and a program with stdio
 *   only; `--auth oauth` with `--mcp-url` only).
 * - A credential is never given on the command line: `--auth` names a secret
 *   (`--secret NAME`, set with `janus secret set`), and a stdio program gets
 *   its credential as `--env-secret KEY=SECRET_NAME`. A secret not set yet is
 *   a note on stderr, not an error.
 * - `--allow` entries are checked with the egress allow-list's own parser.
 * - Names are unique: adding an existing name is refused; `remove` deletes
 *   the connection and its endpoints.
 * - `--json` prints machine-readable output on stdout; progress and notes go
 *   to stderr.
 *
 * @since 0.1.0
 */
import { type ConnectionAuth, Connections, type McpConnectionAuth, Secrets } from "@janus/storage"
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Egress from "../../egress/index.ts"
import { handled, json, printJson, progress, splitList } from "../Support.ts"
import { checkHttpUrl, fail, optional, stored, withStorage } from "./Resource.ts"

/** The connections, once none is named `name` (names are unique). */
const unusedName = (name: string) =>
  Effect.gen(function*() {
    const connections = yield* Connections
    if (Option.isSome(yield* connections.findByName(name))) {
      return yield* fail(
        `a connection named ${name} already exists`,
        `choose another name, or remove it first with \`janus connection remove ${name}\``
      )
    }
    return connections
  })

/** `connection add NAME --stdio [--env K=V] [--env-secret K=SECRET] [--cwd DIR] -- PROGRAM ARGS`. */
const addStdio = (input: {
  readonly name: string
  readonly description: string
  readonly baseUrl: Option.Option<string>
  readonly mcpUrl: Option.Option<string>
  readonly transport: Option.Option<string>
  readonly auth: string
  readonly toolPrefix: Option.Option<string>
  readonly env: Option.Option<Record<string, string>>
  readonly envSecret: Option.Option<Record<string, string>>
  readonly cwd: Option.Option<string>
  readonly pollInterval: Option.Option<number>
  readonly program: ReadonlyArray<string>
  readonly json: boolean
}) =>
  Effect.gen(function*() {
    for (
      const [flag, given] of [["--base-url", input.baseUrl], ["--mcp-url", input.mcpUrl], [
        "--transport",
        input.transport
      ]] as const
    ) {
      if (Option.isSome(given)) return yield* fail(`${flag} cannot be used with --stdio`, "a stdio upstream has no URL")
    }
    if (input.auth !== "none") {
      return yield* fail(
        `--auth ${input.auth} cannot be used with --stdio`,
        "give the program its credential with --env-secret KEY=SECRET_NAME"
      )
    }
    const [command, ...args] = input.program
    if (command === undefined) {
      return yield* fail(
        "--stdio needs a program",
        "put it after --, e.g. `--stdio -- npx -y @modelcontextprotocol/server-memory`"
      )
    }
    const env: Record<string, string | { readonly secret: string }> = { ...Option.getOrElse(input.env, () => ({})) }
    for (const [key, secret] of Object.entries(Option.getOrElse(input.envSecret, () => ({})))) env[key] = { secret }
    return yield* stored(Effect.gen(function*() {
      const connections = yield* unusedName(input.name)
      const created = yield* connections.create({
        kind: "mcp",
        transport: "stdio",
        name: input.name,
        description: input.description,
        command,
        args,
        env,
        cwd: Option.getOrNull(input.cwd),
        toolPrefix: Option.getOrNull(input.toolPrefix),
        ...(Option.isSome(input.pollInterval) ? { pollIntervalMs: input.pollInterval.value } : {})
      })
      if (input.json) return yield* printJson(connectionView(created))
      yield* Console.log(
        `Added stdio MCP connection ${created.name} (id ${created.id}): ${[command, ...args].join(" ").slice(0, 200)}` +
          (created.kind === "mcp" ? ` (tools as ${created.toolPrefix ?? `${created.name}/`}<tool>)` : "")
      )
    }))
  })

const connectionAdd = Command.make("add", {
  name: Argument.String("name").pipe(Argument.withDescription("Connection name (letters, digits, _ . -)")),
  baseUrl: optional(
    Flag.String("base-url"),
    "A REST API's base URL, e.g. https://api.example.com (its endpoints become tools)"
  ),
  mcpUrl: optional(
    Flag.String("mcp-url"),
    "An upstream MCP server's endpoint, e.g. https://mcp.example.com/mcp (its tools are federated)"
  ),
  transport: optional(
    Flag.Literals("transport", ["streamable-http", "sse"]),
    "With --mcp-url: the upstream's transport"
  ),
  stdio: Flag.Boolean("stdio").pipe(
    Flag.withDescription(
      "An upstream MCP server Janus runs: give its program after --, e.g. `--stdio -- npx -y @modelcontextprotocol/server-memory` (allowed by JANUS_STDIO_COMMANDS)"
    ),
    Flag.withDefault(false)
  ),
  env: optional(
    Flag.KeyValuePair("env"),
    "With --stdio: an environment variable of the program, KEY=VALUE (repeatable)"
  ),
  envSecret: optional(
    Flag.KeyValuePair("env-secret"),
    "With --stdio: an environment variable whose value is a secret, KEY=SECRET_NAME (repeatable)"
  ),
  cwd: optional(Flag.String("cwd"), "With --stdio: the program's working directory"),
  pollInterval: optional(
    Flag.Int("poll-interval"),
    "MCP connections: ms between list fetches while the upstream offers no change channel"
  ),
  program: Argument.String("program").pipe(
    Argument.withDescription("With --stdio, after --: the program and its arguments"),
    Argument.variadic()
  ),
  toolPrefix: optional(
    Flag.String("tool-prefix"),
    "With --mcp-url: put in front of every upstream tool name (default NAME/; \"\" for none)"
  ),
  auth: Flag.Literals("auth", ["none", "bearer", "header", "basic", "oauth"]).pipe(
    Flag.withDescription("How Janus authenticates to the API or server (oauth: client credentials, --mcp-url only)"),
    Flag.withDefault("none")
  ),
  secret: optional(
    Flag.String("secret"),
    "Name of the secret holding the credential or client secret (`janus secret set NAME`)"
  ),
  header: optional(Flag.String("header"), "Header name for --auth header"),
  username: optional(Flag.String("username"), "User name for --auth basic"),
  tokenUrl: optional(Flag.String("token-url"), "Token endpoint for --auth oauth"),
  clientId: optional(Flag.String("client-id"), "Client id for --auth oauth"),
  scope: optional(Flag.String("scope"), "Scope to ask for with --auth oauth"),
  allow: optional(
    Flag.String("allow"),
    "Egress allow-list (private addresses): comma-separated IP addresses, CIDRs, hosts or .suffixes, each with an optional :port"
  ),
  description: Flag.String("description").pipe(Flag.withDefault("")),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    if (input.stdio) return yield* addStdio(input)
    for (
      const [flag, given] of [
        ["--env", Option.isSome(input.env)],
        ["--env-secret", Option.isSome(input.envSecret)],
        ["--cwd", Option.isSome(input.cwd)]
      ] as const
    ) {
      if (given) return yield* fail(`${flag} applies to --stdio connections only`, "use it with --stdio")
    }
    if (input.program.length > 0) {
      return yield* fail(
        `unexpected arguments: ${input.program.join(" ").slice(0, 100)}`,
        "a program (after --) is given with --stdio only"
      )
    }
    if (Option.isSome(input.baseUrl) === Option.isSome(input.mcpUrl)) {
      return yield* fail(
        Option.isSome(input.baseUrl) ? "--base-url and --mcp-url cannot be used together" : "no URL given",
        "give --base-url URL for a REST API, --mcp-url URL for an upstream MCP server, or --stdio -- PROGRAM ARGS"
      )
    }
    const mcp = Option.isSome(input.mcpUrl)
    const rawUrl = Option.getOrElse(Option.orElse(input.mcpUrl, () => input.baseUrl), () => "")
    if (!mcp) {
      for (const [flag, given] of [["--transport", input.transport], ["--tool-prefix", input.toolPrefix]] as const) {
        if (Option.isSome(given)) return yield* fail(`${flag} applies to MCP connections only`, "use it with --mcp-url")
      }
    }
    const url = yield* checkHttpUrl(mcp ? "--mcp-url" : "--base-url", rawUrl)
    let auth: McpConnectionAuth = { scheme: "none" }
    if (input.auth !== "none") {
      if (Option.isNone(input.secret)) {
        return yield* fail(
          `--auth ${input.auth} needs --secret`,
          "add --secret NAME (set it with `janus secret set NAME`)"
        )
      }
      const secret = input.secret.value
      if (input.auth === "bearer") auth = { scheme: "bearer", secret }
      else if (input.auth === "header") {
        if (Option.isNone(input.header)) {
          return yield* fail("--auth header needs --header", "add --header NAME, e.g. --header X-Api-Key")
        }
        auth = { scheme: "header", header: input.header.value, secret }
      } else if (input.auth === "basic") {
        if (Option.isNone(input.username)) return yield* fail("--auth basic needs --username", "add --username USER")
        auth = { scheme: "basic", username: input.username.value, secret }
      } else {
        if (!mcp) {
          return yield* fail("--auth oauth applies to MCP connections only", "use it with --mcp-url")
        }
        if (Option.isNone(input.tokenUrl) || Option.isNone(input.clientId)) {
          return yield* fail(
            "--auth oauth needs --token-url and --client-id",
            "add --token-url URL (the authorization server's token endpoint) and --client-id ID"
          )
        }
        auth = {
          scheme: "oauth-client-credentials",
          tokenUrl: yield* checkHttpUrl("--token-url", input.tokenUrl.value),
          clientId: input.clientId.value,
          secret,
          ...(Option.isSome(input.scope) ? { scope: input.scope.value } : {})
        }
      }
    }
    const allow = Option.map(input.allow, splitList)
    if (Option.isSome(allow)) {
      for (const entry of allow.value) {
        const compiled = Egress.AllowList.make([entry])
        if (compiled._tag === "Failure") {
          return yield* fail(`--allow: ${compiled.failure}`, "write each entry as one of the forms above")
        }
      }
    }
    return yield* stored(Effect.gen(function*() {
      const connections = yield* unusedName(input.name)
      const common = { name: input.name, description: input.description, egressAllowList: Option.getOrNull(allow) }
      const created = yield* connections.create(
        mcp ?
          {
            kind: "mcp",
            ...common,
            url,
            auth,
            transport: Option.getOrElse(input.transport, () => "streamable-http" as const),
            toolPrefix: Option.getOrNull(input.toolPrefix),
            ...(Option.isSome(input.pollInterval) ? { pollIntervalMs: input.pollInterval.value } : {})
          } :
          // oauth was refused above for REST connections
          { kind: "rest", ...common, baseUrl: url, auth: auth as ConnectionAuth }
      )
      if ("secret" in auth) {
        const known = yield* (yield* Secrets).list
        if (!known.some((s) => s.name === (auth as { secret: string }).secret)) {
          yield* progress(
            `Note: secret ${auth.secret} is not set yet; calls will fail until you run \`janus secret set ${auth.secret}\``
          )
        }
      }
      if (input.json) return yield* printJson(connectionView(created))
      yield* Console.log(
        `Added ${mcp ? "MCP " : ""}connection ${created.name} (id ${created.id}) -> ${url}` +
          (created.kind === "mcp" ? ` (tools as ${created.toolPrefix ?? `${created.name}/`}<tool>)` : "")
      )
    }))
  }))).pipe(
    Command.withDescription(
      "Add a connection: a REST API (--base-url), an upstream MCP server (--mcp-url), or one Janus runs (--stdio -- PROGRAM ARGS)"
    )
  )

const connectionView = (
  c: Connections["Service"] extends { list: Effect.Effect<ReadonlyArray<infer C>, any> } ? C
    : never
) => ({
  id: c.id,
  name: c.name,
  kind: c.kind,
  url: c.kind === "rest" ? c.baseUrl : c.url,
  auth: c.auth,
  egressAllowList: c.egressAllowList,
  description: c.description,
  ...(c.kind === "mcp"
    ? { transport: c.transport, ...c.stdio, toolPrefix: c.toolPrefix, pollIntervalMs: c.pollIntervalMs }
    : {})
})

const connectionList = Command.make("list", { json }, (input) =>
  withStorage(Effect.gen(function*() {
    const all = yield* (yield* Connections).list
    if (input.json) return yield* printJson(all.map(connectionView))
    if (all.length === 0) {
      return yield* Console.log(
        "No connections. Add one with `janus connection add NAME --base-url URL` (REST) or `--mcp-url URL` (MCP)."
      )
    }
    for (const c of all) {
      const v = connectionView(c)
      yield* Console.log(
        `${v.name}  ${v.kind}  ${v.url}  auth=${c.auth.scheme}` +
          ("secret" in c.auth ? `(secret ${c.auth.secret})` : "") +
          (c.egressAllowList ? `  allow=${c.egressAllowList.join(",")}` : "")
      )
    }
  }))).pipe(Command.withDescription("List connections"))

const connectionRemove = Command.make("remove", {
  name: Argument.String("name").pipe(Argument.withDescription("The connection's name")),
  json
}, (input) =>
  withStorage(Effect.gen(function*() {
    const connections = yield* Connections
    const found = yield* connections.findByName(input.name)
    if (Option.isNone(found)) {
      return yield* fail(`no connection is named ${input.name}`, "see `janus connection list`")
    }
    yield* connections.delete(found.value.id)
    if (input.json) return yield* printJson({ removed: input.name, id: found.value.id })
    yield* Console.log(`Removed connection ${input.name} and its endpoints`)
  }))).pipe(Command.withDescription("Remove a connection and its endpoints"))

export const connection = Command.make("connection").pipe(
  Command.withDescription("Connections (REST APIs and upstream MCP servers): add, list, remove"),
  Command.withSubcommands([connectionAdd, connectionList, connectionRemove])
)
