/**
 * Errors of the admin API, and how every failure becomes an HTTP response.
 *
 * **Rules**
 *
 * - One body shape for every error:
 *   `{ "error": { "code", "message", "fields"?: [{ "path", "message" }], ...details } }`.
 *   `code` is a stable snake_case identifier for programs; `message` is for
 *   people; `fields` name the offending body or query paths (dotted, `""` for
 *   the whole body) and what is expected there.
 * - Storage errors map one to one (storage has validated; nothing is checked
 *   twice): `InvalidInput`, `InvalidUrl`, `InvalidToolName`,
 *   `InvalidInputSchema`, `UndeclaredPathParam` → 400 with the field;
 *   `NotFound`, `SecretNotFound` → 404; `DuplicateName` → 409;
 *   `VersionConflict` → 409 with `currentVersion` and the current `ETag`;
 *   `UnknownReference` → 422 (the request is well formed and conflicts with
 *   nothing stored at its URL; it points at something that does not exist, so
 *   neither 404, which would say the URL is wrong, nor 409 fits);
 *   `StorageError` → 500.
 * - A 500 never carries internal detail (no stack, no SQL, no cause): the
 *   client gets a fixed sentence and the request id; the cause is logged under
 *   that request id.
 * - Messages never contain a token, a secret value or URL credentials: no
 *   message is built from one, and anything shaped like a Janus token that a
 *   caller put where an id or name goes is masked before the body is written.
 *
 * @since 0.1.0
 */
import type { NotFound, SecretNotFound, StorageError, ValidationError } from "@janus/storage"
import { Data } from "effect"
import { HttpServerResponse } from "effect/http"

/** One field-level error: where (dotted path, `""` for the whole body) and what is expected there. */
export interface FieldError {
  readonly path: string
  readonly message: string
}

/** A refusal or failure, ready to be rendered. `internal` is logged, never sent. */
export class ApiProblem extends Data.TaggedError("ApiProblem")<{
  readonly status: number
  readonly code: string
  readonly message: string
  readonly fields?: ReadonlyArray<FieldError> | undefined
  /** Extra members of the `error` object, e.g. `currentVersion`. */
  readonly details?: Readonly<Record<string, unknown>> | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** What went wrong inside, for the log of a 5xx only. */
  readonly internal?: unknown
  /** A refused authentication: why, for its audit record (`auth/RefusalReason.ts`); never sent. */
  readonly reason?: string | undefined
}> {}

export const make = (
  status: number,
  code: string,
  message: string,
  extra: {
    readonly fields?: ReadonlyArray<FieldError> | undefined
    readonly details?: Readonly<Record<string, unknown>> | undefined
    readonly headers?: Readonly<Record<string, string>> | undefined
    readonly reason?: string | undefined
  } = {}
): ApiProblem => new ApiProblem({ status, code, message, ...extra })

/** 400 for a request whose fields are wrong: one entry per field. */
export const invalidFields = (fields: ReadonlyArray<FieldError>, message?: string): ApiProblem =>
  make(400, "invalid_request", message ?? summary(fields), { fields })

const summary = (fields: ReadonlyArray<FieldError>): string =>
  fields.length === 0
    ? "the request is invalid"
    : fields.map((f) => `${f.path === "" ? "body" : f.path}: ${f.message}`).join("; ")

export const notFound = (message: string): ApiProblem => make(404, "not_found", message)

/** 500: the cause goes to the log only. */
export const internal = (cause: unknown): ApiProblem =>
  new ApiProblem({ status: 500, code: "internal_error", message: INTERNAL_MESSAGE, internal: cause })

const INTERNAL_MESSAGE = "An internal error occurred; it has been logged. Quote the request id when reporting it."

/** 409 for a stale write: what the caller sent and what is stored now. */
export const versionConflict = (entity: string, id: string, expected: number, actual: number): ApiProblem =>
  make(
    409,
    "version_conflict",
    `${entity} ${id} was changed by someone else: the write expected version ${expected}, the stored version is ` +
      `${actual}; re-read it and retry`,
    { details: { currentVersion: actual }, headers: { etag: `"${actual}"` } }
  )

