/**
 * The change channels of a Streamable HTTP upstream: how it tells Janus that
 * its lists changed while no request is running. They are an optimisation:
 * a channel that fails never makes its upstream unhealthy (health comes from
 * the requests: connecting, the lists, calls); the session reports it
 * `Closed` and the owner re-fetches the lists on an interval instead.
 *
 * **Rules**
 *
 * - 2026-07-28: `subscriptions/listen` asking for the list-changed
 *   notifications the upstream announces (`tools`, `prompts`, `resources`
 *   capabilities with `listChanged`). 2025 Streamable HTTP: the GET stream,
 *   resumed with `Last-Event-ID` after the server's `retry` delay; a 404 for
 *   the session re-establishes the session (a failure to do so loses it).
 * - Either may answer with SSE or newline-delimited JSON (any JSON type:
 *   some servers answer listen with `application/json` and one frame per
 *   line). Other types and any status but 200 are failures.
 * - The channel is `Open` once listen's first frame (its acknowledgement)
 *   arrives, or once the GET stream is accepted; `Closed` with the reason
 *   when it fails, when the stream breaks, or when it ends before any frame
 *   ("closed at once"). An upstream that announces no list changes has no
 *   channel (`Closed`).
 * - A failed channel is opened again after a jittered exponential backoff
 *   (`channelRetry` doubling to `channelRetryMax`); a stream that ends after
 *   delivering frames is reopened at once (listen) or after the server's
 *   `retry` (GET), and resets the backoff.
 * - Every frame but the listen response is routed by `MessageRouter`
 *   (notifications become session events).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Predicate, Random } from "effect"
import type { UpstreamError } from "../Errors.ts"
import type { HttpExchange } from "./HttpExchange.ts"
import type { MessageRouter } from "./MessageRouter.ts"
import type { SessionEvent, UpstreamTarget } from "./Session.ts"
import * as Wire from "./Wire.ts"

export interface ChannelContext {
  readonly target: UpstreamTarget
  readonly http: HttpExchange
  readonly router: MessageRouter
  readonly limit: number
  readonly publish: (event: SessionEvent) => Effect.Effect<void>
  /** The session is gone (a 2025 session that could not be re-established). */
  readonly lost: (error: UpstreamError) => Effect.Effect<void>
  readonly retry: Duration.Duration
  readonly retryMax: Duration.Duration
}

/** The default backoff of a failed channel: 1 s doubling to 5 minutes. */
export const DEFAULT_RETRY = Duration.seconds(1)
export const DEFAULT_RETRY_MAX = Duration.minutes(5)

/** Media types a channel may answer with: SSE, or JSON frames one per line. */
const streamable = (type: string) =>
  type === "text/event-stream" || type === "application/json" || type === "application/x-ndjson" ||
  type === "application/jsonl" || type === "application/json-seq" || type.endsWith("+json")

/** What the list-changed capabilities announce, as a `subscriptions/listen` filter. */
export const listenFilter = (capabilities: Readonly<Record<string, unknown>>): Wire.Params => {
  const filter: Record<string, boolean> = {}
  const announces = (kind: string) => {
    const capability = capabilities[kind]
    return Predicate.isReadonlyObject(capability) && capability.listChanged === true
  }
  if (announces("tools")) filter.toolsListChanged = true
  if (announces("prompts")) filter.promptsListChanged = true
  if (announces("resources")) filter.resourcesListChanged = true
  return filter
}

const closed = (reason: string): SessionEvent => ({ _tag: "Channel", state: { _tag: "Closed", reason } })
const open: SessionEvent = { _tag: "Channel", state: { _tag: "Open" } }

/** One attempt's end: reopen soon (`delivered`), or after the backoff with `reason`. */
type Attempt =
  | { readonly _tag: "Delivered"; readonly delay: Duration.Duration }
  | { readonly _tag: "Failed"; readonly reason: string }
  | { readonly _tag: "None"; readonly reason: string }

/** Runs `attempt` forever, publishing the channel's state and backing off between failures. */
const supervise = (context: ChannelContext, attempt: Effect.Effect<Attempt>): Effect.Effect<never> =>
  Effect.gen(function*() {
    let failures = 0
    while (true) {
      const end = yield* attempt
      if (end._tag === "Delivered") {
        failures = 0
        yield* context.publish(closed("the change stream ended; opening it again"))
        yield* Effect.sleep(end.delay)
        continue
      }
      yield* context.publish(closed(end.reason))
      const base = Math.min(
        Duration.toMillis(context.retryMax),
        Duration.toMillis(context.retry) * 2 ** Math.min(failures, 20)
      )
      failures++
      yield* Effect.sleep(Duration.millis(Math.round(base * (0.8 + 0.4 * (yield* Random.next)))))
    }
  })

const failureOf = (error: UpstreamError): Attempt => ({ _tag: "Failed", reason: error.detail })

