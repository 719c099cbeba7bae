/**
 * The wire encoding between Janus and an upstream MCP server: JSON-RPC
 * messages as the upstream sends them, and the three framings they arrive in.
 *
 * **Rules**
 *
 * - A message is a JSON object with `jsonrpc: "2.0"`: a request (string or
 *   finite number `id` and a `method`), a notification (a `method`, no id)
 *   or a response (`id`, or `null` for an error to an unreadable request, and
 *   `result` or `error`). A JSON array is a batch of them. Anything else is
 *   ignored, never fatal: an upstream's stray output must not end a session.
 * - Framings: a JSON body (one message or a batch), Server-Sent Events (each
 *   event's `data` holds one message or a batch; empty data is a priming
 *   event) and newline-delimited JSON (one message per line; `\n`, `\r\n`;
 *   blank lines skipped; a line that is not JSON is skipped). Streamable HTTP
 *   answers with the first two; `subscriptions/listen` and the 2025 GET stream
 *   with SSE or newline-delimited JSON (some servers answer listen with
 *   `application/json` and one frame per line); stdio is newline-delimited.
 * - Every message is bounded: a JSON body, an SSE event or a line larger than
 *   `limit` bytes (characters for SSE) fails the exchange.
 * - Upstream errors become `UpstreamError`s whose messages are cut to 500
 *   characters; no raw body is ever part of an error.
 *
 * Why by hand: effect's `Ndjson.decode` ends the stream at the first line
 * that is not JSON, which a stdio server's stray print must not do; its SSE
 * parser (`Sse.makeParser`) is used as is.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Predicate, Stream } from "effect"
import * as Sse from "effect/encoding/Sse"
import type { HttpClientResponse } from "effect/http"
import { ErrorCode } from "../../jsonrpc/ErrorCode.ts"
import { headerBindingsOf } from "../../mcp/ToolList.ts"
import type { InjectedSecrets } from "../../redaction/InjectedSecrets.ts"
import { unavailable, UpstreamError } from "../Errors.ts"

export type Id = string | number

export type Params = Readonly<Record<string, unknown>>

/** A JSON-RPC message from an upstream. */
export type Incoming = Response | Notification | Request

export interface Response {
  readonly _tag: "Response"
  readonly id: Id | null
  readonly result?: unknown
  readonly error?: unknown
}

export interface Notification {
  readonly _tag: "Notification"
  readonly method: string
  readonly params: Params
}

export interface Request {
  readonly _tag: "Request"
  readonly id: Id
  readonly method: string
  readonly params: Params | undefined
}

const isId = (u: unknown): u is Id => typeof u === "string" || (typeof u === "number" && Number.isFinite(u))

/** One parsed JSON value as a message, or `undefined`. */
export const classify = (value: unknown): Incoming | undefined => {
  if (!Predicate.isReadonlyObject(value) || value.jsonrpc !== "2.0") return undefined
  if (typeof value.method === "string") {
    const params = Predicate.isReadonlyObject(value.params) ? value.params : undefined
    if (isId(value.id)) return { _tag: "Request", id: value.id, method: value.method, params }
    return { _tag: "Notification", method: value.method, params: params ?? {} }
  }
  if ((isId(value.id) || value.id === null) && ("result" in value || "error" in value)) {
    return { _tag: "Response", id: value.id as Id | null, result: value.result, error: value.error }
  }
  return undefined
}

/**
 * The messages in one JSON text (a message or a batch); `undefined` when it
 * is not JSON. `injected` (the credentials Janus sent this upstream) is
 * scrubbed from the text first, so no echo of them reaches anyone.
 */
export const parseMessages = (text: string, injected?: InjectedSecrets): ReadonlyArray<Incoming> | undefined => {
  let value: unknown
  try {
    value = JSON.parse(injected === undefined ? text : injected.scrub(text).text)
  } catch {
    return undefined
  }
  const list = Array.isArray(value) ? value : [value]
  const out: Array<Incoming> = []
  for (const item of list) {
    const message = classify(item)
    if (message !== undefined) out.push(message)
  }
  return out
}

