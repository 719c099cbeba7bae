/**
 * What a request's framing must be before any route reads it, and how much
 * of a client's URI an answer may repeat.
 *
 * **Rules**
 *
 * - A URI (path and query) longer than `MAX_URI_LENGTH` (8 KiB) is 414 URI
 *   Too Long on every route, probes included: no route of the gateway needs
 *   more, and RFC 9112 §3 asks servers for 8000 octets at least. Node itself
 *   refuses a request line and headers over 16 KiB together with 431 before
 *   any handler runs (`Hardening.ts`).
 * - The body must not be content-coded: a `Content-Encoding` naming any
 *   coding but `identity` is 415 Unsupported Media Type with
 *   `Accept-Encoding: identity` (RFC 9110 §15.5.16), on every route, so a
 *   gzip body on `/mcp` or `/api/v1` is never read as JSON (a parse error)
 *   and never a 5xx. `identity` alone is served as if absent.
 * - Refusals are JSON-RPC errors (`id: null`, -32600) on the MCP paths and
 *   the admin API's error body elsewhere, and say what is expected.
 * - No answer repeats more than `MAX_ECHOED_URI_CHARS` (200) characters of a
 *   client's path, query or name taken from the URI: `quoteUri` keeps the
 *   start and says how long the whole was, so a long URI is never reflected
 *   back whole (amplification, log and terminal spam).
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import { isMcpPath } from "./HostCheck.ts"

/** Longest URI (path and query, as on the request line) served, in characters: 8 KiB. */
export const MAX_URI_LENGTH = 8 * 1024

/** At most this many characters of a client's URI (or a part of it) appear in an answer. */
export const MAX_ECHOED_URI_CHARS = 200

/**
 * `text` (a path, a query, a name from the URI) as an answer may show it:
 * whole when short, else its first `MAX_ECHOED_URI_CHARS` characters and a
 * marker saying how long it was.
 */
export const quoteUri = (text: string): string =>
  text.length <= MAX_ECHOED_URI_CHARS
    ? text
    : `${text.slice(0, MAX_ECHOED_URI_CHARS).toWellFormed()}… (${text.length} characters)`

const pathOf = (url: string): string => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/** The codings of a `Content-Encoding` value that are not `identity`, lowercased. */
export const contentCodings = (header: string): ReadonlyArray<string> =>
  header.split(",").map((coding) => coding.trim().toLowerCase()).filter((coding) =>
    coding !== "" && coding !== "identity"
  )

const refusal = (
  path: string,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse => {
  const all = { "cache-control": "no-store", "x-content-type-options": "nosniff", ...headers }
  return isMcpPath(path) ?
    HttpServerResponse.jsonUnsafe({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.invalidRequest, message } }, {
      status,
      headers: all
    }) :
    HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status, headers: all })
}

/** The 414, or the 415, for a request the gateway does not read; `undefined` when it may be served. */
export const check = (
  url: string,
  contentEncoding: string | undefined
): HttpServerResponse.HttpServerResponse | undefined => {
  const path = pathOf(url)
  if (url.length > MAX_URI_LENGTH) {
    return refusal(
      path,
      414,
      "uri_too_long",
      `The request URI is ${url.length} characters long; the gateway serves URIs of at most ${MAX_URI_LENGTH} ` +
        "characters: send large values in the request body"
    )
  }
  if (contentEncoding !== undefined) {
    const codings = contentCodings(contentEncoding)
    if (codings.length > 0) {
      return refusal(
        path,
        415,
        "unsupported_content_encoding",
        `The request body is sent with Content-Encoding ${
          quoteUri(codings.join(", "))
        }, which the gateway does not decode; send it uncompressed (Content-Encoding identity, or none)`,
        { "accept-encoding": "identity" }
      )
    }
  }
  return undefined
}

/** The checks as a global middleware, before any route (and the admin API's authentication) runs. */
export const layer: Layer.Layer<never, never, HttpRouter.HttpRouter> = HttpRouter.middleware(
  (app) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const refused = check(request.url, request.headers["content-encoding"])
      return refused === undefined ? app : Effect.succeed(refused)
    }),
  { global: true }
)