/** 2026-07-28: `subscriptions/listen`, listened again whenever it ends. */
export const listen = (
  context: ChannelContext,
  request: {
    readonly filter: Wire.Params
    readonly nextId: () => string
    readonly meta: Wire.Params
    readonly headers: (method: string, params: Wire.Params) => Readonly<Record<string, string>>
  }
): Effect.Effect<void> => {
  const { http, limit, target } = context
  const name = target.name
  if (Object.keys(request.filter).length === 0) {
    return context.publish(closed("the upstream announces no list changes"))
  }
  const attempt = Effect.scoped(Effect.gen(function*() {
    const id = request.nextId()
    const params = { notifications: request.filter, _meta: request.meta }
    const headers = yield* http.headers({
      "content-type": "application/json",
      accept: "text/event-stream, application/json",
      ...request.headers("subscriptions/listen", params)
    })
    const response = yield* http.send(
      "POST",
      target.url,
      headers,
      Wire.encodeRequest(id, "subscriptions/listen", params)
    )
    const type = Wire.mediaType(response)
    if (response.status !== 200 || !streamable(type)) {
      return {
        _tag: "Failed",
        reason: response.status !== 200
          ? `subscriptions/listen answered HTTP ${response.status}`
          : `subscriptions/listen answered with ${type === "" ? "no content type" : type.slice(0, 60)}`
      } satisfies Attempt
    }
    let frames = 0
    let error: string | undefined
    yield* Wire.readMessages(name, response, limit, (message) =>
      Effect.gen(function*() {
        if (frames++ === 0) yield* context.publish(open)
        if (message._tag === "Response" && message.id === id) {
          if (message.error !== undefined) error = Wire.rpcError(name, message.error).detail
          return false
        }
        yield* context.router.route(message)
        return true
      }), context.http.injected()).pipe(Effect.catch((e) => Effect.sync(() => void (error ??= e.detail))))
    if (frames === 0 || error !== undefined) {
      return {
        _tag: "Failed",
        reason: error === undefined
          ? "subscriptions/listen ended before acknowledging"
          : `subscriptions/listen: ${error}`
      } satisfies Attempt
    }
    return { _tag: "Delivered", delay: Duration.zero } satisfies Attempt
  })).pipe(Effect.catch((e) => Effect.succeed(failureOf(e))))
  return supervise(context, attempt)
}

/** 2025 Streamable HTTP: the GET stream, resumed after its `retry` delay. */
export const getStream = (
  context: ChannelContext,
  session: {
    /** Whether the upstream announces any list change (else there is no channel to open). */
    readonly announces: boolean
    readonly id: () => string | undefined
    readonly reinitialize: (failed: string | undefined) => Effect.Effect<void, UpstreamError>
  }
): Effect.Effect<void> => {
  const { http, limit, target } = context
  const name = target.name
  if (!session.announces) return context.publish(closed("the upstream announces no list changes"))
  let lastEventId: string | undefined
  let retryMs = 1_000
  const attempt = Effect.scoped(Effect.gen(function*() {
    const sent = session.id()
    const headers = yield* http.headers({
      accept: "text/event-stream",
      ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId })
    })
    const response = yield* http.send("GET", target.url, headers)
    if (response.status === 404 && sent !== undefined) {
      yield* session.reinitialize(sent).pipe(Effect.catch(context.lost))
      lastEventId = undefined
      return { _tag: "Failed", reason: "the session ended; it was established again" } satisfies Attempt
    }
    const type = Wire.mediaType(response)
    if (response.status !== 200 || !streamable(type)) {
      return {
        _tag: response.status === 405 ? "None" : "Failed",
        reason: response.status === 405
          ? "the upstream offers no GET stream (HTTP 405)"
          : response.status !== 200
          ? `the GET stream answered HTTP ${response.status}`
          : `the GET stream answered with ${type === "" ? "no content type" : type.slice(0, 60)}`
      } satisfies Attempt
    }
    yield* context.publish(open)
    const end = yield* Wire.readMessages(
      name,
      response,
      limit,
      (message) => Effect.as(message._tag === "Response" ? Effect.void : context.router.route(message), true),
      context.http.injected()
    ).pipe(Effect.catch((e) => Effect.succeed(e)))
    if (!("stopped" in end)) return failureOf(end)
    lastEventId = end.lastEventId ?? lastEventId
    if (end.retryMs !== undefined) retryMs = Math.min(Math.max(end.retryMs, 100), 60_000)
    if (end.messages === 0 && end.lastEventId === undefined) {
      return { _tag: "Failed", reason: "the GET stream ended before sending anything" } satisfies Attempt
    }
    return { _tag: "Delivered", delay: Duration.millis(retryMs) } satisfies Attempt
  })).pipe(Effect.catch((e) => Effect.succeed(failureOf(e))))
  return supervise(context, attempt)
}
