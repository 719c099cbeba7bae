/**
 * The SSE wire: bytes, headers, the `HttpServerResponse` the gateway mounts
 * at `GET /api/v1/events`, and `Last-Event-ID`.
 *
 * **Details**
 *
 * - Every stream starts with `retry: 3000` ({@link Limits.RECONNECT_DELAY}),
 *   then the frames' own SSE text (see `Frame` for the format). A reconnect
 *   frame sets `retry: 0` so the client comes back at once.
 * - Headers for proxies: `Cache-Control: no-cache`, `X-Accel-Buffering: no`
 *   (nginx would otherwise buffer the stream) and `Connection: keep-alive`.
 *   `NodeHttpServer` drops the connection header on HTTP/2, which forbids it.
 *
 * How a blocked write is seen on a real socket (ADR-0197 "a single write
 * blocked for more than 30 seconds"): `NodeHttpServer` writes a `Stream` body
 * chunk by chunk, and pulls the next chunk only when
 * `ServerResponse.write` returned `true` or `drain` fired. The subscription
 * stream hands each batch over through a `Handoff` whose write completes at
 * that next pull. So the writer's write is the handoff to the socket: it
 * lasts while the kernel's send buffer and Node's 16 KiB high-water mark are
 * full, i.e. while the client does not read. The writer stamps it when it
 * starts; the next publish or heartbeat tick finds it older than 30 s and
 * drops the subscriber; {@link response} subscribes with
 * `interruptBlockedConsumer`, so the response fiber parked on `drain` is
 * interrupted too, and `NodeHttpServer` destroys the response: the socket and
 * its buffer are released, not left to the operating system's timeouts.
 *
 * **Example** (Mounting it in the gateway)
 *
 * ```ts
 * router.add("GET", "/api/v1/events", (request) =>
 *   Effect.flatMap(Wire.lastEventIdOf(request), (id) => Wire.eventsResponse(Filter.all, id)))
 * ```
 *
 * **Gotchas**
 *
 * - Do not compress or buffer this response (no compression middleware on the
 *   route): a buffer between the stream and the socket would take writes the
 *   client never reads and hide the blocked write.
 * - While the client reads, what the server holds for it is bounded by
 *   `MAX_QUEUED_BYTES` (queued and in-flight frames) plus the socket's
 *   high-water mark.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import { Headers, type HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Filter from "./Filter.ts"
import type * as Frame from "./Frame.ts"
import { Hub } from "./Hub.ts"
import { RECONNECT_DELAY } from "./Limits.ts"

/** The content type of the event stream. */
export const contentType = "text/event-stream"

/** The headers an event-stream response needs to pass through proxies unbuffered. */
export const headers: Readonly<Record<string, string>> = {
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
  connection: "keep-alive"
}

/** `retry: 3000`, the first bytes of every stream. */
export const preamble: Uint8Array = new TextEncoder().encode(
  Sse.encoder.write(new Sse.Retry({ duration: RECONNECT_DELAY, lastEventId: undefined }))
)

/** The SSE bytes of a subscription: the preamble, then each frame's text, one chunk per write batch. */
export const encode = <E, R>(frames: Stream.Stream<Frame.Frame, E, R>): Stream.Stream<Uint8Array, E, R> =>
  Stream.map(frames, (frame) => frame.bytes).pipe(Stream.prepend([preamble]))

/**
 * A `200 text/event-stream` response streaming `frames`. Pass a subscription
 * made with `interruptBlockedConsumer: true` (as {@link eventsResponse} does).
 */
export const response = <E>(frames: Stream.Stream<Frame.Frame, E>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(encode(frames), { contentType, headers })

/**
 * Subscribes to the hub and answers with the event stream: what the gateway
 * returns from `GET /api/v1/events`.
 */
export const eventsResponse = (
  filter: Filter.Filter,
  lastEventId?: number | undefined,
  options?: { readonly timeout?: Duration.Input | undefined } | undefined
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Hub> =>
  Effect.map(
    Effect.service(Hub),
    (hub) => response(hub.subscribe(filter, lastEventId, { timeout: options?.timeout, interruptBlockedConsumer: true }))
  )

/** A `Last-Event-ID` that is not an id this server sends (a non-negative integer). */
export class InvalidLastEventId extends Schema.TaggedError<InvalidLastEventId>()("InvalidLastEventId", {
  value: Schema.String,
  message: Schema.String
}) {}

const EventId = Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))
const decodeEventId = Schema.decodeUnknownOption(EventId)

/**
 * Parses a `Last-Event-ID` header value: absent or empty is `undefined` (no
 * replay), a non-negative integer is the id, anything else fails.
 */
export const parseLastEventId = (
  value: string | undefined
): Effect.Effect<number | undefined, InvalidLastEventId> => {
  if (value === undefined || value.trim() === "") return Effect.succeed(undefined)
  const id = decodeEventId(value.trim())
  return Option.isSome(id) ? Effect.succeed(id.value) : Effect.fail(
    new InvalidLastEventId({
      value,
      message: `Last-Event-ID must be a non-negative integer event id, got ${JSON.stringify(value.slice(0, 64))}`
    })
  )
}

/** The request's `Last-Event-ID` header, parsed as {@link parseLastEventId} does. */
export const lastEventIdOf = (
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<number | undefined, InvalidLastEventId> =>
  parseLastEventId(Option.getOrUndefined(Headers.get(request.headers, "last-event-id")))
