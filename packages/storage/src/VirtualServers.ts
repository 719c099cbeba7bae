/**
 * The `virtual_servers` repository: named subsets of tools, each served at
 * its own MCP URL.
 *
 * **Rules**
 *
 * - A member is an endpoint name, or `<mcp connection>/<tool>` for one tool
 *   of an upstream MCP server, or `<mcp connection>/*` for all of them.
 *   Anything else is an `UnknownReference` to a tool; a tool listed twice is
 *   an `InvalidInput`.
 * - Members are stored by reference (endpoint id, connection id), so renaming
 *   an endpoint or connection renames the member and deleting one removes it.
 * - A server and its members are written in one transaction; `update`
 *   replaces both and needs the `version` that was read (`VersionConflict`).
 * - `bareNames` asks the gateway to serve upstream tools without their
 *   connection prefix where unique (stored as given).
 * - Every write signals a `virtual_server` change.
 *
 * @since 0.1.0
 */
import { Array as Arr, Context, Effect, Layer, Option } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import { ChangeFeed } from "./ChangeFeed.ts"
import { isUuid } from "./Connections.ts"
import { ToolNamePattern, VirtualServer, VirtualServerInput } from "./Domain.ts"
import {
  type DuplicateName,
  InvalidInput,
  NotFound,
  type StorageError,
  UnknownReference,
  VersionConflict
} from "./Errors.ts"
import { duplicateName, storageError, toDate, toNumber } from "./internal/sql.ts"
import { checkVersion, decodeInput } from "./Validation.ts"

export type VirtualServerWriteError = InvalidInput | DuplicateName | UnknownReference | StorageError