/** A JSON-RPC error answer as an `UpstreamError` of kind `rpc`. */
export const rpcError = (connection: string, error: unknown, status?: number): UpstreamError => {
  const record = Predicate.isReadonlyObject(error) ? error : {}
  const code = typeof record.code === "number" ? record.code : ErrorCode.internalError
  const message = typeof record.message === "string" ? record.message.slice(0, 500) : "error without a message"
  return new UpstreamError({
    connection,
    kind: "rpc",
    detail: `the upstream answered with error ${code}: ${message}`,
    code,
    ...(record.data === undefined ? {} : { data: record.data }),
    ...(status === undefined ? {} : { status })
  })
}

/** "<what> answered HTTP <status>" as an `unavailable` error. */
export const unavailableStatus = (connection: string, what: string, status: number): UpstreamError =>
  unavailable(connection, `${what} answered HTTP ${status}`, status)

/** A response message to send. */
export const encodeResponse = (
  id: Id,
  outcome: { readonly result: Params } | { readonly error: { readonly code: number; readonly message: string } }
): string => JSON.stringify({ jsonrpc: "2.0", id, ...outcome })

/** A request or notification to send. */
export const encodeRequest = (id: Id | undefined, method: string, params: Params): string =>
  JSON.stringify(id === undefined ? { jsonrpc: "2.0", method, params } : { jsonrpc: "2.0", id, method, params })

// ---------------------------------------------------------------------------
// 2026-07-28 header values
// ---------------------------------------------------------------------------

