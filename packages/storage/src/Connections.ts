/**
 * The `connections` repository: REST and upstream MCP downstreams.
 *
 * **Rules**
 *
 * - Input is decoded (`ConnectionInput`), then: the name is unique
 *   (`DuplicateName`), `baseUrl`/`url` are absolute http(s) URLs
 *   (`InvalidUrl`). The credential is only a secret's name; mcp connections
 *   may also use OAuth client credentials (`auth.tokenUrl` an http(s) URL,
 *   the client secret a secret's name). An mcp
 *   connection's `toolPrefix` (null: `<name>/`, `""`: none) is stored as is.
 * - An mcp connection over `streamable-http` or `sse` needs `url` and takes
 *   no `command`, `args`, `env` or `cwd`; one over `stdio` needs `command`
 *   and takes no `url`. The command is a bare executable name (looked up on
 *   the gateway's PATH) or an absolute path, and must be allowed by
 *   `StdioAllowList` (the gateway's `JANUS_STDIO_COMMANDS`, nothing by
 *   default), else `InvalidInput` on `command` naming it; `cwd` is an
 *   absolute path; `env` names follow `StdioEnvironment`'s rule (upper-case
 *   names, none that changes how programs, loaders or interpreters behave:
 *   `LD_*`, `NODE_OPTIONS`, `BASH_ENV`, `PATH`, ...), else `InvalidInput` on
 *   `env.<name>`; env values are text or `{ secret }` (a secret's name,
 *   never its value).
 * - `update` replaces the connection and needs the `version` that was read;
 *   a stale one fails with `VersionConflict` and changes nothing. The kind of
 *   a connection cannot change (its endpoints depend on it).
 * - `delete` also deletes the connection's endpoints and its virtual-server
 *   memberships, in one transaction, and signals all three kinds.
 * - Every write signals a `connection` change on the `ChangeFeed` in its
 *   transaction.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import { ChangeFeed } from "./ChangeFeed.ts"
import {
  BreakerPolicy,
  type Connection,
  type ConnectionAuth,
  ConnectionInput,
  defaultPollIntervalMs,
  McpConnection,
  type McpConnectionAuth,
  McpConnectionInput,
  RestConnection,
  RetryPolicy,
  type StdioCommand
} from "./Domain.ts"
import {
  type DuplicateName,
  InvalidInput,
  type InvalidUrl,
  NotFound,
  type StorageError,
  VersionConflict
} from "./Errors.ts"
import { duplicateName, json, storageError, toDate, toNumber } from "./internal/sql.ts"
import * as StdioEnvironment from "./StdioEnvironment.ts"
import { checkEgressAllowList, checkHttpUrl, checkVersion, decodeInput } from "./Validation.ts"

export type ConnectionWriteError = InvalidInput | InvalidUrl | DuplicateName | StorageError

/**
 * Which programs stdio upstreams may run, provided by the gateway from
 * `JANUS_STDIO_COMMANDS`; by default none.
 */
export const StdioAllowList = Context.Reference<{
  readonly allows: (command: string) => boolean
  /** What an allowed command is, for the error that refuses another. */
  readonly expected: string
}>("@janus/storage/StdioAllowList", {
  defaultValue: () => ({
    allows: () => false,
    expected: "a command allowed by JANUS_STDIO_COMMANDS, which allows none (stdio upstreams are off)"
  })
})

