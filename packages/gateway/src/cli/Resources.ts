/**
 * `janus token|connection|endpoint|secret|openapi`: the gateway's
 * configuration, written directly to the database through the same storage
 * layers as `serve` (`StorageLive`).
 *
 * - Embedded mode: refused while a server runs on the same address (see
 *   `Support.ts`); stop it, or use the admin API.
 * - `token create` prints the token once (stdout only); it is stored as a
 *   hash and never printed again. `secret set` reads the value from stdin or
 *   `--value-file` and never echoes it.
 * - `--json` prints machine-readable output on stdout; progress and notes go
 *   to stderr.
 *
 * @since 0.1.0
 */
import {
  ClientTokens,
  type ConnectionAuth,
  Connections,
  Endpoints,
  type McpConnectionAuth,
  Secrets
} from "@janus/storage"
import { Console, Effect, Layer, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Fs from "node:fs/promises"
import * as Egress from "../egress/index.ts"
import { OpenApiImporter } from "../openapi/index.ts"
import { asCli, CliStorage } from "./AuditedStorage.ts"
import { CliFailure, guardEmbedded, handled, json, printJson, progress, readStdin, splitList } from "./Support.ts"

/** Runs `body` on the configured storage, after the embedded-mode guard; failures printed. */
const stored = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  guardEmbedded.pipe(Effect.andThen(Effect.provide(asCli(body), CliStorage)))

const withStorage = <A, E, R>(body: Effect.Effect<A, E, R>) => handled(stored(body))

const fail = (message: string, fix: string) => Effect.fail(new CliFailure({ message, fix }))

// -----------------------------------------------------------------------------
// token
// -----------------------------------------------------------------------------

/** `30d`, `12h`, `45m` from now, or an ISO-8601 date/time. */
export const parseExpires = (raw: string, now: Date): Date | undefined => {
  const relative = /^(\d+)\s*([dhm])$/.exec(raw.trim())
  if (relative) {
    const unit = relative[2] === "d" ? 86_400_000 : relative[2] === "h" ? 3_600_000 : 60_000
    return new Date(now.getTime() + Number(relative[1]) * unit)
  }
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw.trim())) return undefined
  const date = new Date(raw.trim())
  return Number.isNaN(date.getTime()) ? undefined : date
}

const tokenView = (t: {
  id: string
  name: string
  prefix: string
  allowedTools: ReadonlyArray<string> | null
  allowedVirtualServers: ReadonlyArray<string> | null
  expiresAt: Date | null
  revokedAt: Date | null
  lastUsedAt: Date | null
  createdAt: Date
}) => ({
  id: t.id,
  name: t.name,
  prefix: t.prefix,
  tools: t.allowedTools,
  servers: t.allowedVirtualServers,
  expiresAt: t.expiresAt?.toISOString() ?? null,
  revokedAt: t.revokedAt?.toISOString() ?? null,
  lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
  createdAt: t.createdAt.toISOString()
})

const tokenCreate = Command.make("create", {
  name: Argument.String("name").pipe(Argument.withDescription("A name for the token (who or what uses it)")),
  tools: Flag.String("tools").pipe(
    Flag.withDescription("Comma-separated tool names the token may call (default: every tool)"),
    Flag.optional
  ),
  servers: Flag.String("servers").pipe(
    Flag.withDescription("Comma-separated virtual servers the token may use (default: every server)"),
    Flag.optional
  ),
  expires: Flag.String("expires").pipe(
    Flag.withDescription("Expiry: 30d, 12h, 45m from now, or an ISO date such as 2027-01-31 (default: never)"),
    Flag.optional
  ),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    const now = new Date()
    let expiresAt: Date | null = null
    if (Option.isSome(input.expires)) {
      const parsed = parseExpires(input.expires.value, now)
      if (parsed === undefined) {
        return yield* fail(
          `--expires ${JSON.stringify(input.expires.value)} is not a duration or a date`,
          "use 30d, 12h, 45m or an ISO date such as 2027-01-31"
        )
      }
      if (parsed.getTime() <= now.getTime()) {
        return yield* fail(`--expires ${input.expires.value} is in the past`, "give a future date or a duration")
      }
      expiresAt = parsed
    }
    return yield* stored(Effect.gen(function*() {
      const created = yield* (yield* ClientTokens).create({
        name: input.name,
        allowedTools: Option.match(input.tools, { onNone: () => null, onSome: splitList }),
        allowedVirtualServers: Option.match(input.servers, { onNone: () => null, onSome: splitList }),
        expiresAt
      })
      const plaintext = Redacted.value(created.plaintext)
      if (input.json) return yield* printJson({ ...tokenView(created.token), token: plaintext })
      yield* Console.log(`Created client token ${created.token.name} (id ${created.token.id})`)
      yield* Console.log("Token (shown once; store it now, it cannot be shown again):")
      yield* Console.log(`  ${plaintext}`)
    }))
  }))).pipe(Command.withDescription("Create a client token; prints it once"))

