/**
 * Server-Sent Events framing for MCP streams.
 *
 * Rules: each JSON-RPC message is one event whose `data` is the encoded message
 * (JSON never contains a raw newline, so one `data:` line suffices); resumable
 * 2025-era events carry `id:`; a priming event is an `id:` with empty data,
 * optionally with `retry:` (the reconnection delay the client must honor);
 * comment lines (`: keepalive`) keep idle streams open through intermediaries.
 * SSE responses send `X-Accel-Buffering: no` (2026-07-28 "Receiving Messages")
 * and `Cache-Control: no-cache`.
 *
 * This is the minimal encoder the MCP transports need; the sse package (ADR-0197
 * subscriber hub) can take over the list-changed streams later.
 *
 * @since 0.1.0
 */
import { Stream } from "effect"
import { HttpServerResponse } from "effect/http"

/** One message event, with an event id when the stream is resumable. */
export const message = (data: string, id?: string): string =>
  id === undefined ? `data: ${data}\n\n` : `id: ${id}\ndata: ${data}\n\n`

/** A priming event: an event id with empty data, optionally the reconnection delay. */
export const priming = (id: string, retryMs: number | undefined): string =>
  retryMs === undefined ? `id: ${id}\ndata: \n\n` : `id: ${id}\nretry: ${retryMs}\ndata: \n\n`

/** A named event (the deprecated HTTP+SSE transport's `endpoint` / `message`). */
export const named = (event: string, data: string): string => `event: ${event}\ndata: ${data}\n\n`

/** A comment line that keeps the connection alive. */
export const keepAlive = ": keepalive\n\n"

/**
 * The first frame of a stream that has nothing to send yet and no priming
 * event (revisions before 2025-11-25, resumption): status and headers go out
 * at once instead of with the first event or keep-alive, so a client waiting
 * for the response is not held for the keep-alive interval. A comment, which
 * every SSE client ignores.
 */
export const opened = ": open\n\n"

const baseHeaders = {
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no"
} as const

/** An SSE response over a stream of encoded events. */
export const response = <E>(
  events: Stream.Stream<string, E>,
  headers?: Readonly<Record<string, string>>
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(Stream.encodeText(events), {
    contentType: "text/event-stream",
    headers: headers === undefined ? baseHeaders : { ...baseHeaders, ...headers }
  })
