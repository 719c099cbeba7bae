/**
 * `/api/v1/config/export`, `/api/v1/config/apply` and `/api/v1/config/schema`:
 * the configuration as a document over HTTP (see `configuration/`).
 *
 * **Rules**
 *
 * - `GET /config/export` answers the document as JSON, or as YAML with
 *   `?format=yaml` (`application/yaml`), and `ETag: "<basis>"`: what it was
 *   read at.
 * - `POST /config/apply` takes a document as the body, JSON
 *   (`application/json`) or YAML (`application/yaml`, `text/yaml`), at most
 *   `MAX_DOCUMENT_BYTES`; `?dryRun=true` plans it (every write checked and
 *   rolled back), otherwise it is applied in one transaction; `?prune=true`
 *   removes what it does not name. It answers `{ dryRun, applied, basis,
 *   plan, issuedTokens }` with `ETag: "<basis>"` of the state it planned
 *   from; `If-Match` with that ETag (a preview's, an export's) makes the
 *   apply fail with 409 `configuration_changed` if anything changed since.
 * - An invalid document is 400 `invalid_configuration` with one field per
 *   problem (its document path); nothing is written.
 * - `valueFrom.env` is not read from the server's environment for an API
 *   caller (`environment: "none"`): such values are taken as set elsewhere.
 *   A token the document adds without `valueFrom` gets a value, returned
 *   once in `issuedTokens` (like `POST /client-tokens`).
 * - `GET /config/schema` answers the document's JSON Schema.
 *
 * @since 0.1.0
 */
import { ByteSize, Effect, Layer, Option, Redacted } from "effect"
import { HttpIncomingMessage, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpServerRequest as Request } from "effect/http"
import { ConfigurationApplier } from "../configuration/Applier.ts"
import { jsonSchema, MAX_DOCUMENT_BYTES } from "../configuration/Document.ts"
import { fromTexts } from "../configuration/Sources.ts"
import * as Text from "../configuration/Text.ts"
import { AdminRouter } from "./AdminRouter.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"

const YAML_TYPES = ["application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"]

const tooLarge = Problem.make(
  413,
  "payload_too_large",
  `The document is larger than ${MAX_DOCUMENT_BYTES} bytes (8 MiB)`
)

/** The document in the request body, decoded, or the 4xx to send. */
const readDocument = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const [type = "", ...params] = (request.headers["content-type"] ?? "").split(";").map((p) => p.trim().toLowerCase())
    const charset = params.find((p) => p.startsWith("charset="))?.slice("charset=".length).replace(/"/g, "")
    if (
      (type !== "application/json" && !YAML_TYPES.includes(type)) ||
      (charset !== undefined && charset !== "utf-8" && charset !== "utf8")
    ) {
      return yield* Problem.make(
        415,
        "unsupported_media_type",
        "Send the document as JSON (Content-Type: application/json) or YAML (application/yaml), in UTF-8"
      )
    }
    const length = request.headers["content-length"]
    if (length !== undefined && Number(length) > MAX_DOCUMENT_BYTES) return yield* tooLarge
    const text = yield* request.text.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_DOCUMENT_BYTES)),
      Effect.mapError((error) =>
        error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge"
          ? tooLarge
          : Problem.make(400, "unreadable_body", "The request body could not be read")
      )
    )
    return yield* fromTexts([[undefined, text]]).pipe(Effect.mapError(invalidConfiguration))
  })

const invalidConfiguration = (
  error: { readonly message: string; readonly problems: ReadonlyArray<Problem.FieldError> }
) =>
  Problem.make(400, "invalid_configuration", error.message, {
    fields: error.problems.map((p) => ({ path: p.path, message: p.message }))
  })

const flag = (query: HttpServerRequest.ParsedSearchParams["Service"], name: string) =>
  Effect.flatMap(Resource.singleQuery(query, name), (value) =>
    Option.match(value, {
      onNone: () => Effect.succeed(false),
      onSome: (v) =>
        v === "true" || v === "false"
          ? Effect.succeed(v === "true")
          : Effect.fail(Problem.invalidFields([{ path: name, message: "Expected true or false" }]))
    }))

/** The basis named by `If-Match` (one strong entity tag), if any. */
const ifMatch = (header: string | undefined) => {
  if (header === undefined) return Effect.succeed(undefined)
  const match = /^"([0-9a-f]{32})"$/.exec(header.trim())
  return match === null
    ? Effect.fail(Problem.invalidFields([{
      path: "If-Match",
      message: "Expected the ETag of a dry run or an export of the configuration, e.g. \"3f2a…\" (32 hex digits)"
    }]))
    : Effect.succeed(match[1]!)
}

export const ConfigurationRoutes: Layer.Layer<never, never, AdminRouter | ConfigurationApplier> = Layer
  .effectDiscard(
    Effect.gen(function*() {
      const router = yield* AdminRouter
      const applier = yield* ConfigurationApplier
      const schema = jsonSchema()

      yield* router.add(
        "GET",
        "/config/export",
        Effect.gen(function*() {
          const query = yield* Request.ParsedSearchParams
          const format = Option.getOrElse(yield* Resource.singleQuery(query, "format"), () => "json")
          if (format !== "json" && format !== "yaml") {
            return yield* Problem.invalidFields([{ path: "format", message: "Expected json or yaml" }])
          }
          const exported = yield* applier.export.pipe(Effect.mapError(Problem.internal))
          const headers = { etag: `"${exported.basis}"` }
          return format === "json"
            ? HttpServerResponse.jsonUnsafe(exported.document, { headers })
            : HttpServerResponse.text(yield* Text.write(exported.document, "yaml"), {
              contentType: "application/yaml",
              headers
            })
        })
      )

      yield* router.add(
        "GET",
        "/config/schema",
        Effect.succeed(HttpServerResponse.jsonUnsafe(schema, { contentType: "application/schema+json" }))
      )

      yield* router.add(
        "POST",
        "/config/apply",
        Effect.gen(function*() {
          const request = yield* Request.HttpServerRequest
          const query = yield* Request.ParsedSearchParams
          const dryRun = yield* flag(query, "dryRun")
          const prune = yield* flag(query, "prune")
          const basis = yield* ifMatch(request.headers["if-match"])
          const loaded = yield* readDocument(request)
          const result = yield* applier.apply(loaded.configuration, {
            dryRun,
            prune,
            basis,
            environment: "none",
            issueTokens: true,
            origin: "api"
          }).pipe(Effect.mapError((error) => {
            switch (error._tag) {
              case "ConfigurationInvalid":
                return invalidConfiguration(error)
              case "ConfigurationChanged":
                return Problem.make(409, "configuration_changed", error.message)
              case "StorageError":
                return Problem.internal(error)
            }
          }))
          return HttpServerResponse.jsonUnsafe({
            dryRun: !result.applied,
            applied: result.applied,
            basis: result.basis,
            plan: result.plan,
            issuedTokens: result.issuedTokens.map((t) => ({ name: t.name, token: Redacted.value(t.token) }))
          }, { headers: { etag: `"${result.basis}"` } })
        })
      )
    })
  )
