/**
 * Reading the JSON body of an admin write.
 *
 * **Rules**
 *
 * - The content type must be JSON (`application/json` or any
 *   `application/*+json`, e.g. `application/merge-patch+json`), in UTF-8;
 *   anything else, or none, is 415.
 * - At most `MAX_BODY_BYTES` (1 MiB): a larger `Content-Length` is refused
 *   before reading, a longer chunked body while reading; both are 413.
 * - The body is one JSON object (400 otherwise), nested at most `MAX_DEPTH`
 *   levels (so nothing downstream recurses without bound).
 * - Strings and keys are well-formed Unicode without U+0000 (storage's
 *   `Storable.isStorableText`): Postgres can store neither a NUL nor a lone
 *   surrogate, and would fail the write with an internal error instead of
 *   telling the caller which field is wrong. Configuration is refused, never
 *   altered: the 400 names the field, shows its value JSON-escaped (at most
 *   100 characters) and says what is expected; the value is not shown when
 *   a path segment is named like a credential, or for the paths a route
 *   marks as secret (a secret's `value`).
 * - Numbers are finite: `1e400` parses to Infinity, which no field holds and
 *   which would otherwise be reported as "got null" (JSON's spelling of it).
 * - A parse error says where (position), never what: the text may be a
 *   secret, and the body is never logged or echoed.
 *
 * @since 0.1.0
 */
import { Storable } from "@janus/storage"
import { ByteSize, Effect, Option } from "effect"
import { HttpIncomingMessage, type HttpServerRequest } from "effect/http"
import * as Problem from "./Problem.ts"

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 1024 * 1024
/** Deepest nesting of arrays and objects accepted. */
export const MAX_DEPTH = 64

export type JsonObject = Readonly<Record<string, unknown>>

const tooLarge = Problem.make(
  413,
  "payload_too_large",
  `The request body is larger than ${MAX_BODY_BYTES} bytes (1 MiB)`
)

export interface ReadOptions {
  /** Dotted paths whose values are never shown in an error (e.g. a secret's `value`). */
  readonly secretPaths?: ReadonlyArray<string> | undefined
}

/** Reads the request body as one JSON object, or fails with the 400/413/415 to send. */
export const readObject = (
  request: HttpServerRequest.HttpServerRequest,
  options: ReadOptions = {}
): Effect.Effect<JsonObject, Problem.ApiProblem> =>
  Effect.gen(function*() {
    yield* checkContentType(request.headers["content-type"])
    const length = request.headers["content-length"]
    if (length !== undefined && Number(length) > MAX_BODY_BYTES) return yield* tooLarge
    const text = yield* request.text.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES)),
      Effect.mapError((error) =>
        error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge"
          ? tooLarge
          : Problem.make(400, "unreadable_body", "The request body could not be read")
      )
    )
    if (text.trim() === "") {
      return yield* Problem.make(400, "missing_body", "A JSON object is required as the request body")
    }
    if (nestingDepth(text) > MAX_DEPTH) {
      return yield* Problem.make(
        400,
        "too_deeply_nested",
        `The JSON body is nested more than ${MAX_DEPTH} levels deep`
      )
    }
    const parsed = parseJson(text)
    if (Option.isNone(parsed.value)) {
      const where = parsed.position === undefined ? "" : ` (at position ${parsed.position})`
      return yield* Problem.make(400, "malformed_json", `The request body is not valid JSON${where}`)
    }
    const body = parsed.value.value
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
      return yield* Problem.invalidFields(
        [{ path: "", message: `Expected a JSON object, got ${body === null ? "null" : jsonType(body)}` }],
        "The request body must be a JSON object"
      )
    }
    const bad = unstorableValues(body, options.secretPaths ?? [])
    if (bad.length > 0) return yield* Problem.invalidFields(bad)
    return body as JsonObject
  })

const checkContentType = (header: string | undefined): Effect.Effect<void, Problem.ApiProblem> => {
  const unsupported = Problem.make(
    415,
    "unsupported_media_type",
    "Send the body as JSON: Content-Type: application/json"
  )
  if (header === undefined) return Effect.fail(unsupported)
  const [type = "", ...params] = header.split(";").map((part) => part.trim().toLowerCase())
  const json = type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type)
  const charset = params.find((p) => p.startsWith("charset="))?.slice("charset=".length).replace(/"/g, "")
  if (!json || (charset !== undefined && charset !== "utf-8" && charset !== "utf8")) return Effect.fail(unsupported)
  return Effect.void
}

/** The deepest nesting of `[` / `{` outside strings (a linear scan, run before parsing). */
const nestingDepth = (text: string): number => {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) max = Math.max(max, ++depth)
    else if (c === 125 || c === 93) depth--
  }
  return max
}

const parseJson = (text: string): { readonly value: Option.Option<unknown>; readonly position?: number } => {
  try {
    return { value: Option.some(JSON.parse(text)) }
  } catch (error) {
    // V8 quotes part of the input in its message; only the position is kept.
    const position = /position (\d+)/.exec(error instanceof Error ? error.message : "")?.[1]
    return position === undefined ? { value: Option.none() } : { value: Option.none(), position: Number(position) }
  }
}

const jsonType = (value: unknown): string =>
  Array.isArray(value) ? "an array" : typeof value === "string" ? "a string" : `a ${typeof value}`

const EXPECTED_TEXT = "Expected text without U+0000 (NUL) or unpaired surrogates, which Postgres cannot store"

/** Path segments whose values are never shown (a credential pasted where its name belongs). */
const credentialLike = /secret|token|password|credential|key/i

/** The value as shown in an error: JSON (so U+0000 reads `\u0000`), at most 100 characters. */
const shown = (value: string): string => {
  const json = JSON.stringify(value)
  return json.length > 100 ? `${json.slice(0, 97)}...` : json
}

/** Paths of strings, keys and numbers that no field can hold (depth is bounded by `MAX_DEPTH`). */
const unstorableValues = (root: object, secretPaths: ReadonlyArray<string>): Array<Problem.FieldError> => {
  const found: Array<Problem.FieldError> = []
  const hidden = (path: string) => secretPaths.includes(path) || path.split(".").some((s) => credentialLike.test(s))
  const walk = (value: unknown, path: string): void => {
    if (found.length >= 20) return
    if (typeof value === "string") {
      if (!Storable.isStorableText(value)) {
        const message = hidden(path) ? EXPECTED_TEXT : `${EXPECTED_TEXT}; got ${shown(value)}`
        found.push({ path, message })
      }
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) {
        found.push({ path, message: "Expected a finite number; got a number too large to represent (beyond ±1.8e308)" })
      }
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, join(path, String(i))))
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        if (!Storable.isStorableText(key)) {
          found.push({
            path: join(path, key.replace(/[^\x20-\x7e]/g, "?")),
            message: `${EXPECTED_TEXT} in member names; got the name ${shown(key)}`
          })
        } else walk(item, join(path, key))
      }
    }
  }
  walk(root, "")
  return found
}

const join = (path: string, key: string): string => path === "" ? key : `${path}.${key}`