const tokenList = Command.make("list", { json }, (input) =>
  withStorage(Effect.gen(function*() {
    const tokens = yield* (yield* ClientTokens).list
    if (input.json) return yield* printJson(tokens.map(tokenView))
    if (tokens.length === 0) return yield* Console.log("No client tokens. Create one with `janus token create NAME`.")
    const now = new Date()
    for (const t of tokens) {
      const state = t.revokedAt ? "revoked" : t.isActiveAt(now) ? "active" : "expired"
      yield* Console.log(
        `${t.id}  ${t.prefix}…  ${state.padEnd(7)}  ${t.name}` +
          (t.allowedTools ? `  tools=${t.allowedTools.join(",")}` : "") +
          (t.allowedVirtualServers ? `  servers=${t.allowedVirtualServers.join(",")}` : "") +
          (t.expiresAt ? `  expires=${t.expiresAt.toISOString()}` : "")
      )
    }
  }))).pipe(Command.withDescription("List client tokens (never their values)"))

const tokenRevoke = Command.make("revoke", {
  token: Argument.String("id-or-name").pipe(Argument.withDescription("The token's id, or its name when unique")),
  json
}, (input) =>
  withStorage(Effect.gen(function*() {
    const tokens = yield* ClientTokens
    const all = yield* tokens.list
    const byId = all.find((t) => t.id === input.token)
    const byName = all.filter((t) => t.name === input.token && t.revokedAt === null)
    if (byId === undefined && byName.length > 1) {
      return yield* fail(
        `${byName.length} active tokens are named ${JSON.stringify(input.token)}`,
        "revoke by id (see `janus token list`)"
      )
    }
    const target = byId ?? byName[0]
    if (target === undefined) {
      return yield* fail(`no client token has the id or name ${JSON.stringify(input.token)}`, "see `janus token list`")
    }
    const revoked = yield* tokens.revoke(target.id)
    if (input.json) return yield* printJson(tokenView(revoked))
    yield* Console.log(`Revoked client token ${revoked.name} (id ${revoked.id})`)
  }))).pipe(Command.withDescription("Revoke a client token"))

export const token = Command.make("token").pipe(
  Command.withDescription("Client tokens: create, list, revoke"),
  Command.withSubcommands([tokenCreate, tokenList, tokenRevoke])
)

// -----------------------------------------------------------------------------
// connection
// -----------------------------------------------------------------------------

