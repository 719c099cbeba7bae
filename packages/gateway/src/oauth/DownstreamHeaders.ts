/**
 * Headers for a call to a downstream, without the client's credentials.
 *
 * **Rules** (MCP authorization "Access Token Privilege Restriction" and
 * "Token Passthrough"; RFC 9700 §2.3)
 *
 * - A token a client presented to Janus is for Janus (its `aud` is this
 *   resource) and is never forwarded: a downstream gets only the credential
 *   Janus holds for it (the connection's secret), injected after this step.
 * - The lead's tools/call path must build the downstream request from this
 *   helper's output, or from scratch, never from the incoming request's
 *   headers as they are. Likewise the upstream-MCP federation client and the
 *   legacy SSE `/messages` relay.
 * - Removed: `authorization`, `proxy-authorization`, `cookie`, and the
 *   hop-by-hop and per-connection headers that must not be relayed.
 *
 * @since 0.1.0
 */
import { Headers } from "effect/http"

/** Headers never relayed from a client to a downstream. */
export const NOT_FORWARDED_HEADERS: ReadonlyArray<string> = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "mcp-session-id",
  "host",
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length"
]

/** `headers` without the client's credentials and hop-by-hop headers. */
export const withoutClientCredentials = (headers: Headers.Headers): Headers.Headers =>
  NOT_FORWARDED_HEADERS.reduce((acc, name) => Headers.remove(acc, name), headers)
