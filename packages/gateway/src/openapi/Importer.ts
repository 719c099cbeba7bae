/**
 * OpenAPI import: a document (text, or a URL fetched through the egress
 * client) becomes one rest connection and one endpoint per operation.
 *
 * **Rules**
 *
 * - `preview` is the dry run: the plan (endpoints, skipped operations,
 *   warnings) and the diff against the connection of that name, if it
 *   exists. Nothing is written.
 * - `apply` writes the same diff in one transaction: the connection is
 *   created when it does not exist (or its base URL updated when the
 *   document's changed), removed endpoints are deleted, changed ones updated
 *   (keeping an operator's `idempotent` flag unless the method changed),
 *   added ones created. Any failure (a name taken by another connection, a
 *   concurrent edit) rolls all of it back and is returned as the storage
 *   error that caused it. Change signals go out at commit.
 * - Endpoints are matched by name, so a re-import of a changed document
 *   shows and applies exactly what changed.
 * - A URL is fetched with a GET through `DownstreamClient` (SSRF guard, the
 *   connection's allow-list, 30 s, 20 MiB at most, redirects checked). The
 *   allow-list's entries are checked first, dry run or not.
 * - An existing connection of that name must be a rest connection.
 *
 * @since 0.1.0
 */
import {
  AuditLog,
  type ConnectionAuth,
  Connections,
  type ConnectionWriteError,
  Endpoints,
  type EndpointWriteError,
  EventLog,
  type NotFound,
  type RestConnection,
  type StorageError,
  Validation,
  type VersionConflict
} from "@janus/storage"
import { Context, Effect, Layer, Option, Result } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import * as AdminChanges from "../audit/AdminChanges.ts"
import { DownstreamClient } from "../egress/DownstreamClient.ts"
import { load, MAX_DOCUMENT_BYTES, OpenApiError, parseText } from "./Document.ts"
import { diff, type ImportDiff, type ImportPlan, plan, type PlanOptions } from "./Plan.ts"

/** The connection an import creates or updates. */
export interface ImportConnection {
  readonly name: string
  readonly description?: string | undefined
  readonly auth?: ConnectionAuth | undefined
  readonly egressAllowList?: ReadonlyArray<string> | null | undefined
  readonly timeoutMs?: number | undefined
}

export interface ImportRequest {
  /** The document's text (JSON or YAML), or where to fetch it. */
  readonly source: { readonly text: string } | { readonly url: string }
  readonly connection: ImportConnection
  readonly options?: PlanOptions | undefined
}

export interface ImportPreview {
  readonly plan: ImportPlan
  readonly connection: {
    readonly name: string
    /** Present when the connection exists. */
    readonly id: string | undefined
    readonly baseUrl: string
    /** The base URL the connection has now, when the import changes it. */
    readonly previousBaseUrl: string | undefined
  }
  readonly diff: ImportDiff
}

export type ImportError =
  | OpenApiError
  | ConnectionWriteError
  | EndpointWriteError
  | NotFound
  | VersionConflict
  | StorageError

