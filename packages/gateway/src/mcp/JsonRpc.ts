/**
 * JSON-RPC 2.0 framing for MCP: classifying a parsed body, the error type every
 * protocol refusal travels as, and the encoders that put results, errors and
 * notifications on the wire.
 *
 * **Spec rules**
 *
 * - A message is a request (`jsonrpc: "2.0"`, string or number `id`, string
 *   `method`, object `params` if any), a notification (no `id`) or a response
 *   (`id` with exactly one of `result` / `error`); anything else is an Invalid
 *   Request (-32600), answered with the request id when one can be read.
 * - MCP `params` are always objects.
 * - Errors carry `code`, a one-sentence `message` (what was wrong, the value,
 *   what is expected) and optional `data`; never stack traces.
 *
 * Encoding is done by string concatenation around a single `JSON.stringify` of
 * the payload, so no value is serialized twice (results that are already JSON,
 * such as cached `tools/list` pages, are spliced in unchanged).
 *
 * @since 0.1.0
 */
import { Data, Exit, Option, Predicate } from "effect"
import type { McpSchema } from "effect/ai"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import { echoed } from "../observability/ClientText.ts"

/** A JSON-RPC request id. */
export type RequestId = McpSchema.RequestId

/** A parsed JSON-RPC message, or why it is not one. */
export type Message =
  | {
    readonly _tag: "Request"
    readonly id: RequestId
    readonly method: string
    readonly params: Readonly<Record<string, unknown>> | undefined
  }
  | {
    readonly _tag: "Notification"
    readonly method: string
    readonly params: Readonly<Record<string, unknown>> | undefined
  }
  | { readonly _tag: "Response"; readonly id: RequestId | null }
  | { readonly _tag: "Invalid"; readonly id: RequestId | null; readonly reason: string }

/** A parsed JSON-RPC request. */
export type RequestMessage = Extract<Message, { _tag: "Request" }>

/** A parsed JSON-RPC notification. */
export type NotificationMessage = Extract<Message, { _tag: "Notification" }>

const isId = (u: unknown): u is RequestId => typeof u === "string" || (typeof u === "number" && Number.isFinite(u))

/** Longest JSON text of a client's value quoted in an error message. */
const MAX_SHOWN = 60

/**
 * A client's JSON value in words, for error messages: `null`, `the number 5`,
 * `the string "hi"`, `an object`. `JSON.stringify` would call a number that
 * overflowed while parsing (`1e400` parses as Infinity) `null`, and
 * `typeof` calls null an object.
 */
export const describeValue = (value: unknown): string => {
  switch (typeof value) {
    case "undefined":
      return "nothing"
    case "number":
      return Number.isFinite(value) ?
        `the number ${value}` :
        "a number too large to represent (it overflows to infinity, as 1e400 does)"
    case "string": {
      const json = JSON.stringify(value)
      return `the string ${json.length > MAX_SHOWN ? `${json.slice(0, MAX_SHOWN - 4)}…"` : json}`
    }
    case "boolean":
      return String(value)
    default:
      return value === null ? "null" : Array.isArray(value) ? "an array" : "an object"
  }
}

/** Classifies one parsed JSON value as a JSON-RPC message. */
export const classify = (value: unknown): Message => {
  if (!Predicate.isReadonlyObject(value)) {
    return {
      _tag: "Invalid",
      id: null,
      reason: `got ${describeValue(value)}; expected one JSON-RPC message (a JSON object)`
    }
  }
  const id = isId(value.id) ? value.id : null
  if (value.jsonrpc !== "2.0") {
    return {
      _tag: "Invalid",
      id,
      reason: `"jsonrpc" is ${value.jsonrpc === undefined ? "missing" : describeValue(value.jsonrpc)}; expected "2.0"`
    }
  }
  if ("method" in value) {
    if (typeof value.method !== "string") {
      return { _tag: "Invalid", id, reason: `"method" is ${describeValue(value.method)}; expected a string` }
    }
    const params = value.params
    if (params !== undefined && !Predicate.isReadonlyObject(params)) {
      return {
        _tag: "Invalid",
        id,
        reason: `"params" of '${echoed(value.method)}' is ${describeValue(params)}; expected an object`
      }
    }
    if (!("id" in value)) return { _tag: "Notification", method: value.method, params }
    if (id === null) {
      return {
        _tag: "Invalid",
        id: null,
        reason: `"id" is ${describeValue(value.id)}; expected a string or a finite number`
      }
    }
    return { _tag: "Request", id, method: value.method, params }
  }
  if ("result" in value !== "error" in value) return { _tag: "Response", id }
  return { _tag: "Invalid", id, reason: "the message has neither a \"method\" nor exactly one of \"result\"/\"error\"" }
}