export class Connections extends Context.Service<Connections, {
  readonly list: Effect.Effect<ReadonlyArray<Connection>, StorageError>
  readonly get: (id: string) => Effect.Effect<Connection, NotFound | StorageError>
  readonly findByName: (name: string) => Effect.Effect<Option.Option<Connection>, StorageError>
  /** Creates a connection from a `ConnectionInput` (validated here). */
  readonly create: (input: ConnectionInput) => Effect.Effect<Connection, ConnectionWriteError>
  /** Replaces connection `id`, which must still be at `version`. */
  readonly update: (
    id: string,
    version: number,
    input: ConnectionInput
  ) => Effect.Effect<Connection, ConnectionWriteError | NotFound | VersionConflict>
  readonly delete: (id: string) => Effect.Effect<void, NotFound | StorageError>
}>()("@janus/storage/Connections") {
  static readonly layer: Layer.Layer<Connections, never, SqlClient.SqlClient | ChangeFeed> = Layer.effect(
    Connections,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const feed = yield* ChangeFeed
      const decode = decodeInput("connection", ConnectionInput)
      const stdioAllowList = yield* StdioAllowList

      const invalid = (field: string, value: unknown, expected: string) =>
        new InvalidInput({
          entity: "connection",
          field,
          ...(value === undefined ? {} : { value: JSON.stringify(value).slice(0, 100) }),
          expected
        })

      const validate = Effect.fnUntraced(function*(raw: ConnectionInput) {
        const input = yield* decode(raw)
        if (input.kind === "rest") yield* checkHttpUrl("connection", "baseUrl", input.baseUrl)
        else if (input.transport === "stdio") yield* checkStdio(input)
        else {
          if (input.url === undefined) {
            return yield* invalid("url", undefined, `the upstream's URL (transport ${input.transport})`)
          }
          yield* checkHttpUrl("connection", "url", input.url)
          for (const field of ["command", "cwd"] as const) {
            if (input[field] !== undefined && input[field] !== null) {
              return yield* invalid(field, input[field], `nothing: only transport "stdio" runs a command`)
            }
          }
          if (input.args.length > 0 || Object.keys(input.env).length > 0) {
            return yield* invalid(
              input.args.length > 0 ? "args" : "env",
              undefined,
              `nothing: only transport "stdio" runs a command`
            )
          }
        }
        if (input.auth.scheme === "oauth-client-credentials") {
          yield* checkHttpUrl("connection", "auth.tokenUrl", input.auth.tokenUrl)
        }
        yield* checkEgressAllowList("connection", input.egressAllowList)
        return input
      })

      const checkStdio = Effect.fnUntraced(function*(input: typeof McpConnectionInput.Type) {
        if (input.url !== undefined) {
          return yield* invalid("url", input.url, `nothing for transport "stdio" (the program is given by command)`)
        }
        const command = input.command
        if (command === undefined) {
          return yield* invalid("command", undefined, `the program to run (transport "stdio")`)
        }
        if (command.includes("/") && !command.startsWith("/")) {
          return yield* invalid("command", command, "an executable name (looked up on PATH) or an absolute path")
        }
        if (!stdioAllowList.allows(command)) return yield* invalid("command", command, stdioAllowList.expected)
        if (input.cwd !== null && !input.cwd.startsWith("/")) {
          return yield* invalid("cwd", input.cwd, "an absolute directory path, or null")
        }
        // the rule a spawn checks again (a connection stored under an older rule is not run)
        const refused = StdioEnvironment.firstRefused(input.env)
        if (refused !== undefined) {
          // a name that is no name at all is shown as a value (quoted, cut), not as a field path
          return yield* /^[A-Za-z0-9_]{1,128}$/.test(refused)
            ? invalid(`env.${refused}`, undefined, StdioEnvironment.EXPECTED)
            : invalid("env", refused, StdioEnvironment.EXPECTED)
        }
        if (input.auth.scheme !== "none") {
          return yield* invalid(
            "auth.scheme",
            input.auth.scheme,
            `"none" for transport "stdio" (give credentials to the program through env with { "secret": name })`
          )
        }
      })

      const columns = (input: typeof ConnectionInput.Type) => {
        const auth = authColumns(input.auth)
        return {
          name: input.name,
          kind: input.kind,
          description: input.description,
          base_url: input.kind === "rest" ? input.baseUrl : null,
          url: input.kind === "mcp" ? input.url ?? null : null,
          transport: input.kind === "mcp" ? input.transport : null,
          tool_prefix: input.kind === "mcp" ? input.toolPrefix : null,
          poll_interval_ms: input.kind === "mcp" ? input.pollIntervalMs : null,
          stdio: input.kind === "mcp" && input.transport === "stdio"
            ? json({ command: input.command, args: input.args, env: input.env, cwd: input.cwd })
            : null,
          ...auth,
          timeout_ms: input.timeoutMs,
          retry_policy: input.kind === "rest" ? json(input.retry) : null,
          breaker_policy: json(input.breaker),
          egress_allow: input.egressAllowList
        }
      }

      // Ids are uuids: anything else cannot exist (and would be a cast error in SQL).
      const selectById = (id: string): Effect.Effect<ReadonlyArray<ConnectionRow>, SqlError> =>
        isUuid(id) ? sql<ConnectionRow>`SELECT * FROM connections WHERE id = ${id}` : Effect.succeed([])

      const get = (id: string) =>
        selectById(id).pipe(
          Effect.flatMap((rows) =>
            rows[0] === undefined
              ? Effect.fail(new NotFound({ entity: "connection", id }))
              : Effect.succeed(fromRow(rows[0]))
          ),
          storageError("connections.get")
        )

      const create = Effect.fnUntraced(function*(raw: ConnectionInput) {
        const input = yield* validate(raw)
        const c = columns(input)
        const id = randomUUID()
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<ConnectionRow>`
            INSERT INTO connections (id, name, kind, description, base_url, url, transport, auth_scheme, auth_header,
              auth_username, secret_ref, timeout_ms, retry_policy, breaker_policy, egress_allow, tool_prefix,
              auth_oauth, poll_interval_ms, stdio)
            VALUES (${id}, ${c.name}, ${c.kind}, ${c.description}, ${c.base_url}, ${c.url}, ${c.transport},
              ${c.auth_scheme}, ${c.auth_header}, ${c.auth_username}, ${c.secret_ref}, ${c.timeout_ms},
              ${c.retry_policy}::jsonb, ${c.breaker_policy}::jsonb, ${c.egress_allow}::text[], ${c.tool_prefix},
              ${c.auth_oauth}::jsonb, ${c.poll_interval_ms}, ${c.stdio}::jsonb)
            RETURNING *`
          yield* feed.publish({ kind: "connection", ids: [id] })
          return rows
        })).pipe(duplicateName("connection", "connections_name_key", input.name), storageError("connections.create"))
        return fromRow(rows[0]!)
      })

      const update = Effect.fnUntraced(function*(id: string, version: number, raw: ConnectionInput) {
        yield* checkVersion("connection", version)
        const input = yield* validate(raw)
        const c = columns(input)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const current = yield* selectById(id)
          const row = current[0]
          if (row === undefined) return yield* new NotFound({ entity: "connection", id })
          if (row.kind !== input.kind) {
            return yield* new InvalidInput({
              entity: "connection",
              field: "kind",
              value: input.kind,
              expected: `${row.kind} (the kind of a connection cannot change; create a new connection)`
            })
          }
          const rows = yield* sql<ConnectionRow>`
            UPDATE connections SET name = ${c.name}, description = ${c.description}, base_url = ${c.base_url},
              url = ${c.url}, transport = ${c.transport}, auth_scheme = ${c.auth_scheme},
              auth_header = ${c.auth_header}, auth_username = ${c.auth_username}, secret_ref = ${c.secret_ref},
              timeout_ms = ${c.timeout_ms}, retry_policy = ${c.retry_policy}::jsonb,
              breaker_policy = ${c.breaker_policy}::jsonb, egress_allow = ${c.egress_allow}::text[],
              tool_prefix = ${c.tool_prefix}, auth_oauth = ${c.auth_oauth}::jsonb,
              poll_interval_ms = ${c.poll_interval_ms}, stdio = ${c.stdio}::jsonb,
              version = version + 1, updated_at = now()
            WHERE id = ${id} AND version = ${version}
            RETURNING *`
          if (rows[0] === undefined) {
            return yield* new VersionConflict({
              entity: "connection",
              id,
              expected: version,
              actual: toNumber(row.version)
            })
          }
          yield* feed.publish({ kind: "connection", ids: [id] })
          return fromRow(rows[0])
        })).pipe(duplicateName("connection", "connections_name_key", input.name), storageError("connections.update"))
      })

      const remove = (id: string) =>
        sql.withTransaction(Effect.gen(function*() {
          if (!isUuid(id)) return yield* new NotFound({ entity: "connection", id })
          const endpoints = yield* sql<{ id: string }>`SELECT id FROM endpoints WHERE connection_id = ${id}`
          const servers = yield* sql<{ id: string }>`
            SELECT DISTINCT m.virtual_server_id AS id FROM virtual_server_members m
            LEFT JOIN endpoints e ON e.id = m.endpoint_id
            WHERE m.connection_id = ${id} OR e.connection_id = ${id}`
          const deleted = yield* sql`DELETE FROM connections WHERE id = ${id} RETURNING id`
          if (deleted.length === 0) return yield* new NotFound({ entity: "connection", id })
          yield* feed.publish({ kind: "connection", ids: [id] })
          if (endpoints.length > 0) yield* feed.publish({ kind: "endpoint", ids: endpoints.map((r) => r.id) })
          if (servers.length > 0) yield* feed.publish({ kind: "virtual_server", ids: servers.map((r) => r.id) })
        })).pipe(storageError("connections.delete"))

      return Connections.of({
        list: sql<ConnectionRow>`SELECT * FROM connections ORDER BY name`.pipe(
          Effect.map((rows) => rows.map(fromRow)),
          storageError("connections.list")
        ),
        get,
        findByName: (name) =>
          sql<ConnectionRow>`SELECT * FROM connections WHERE name = ${name}`.pipe(
            Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), fromRow)),
            storageError("connections.findByName")
          ),
        create,
        update,
        delete: remove
      })
    })
  )
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** Ids are uuids; anything else cannot exist (and would be a SQL cast error). */
export const isUuid = (value: string): boolean => uuidPattern.test(value)