const checkHttpUrl = (flag: string, raw: string) => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail(
      `${flag} ${JSON.stringify(raw)} is not a URL`,
      "give an absolute http(s) URL, e.g. https://api.example.com"
    )
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return fail(
      `${flag} ${JSON.stringify(raw)} is not http(s)`,
      "give an absolute http(s) URL, e.g. https://api.example.com"
    )
  }
  return Effect.succeed(url.toString().replace(/\/$/, ""))
}

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
      const connections = yield* Connections
      if (Option.isSome(yield* connections.findByName(input.name))) {
        return yield* fail(
          `a connection named ${input.name} already exists`,
          `choose another name, or remove it first with \`janus connection remove ${input.name}\``
        )
      }
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
  baseUrl: Flag.String("base-url").pipe(
    Flag.withDescription("A REST API's base URL, e.g. https://api.example.com (its endpoints become tools)"),
    Flag.optional
  ),
  mcpUrl: Flag.String("mcp-url").pipe(
    Flag.withDescription(
      "An upstream MCP server's endpoint, e.g. https://mcp.example.com/mcp (its tools are federated)"
    ),
    Flag.optional
  ),
  transport: Flag.Literals("transport", ["streamable-http", "sse"]).pipe(
    Flag.withDescription("With --mcp-url: the upstream's transport"),
    Flag.optional
  ),
  stdio: Flag.Boolean("stdio").pipe(
    Flag.withDescription(
      "An upstream MCP server Janus runs: give its program after --, e.g. `--stdio -- npx -y @modelcontextprotocol/server-memory` (allowed by JANUS_STDIO_COMMANDS)"
    ),
    Flag.withDefault(false)
  ),
  env: Flag.KeyValuePair("env").pipe(
    Flag.withDescription("With --stdio: an environment variable of the program, KEY=VALUE (repeatable)"),
    Flag.optional
  ),
  envSecret: Flag.KeyValuePair("env-secret").pipe(
    Flag.withDescription("With --stdio: an environment variable whose value is a secret, KEY=SECRET_NAME (repeatable)"),
    Flag.optional
  ),
  cwd: Flag.String("cwd").pipe(Flag.withDescription("With --stdio: the program's working directory"), Flag.optional),
  pollInterval: Flag.Int("poll-interval").pipe(
    Flag.withDescription("MCP connections: ms between list fetches while the upstream offers no change channel"),
    Flag.optional
  ),
  program: Argument.String("program").pipe(
    Argument.withDescription("With --stdio, after --: the program and its arguments"),
    Argument.variadic()
  ),
  toolPrefix: Flag.String("tool-prefix").pipe(
    Flag.withDescription("With --mcp-url: put in front of every upstream tool name (default NAME/; \"\" for none)"),
    Flag.optional
  ),
  auth: Flag.Literals("auth", ["none", "bearer", "header", "basic", "oauth"]).pipe(
    Flag.withDescription("How Janus authenticates to the API or server (oauth: client credentials, --mcp-url only)"),
    Flag.withDefault("none")
  ),
  secret: Flag.String("secret").pipe(
    Flag.withDescription("Name of the secret holding the credential or client secret (`janus secret set NAME`)"),
    Flag.optional
  ),
  header: Flag.String("header").pipe(Flag.withDescription("Header name for --auth header"), Flag.optional),
  username: Flag.String("username").pipe(Flag.withDescription("User name for --auth basic"), Flag.optional),
  tokenUrl: Flag.String("token-url").pipe(Flag.withDescription("Token endpoint for --auth oauth"), Flag.optional),
  clientId: Flag.String("client-id").pipe(Flag.withDescription("Client id for --auth oauth"), Flag.optional),
  scope: Flag.String("scope").pipe(Flag.withDescription("Scope to ask for with --auth oauth"), Flag.optional),
  allow: Flag.String("allow").pipe(
    Flag.withDescription(
      "Egress allow-list (private addresses): comma-separated IP addresses, CIDRs, hosts or .suffixes, each with an optional :port"
    ),
    Flag.optional
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
      const connections = yield* Connections
      if (Option.isSome(yield* connections.findByName(input.name))) {
        return yield* fail(
          `a connection named ${input.name} already exists`,
          `choose another name, or remove it first with \`janus connection remove ${input.name}\``
        )
      }
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

// -----------------------------------------------------------------------------
// endpoint
// -----------------------------------------------------------------------------

const locations = ["path", "query", "header", "body"] as const

const readJsonArgument = (flag: string, raw: string) =>
  Effect.gen(function*() {
    let text = raw
    if (raw.startsWith("@")) {
      const file = raw.slice(1)
      text = yield* Effect.tryPromise({
        try: () => Fs.readFile(file, "utf8"),
        catch: (e) => new CliFailure({ message: `${flag}: cannot read ${file}: ${String(e)}`, fix: "check the path" })
      })
    }
    try {
      const value: unknown = JSON.parse(text)
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object")
      return value as Record<string, unknown>
    } catch (e) {
      return yield* fail(`${flag} is not a JSON object (${String(e)})`, `give a JSON Schema object, or @file.json`)
    }
  })

const endpointAdd = Command.make("add", {
  name: Argument.String("name").pipe(Argument.withDescription("Tool name of the endpoint")),
  connection: Flag.String("connection").pipe(Flag.withDescription("The rest connection it belongs to")),
  method: Flag.Literals("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]).pipe(
    Flag.withDescription("HTTP method")
  ),
  path: Flag.String("path").pipe(Flag.withDescription("Path template under the base URL, e.g. /users/{id}")),
  args: Flag.String("arg").pipe(
    Flag.withDescription("An argument and where it goes: NAME=path|query|header|body (repeatable)"),
    Flag.atLeast(0)
  ),
  schema: Flag.String("schema").pipe(
    Flag.withDescription("Input JSON Schema (JSON text, or @file.json); default: string arguments"),
    Flag.optional
  ),
  description: Flag.String("description").pipe(Flag.withDefault("")),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    const args: Record<string, (typeof locations)[number]> = {}
    for (const raw of input.args) {
      const [name, location] = raw.split("=", 2)
      if (!name || !location || !(locations as ReadonlyArray<string>).includes(location)) {
        return yield* fail(
          `--arg ${JSON.stringify(raw)} is not NAME=LOCATION`,
          `use --arg NAME=path, NAME=query, NAME=header or NAME=body`
        )
      }
      args[name] = location as (typeof locations)[number]
    }
    const schema = Option.isSome(input.schema)
      ? yield* readJsonArgument("--schema", input.schema.value)
      : {
        type: "object",
        properties: Object.fromEntries(Object.keys(args).map((n) => [n, { type: "string" }])),
        required: Object.entries(args).filter(([, l]) => l === "path").map(([n]) => n)
      }
    return yield* stored(Effect.gen(function*() {
      const found = yield* (yield* Connections).findByName(input.connection)
      if (Option.isNone(found)) {
        return yield* fail(
          `no connection is named ${input.connection}`,
          "see `janus connection list`, or add it with `janus connection add`"
        )
      }
      if (found.value.kind !== "rest") {
        return yield* fail(
          `connection ${input.connection} is an MCP connection`,
          "endpoints belong to rest connections"
        )
      }
      const endpoints = yield* Endpoints
      if (Option.isSome(yield* endpoints.findByName(input.name))) {
        return yield* fail(`an endpoint named ${input.name} already exists`, "choose another name")
      }
      const created = yield* endpoints.create({
        connectionId: found.value.id,
        name: input.name,
        description: input.description,
        method: input.method,
        pathTemplate: input.path,
        arguments: args,
        inputSchema: schema
      })
      if (input.json) {
        return yield* printJson({
          id: created.id,
          name: created.name,
          connection: input.connection,
          method: created.method,
          path: created.pathTemplate,
          arguments: created.arguments,
          inputSchema: created.inputSchema,
          idempotent: created.idempotent
        })
      }
      yield* Console.log(
        `Added endpoint ${created.name}: ${created.method} ${created.pathTemplate} on ${input.connection}`
      )
    }))
  }))).pipe(Command.withDescription("Add a REST endpoint (one MCP tool) to a connection"))

