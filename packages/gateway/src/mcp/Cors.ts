/**
 * CORS for browser-based MCP clients on the MCP endpoints (`/mcp`,
 * `/servers/{name}/mcp` and the legacy `/sse` + `/messages`).
 *
 * **Rules**
 *
 * - Only origins the `Origin` check allows (`Origin.ts`: loopback origins and
 *   `JANUS_ALLOWED_ORIGINS`) get CORS headers; any other origin gets the 403
 *   of that check and no `Access-Control-*` header at all.
 * - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`)
 *   is answered 204 before authentication: browsers never send credentials
 *   with it. It allows GET, POST and DELETE and the request headers MCP
 *   clients send (`ALLOWED_HEADERS`, plus any `Mcp-Param-*` header the
 *   browser asks for: 2026-07-28 mirrors tool arguments in them), for
 *   `MAX_AGE_SECONDS`.
 * - Every other response to an allowed origin, refusals included (a 401 must
 *   be readable, or the client never learns to authenticate), carries
 *   `Access-Control-Allow-Origin: <origin>` and exposes `Mcp-Session-Id`,
 *   `WWW-Authenticate` and `Retry-After`.
 * - Credentials travel in `Authorization`, never in cookies, so
 *   `Access-Control-Allow-Credentials` is never sent. Every response that
 *   depends on the origin says `Vary: Origin`.
 *
 * @since 0.1.0
 */
import { HttpServerResponse } from "effect/http"
import { Header } from "./Protocol.ts"

/** Request headers MCP clients send (lowercase), every revision. */
export const ALLOWED_HEADERS: ReadonlyArray<string> = [
  "authorization",
  Header.contentType,
  Header.accept,
  Header.protocolVersion,
  Header.sessionId,
  Header.method,
  Header.name,
  Header.lastEventId
]

/** Response headers a browser client must be able to read. */
export const EXPOSED_HEADERS: ReadonlyArray<string> = [Header.sessionId, "www-authenticate", "retry-after"]

/** How long a browser may cache a preflight: 10 minutes (Chromium caps it at 2 hours). */
export const MAX_AGE_SECONDS = 600

const allowed = new Set(ALLOWED_HEADERS)
const exposed = EXPOSED_HEADERS.join(", ")

/** Whether the request is a CORS preflight. */
export const isPreflight = (headers: Readonly<Record<string, string | undefined>>): boolean =>
  headers.origin !== undefined && headers["access-control-request-method"] !== undefined

/** The 204 answer to a preflight from `origin` (already allowed). */
export const preflight = (
  origin: string,
  requestedHeaders: string | undefined
): HttpServerResponse.HttpServerResponse => {
  const headers = new Set(ALLOWED_HEADERS)
  for (const name of (requestedHeaders ?? "").split(",")) {
    const header = name.trim().toLowerCase()
    if (allowed.has(header) || /^mcp-param-[a-z0-9-]+$/.test(header)) headers.add(header)
  }
  return HttpServerResponse.empty({
    status: 204,
    headers: {
      "access-control-allow-origin": origin,
      "access-control-allow-methods": "GET, POST, DELETE",
      "access-control-allow-headers": Array.from(headers).join(", "),
      "access-control-max-age": String(MAX_AGE_SECONDS),
      vary: "Origin"
    }
  })
}

/** `response` readable by the page of `origin` (already allowed). */
export const allow = (origin: string) => (response: HttpServerResponse.HttpServerResponse) =>
  HttpServerResponse.setHeaders(response, {
    "access-control-allow-origin": origin,
    "access-control-expose-headers": exposed,
    vary: "Origin"
  })
