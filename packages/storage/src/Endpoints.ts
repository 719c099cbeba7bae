/**
 * The `endpoints` repository: REST operations exposed as MCP tools.
 *
 * **Rules**
 *
 * - Input is decoded (`EndpointInput`), then: the name is a tool name
 *   (`InvalidToolName`) and unique (`DuplicateName`); the input schema is a
 *   JSON Schema object of type "object" that compiles (`InvalidInputSchema`),
 *   and so is the output schema when one is given;
 *   every `{param}` of the path template is a `"path"` argument
 *   (`UndeclaredPathParam`) and every argument is a schema property; the
 *   connection exists (`UnknownReference`) and is a rest connection.
 * - `createMany` (OpenAPI import) validates every endpoint first and inserts
 *   them in one transaction: all or nothing.
 * - `update` needs the `version` that was read (`VersionConflict`).
 * - Writes signal `endpoint` changes, and `virtual_server` changes for the
 *   virtual servers whose tool list they alter (rename, delete).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import { ChangeFeed } from "./ChangeFeed.ts"
import { isUuid } from "./Connections.ts"
import { Endpoint, EndpointInput, idempotentMethods } from "./Domain.ts"
import {
  DuplicateName,
  InvalidInput,
  type InvalidInputSchema,
  type InvalidToolName,
  NotFound,
  type StorageError,
  type UndeclaredPathParam,
  UnknownReference,
  VersionConflict
} from "./Errors.ts"
import { duplicateName, json, storageError, toDate, toNumber } from "./internal/sql.ts"
import { checkEndpointShape, checkInputSchema, checkToolName, checkVersion, decodeInput } from "./Validation.ts"

export type EndpointWriteError =
  | InvalidInput
  | InvalidToolName
  | InvalidInputSchema
  | UndeclaredPathParam
  | DuplicateName
  | UnknownReference
  | StorageError

export class Endpoints extends Context.Service<Endpoints, {
  /** All endpoints, or those of one connection, ordered by name. */
  readonly list: (options?: { readonly connectionId?: string }) => Effect.Effect<ReadonlyArray<Endpoint>, StorageError>
  readonly get: (id: string) => Effect.Effect<Endpoint, NotFound | StorageError>
  readonly findByName: (name: string) => Effect.Effect<Option.Option<Endpoint>, StorageError>
  readonly create: (input: EndpointInput) => Effect.Effect<Endpoint, EndpointWriteError>
  /** Creates all of `inputs` in one transaction, or none of them. */
  readonly createMany: (
    inputs: ReadonlyArray<EndpointInput>
  ) => Effect.Effect<ReadonlyArray<Endpoint>, EndpointWriteError>
  readonly update: (
    id: string,
    version: number,
    input: EndpointInput
  ) => Effect.Effect<Endpoint, EndpointWriteError | NotFound | VersionConflict>
  readonly delete: (id: string) => Effect.Effect<void, NotFound | StorageError>
}>()("@janus/storage/Endpoints") {
  static readonly layer: Layer.Layer<Endpoints, never, SqlClient.SqlClient | ChangeFeed> = Layer.effect(
    Endpoints,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const feed = yield* ChangeFeed

      const validate = Effect.fnUntraced(function*(raw: EndpointInput, entity: string) {
        const input = yield* decodeInput(entity, EndpointInput)(raw)
        yield* checkToolName(input.name)
        yield* checkInputSchema(input.name, input.inputSchema)
        const outputSchema = input.outputSchema ?? null
        if (outputSchema !== null) yield* checkInputSchema(input.name, outputSchema, "outputSchema")
        yield* checkEndpointShape(input)
        return { ...input, outputSchema, idempotent: input.idempotent ?? idempotentMethods.has(input.method) }
      })
      type Valid = Effect.Success<ReturnType<typeof validate>>

      // Locks the connection row (FOR KEY SHARE) so it cannot be deleted before this transaction commits.
      const checkConnection = Effect.fnUntraced(function*(connectionId: string) {
        const rows = isUuid(connectionId)
          ? yield* sql<{ kind: string }>`SELECT kind FROM connections WHERE id = ${connectionId} FOR KEY SHARE`
          : []
        if (rows[0] === undefined) {
          return yield* new UnknownReference({
            entity: "endpoint",
            field: "connectionId",
            target: "connection",
            value: connectionId
          })
        }
        if (rows[0].kind !== "rest") {
          return yield* new InvalidInput({
            entity: "endpoint",
            field: "connectionId",
            value: connectionId,
            expected: `a rest connection (this one is ${rows[0].kind}; mcp connections bring their own tools)`
          })
        }
      })

      const insert = (input: Valid) =>
        sql<EndpointRow>`
          INSERT INTO endpoints (id, connection_id, name, description, method, path_template, arguments,
            input_schema, output_schema, idempotent)
          VALUES (${randomUUID()}, ${input.connectionId}, ${input.name}, ${input.description}, ${input.method},
            ${input.pathTemplate}, ${json(input.arguments)}::jsonb, ${json(input.inputSchema)}::jsonb,
            ${input.outputSchema === null ? null : json(input.outputSchema)}::jsonb, ${input.idempotent})
          RETURNING *`

      const serversWith = (endpointIds: ReadonlyArray<string>) =>
        endpointIds.length === 0
          ? Effect.succeed<ReadonlyArray<string>>([])
          : Effect.map(
            sql<{ id: string }>`SELECT DISTINCT virtual_server_id AS id FROM virtual_server_members
              WHERE endpoint_id IN ${sql.in(endpointIds)}`,
            (rows) => rows.map((r) => r.id)
          )

      const selectById = (id: string): Effect.Effect<ReadonlyArray<EndpointRow>, SqlError> =>
        isUuid(id) ? sql<EndpointRow>`SELECT * FROM endpoints WHERE id = ${id}` : Effect.succeed([])

      const createMany = Effect.fnUntraced(function*(raws: ReadonlyArray<EndpointInput>) {
        const inputs = yield* Effect.forEach(
          raws,
          (raw, i) => validate(raw, raws.length === 1 ? "endpoint" : `endpoint[${i}]`)
        )
        const names = inputs.map((input) => input.name)
        const repeated = names.find((name, i) => names.indexOf(name) !== i)
        if (repeated !== undefined) return yield* new DuplicateName({ entity: "endpoint", name: repeated })
        if (inputs.length === 0) return []
        return yield* sql.withTransaction(Effect.gen(function*() {
          for (const connectionId of new Set(inputs.map((input) => input.connectionId))) {
            yield* checkConnection(connectionId)
          }
          const taken = yield* sql<{ name: string }>`SELECT name FROM endpoints WHERE name IN ${sql.in(names)}`
          if (taken[0] !== undefined) return yield* new DuplicateName({ entity: "endpoint", name: taken[0].name })
          const rows = yield* Effect.forEach(inputs, insert)
          const created = rows.map((r) => fromRow(r[0]!))
          yield* feed.publish({ kind: "endpoint", ids: created.map((e) => e.id) })
          return created
        })).pipe(duplicateName("endpoint", "endpoints_name_key", names.join(", ")), storageError("endpoints.create"))
      })

      const update = Effect.fnUntraced(function*(id: string, version: number, raw: EndpointInput) {
        yield* checkVersion("endpoint", version)
        const input = yield* validate(raw, "endpoint")
        return yield* sql.withTransaction(Effect.gen(function*() {
          const current = (yield* selectById(id))[0]
          if (current === undefined) return yield* new NotFound({ entity: "endpoint", id })
          yield* checkConnection(input.connectionId)
          const rows = yield* sql<EndpointRow>`
            UPDATE endpoints SET connection_id = ${input.connectionId}, name = ${input.name},
              description = ${input.description}, method = ${input.method}, path_template = ${input.pathTemplate},
              arguments = ${json(input.arguments)}::jsonb, input_schema = ${json(input.inputSchema)}::jsonb,
              output_schema = ${input.outputSchema === null ? null : json(input.outputSchema)}::jsonb,
              idempotent = ${input.idempotent}, version = version + 1, updated_at = now()
            WHERE id = ${id} AND version = ${version}
            RETURNING *`
          if (rows[0] === undefined) {
            return yield* new VersionConflict({
              entity: "endpoint",
              id,
              expected: version,
              actual: toNumber(current.version)
            })
          }
          yield* feed.publish({ kind: "endpoint", ids: [id] })
          if (current.name !== input.name) {
            const servers = yield* serversWith([id])
            if (servers.length > 0) yield* feed.publish({ kind: "virtual_server", ids: servers })
          }
          return fromRow(rows[0])
        })).pipe(duplicateName("endpoint", "endpoints_name_key", input.name), storageError("endpoints.update"))
      })

      const remove = (id: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const servers = isUuid(id) ? yield* serversWith([id]) : []
          const deleted = isUuid(id) ? yield* sql`DELETE FROM endpoints WHERE id = ${id} RETURNING id` : []
          if (deleted.length === 0) return yield* new NotFound({ entity: "endpoint", id })
          yield* feed.publish({ kind: "endpoint", ids: [id] })
          if (servers.length > 0) yield* feed.publish({ kind: "virtual_server", ids: servers })
        })).pipe(storageError("endpoints.delete"))

      return Endpoints.of({
        list: (options) => {
          const connectionId = options?.connectionId
          const rows: Effect.Effect<ReadonlyArray<EndpointRow>, SqlError> = connectionId === undefined
            ? sql<EndpointRow>`SELECT * FROM endpoints ORDER BY name`
            : isUuid(connectionId)
            ? sql<EndpointRow>`SELECT * FROM endpoints WHERE connection_id = ${connectionId} ORDER BY name`
            : Effect.succeed([])
          return rows.pipe(Effect.map((rows) => rows.map(fromRow)), storageError("endpoints.list"))
        },
        get: (id) =>
          selectById(id).pipe(
            Effect.flatMap((rows) =>
              rows[0] === undefined
                ? Effect.fail(new NotFound({ entity: "endpoint", id }))
                : Effect.succeed(fromRow(rows[0]))
            ),
            storageError("endpoints.get")
          ),
        findByName: (name) =>
          sql<EndpointRow>`SELECT * FROM endpoints WHERE name = ${name}`.pipe(
            Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), fromRow)),
            storageError("endpoints.findByName")
          ),
        create: (input) => Effect.map(createMany([input]), (created) => created[0]!),
        createMany,
        update,
        delete: remove
      })
    })
  )
}

export interface EndpointRow {
  readonly id: string
  readonly connection_id: string
  readonly name: string
  readonly description: string
  readonly method: Endpoint["method"]
  readonly path_template: string
  readonly arguments: Endpoint["arguments"]
  readonly input_schema: Endpoint["inputSchema"]
  readonly output_schema: NonNullable<Endpoint["outputSchema"]> | null
  readonly idempotent: boolean
  readonly version: number | bigint
  readonly created_at: Date
  readonly updated_at: Date
}

export const fromRow = (row: EndpointRow): Endpoint =>
  new Endpoint({
    id: row.id,
    connectionId: row.connection_id,
    name: row.name,
    description: row.description,
    method: row.method,
    pathTemplate: row.path_template,
    arguments: row.arguments,
    inputSchema: row.input_schema,
    ...(row.output_schema === null || row.output_schema === undefined ? {} : { outputSchema: row.output_schema }),
    idempotent: row.idempotent,
    version: toNumber(row.version),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at)
  })
