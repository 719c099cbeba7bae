/**
 * Studio's live event stream: the storage event log (`broker_event`) feeding
 * the ADR-0197 hub, served at `GET /api/v1/events`.
 *
 * **Rules**
 *
 * - Every event any instance commits reaches this instance's hub in id order
 *   (storage's `EventLog.committed`, woken by NOTIFY), so a subscriber sees
 *   the same ids on every replica and can resume anywhere with
 *   `Last-Event-ID`.
 * - Replay reads the same log (`EventLog.after`), so the seam between replay
 *   and live is exact.
 * - `?topics=a,b` narrows the stream; no parameter means every topic.
 * - A bad `Last-Event-ID` is a 400 that says what is expected.
 * - The stream is admin-only: `AdminAuth` guards it (see `admin/`), and it
 *   ends when the admin's credential is revoked or expires. One admin
 *   identity holds at most `MAX_EVENT_STREAMS_PER_ADMIN` (16) of them at once
 *   on an instance; one more is 429 `too_many_streams`, audited (the guard
 *   in `Gateway.ts`, through `http/StreamPermits.ts`).
 * - No compression or buffering sits between the stream and the socket: a
 *   buffer would accept writes a stalled client never reads and hide the
 *   blocked write that ADR-0197 uses to drop it.
 *
 * @since 0.1.0
 */
import { Filter, Frame, Hub, ReplaySource, Wire } from "@janus/sse"
import { EventLog } from "@janus/storage"
import { Effect, Layer, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { endWhen } from "../http/StreamEnd.ts"

/** The sse package's replay interface over storage's `broker_event` log. */
export const layerReplaySource: Layer.Layer<ReplaySource.ReplaySource, never, EventLog> = Layer.effect(
  ReplaySource.ReplaySource,
  Effect.map(Effect.service(EventLog), (log) =>
    ReplaySource.ReplaySource.of({
      after: (id, limit) =>
        log.after(id, limit).pipe(
          Effect.mapError((cause) => new ReplaySource.ReplaySourceError({ message: cause.message, cause }))
        )
    }))
)

/** The hub, fed by every committed event for as long as the layer lives. */
export const layerHub: Layer.Layer<Hub.Hub, never, EventLog> = Layer.effectDiscard(
  Effect.gen(function*() {
    const hub = yield* Hub.Hub
    const log = yield* EventLog
    yield* log.committed.pipe(
      Stream.runForEach((row) => hub.publish(Frame.fromLogged(row))),
      Effect.forkScoped
    )
  })
).pipe(
  Layer.provideMerge(Hub.Hub.layer),
  Layer.provide(layerReplaySource)
)

const filterOf = (request: HttpServerRequest.HttpServerRequest): Filter.Filter => {
  const topics = new URL(request.url, "http://janus").searchParams.get("topics")
  if (topics === null || topics.trim() === "") return Filter.all
  return Filter.topics(topics.split(",").map((t) => t.trim()).filter((t) => t !== ""))
}

/** The guard's decision: the refusal to send, or the stream, ending when `until` completes. */
export type Admission =
  | { readonly _tag: "Refused"; readonly response: HttpServerResponse.HttpServerResponse }
  | { readonly _tag: "Admitted"; readonly until: Effect.Effect<void> }

/**
 * `GET /api/v1/events`, with `guard` deciding who may watch and for how long
 * (the stream ends when the watcher's credential does).
 */
export const routes = <R>(
  guard: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<Admission, never, R>
) =>
  HttpRouter.use(Effect.fn(function*(router) {
    const hub = yield* Hub.Hub
    yield* router.add("GET", "/api/v1/events", (request) =>
      Effect.flatMap(guard(request), (admission) =>
        admission._tag === "Refused" ? Effect.succeed(admission.response) : Wire.lastEventIdOf(request).pipe(
          Effect.flatMap((lastEventId) =>
            Wire.eventsResponse(filterOf(request), lastEventId)
          ),
          Effect.map((response) => endWhen(response, admission.until)),
          Effect.provideService(Hub.Hub, hub),
          Effect.catchTag("InvalidLastEventId", (error) =>
            Effect.succeed(
              HttpServerResponse.jsonUnsafe({ error: { code: "invalid_last_event_id", message: error.message } }, {
                status: 400
              })
            ))
        )))
  }))