/** Every failure the storage repositories report: an input refused, a missing row or secret, the database. */
export type StorageFailure = ValidationError | NotFound | SecretNotFound | StorageError

/** How a resource names the fields storage reports without a path. */
export interface FieldHints {
  /** Where an `InvalidToolName` points (default `name`); a function gets the bad value. */
  readonly toolName?: string | ((value: string) => string)
  /** Replaces an `InvalidInput` about the whole body (`(input)`) with a precise field, when known. */
  readonly wholeBody?: FieldError | undefined
}

/** The HTTP meaning of a storage failure. */
export const fromStorage = (error: StorageFailure, hints: FieldHints = {}): ApiProblem => {
  switch (error._tag) {
    case "InvalidInput": {
      const whole = error.field === "(input)"
      const field: FieldError = whole
        ? hints.wholeBody ?? { path: "", message: error.expected }
        : { path: error.field, message: error.expected }
      return make(400, "invalid_input", whole && hints.wholeBody ? summary([field]) : error.message, {
        fields: [field]
      })
    }
    case "InvalidUrl": {
      const message = `invalid ${error.entity} ${error.field} ${JSON.stringify(withoutCredentials(error.value))}: ` +
        `expected ${error.expected}`
      return make(400, "invalid_url", message, {
        fields: [{ path: error.field, message: `Expected ${error.expected}` }]
      })
    }
    case "InvalidToolName": {
      const path = typeof hints.toolName === "function" ? hints.toolName(error.value) : hints.toolName ?? "name"
      return make(400, "invalid_tool_name", error.message, {
        fields: [{ path, message: `Expected ${error.expected}` }]
      })
    }
    case "InvalidInputSchema":
      return make(400, "invalid_input_schema", error.message, {
        fields: [{
          path: error.field ?? "inputSchema",
          message: `${error.reason}; expected a JSON Schema with "type": "object"`
        }]
      })
    case "UndeclaredPathParam":
      return make(400, "undeclared_path_param", error.message, {
        fields: [{
          path: `arguments.${error.param}`,
          message: `Expected "path": {${error.param}} appears in pathTemplate ${JSON.stringify(error.pathTemplate)}`
        }]
      })
    case "DuplicateName":
      return make(409, "duplicate_name", error.message, {
        fields: [{ path: "name", message: `Expected a unique name: ${JSON.stringify(error.name)} is taken` }]
      })
    case "NotFound":
      return notFound(error.message)
    case "SecretNotFound":
      return notFound(error.message)
    case "UnknownReference":
      return make(422, "unknown_reference", error.message, {
        fields: [{ path: error.field, message: error.message }]
      })
    case "VersionConflict":
      return versionConflict(error.entity, error.id, error.expected, error.actual)
    case "StorageError":
      return internal(error)
  }
}

/** A URL as it may be shown: any userinfo replaced, since credentials belong in a secret. */
const withoutCredentials = (value: string): string => {
  if (!URL.canParse(value)) return value.replace(/\/\/[^/@]*@/, "//***@")
  const url = new URL(value)
  if (url.username === "" && url.password === "") return value
  url.username = "***"
  url.password = ""
  return url.toString()
}

const TOKEN_SHAPE = /\b(jn[as])_[A-Za-z0-9_-]+/g

/** `text` with anything shaped like an admin or client token masked. */
export const maskTokens = (text: string): string => text.replace(TOKEN_SHAPE, "$1_…")

/** The JSON response for `problem`; `requestId` is added to a 5xx body (it is in a header on every response). */
export const toResponse = (problem: ApiProblem, requestId: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(
    {
      error: {
        code: problem.code,
        message: maskTokens(problem.message),
        ...(problem.fields === undefined ? {} : {
          fields: problem.fields.map((f) => ({ path: maskTokens(f.path), message: maskTokens(f.message) }))
        }),
        ...problem.details,
        ...(problem.status >= 500 ? { requestId } : {})
      }
    },
    { status: problem.status, headers: problem.headers ?? {} }
  )