/** A header value as 2026-07-28 sends it: visible ASCII as is, anything else in the Base64 sentinel. */
export const encodeHeaderValue = (value: string): string =>
  /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !value.startsWith("=?")
    ? value
    : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`

/** `Mcp-Param-*` headers for the `x-mcp-header` arguments of a tool's input schema. */
export const paramHeaders = (
  inputSchema: unknown,
  args: Readonly<Record<string, unknown>>
): Readonly<Record<string, string>> => {
  const headers: Record<string, string> = {}
  for (const binding of headerBindingsOf(inputSchema)) {
    let value: unknown = args
    for (const key of binding.path) value = Predicate.isReadonlyObject(value) ? value[key] : undefined
    if (typeof value === "string") headers[binding.header] = encodeHeaderValue(value)
    else if (typeof value === "number" || typeof value === "boolean") headers[binding.header] = String(value)
  }
  return headers
}

// ---------------------------------------------------------------------------
// Framings
// ---------------------------------------------------------------------------

/** The `type/subtype` of a response's `Content-Type`, lower-cased. */
export const mediaType = (response: HttpClientResponse.HttpClientResponse): string =>
  (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

/** The body as text, failing once it exceeds `limit` bytes. */
export const readBounded = (
  connection: string,
  response: HttpClientResponse.HttpClientResponse,
  limit: number
): Effect.Effect<string, UpstreamError> =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    let tooLarge = false
    return response.stream.pipe(
      Stream.runForEachWhile((chunk) =>
        Effect.sync(() => {
          size += chunk.length
          if (size > limit) {
            tooLarge = true
            return false
          }
          chunks.push(chunk)
          return true
        })
      ),
      Effect.mapError(() => unavailable(connection, "the upstream's response broke off")),
      Effect.flatMap(() =>
        tooLarge
          ? Effect.fail(unavailable(connection, `the upstream sent a message larger than ${limit} bytes`))
          : Effect.succeed(Buffer.concat(chunks).toString("utf8"))
      )
    )
  })

/** How a stream of messages ended. */
export interface StreamEnd {
  /** `true` when the handler stopped the reading; `false` when the stream ended. */
  readonly stopped: boolean
  /** The last SSE event id seen (SSE only). */
  readonly lastEventId: string | undefined
  /** The last SSE `retry` delay (SSE only). */
  readonly retryMs: number | undefined
  /** Messages read (priming events and skipped lines not counted). */
  readonly messages: number
}

/** Reads SSE events until `onEvent` answers `false` or the stream ends. */
export const readEvents = <E>(
  connection: string,
  response: HttpClientResponse.HttpClientResponse,
  limit: number,
  onEvent: (event: Sse.Event) => Effect.Effect<boolean, E>
): Effect.Effect<StreamEnd, E | UpstreamError> =>
  Effect.suspend(() => {
    const queue: Array<Sse.AnyEvent> = []
    const parser = Sse.makeParser((event) => queue.push(event), { maxEventSize: limit })
    let stopped = false
    let lastEventId: string | undefined
    let retryMs: number | undefined
    let messages = 0
    return Stream.decodeText(response.stream).pipe(
      Stream.mapError(() => unavailable(connection, "the upstream's event stream broke off")),
      Stream.runForEachWhile((text) =>
        Effect.gen(function*() {
          const error = parser.feed(text)
          if (error !== undefined) {
            return yield* unavailable(connection, `the upstream sent an event larger than ${limit} characters`)
          }
          while (queue.length > 0) {
            const event = queue.shift()!
            if (event._tag === "Retry") {
              retryMs = Duration.toMillis(event.duration)
              continue
            }
            if (event.id !== undefined) lastEventId = event.id
            if (event.data !== "") messages++
            if (!(yield* onEvent(event))) {
              stopped = true
              return false
            }
          }
          return true
        })
      ),
      Effect.map(() => ({ stopped, lastEventId, retryMs, messages }))
    )
  })

/**
 * Splits a byte stream into lines (`\n` or `\r\n`), calling `onLine` with
 * each non-blank one until it answers `false` or the stream ends; a line over
 * `limit` bytes fails.
 */
export const readLines = <E, E2>(
  connection: string,
  bytes: Stream.Stream<Uint8Array, E2>,
  limit: number,
  onLine: (line: string) => Effect.Effect<boolean, E>
): Effect.Effect<{ readonly stopped: boolean }, E | UpstreamError> =>
  Effect.suspend(() => {
    let pending: Array<Uint8Array> = []
    let pendingBytes = 0
    let stopped = false
    const take = (chunk: Uint8Array, start: number, end: number): string => {
      const part = chunk.subarray(start, end)
      const whole = pendingBytes === 0 ? part : Buffer.concat([...pending, part])
      pending = []
      pendingBytes = 0
      return Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength).toString("utf8")
    }
    const emit = (line: string) => {
      const text = line.endsWith("\r") ? line.slice(0, -1) : line
      return text.trim() === "" ? Effect.succeed(true) : onLine(text)
    }
    return bytes.pipe(
      Stream.mapError(() => unavailable(connection, "the upstream's stream broke off")),
      Stream.runForEachWhile((chunk) =>
        Effect.gen(function*() {
          let start = 0
          for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, start)) {
            if (pendingBytes + i - start > limit) break
            const more = yield* emit(take(chunk, start, i))
            start = i + 1
            if (!more) {
              stopped = true
              return false
            }
          }
          if (pendingBytes + chunk.length - start > limit) {
            return yield* unavailable(connection, `the upstream sent a line larger than ${limit} bytes`)
          }
          if (start < chunk.length) {
            pending.push(chunk.slice(start))
            pendingBytes += chunk.length - start
          }
          return true
        })
      ),
      Effect.flatMap(() =>
        stopped || pendingBytes === 0 ? Effect.void : Effect.asVoid(emit(take(new Uint8Array(0), 0, 0)))
      ),
      Effect.map(() => ({ stopped }))
    )
  })

/**
 * Reads the messages of a streamed answer, SSE or newline-delimited JSON by
 * its `Content-Type`, until `onMessage` answers `false` or the stream ends.
 */
export const readMessages = <E>(
  connection: string,
  response: HttpClientResponse.HttpClientResponse,
  limit: number,
  onMessage: (message: Incoming) => Effect.Effect<boolean, E>,
  injected?: InjectedSecrets
): Effect.Effect<StreamEnd, E | UpstreamError> => {
  const each = (text: string) =>
    Effect.gen(function*() {
      for (const message of parseMessages(text, injected) ?? []) {
        if (!(yield* onMessage(message))) return false
      }
      return true
    })
  if (mediaType(response) === "text/event-stream") {
    return readEvents(
      connection,
      response,
      limit,
      (event) => event.data === "" ? Effect.succeed(true) : each(event.data)
    )
  }
  let messages = 0
  return readLines(connection, response.stream, limit, (line) => {
    messages++
    return each(line)
  }).pipe(Effect.map(({ stopped }) => ({ stopped, lastEventId: undefined, retryMs: undefined, messages })))
}