export const endpoint = Command.make("endpoint").pipe(
  Command.withDescription("REST endpoints: add"),
  Command.withSubcommands([endpointAdd])
)

// -----------------------------------------------------------------------------
// openapi
// -----------------------------------------------------------------------------

const openapiImport = Command.make("import", {
  source: Argument.String("file-or-url").pipe(Argument.withDescription("OpenAPI 3.0/3.1 document: a path or URL")),
  connection: Flag.String("connection").pipe(Flag.withDescription("Rest connection to create or update")),
  baseUrl: Flag.String("base-url").pipe(
    Flag.withDescription("Override the document's servers"),
    Flag.optional
  ),
  prefix: Flag.String("prefix").pipe(Flag.withDescription("Put in front of every endpoint name"), Flag.optional),
  dryRun: Flag.Boolean("dry-run").pipe(
    Flag.withDescription("Show what would change; write nothing"),
    Flag.withDefault(false)
  ),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    if (Option.isSome(input.baseUrl)) yield* checkHttpUrl("--base-url", input.baseUrl.value)
    const isUrl = /^https?:\/\//i.test(input.source)
    yield* progress(`reading ${input.source}…`)
    const source = isUrl ? { url: input.source } : {
      text: yield* Effect.tryPromise({
        try: () => Fs.readFile(input.source, "utf8"),
        catch: (e) =>
          new CliFailure({
            message: `cannot read ${input.source}: ${(e as Error).message}`,
            fix: "check the path (or give an http(s) URL)"
          })
      })
    }
    return yield* stored(
      Effect.gen(function*() {
        const importer = yield* OpenApiImporter
        const request = {
          source,
          connection: { name: input.connection },
          options: {
            baseUrl: Option.getOrUndefined(input.baseUrl),
            namePrefix: Option.getOrUndefined(input.prefix)
          }
        }
        const preview = yield* importer.preview(request).pipe(
          Effect.mapError((error) =>
            error._tag === "OpenApiError" && error.message.startsWith("the document could not be fetched")
              ? new CliFailure({
                message: error.message,
                fix: "check the URL; private and loopback addresses are refused by the egress policy, " +
                  "so download the document and import the file instead"
              })
              : error
          )
        )
        const { diff, plan } = preview
        yield* progress(
          `planned ${plan.endpoints.length} operations (${plan.skipped.length} skipped): ` +
            `${diff.added.length} to add, ${diff.changed.length} to change, ${diff.removed.length} to remove`
        )
        for (const w of plan.warnings) yield* progress(`warning: ${w}`)
        for (const s of plan.skipped) yield* progress(`skipped ${s.method.toUpperCase()} ${s.path}: ${s.reason}`)
        if (!input.dryRun) {
          yield* progress("writing…")
          yield* importer.apply(request)
        }
        const summary = {
          dryRun: input.dryRun,
          connection: preview.connection.name,
          baseUrl: preview.connection.baseUrl,
          added: diff.added.map((e) => e.name),
          changed: diff.changed.map((e) => e.name),
          removed: diff.removed.map((e) => e.name),
          skipped: plan.skipped
        }
        if (input.json) return yield* printJson(summary)
        yield* Console.log(
          `${
            input.dryRun ? "Would import" : "Imported"
          } ${plan.endpoints.length} endpoints into ${summary.connection} ` +
            `(${summary.baseUrl}): ${summary.added.length} added, ${summary.changed.length} changed, ` +
            `${summary.removed.length} removed`
        )
      }).pipe(
        Effect.provide(OpenApiImporter.layer.pipe(Layer.provide(Egress.layerMemory({}))))
      )
    )
  }))).pipe(Command.withDescription("Import an OpenAPI document as a rest connection and its endpoints"))