/**
 * A JSON-RPC error response to send, with the HTTP status the transport uses
 * when the error is the whole HTTP response (`200` for ordinary errors).
 */
export class ProtocolError extends Data.TaggedError("ProtocolError")<{
  readonly code: number
  readonly message: string
  readonly data?: unknown
  readonly status: number
}> {
  /** @since 0.1.0 */
  static invalidRequest(message: string, status = 400): ProtocolError {
    return new ProtocolError({ code: ErrorCode.invalidRequest, message, status })
  }
  /** @since 0.1.0 */
  static invalidParams(message: string, status = 200): ProtocolError {
    return new ProtocolError({ code: ErrorCode.invalidParams, message, status })
  }
  /** @since 0.1.0 */
  static methodNotFound(method: string, status: number, hint: string): ProtocolError {
    return new ProtocolError({
      code: ErrorCode.methodNotFound,
      message: `Method not found: '${echoed(method)}' ${hint}`,
      status
    })
  }
  /** @since 0.1.0 */
  static headerMismatch(message: string): ProtocolError {
    return new ProtocolError({ code: ErrorCode.headerMismatch, message, status: 400 })
  }
}

/** The error of a failed request that has nothing better to say: 500, Internal error. */
export const internalError = new ProtocolError({
  code: ErrorCode.internalError,
  message: "Internal error",
  status: 500
})

/** The `ProtocolError` a request's exit answers with (Internal error for a defect or an interruption). */
export const errorOf = (exit: Exit.Exit<unknown, ProtocolError>): ProtocolError =>
  Exit.isSuccess(exit) ? internalError : Option.getOrElse(Exit.findErrorOption(exit), () => internalError)

/** A JSON string of a JSON-RPC `result`, ready to be spliced into a response. */
export type ResultJson = string

const idJson = (id: RequestId | null): string =>
  id === null ? "null" : typeof id === "number" ? String(id) : JSON.stringify(id)

/** `{"jsonrpc":"2.0","id":…,"result":…}` around an already-encoded result. */
export const encodeResult = (id: RequestId, result: ResultJson): string =>
  `{"jsonrpc":"2.0","id":${idJson(id)},"result":${result}}`

/** `{"jsonrpc":"2.0","id":…,"error":{…}}`. */
export const encodeError = (id: RequestId | null, error: ProtocolError): string =>
  `{"jsonrpc":"2.0","id":${idJson(id)},"error":${
    JSON.stringify(
      error.data === undefined ?
        { code: error.code, message: error.message } :
        { code: error.code, message: error.message, data: error.data }
    )
  }}`

/** `{"jsonrpc":"2.0","method":…,"params":…}`; `params` is already JSON or omitted. */
export const encodeNotification = (method: string, paramsJson?: string): string =>
  paramsJson === undefined ?
    `{"jsonrpc":"2.0","method":${JSON.stringify(method)}}` :
    `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${paramsJson}}`

/** The request's `_meta.progressToken`, when it has one that is a string or a number. */
export const progressToken = (message: RequestMessage): string | number | undefined => {
  const meta = message.params?._meta
  const token = Predicate.isReadonlyObject(meta) ? meta.progressToken : undefined
  return typeof token === "string" || typeof token === "number" ? token : undefined
}

/** A `notifications/progress` message for a request's `progressToken`. */
export const encodeProgress = (
  token: string | number,
  progress: number,
  total: number | undefined,
  message: string | undefined
): string =>
  encodeNotification(
    "notifications/progress",
    JSON.stringify({ progressToken: token, progress, total, message })
  )
