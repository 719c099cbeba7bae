/**
 * The standalone GET stream of a 2025-era session (`Stateful.ts`): what the
 * server tells the client outside any request. Its events are stored like a
 * request's stream (`ResumableStreams.ts`), under the stream id
 * {@link STANDALONE_STREAM}, so a client resumes it with `Last-Event-ID`.
 *
 * **Spec rules**
 *
 * From the specification: 2025-11-25 "Transports": "Listening for Messages from
 * the Server".
 *
 * - A session has at most one standalone stream: opening a second one is 409;
 *   resuming it (`Last-Event-ID`) replaces the open one.
 * - It carries coalesced `notifications/tools/list_changed`, the prompts and
 *   resources list changes of `Features`, and `notifications/resources/updated`
 *   of the resources the session subscribed to.
 * - It answers at once: with its priming event (2025-11-25), or else an
 *   `: open` comment, never first with the keep-alive interval later.
 * - It ends with its session (DELETE) and when the endpoint shuts down.
 *
 * @since 0.1.0
 */
import { Deferred, Effect, Option, type Scope, Stream } from "effect"
import type { HttpServerResponse } from "effect/http"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type { Caller } from "./Caller.ts"
import type { Features } from "./Features.ts"
import * as HttpReply from "./HttpReply.ts"
import { encodeNotification, ProtocolError } from "./JsonRpc.ts"
import { ListChangedSignals } from "./ListChanged.ts"
import { supportsPriming } from "./Protocol.ts"
import type { ResumableStreams } from "./ResumableStreams.ts"
import { eventId, type McpSession, McpSessionStore } from "./Sessions.ts"
import type { SessionSubscriptions } from "./SessionSubscriptions.ts"
import * as Sse from "./Sse.ts"
import { sessionHeaders, storeUnavailable } from "./StatefulSession.ts"

/** The stream id of a session's standalone GET stream. */
export const STANDALONE_STREAM = "get"

/** @since 0.1.0 */
export interface StandaloneStreams {
  /** The session's standalone stream, from after `afterSeq` (or from now). */
  readonly open: (
    session: McpSession,
    caller: Caller,
    afterSeq: number | undefined
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, ProtocolError, Scope.Scope>
  /** Ends the session's stream, if it has one open here. */
  readonly end: (sessionId: string) => Effect.Effect<void>
}

/** @since 0.1.0 */
export const make = Effect.fnUntraced(function*(options: {
  readonly streams: ResumableStreams
  readonly subscribed: SessionSubscriptions
  readonly features: Option.Option<Features["Service"]>
  readonly retryMs: number
  readonly ended: Effect.Effect<void>
}) {
  const store = yield* McpSessionStore
  const signals = yield* ListChangedSignals
  const { features, streams, subscribed } = options
  const open = new Map<string, Deferred.Deferred<void>>()
  const listChangedJson = encodeNotification("notifications/tools/list_changed")

  const stream = (session: McpSession, caller: Caller, afterSeq: number | undefined) =>
    Effect.gen(function*() {
      const existing = open.get(session.id)
      if (existing !== undefined) {
        if (afterSeq === undefined) {
          return HttpReply.error(
            null,
            new ProtocolError({
              code: ErrorCode.invalidRequest,
              message:
                "This session already has an open GET stream; only one is allowed per session (close it, or resume it with Last-Event-ID)",
              status: 409
            })
          )
        }
        yield* Deferred.succeed(existing, undefined)
      }
      const last = yield* store.openStream(session.id, STANDALONE_STREAM).pipe(Effect.mapError(() => storeUnavailable))
      const from = afterSeq ?? last
      const end = yield* Deferred.make<void>()
      open.set(session.id, end)
      const events = Stream.unwrap(Effect.gen(function*() {
        const changes = yield* signals.subscribe
        yield* changes.pipe(
          Stream.runForEach(() => Effect.ignore(store.append(session.id, STANDALONE_STREAM, listChangedJson))),
          Effect.forkScoped
        )
        if (Option.isSome(features)) {
          // prompts and resources list changes, and updates of the resources this session subscribed to
          const updates = yield* features.value.updatesFor(caller)
          const other = Stream.merge(
            Stream.map(features.value.changes, (kind) => encodeNotification(`notifications/${kind}/list_changed`)),
            updates.pipe(
              Stream.filter((uri) => subscribed.has(session.id, uri)),
              Stream.map((uri) => encodeNotification("notifications/resources/updated", JSON.stringify({ uri })))
            )
          )
          yield* other.pipe(
            Stream.runForEach((json) => Effect.ignore(store.append(session.id, STANDALONE_STREAM, json))),
            Effect.forkScoped
          )
        }
        const replayed = yield* streams.replay(session, STANDALONE_STREAM, from).pipe(
          Effect.catchCause(() => Effect.succeed(Stream.empty))
        )
        const first = supportsPriming(session.protocolVersion) ?
          Sse.priming(eventId(STANDALONE_STREAM, from), options.retryMs) :
          Sse.opened
        return Stream.concat(Stream.succeed(first), Stream.merge(replayed, streams.keepAlive, { haltStrategy: "left" }))
      })).pipe(
        Stream.interruptWhen(Effect.raceFirst(Deferred.await(end), options.ended)),
        Stream.ensuring(Effect.sync(() => {
          if (open.get(session.id) === end) open.delete(session.id)
        }))
      )
      return Sse.response(events, sessionHeaders(session))
    })

  const end = (sessionId: string) =>
    Effect.suspend(() => {
      const stream = open.get(sessionId)
      open.delete(sessionId)
      return stream === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(stream, undefined))
    })

  return { open: stream, end } satisfies StandaloneStreams
})