export class OpenApiImporter extends Context.Service<OpenApiImporter, {
  /** The dry run: what `apply` would do. */
  readonly preview: (request: ImportRequest) => Effect.Effect<ImportPreview, ImportError>
  /** Imports (or re-imports) transactionally; what was done. */
  readonly apply: (request: ImportRequest) => Effect.Effect<ImportPreview, ImportError>
}>()("@janus/gateway/openapi/OpenApiImporter") {
  static readonly layer: Layer.Layer<
    OpenApiImporter,
    never,
    Connections | Endpoints | DownstreamClient | SqlClient.SqlClient | AuditLog | EventLog
  > = Layer.effect(
    OpenApiImporter,
    Effect.gen(function*() {
      const connections = yield* Connections
      const endpoints = yield* Endpoints
      const downstream = yield* DownstreamClient
      const sql = yield* SqlClient.SqlClient
      const audited = AdminChanges.afterCommit(yield* AuditLog, yield* EventLog)

      const fetchText = (url: string, connection: ImportConnection) =>
        Effect.gen(function*() {
          let parsed: URL
          try {
            parsed = new URL(url)
          } catch {
            return yield* new OpenApiError({ message: `${JSON.stringify(url)} is not an absolute URL` })
          }
          const response = yield* downstream.call({
            id: `openapi-import:${parsed.origin}`,
            baseUrl: parsed.origin,
            timeout: "30 seconds",
            retry: { retries: 1 },
            maxResponseBytes: MAX_DOCUMENT_BYTES,
            ...(connection.egressAllowList ? { allow: connection.egressAllowList } : {})
          }, {
            method: "GET",
            path: parsed.pathname,
            query: [...parsed.searchParams],
            headers: { accept: "application/json, application/yaml, text/yaml;q=0.9, */*;q=0.5" },
            idempotent: true
          }).pipe(
            Effect.mapError((error) =>
              new OpenApiError({ message: `the document could not be fetched from ${parsed.origin}: ${error.message}` })
            )
          )
          if (response.status !== 200) {
            return yield* new OpenApiError({
              message: `fetching the document answered HTTP ${response.status}; expected 200`
            })
          }
          return new TextDecoder().decode(response.body)
        })

      const prepare = Effect.fnUntraced(function*(request: ImportRequest) {
        // refused before the document is fetched (through that allow-list) or a dry run says all is well
        yield* Validation.checkEgressAllowList("connection", request.connection.egressAllowList ?? null)
        const text = "text" in request.source
          ? request.source.text
          : yield* fetchText(request.source.url, request.connection)
        const document = yield* Effect.flatMap(parseText(text), load)
        const planned = plan(document, {
          ...request.options,
          ...("url" in request.source && request.options?.documentUrl === undefined
            ? { documentUrl: request.source.url }
            : {})
        })
        if (Result.isFailure(planned)) return yield* planned.failure
        const existing = yield* connections.findByName(request.connection.name)
        if (Option.isSome(existing) && existing.value.kind !== "rest") {
          return yield* new OpenApiError({
            message:
              `connection ${request.connection.name} is an mcp connection; OpenAPI imports need a rest connection (choose another name)`
          })
        }
        const current = Option.getOrUndefined(existing) as RestConnection | undefined
        const currentEndpoints = current === undefined ? [] : yield* endpoints.list({ connectionId: current.id })
        const preview: ImportPreview = {
          plan: planned.success,
          connection: {
            name: request.connection.name,
            id: current?.id,
            baseUrl: planned.success.baseUrl,
            previousBaseUrl: current !== undefined && current.baseUrl !== planned.success.baseUrl
              ? current.baseUrl
              : undefined
          },
          diff: diff(currentEndpoints, planned.success.endpoints)
        }
        return { preview, current }
      })

      const apply = (request: ImportRequest) =>
        Effect.gen(function*() {
          const { current, preview } = yield* prepare(request)
          const wanted = request.connection
          return yield* sql.withTransaction(Effect.gen(function*() {
            let connectionId: string
            if (current === undefined) {
              const created = yield* connections.create({
                kind: "rest",
                name: wanted.name,
                baseUrl: preview.plan.baseUrl,
                description: wanted.description ?? preview.plan.title.slice(0, 4096),
                ...(wanted.auth === undefined ? {} : { auth: wanted.auth }),
                ...(wanted.egressAllowList === undefined ? {} : { egressAllowList: wanted.egressAllowList }),
                ...(wanted.timeoutMs === undefined ? {} : { timeoutMs: wanted.timeoutMs })
              })
              connectionId = created.id
            } else {
              connectionId = current.id
              if (preview.connection.previousBaseUrl !== undefined) {
                yield* connections.update(current.id, current.version, {
                  kind: "rest",
                  name: current.name,
                  description: current.description,
                  auth: current.auth,
                  timeoutMs: current.timeoutMs,
                  breaker: current.breaker,
                  egressAllowList: current.egressAllowList,
                  baseUrl: preview.plan.baseUrl,
                  retry: current.retry
                })
              }
            }
            for (const removed of preview.diff.removed) yield* endpoints.delete(removed.id)
            for (const changed of preview.diff.changed) {
              yield* endpoints.update(changed.id, changed.version, {
                connectionId,
                name: changed.next.name,
                description: changed.next.description,
                method: changed.next.method,
                pathTemplate: changed.next.pathTemplate,
                arguments: changed.next.arguments,
                inputSchema: changed.next.inputSchema,
                ...(changed.outputSchema === undefined ? {} : { outputSchema: changed.outputSchema }),
                ...(changed.idempotent === undefined ? {} : { idempotent: changed.idempotent })
              })
            }
            if (preview.diff.added.length > 0) {
              yield* endpoints.createMany(preview.diff.added.map((p) => ({
                connectionId,
                name: p.name,
                description: p.description,
                method: p.method,
                pathTemplate: p.pathTemplate,
                arguments: p.arguments,
                inputSchema: p.inputSchema
              })))
            }
            return { ...preview, connection: { ...preview.connection, id: connectionId } }
          })).pipe(
            // its changes audited once it committed: a row written inside would wait on its connection
            (transaction) => audited(transaction),
            Effect.catchTag("SqlError", (cause) =>
              Effect.fail(new OpenApiError({ message: `the import could not be written: ${cause.message}` })))
          )
        })

      return OpenApiImporter.of({
        preview: (request) => Effect.map(prepare(request), ({ preview }) => preview),
        apply
      })
    })
  )
}
