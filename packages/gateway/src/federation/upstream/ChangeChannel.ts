/**
 * The change channels of a Streamable HTTP upstream: how it tells Janus that
 * its lists changed while no request is running.
 *
 * **Rules**
 *
 * - 2026-07-28: `subscriptions/listen` with `toolsListChanged`, re-listened
 *   after a graceful end; a failure to re-listen loses the session.
 * - 2025 Streamable HTTP: the GET stream (405 means none), resumed with
 *   `Last-Event-ID` after the server's `retry` delay; a failure to reopen it
 *   loses the session.
 * - HTTP+SSE and stdio have no channel of their own: their notifications
 *   arrive on the session's stream.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
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
  readonly lost: (error: UpstreamError) => Effect.Effect<void>
}

const changed: SessionEvent = { _tag: "Notification", method: "notifications/tools/list_changed", params: {} }

/** 2026-07-28: `subscriptions/listen`, re-listened after each graceful end. */
export const listen = (
  context: ChannelContext,
  request: {
    readonly nextId: () => string
    readonly meta: Wire.Params
    readonly headers: (method: string, params: Wire.Params) => Readonly<Record<string, string>>
  }
): Effect.Effect<void> => {
  const { http, limit, target } = context
  const name = target.name
  return Effect.gen(function*() {
    while (true) {
      const outcome = yield* Effect.scoped(Effect.gen(function*() {
        const id = request.nextId()
        const params = { notifications: { toolsListChanged: true }, _meta: request.meta }
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
        if (response.status !== 200 || Wire.mediaType(response) !== "text/event-stream") {
          if (response.status >= 400 && response.status < 500) return "unsupported" as const
          return yield* Wire.unavailableStatus(name, "subscriptions/listen", response.status)
        }
        yield* Wire.readMessages(name, response, limit, (message) =>
          message._tag === "Response" && message.id === id
            ? Effect.succeed(false)
            : Effect.as(message._tag === "Notification" ? context.router.route(message) : Effect.void, true)).pipe(
            Effect.ignore
          )
        return "again" as const
      }))
      if (outcome === "unsupported") return
      yield* Effect.sleep("1 second")
      // Changes may have been missed while the stream was down.
      yield* context.publish(changed)
    }
  }).pipe(Effect.catch(context.lost))
}

/** 2025 Streamable HTTP: the GET stream, resumed after its `retry` delay. */
export const getStream = (
  context: ChannelContext,
  session: {
    readonly id: () => string | undefined
    readonly reinitialize: (failed: string | undefined) => Effect.Effect<void, UpstreamError>
  }
): Effect.Effect<void> => {
  const { http, limit, target } = context
  const name = target.name
  return Effect.gen(function*() {
    let lastEventId: string | undefined
    let retryMs = 1_000
    while (true) {
      const end = yield* Effect.scoped(Effect.gen(function*() {
        const sent = session.id()
        const headers = yield* http.headers({
          accept: "text/event-stream",
          ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId })
        })
        const response = yield* http.send("GET", target.url, headers)
        if (response.status === 405) return "unsupported" as const
        if (response.status === 404 && sent !== undefined) {
          yield* session.reinitialize(sent)
          lastEventId = undefined
          return "again" as const
        }
        if (response.status !== 200 || Wire.mediaType(response) !== "text/event-stream") {
          return yield* Wire.unavailableStatus(name, "the GET stream", response.status)
        }
        const result = yield* Wire.readMessages(
          name,
          response,
          limit,
          (message) => Effect.as(message._tag === "Response" ? Effect.void : context.router.route(message), true)
        ).pipe(
          // A stream that breaks off is reopened; only a failure to reopen it loses the session.
          Effect.orElseSucceed((): Wire.StreamEnd => ({
            stopped: false,
            lastEventId,
            retryMs: undefined,
            messages: 0
          }))
        )
        lastEventId = result.lastEventId ?? lastEventId
        if (result.retryMs !== undefined) retryMs = Math.min(Math.max(result.retryMs, 100), 60_000)
        return "again" as const
      }))
      if (end === "unsupported") return
      yield* Effect.sleep(Duration.millis(retryMs))
    }
  }).pipe(Effect.catch(context.lost))
}