export const openapi = Command.make("openapi").pipe(
  Command.withDescription("OpenAPI import"),
  Command.withSubcommands([openapiImport])
)

// -----------------------------------------------------------------------------
// secret
// -----------------------------------------------------------------------------

const secretSet = Command.make("set", {
  name: Argument.String("name").pipe(Argument.withDescription("Secret name (letters, digits, _ . -)")),
  valueFile: Flag.String("value-file").pipe(
    Flag.withDescription("Read the value from this file (default: stdin)"),
    Flag.optional
  ),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    const raw = Option.isSome(input.valueFile)
      ? yield* Effect.tryPromise({
        try: () => Fs.readFile(input.valueFile.pipe(Option.getOrThrow), "utf8"),
        catch: (e) =>
          new CliFailure({
            message: `cannot read --value-file: ${(e as NodeJS.ErrnoException).code ?? "error"}`,
            fix: "check the path and its permissions"
          })
      })
      : yield* readStdin("use --value-file")
    // One trailing newline (from `echo` or an editor) is not part of the value.
    const value = raw?.replace(/\r?\n$/, "")
    if (value === undefined || value === "") {
      return yield* fail(
        `no value for secret ${input.name}`,
        `pipe it on stdin (\`printf %s "$VALUE" | janus secret set ${input.name}\`) or use --value-file PATH`
      )
    }
    return yield* stored(Effect.gen(function*() {
      const info = yield* (yield* Secrets).set(input.name, Redacted.make(value))
      if (input.json) return yield* printJson({ name: info.name, version: Number(info.version) })
      yield* Console.log(`Secret ${info.name} set (version ${Number(info.version)}); its value is not shown`)
    }))
  }))).pipe(Command.withDescription("Set a secret (value from stdin or --value-file; never echoed)"))

export const secret = Command.make("secret").pipe(
  Command.withDescription("Secrets referenced by connections: set"),
  Command.withSubcommands([secretSet])
)