interface ConnectionRow {
  readonly id: string
  readonly name: string
  readonly kind: "rest" | "mcp"
  readonly description: string
  readonly base_url: string | null
  readonly url: string | null
  readonly transport: "streamable-http" | "sse" | "stdio" | null
  readonly tool_prefix?: string | null
  readonly poll_interval_ms?: number | null
  readonly stdio?: unknown
  readonly auth_scheme: McpConnectionAuth["scheme"]
  readonly auth_oauth?: unknown
  readonly auth_header: string | null
  readonly auth_username: string | null
  readonly secret_ref: string | null
  readonly timeout_ms: number
  readonly retry_policy: unknown
  readonly breaker_policy: unknown
  readonly egress_allow: ReadonlyArray<string> | null
  readonly version: number | bigint
  readonly created_at: Date
  readonly updated_at: Date
}

const authColumns = (auth: McpConnectionAuth) => ({
  auth_scheme: auth.scheme,
  auth_header: auth.scheme === "header" ? auth.header : null,
  auth_username: auth.scheme === "basic" ? auth.username : null,
  secret_ref: auth.scheme === "none" ? null : auth.secret,
  auth_oauth: auth.scheme === "oauth-client-credentials"
    ? json({
      tokenUrl: auth.tokenUrl,
      clientId: auth.clientId,
      ...(auth.scope === undefined ? {} : { scope: auth.scope }),
      ...(auth.audience === undefined ? {} : { audience: auth.audience })
    })
    : null
})

