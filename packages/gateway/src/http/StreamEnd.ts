/**
 * Ending a streamed response from outside: the body stops when a signal
 * completes, and its finalizers run (the subscriber leaves its hub, the
 * session's stream is released), as when the client goes away.
 *
 * @since 0.1.0
 */
import { type Effect, Stream } from "effect"
import { HttpBody, HttpServerResponse } from "effect/http"

/** `response`, whose streamed body (if it has one) ends when `signal` completes. */
export const endWhen = (
  response: HttpServerResponse.HttpServerResponse,
  signal: Effect.Effect<void>
): HttpServerResponse.HttpServerResponse => {
  const body = response.body
  if (body._tag !== "Stream") return response
  return HttpServerResponse.setBody(
    response,
    HttpBody.stream(Stream.interruptWhen(body.stream, signal), body.contentType, body.contentLength)
  )
}
