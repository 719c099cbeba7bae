/**
 * `POST /api/v1/openapi/import`: an OpenAPI 3.0/3.1 document becomes one rest
 * connection and one endpoint per operation (see `openapi/Importer.ts`).
 *
 * **Rules**
 *
 * - The body is `{ source: { text } | { url }, connection: { name,
 *   description?, auth?, egressAllowList?, timeoutMs? }, options?: { baseUrl?,
 *   namePrefix?, tags? } }`; a member of the wrong type is 400 naming its
 *   path, and so is an unknown member (naming the closest known one).
 *   `auth` is checked here too (a dry run must not accept what the import
 *   refuses); the name and the limits are validated by storage on apply.
 * - `?dryRun=true` answers the preview (plan and diff) and writes nothing;
 *   without it the import (or re-import) is applied in one transaction and
 *   the same shape is returned, with the connection's id.
 * - A document that cannot be fetched, parsed or imported is 422
 *   `invalid_openapi`; storage refusals are mapped as in the other resources
 *   (a field of the connection is reported under `connection.`).
 * - The body limit is the admin API's (1 MiB): import larger documents by `url`.
 *
 * @since 0.1.0
 */
import { ConnectionAuth, Validation } from "@janus/storage"
import { Cause, Effect, Exit, Layer, Option, Predicate, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { type ImportError, type ImportRequest, OpenApiImporter } from "../openapi/index.ts"
import { AdminRouter } from "./AdminRouter.ts"
import { type JsonObject, readObject } from "./JsonBody.ts"
import * as Pagination from "./Pagination.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"

const isStrings = (u: unknown): u is ReadonlyArray<string> => Array.isArray(u) && u.every((s) => typeof s === "string")

const decodeAuth = Schema.decodeUnknownExit(ConnectionAuth, { errors: "first", onExcessProperty: "error" })

/** The members each object of the request may have (anything else is refused, naming the closest). */
const KNOWN = {
  "": ["source", "connection", "options"],
  source: ["text", "url"],
  connection: ["name", "description", "auth", "egressAllowList", "timeoutMs"],
  options: ["baseUrl", "namePrefix", "tags"]
} as const

/** The import request in `body`, or the 400 naming every wrong member. */
export const decodeRequest = (body: JsonObject): Effect.Effect<ImportRequest, Problem.ApiProblem> => {
  const fields: Array<Problem.FieldError> = []
  const wrong = (path: string, message: string) => fields.push({ path, message })
  for (const [at, known] of Object.entries(KNOWN)) {
    const object = at === "" ? body : body[at]
    if (!Predicate.isReadonlyObject(object)) continue
    for (const key of Object.keys(object)) {
      if (!(known as ReadonlyArray<string>).includes(key)) {
        wrong(at === "" ? key : `${at}.${key}`, `Expected ${Validation.unknownFieldExpected(key, known)}`)
      }
    }
  }
  const { connection, options, source } = body
  if (!Predicate.isReadonlyObject(source)) wrong("source", "Expected an object: { text } or { url }")
  else if (typeof source.text === "string" === (typeof source.url === "string")) {
    wrong("source", "Expected exactly one of text (the document) or url (where to fetch it), as a string")
  }
  if (!Predicate.isReadonlyObject(connection)) wrong("connection", "Expected an object with at least a name")
  else {
    if (typeof connection.name !== "string") wrong("connection.name", "Expected a string")
    if (connection.description !== undefined && typeof connection.description !== "string") {
      wrong("connection.description", "Expected a string")
    }
    if (connection.auth !== undefined && !Predicate.isReadonlyObject(connection.auth)) {
      wrong("connection.auth", "Expected an object, e.g. { scheme: \"bearer\", secret: \"<secret name>\" }")
    } else if (connection.auth !== undefined) {
      const decoded = decodeAuth(connection.auth)
      if (Exit.isFailure(decoded)) {
        const error = Cause.findErrorOption(decoded.cause)
        if (Option.isSome(error)) {
          for (const field of Pagination.fieldErrors(error.value)) {
            wrong(field.path === "" ? "connection.auth" : `connection.auth.${field.path}`, field.message)
          }
        }
      }
    }
    if (
      connection.egressAllowList !== undefined && connection.egressAllowList !== null &&
      !isStrings(connection.egressAllowList)
    ) wrong("connection.egressAllowList", "Expected an array of addresses, CIDRs, host names or suffixes, or null")
    if (connection.timeoutMs !== undefined && typeof connection.timeoutMs !== "number") {
      wrong("connection.timeoutMs", "Expected a number of milliseconds")
    }
  }
  if (options !== undefined && !Predicate.isReadonlyObject(options)) wrong("options", "Expected an object")
  else if (options !== undefined) {
    for (const key of ["baseUrl", "namePrefix"] as const) {
      if (options[key] !== undefined && typeof options[key] !== "string") wrong(`options.${key}`, "Expected a string")
    }
    if (options.tags !== undefined && !isStrings(options.tags)) wrong("options.tags", "Expected an array of strings")
  }
  if (fields.length > 0 || !Predicate.isReadonlyObject(source) || !Predicate.isReadonlyObject(connection)) {
    return Effect.fail(Problem.invalidFields(fields))
  }
  const opts = options as JsonObject | undefined
  return Effect.succeed({
    source: typeof source.text === "string" ? { text: source.text } : { url: source.url as string },
    connection: {
      name: connection.name as string,
      description: connection.description as string | undefined,
      auth: connection.auth as ConnectionAuth | undefined,
      egressAllowList: connection.egressAllowList as ReadonlyArray<string> | null | undefined,
      timeoutMs: connection.timeoutMs as number | undefined
    },
    options: opts === undefined ? undefined : {
      baseUrl: opts.baseUrl as string | undefined,
      namePrefix: opts.namePrefix as string | undefined,
      tags: opts.tags as ReadonlyArray<string> | undefined
    }
  })
}

/** The HTTP meaning of an import failure. */
export const fromImportError = (error: ImportError): Problem.ApiProblem => {
  if (error._tag === "OpenApiError") return Problem.make(422, "invalid_openapi", error.message)
  const problem = Problem.fromStorage(error)
  if (!("entity" in error) || error.entity !== "connection" || problem.fields === undefined) return problem
  return Problem.make(problem.status, problem.code, problem.message, {
    fields: problem.fields.map((f) => ({ ...f, path: f.path === "" ? "connection" : `connection.${f.path}` })),
    details: problem.details,
    headers: problem.headers
  })
}

export const OpenApiRoutes: Layer.Layer<never, never, AdminRouter | OpenApiImporter> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const importer = yield* OpenApiImporter
    yield* router.add(
      "POST",
      "/openapi/import",
      Effect.gen(function*() {
        const query = yield* HttpServerRequest.ParsedSearchParams
        const dryRun = Option.getOrUndefined(yield* Resource.singleQuery(query, "dryRun"))
        if (dryRun !== undefined && dryRun !== "true" && dryRun !== "false") {
          return yield* Problem.invalidFields([{ path: "dryRun", message: "Expected true or false" }])
        }
        const request = yield* decodeRequest(yield* readObject(yield* HttpServerRequest.HttpServerRequest))
        const result = yield* (dryRun === "true" ? importer.preview(request) : importer.apply(request)).pipe(
          Effect.mapError(fromImportError)
        )
        return HttpServerResponse.jsonUnsafe({ dryRun: dryRun === "true", ...result })
      })
    )
  })
)
