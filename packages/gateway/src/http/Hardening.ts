/**
 * Request hardening the lead mounts in front of admission: Node server
 * limits against slow and oversized requests, a JSON nesting limit for
 * request bodies, and error bodies without internals.
 *
 * **Rules**
 *
 * - Node `http.createServer` options (`serverOptions`):
 *   - `headersTimeout` 10 s: the whole header block must arrive within it
 *     (slowloris); Node answers 408 and closes.
 *   - `requestTimeout` 30 s: the whole request, body included (an MCP body
 *     is at most 1 MiB). Response streams (SSE) are not affected: a request
 *     counts as received once its body is read.
 *   - `maxHeaderSize` 16 KiB: larger header blocks get 431 before any
 *     handler runs (room for a large JWT).
 *   - `connectionsCheckingInterval` 1 s: how often Node enforces the two
 *     timeouts (default 30 s would let a slow client hold a socket 30 s more).
 *   - `keepAliveTimeout` 5 s between requests; `server.maxHeadersCount` 100.
 *   - What Node refuses before any handler runs is answered with a JSON
 *     body `{ error, message }` naming the limit (Node's own 408, 431 and
 *     400 have none): 408 `request_timeout`, 431
 *     `request_header_fields_too_large`, 400 `bad_request`.
 * - Two `Authorization` headers are kept, joined with `, ` (Node keeps the
 *   first and drops the others), so authentication sees that there are two
 *   credentials and refuses the request (400 `invalid_request`) instead of
 *   silently taking the first (`keepDuplicateCredentials`).
 * - JSON bodies: at most `MAX_JSON_DEPTH` (64) nested arrays/objects,
 *   checked on the text before `JSON.parse`, in one pass without allocation,
 *   so deep payloads never reach a recursive walker (redaction, schema
 *   validation) and its stack. Too deep: 400 with a message naming the limit.
 * - Errors a client sees never carry a stack trace, an internal message or a
 *   credential: admission refusals are fixed sentences; `publicError` gives
 *   the body for anything unexpected (a fixed sentence and an id that the
 *   server log carries with the full cause).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import * as Http from "node:http"
import type { Duplex } from "node:stream"

/** The Node server limits. */
export interface ServerLimits {
  readonly headersTimeout: number
  readonly requestTimeout: number
  readonly maxHeaderSize: number
  readonly connectionsCheckingInterval: number
  readonly keepAliveTimeout: number
  readonly maxHeadersCount: number
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  maxHeaderSize: 16 * 1024,
  connectionsCheckingInterval: 1_000,
  keepAliveTimeout: 5_000,
  maxHeadersCount: 100
}

/** `http.createServer` options for `limits`. */
export const serverOptions = (limits: Partial<ServerLimits> = {}): Http.ServerOptions => {
  const l = { ...DEFAULT_SERVER_LIMITS, ...limits }
  return {
    headersTimeout: l.headersTimeout,
    requestTimeout: l.requestTimeout,
    maxHeaderSize: l.maxHeaderSize,
    connectionsCheckingInterval: l.connectionsCheckingInterval,
    keepAliveTimeout: l.keepAliveTimeout
  }
}

/**
 * A Node HTTP server with `limits`, for `NodeHttpServer.layer(() => createServer(), …)`.
 */
export const createServer = (limits: Partial<ServerLimits> = {}): Http.Server => {
  const server = Http.createServer(serverOptions(limits))
  server.maxHeadersCount = limits.maxHeadersCount ?? DEFAULT_SERVER_LIMITS.maxHeadersCount
  keepDuplicateCredentials(server)
  const answers = clientErrorAnswers({ ...DEFAULT_SERVER_LIMITS, ...limits })
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Node's own answer to these has no body; this one says which limit was missed.
    // As Node does: answer only while nothing of a response went out on this socket.
    const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage
    if (error.code !== "ECONNRESET" && socket.writable && inFlight?.headersSent !== true) {
      socket.end(answers(error.code))
    }
    socket.destroy()
  })
  return server
}