const authFromRow = (row: ConnectionRow): McpConnectionAuth => {
  switch (row.auth_scheme) {
    case "oauth-client-credentials": {
      const raw = typeof row.auth_oauth === "string" ? JSON.parse(row.auth_oauth) : row.auth_oauth
      const oauth = raw as { tokenUrl: string; clientId: string; scope?: string; audience?: string }
      return {
        scheme: "oauth-client-credentials",
        tokenUrl: oauth.tokenUrl,
        clientId: oauth.clientId,
        secret: row.secret_ref!,
        ...(oauth.scope === undefined ? {} : { scope: oauth.scope }),
        ...(oauth.audience === undefined ? {} : { audience: oauth.audience })
      }
    }
    case "none":
      return { scheme: "none" }
    case "bearer":
      return { scheme: "bearer", secret: row.secret_ref! }
    case "header":
      return { scheme: "header", header: row.auth_header!, secret: row.secret_ref! }
    case "basic":
      return { scheme: "basic", username: row.auth_username!, secret: row.secret_ref! }
  }
}

export const fromRow = (row: ConnectionRow): Connection => {
  const common = {
    id: row.id,
    name: row.name,
    description: row.description,
    timeoutMs: toNumber(row.timeout_ms),
    breaker: new BreakerPolicy(row.breaker_policy as BreakerPolicy),
    egressAllowList: row.egress_allow === null ? null : [...row.egress_allow],
    version: toNumber(row.version),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at)
  }
  return row.kind === "rest"
    ? new RestConnection({
      kind: "rest",
      ...common,
      // the table's check keeps OAuth client credentials to mcp connections
      auth: authFromRow(row) as ConnectionAuth,
      baseUrl: row.base_url!,
      retry: new RetryPolicy(row.retry_policy as RetryPolicy)
    })
    : new McpConnection({
      kind: "mcp",
      ...common,
      auth: authFromRow(row),
      url: row.url,
      transport: row.transport!,
      stdio: row.stdio === null || row.stdio === undefined
        ? null
        : (typeof row.stdio === "string" ? JSON.parse(row.stdio) : row.stdio) as StdioCommand,
      toolPrefix: row.tool_prefix ?? null,
      pollIntervalMs: toNumber(row.poll_interval_ms ?? defaultPollIntervalMs)
    })
}

export type { ConnectionRow }
