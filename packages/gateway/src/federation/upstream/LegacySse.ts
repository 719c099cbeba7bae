/**
 * The deprecated HTTP+SSE transport towards an upstream (2024-11-05 and the
 * 2025 revisions): one long-lived SSE stream carries every message from the
 * server; requests are POSTed to the endpoint it names.
 *
 * **Rules**
 *
 * - `GET <url>` must answer 200 `text/event-stream`; its first `endpoint`
 *   event names where messages go. That URL must have the stream's origin
 *   (else refused: a server cannot send Janus's credentials elsewhere); it is
 *   awaited for at most `requestTimeout`.
 * - Then `initialize` offering 2025-11-25; any stateful revision the server
 *   picks is accepted; `notifications/initialized` follows.
 * - Every message on the stream is routed by `MessageRouter`: responses to
 *   their requests, progress and logs to theirs, server requests answered by
 *   a POST.
 * - The stream is the session: when it ends or breaks, every request in
 *   flight fails and the session is lost. Cancelling a request POSTs
 *   `notifications/cancelled`.
 * - Its notifications (list-changed included) arrive on that stream, so the
 *   change channel is open as long as the session lives (if the upstream
 *   announces list changes at all; else lists are polled).
 *
 * @since 0.1.0
 */
import { Deferred, Effect, PubSub, Stream } from "effect"
import { unavailable, UpstreamError } from "../Errors.ts"
import type { UpstreamAuth } from "../UpstreamAuth.ts"
import type { UpstreamHttp } from "../UpstreamHttp.ts"
import { listenFilter } from "./ChangeChannel.ts"
import * as Handshake from "./Handshake.ts"
import * as HttpExchange from "./HttpExchange.ts"
import * as MessageRouter from "./MessageRouter.ts"
import * as Requests from "./Requests.ts"
import type { Connect, SessionEvent, UpstreamSession } from "./Session.ts"
import * as Wire from "./Wire.ts"

export const connect: Connect<UpstreamHttp | UpstreamAuth> = (target, options) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const name = target.name
    let messagesUrl: string | undefined
    const lost = yield* Deferred.make<never, UpstreamError>()
    const endpoint = yield* Deferred.make<string, UpstreamError>()
    const events = yield* PubSub.sliding<SessionEvent>(1_024)
    const publish = (event: SessionEvent) => Effect.asVoid(PubSub.publish(events, event))

    const http = yield* HttpExchange.make(target, () => ({}))
    const post = (json: string) => http.post(messagesUrl!, json)
    const router = MessageRouter.make({ connection: name, reply: post, publish, scope })

    // --- the stream -----------------------------------------------------------

    const response = yield* http.send("GET", target.url, yield* http.headers({ accept: "text/event-stream" }))
    if (response.status !== 200 || Wire.mediaType(response) !== "text/event-stream") {
      return yield* Wire.unavailableStatus(name, "the SSE endpoint", response.status)
    }
    const onEndpoint = (data: string) =>
      Effect.gen(function*() {
        let url: URL
        try {
          url = new URL(data.trim(), target.url)
        } catch {
          return yield* unavailable(name, "the endpoint event does not hold a URL")
        }
        if (url.origin !== new URL(target.url).origin) {
          return yield* new UpstreamError({
            connection: name,
            kind: "refused",
            detail: `the endpoint event names another origin (${url.origin}); messages only go to the stream's origin`
          })
        }
        messagesUrl = url.href
        yield* Deferred.succeed(endpoint, url.href)
      })
    yield* Wire.readEvents(name, response, options.maxMessageBytes, (event) =>
      Effect.gen(function*() {
        if (event.event === "endpoint") {
          yield* onEndpoint(event.data)
          return true
        }
        if (event.data === "") return true
        for (const message of Wire.parseMessages(event.data, http.injected()) ?? []) yield* router.route(message)
        return true
      })).pipe(
        Effect.flatMap(() => Effect.fail(unavailable(name, "the upstream closed its SSE stream"))),
        Effect.catch((error) =>
          Effect.all([router.failAll(error), Deferred.fail(endpoint, error), Deferred.fail(lost, error)])
        ),
        Effect.forkIn(scope)
      )
    yield* Deferred.await(endpoint).pipe(
      Effect.timeoutOrElse({
        duration: options.requestTimeout,
        orElse: () =>
          Effect.fail(
            new UpstreamError({ connection: name, kind: "timeout", detail: "the SSE stream named no endpoint in time" })
          )
      })
    )

    // --- requests -------------------------------------------------------------

    const exchange = (call: MessageRouter.PendingCall, body: string) =>
      Effect.andThen(post(body), Deferred.await(call.deferred))

    const notify = (method: string, params: Wire.Params) => post(Wire.encodeRequest(undefined, method, params))

    const request = Requests.make({
      connection: name,
      router,
      requestTimeout: options.requestTimeout,
      exchange,
      cancel: Requests.notifyCancelled(notify, scope),
      recover: (error) =>
        error.kind === "refused" && error.status === 401 && http.refreshable ? http.invalidate : undefined
    })

    const negotiated = yield* Handshake.open(name, options.clientInfo, { request, notify })

    return {
      transport: "sse",
      era: "stateful",
      ...negotiated,
      request,
      notify,
      events: Stream.fromPubSub(events),
      channel: Object.keys(listenFilter(negotiated.capabilities)).length > 0
        ? { _tag: "Open" }
        : { _tag: "Closed", reason: "the upstream announces no list changes" },
      lost: Deferred.await(lost)
    } satisfies UpstreamSession
  })