/**
 * Makes `server` show every `Authorization` header of a request, joined with
 * `, ` (as RFC 9110 §5.3 combines field lines), instead of Node's first one
 * only: runs before any other request listener.
 */
export const keepDuplicateCredentials = (server: Http.Server): Http.Server =>
  server.prependListener("request", joinCredentials)

/**
 * Listeners that only prepare a request and never answer it: the starting-time
 * responder (`Startup.answerUntilServed`) does not take them for the router.
 */
export const isPreparation = (listener: unknown): boolean => listener === joinCredentials

function joinCredentials(request: Http.IncomingMessage): void {
  const raw = request.rawHeaders
  let values: Array<string> | undefined
  let count = 0
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === "authorization") {
      count++
      ;(values ??= []).push(raw[i + 1]!)
    }
  }
  if (count > 1) request.headers.authorization = values!.join(", ")
}

/** A whole HTTP/1.1 response with a JSON body `{ error, message }`, closing the connection. */
const rawResponse = (status: string, error: string, message: string): string => {
  const body = JSON.stringify({ error, message })
  return `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${
    Buffer.byteLength(body)
  }\r\nConnection: close\r\n\r\n${body}`
}

/** The answers to requests Node refuses before any handler runs, by Node's error code. */
const clientErrorAnswers = (limits: ServerLimits) => {
  const timeout = rawResponse(
    "408 Request Timeout",
    "request_timeout",
    `The request did not arrive in time: the server waits for the headers within ${limits.headersTimeout} ms ` +
      `and for the whole request within ${limits.requestTimeout} ms; send the request without pausing`
  )
  const headersTooLarge = rawResponse(
    "431 Request Header Fields Too Large",
    "request_header_fields_too_large",
    `The request's headers take more than ${limits.maxHeaderSize} bytes; send fewer or smaller headers`
  )
  const badRequest = (code: string | undefined) =>
    rawResponse(
      "400 Bad Request",
      "bad_request",
      `The request is not a valid HTTP/1.1 request${
        code === undefined ? "" : ` (${code})`
      }; send a request line, headers and a body framed as HTTP/1.1 requires`
    )
  return (code: string | undefined): string => {
    switch (code) {
      case "ERR_HTTP_REQUEST_TIMEOUT":
        return timeout
      case "HPE_HEADER_OVERFLOW":
        return headersTooLarge
      default:
        return badRequest(code)
    }
  }
}

/** Nesting of request bodies allowed at most. */
export const MAX_JSON_DEPTH = 64

/** The user-visible message of a body nested deeper than `limit`. */
export const tooDeepMessage = (limit: number = MAX_JSON_DEPTH): string =>
  `The request body nests arrays and objects more than ${limit} levels deep; send a flatter message`

/**
 * Whether the JSON `text` nests arrays/objects deeper than `limit`. Brackets
 * inside strings do not count. Works on any text (invalid JSON is the
 * parser's business).
 */
export const exceedsDepth = (text: string, limit: number = MAX_JSON_DEPTH): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) {
      inString = true
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return true
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--
    }
  }
  return false
}

/** What a client sees of an unexpected failure. */
export interface PublicError {
  readonly error: "internal_error"
  readonly message: string
  /** Quote it to an operator: the server log has the cause under this id. */
  readonly errorId: string
}

/**
 * Logs `cause` (server side only) and returns the body to send instead: a
 * fixed sentence and an id, never the cause's message or stack.
 */
export const publicError = (cause: unknown): Effect.Effect<PublicError> =>
  Effect.gen(function*() {
    const errorId = randomUUID()
    yield* Effect.logError(`Unexpected failure while serving a request (error id ${errorId})`, cause).pipe(
      Effect.annotateLogs({ errorId })
    )
    return { error: "internal_error", message: "The gateway failed to handle this request", errorId } as const
  })