export class VirtualServers extends Context.Service<VirtualServers, {
  readonly list: Effect.Effect<ReadonlyArray<VirtualServer>, StorageError>
  readonly get: (id: string) => Effect.Effect<VirtualServer, NotFound | StorageError>
  readonly findByName: (name: string) => Effect.Effect<Option.Option<VirtualServer>, StorageError>
  readonly create: (input: VirtualServerInput) => Effect.Effect<VirtualServer, VirtualServerWriteError>
  readonly update: (
    id: string,
    version: number,
    input: VirtualServerInput
  ) => Effect.Effect<VirtualServer, VirtualServerWriteError | NotFound | VersionConflict>
  readonly delete: (id: string) => Effect.Effect<void, NotFound | StorageError>
}>()("@janus/storage/VirtualServers") {
  static readonly layer: Layer.Layer<VirtualServers, never, SqlClient.SqlClient | ChangeFeed> = Layer.effect(
    VirtualServers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const feed = yield* ChangeFeed
      const decode = decodeInput("virtual_server", VirtualServerInput)

      const validate = Effect.fnUntraced(function*(raw: VirtualServerInput) {
        const input = yield* decode(raw)
        const repeated = input.tools.find((tool, i) => input.tools.indexOf(tool) !== i)
        if (repeated !== undefined) {
          return yield* new InvalidInput({
            entity: "virtual_server",
            field: "tools",
            value: JSON.stringify(repeated),
            expected: "each tool listed once"
          })
        }
        return input
      })

      type Member =
        | { readonly endpointId: string }
        | { readonly connectionId: string; readonly tool: string }

      // Resolves tool names to member references; locks what they refer to until commit.
      const resolve = Effect.fnUntraced(function*(tools: ReadonlyArray<string>) {
        const endpoints = tools.length === 0 ? [] : yield* sql<{ id: string; name: string }>`
          SELECT id, name FROM endpoints WHERE name IN ${sql.in(tools)} FOR KEY SHARE`
        const endpointIds = new Map(endpoints.map((e) => [e.name, e.id]))
        const members: Array<Member> = []
        for (const tool of tools) {
          const endpointId = endpointIds.get(tool)
          if (endpointId !== undefined) {
            members.push({ endpointId })
            continue
          }
          const unknown = new UnknownReference({
            entity: "virtual_server",
            field: "tools",
            target: "tool",
            value: tool,
            expected: "an endpoint name, `<mcp connection>/<tool>` or `<mcp connection>/*`"
          })
          const slash = tool.indexOf("/")
          const upstream = tool.slice(slash + 1)
          if (slash <= 0 || (upstream !== "*" && !ToolNamePattern.test(upstream))) return yield* unknown
          const rows = yield* sql<{ id: string }>`
            SELECT id FROM connections WHERE name = ${tool.slice(0, slash)} AND kind = 'mcp' FOR KEY SHARE`
          if (rows[0] === undefined) return yield* unknown
          members.push({ connectionId: rows[0].id, tool: upstream })
        }
        return members
      })

      const writeMembers = (serverId: string, members: ReadonlyArray<Member>) =>
        !Arr.isReadonlyArrayNonEmpty(members) ?
          Effect.void :
          Effect.asVoid(sql`INSERT INTO virtual_server_members ${
            sql.insert(Arr.map(members, (member, position) => ({
              virtual_server_id: serverId,
              position,
              endpoint_id: "endpointId" in member ? member.endpointId : null,
              connection_id: "connectionId" in member ? member.connectionId : null,
              upstream_tool: "tool" in member ? member.tool : null
            })))
          }`)

      const load = (rows: ReadonlyArray<ServerRow>): Effect.Effect<Array<VirtualServer>, SqlError> =>
        rows.length === 0 ? Effect.succeed([]) : Effect.map(
          sql<MemberRow>`
            SELECT m.virtual_server_id, e.name AS endpoint_name, c.name AS connection_name, m.upstream_tool
            FROM virtual_server_members m
            LEFT JOIN endpoints e ON e.id = m.endpoint_id
            LEFT JOIN connections c ON c.id = m.connection_id
            WHERE m.virtual_server_id IN ${sql.in(rows.map((r) => r.id))}
            ORDER BY m.virtual_server_id, m.position`,
          (members) =>
            rows.map((row) =>
              new VirtualServer({
                id: row.id,
                name: row.name,
                description: row.description,
                tools: members.filter((m) => m.virtual_server_id === row.id).map((m) =>
                  m.endpoint_name ?? `${m.connection_name}/${m.upstream_tool}`
                ),
                bareNames: row.bare_names,
                version: toNumber(row.version),
                createdAt: toDate(row.created_at),
                updatedAt: toDate(row.updated_at)
              })
            )
        )

      const selectById = (id: string): Effect.Effect<ReadonlyArray<ServerRow>, SqlError> =>
        isUuid(id) ? sql<ServerRow>`SELECT * FROM virtual_servers WHERE id = ${id}` : Effect.succeed([])

      const create = Effect.fnUntraced(function*(raw: VirtualServerInput) {
        const input = yield* validate(raw)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const members = yield* resolve(input.tools)
          const id = randomUUID()
          const rows = yield* sql<ServerRow>`
            INSERT INTO virtual_servers (id, name, description, bare_names)
            VALUES (${id}, ${input.name}, ${input.description}, ${input.bareNames})
            RETURNING *`
          yield* writeMembers(id, members)
          yield* feed.publish({ kind: "virtual_server", ids: [id] })
          return (yield* load(rows))[0]!
        })).pipe(
          duplicateName("virtual_server", "virtual_servers_name_key", input.name),
          storageError("virtualServers.create")
        )
      })

      const update = Effect.fnUntraced(function*(id: string, version: number, raw: VirtualServerInput) {
        yield* checkVersion("virtual_server", version)
        const input = yield* validate(raw)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const current = (yield* selectById(id))[0]
          if (current === undefined) return yield* new NotFound({ entity: "virtual_server", id })
          const members = yield* resolve(input.tools)
          const rows = yield* sql<ServerRow>`
            UPDATE virtual_servers SET name = ${input.name}, description = ${input.description},
              bare_names = ${input.bareNames}, version = version + 1, updated_at = now()
            WHERE id = ${id} AND version = ${version}
            RETURNING *`
          if (rows[0] === undefined) {
            return yield* new VersionConflict({
              entity: "virtual_server",
              id,
              expected: version,
              actual: toNumber(current.version)
            })
          }
          yield* sql`DELETE FROM virtual_server_members WHERE virtual_server_id = ${id}`
          yield* writeMembers(id, members)
          yield* feed.publish({ kind: "virtual_server", ids: [id] })
          return (yield* load(rows))[0]!
        })).pipe(
          duplicateName("virtual_server", "virtual_servers_name_key", input.name),
          storageError("virtualServers.update")
        )
      })

      return VirtualServers.of({
        list: sql<ServerRow>`SELECT * FROM virtual_servers ORDER BY name`.pipe(
          Effect.flatMap(load),
          storageError("virtualServers.list")
        ),
        get: (id) =>
          selectById(id).pipe(
            Effect.flatMap(load),
            Effect.flatMap((servers) =>
              servers[0] === undefined
                ? Effect.fail(new NotFound({ entity: "virtual_server", id }))
                : Effect.succeed(servers[0])
            ),
            storageError("virtualServers.get")
          ),
        findByName: (name) =>
          sql<ServerRow>`SELECT * FROM virtual_servers WHERE name = ${name}`.pipe(
            Effect.flatMap(load),
            Effect.map((servers) => Option.fromNullishOr(servers[0])),
            storageError("virtualServers.findByName")
          ),
        create,
        update,
        delete: (id) =>
          sql.withTransaction(Effect.gen(function*() {
            const deleted = isUuid(id) ? yield* sql`DELETE FROM virtual_servers WHERE id = ${id} RETURNING id` : []
            if (deleted.length === 0) return yield* new NotFound({ entity: "virtual_server", id })
            yield* feed.publish({ kind: "virtual_server", ids: [id] })
          })).pipe(storageError("virtualServers.delete"))
      })
    })
  )
}

interface ServerRow {
  readonly id: string
  readonly name: string
  readonly description: string
  readonly bare_names: boolean
  readonly version: number | bigint
  readonly created_at: Date
  readonly updated_at: Date
}

interface MemberRow {
  readonly virtual_server_id: string
  readonly endpoint_name: string | null
  readonly connection_name: string | null
  readonly upstream_tool: string | null
}
