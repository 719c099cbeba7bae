/**
 * The resumable SSE streams of 2025-era sessions (`Stateful.ts`): the answer
 * of a request that outlasts `streamAfter` or emits messages before its
 * response, and the replay of a stream after `Last-Event-ID`.
 *
 * **Spec rules**
 *
 * From the specification: 2025-11-25 "Transports": "Resumability and
 * Redelivery", "Polling".
 *
 * - A request that finishes within `streamAfter` without emitting anything is
 *   answered JSON (nothing to resume, nothing stored); otherwise with an SSE
 *   stream whose events have ids (`<stream>.<seq>`) and are stored in the
 *   session's store before they are sent; if the store fails, the message
 *   still goes out, without an id. 2025-11-25 clients first get a priming
 *   event (id, `retry`, empty data).
 * - With `pollAfter`, a stream whose request still runs is closed after that
 *   delay (SSE polling), on 2025-11-25 sessions only (older clients got no
 *   `retry`): the client reconnects with GET and `Last-Event-ID`.
 * - GET with `Last-Event-ID` replays exactly the events that stream sent after
 *   that id, then the rest until the response; an id of no stream of the
 *   session is 404, an id not of the form `<stream>.<seq>` 400.
 * - Closing a stream never stops the request behind it.
 *
 * @since 0.1.0
 */
import { type Cause, Deferred, type Duration, Effect, Queue, Stream } from "effect"
import type { HttpServerResponse } from "effect/http"
import * as HttpReply from "./HttpReply.ts"
import { ProtocolError } from "./JsonRpc.ts"
import { supportsPriming } from "./Protocol.ts"
import {
  eventId,
  type McpSession,
  McpSessionStore,
  type McpSessionStoreError,
  newStreamId,
  parseEventId,
  type UnknownStream
} from "./Sessions.ts"
import * as Sse from "./Sse.ts"
import { sessionHeaders, storeUnavailable } from "./StatefulSession.ts"

/** @since 0.1.0 */
export interface ResumableStreamOptions {
  /** `retry` (ms) sent in priming events. */
  readonly retryMs: number
  /** A request still running after this long (or emitting messages) is answered with an SSE stream. */
  readonly streamAfter: Duration.Duration
  /** Close a request's stream after this long if the request still runs (SSE polling). */
  readonly pollAfter: Duration.Duration | undefined
  /** Keep-alive comment interval on long-lived streams. */
  readonly keepAlive: Duration.Duration
  /** Completes when the endpoint shuts down: streams end so clients reconnect elsewhere. */
  readonly ended: Effect.Effect<void>
}

/** A request run by {@link ResumableStreams.answer}. */
export interface StreamedRequest {
  /** Runs the request, sending its messages to `emit`; resolves to its encoded response (none when cancelled). */
  readonly run: (emit: (json: string) => Effect.Effect<void>) => Effect.Effect<string>
  /** Forks the request so that it outlives the HTTP request (`InFlightCalls.ts`). */
  readonly fork: (effect: Effect.Effect<void>) => Effect.Effect<unknown>
}

/** @since 0.1.0 */
export interface ResumableStreams {
  /** The answer of a request: JSON if it finished at once and quietly, else a resumable SSE stream. */
  readonly answer: (
    session: McpSession,
    request: StreamedRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** The stored events of a stream after `afterSeq` as SSE frames, then its live ones until it closes. */
  readonly replay: (
    session: McpSession,
    streamId: string,
    afterSeq: number
  ) => Effect.Effect<Stream.Stream<string>, McpSessionStoreError | UnknownStream>
  /** Parses a `Last-Event-ID` (400 if it is not one of this server's). */
  readonly parseLastEventId: (
    lastEventId: string
  ) => Effect.Effect<{ readonly streamId: string; readonly seq: number }, ProtocolError>
  /** GET with a `Last-Event-ID` of a request's stream: what it missed, then the rest. */
  readonly resume: (
    session: McpSession,
    lastEventId: string,
    streamId: string,
    afterSeq: number
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, ProtocolError>
  /** Keep-alive comments, from one interval on. */
  readonly keepAlive: Stream.Stream<string>
}

/** @since 0.1.0 */
export const make = (options: ResumableStreamOptions): Effect.Effect<ResumableStreams, never, McpSessionStore> =>
  Effect.gen(function*() {
    const store = yield* McpSessionStore
    const keepAlive = Stream.map(Stream.tick(options.keepAlive).pipe(Stream.drop(1)), () => Sse.keepAlive)

    const polled = <E>(events: Stream.Stream<string, E>, session: McpSession): Stream.Stream<string, E> =>
      options.pollAfter !== undefined && supportsPriming(session.protocolVersion) ?
        Stream.interruptWhen(events, Effect.sleep(options.pollAfter)) :
        events

    const answer = Effect.fnUntraced(function*(session: McpSession, request: StreamedRequest) {
      // Messages emitted before the response mode is chosen, and the final one.
      const buffered: Array<string> = []
      let final: string | undefined
      let done = false
      // Set once streaming: where messages go, and how the stream ends.
      let sink: ((json: string) => Effect.Effect<void>) | undefined
      let close: Effect.Effect<void> | undefined
      const wake = yield* Deferred.make<void>()
      const signal = Effect.asVoid(Deferred.succeed(wake, undefined))
      const emit = (json: string) =>
        Effect.suspend(() => {
          if (sink !== undefined) return sink(json)
          buffered.push(json)
          return signal
        })
      const run = request.run(emit).pipe(
        Effect.flatMap((json) =>
          Effect.suspend(() => {
            if (sink !== undefined) return sink(json)
            final = json
            return Effect.void
          })
        ),
        // Cancelled or finished: end the stream, or wake the request to answer.
        Effect.ensuring(Effect.suspend(() => {
          done = true
          return close ?? signal
        }))
      )
      yield* request.fork(run)
      yield* Effect.raceFirst(Deferred.await(wake), Effect.sleep(options.streamAfter))
      const headers = sessionHeaders(session)
      if (done && buffered.length === 0) {
        // Finished quickly: JSON. Cancelled before any message: an empty stream (no response is sent).
        return final === undefined ? Sse.response(Stream.empty, headers) : HttpReply.json(final, 200, headers)
      }
      const streamId = newStreamId()
      yield* Effect.ignore(store.openStream(session.id, streamId))
      const live = yield* Queue.unbounded<string, Cause.Done>()
      // Stored for resumption, then sent; if the store fails the message still goes out (without an id).
      const send = (json: string) =>
        store.append(session.id, streamId, json).pipe(
          Effect.map((seq) => Sse.message(json, eventId(streamId, seq))),
          Effect.orElseSucceed(() => Sse.message(json)),
          Effect.flatMap((frame) => Queue.offer(live, frame)),
          Effect.asVoid
        )
      const end = Effect.andThen(Effect.ignore(store.closeStream(session.id, streamId)), Queue.end(live))
      // Flush what was emitted so far, then route later messages straight to the stream.
      const handOver: Effect.Effect<void> = Effect.suspend(() => {
        const next = buffered.shift() ?? final
        if (next !== undefined) {
          if (next === final) final = undefined
          return Effect.andThen(send(next), handOver)
        }
        if (done) return Effect.asVoid(end)
        sink = send
        close = Effect.asVoid(end)
        return Effect.void
      })
      yield* handOver
      const priming = supportsPriming(session.protocolVersion) ?
        Stream.succeed(Sse.priming(eventId(streamId, 0), options.retryMs)) :
        Stream.empty
      const events = Stream.concat(priming, Stream.merge(Stream.fromQueue(live), keepAlive, { haltStrategy: "left" }))
      return Sse.response(polled(events, session).pipe(Stream.interruptWhen(options.ended)), headers)
    })

    const replay = (session: McpSession, streamId: string, afterSeq: number) =>
      store.replay(session.id, streamId, afterSeq).pipe(
        Effect.map((events) =>
          Stream.map(events, (event) => Sse.message(event.data, eventId(streamId, event.seq))).pipe(
            Stream.catchCause(() => Stream.empty)
          )
        )
      )

    const parseLastEventId = (lastEventId: string) => {
      const parsed = parseEventId(lastEventId)
      return parsed !== undefined ? Effect.succeed(parsed) : Effect.fail(ProtocolError.invalidParams(
        `Last-Event-ID ${JSON.stringify(lastEventId)} is not an event id of this server; expected <stream>.<sequence>`,
        400
      ))
    }

    const resume = Effect.fnUntraced(function*(
      session: McpSession,
      lastEventId: string,
      streamId: string,
      afterSeq: number
    ) {
      const replayed = yield* replay(session, streamId, afterSeq).pipe(
        Effect.catchTag("UnknownStream", () =>
          Effect.fail(ProtocolError.invalidParams(
            `Last-Event-ID ${
              JSON.stringify(lastEventId)
            } names no stream of this session (it ended long ago or never existed); resend the request`,
            404
          ))),
        Effect.catchTag("McpSessionStoreError", () => Effect.fail(storeUnavailable))
      )
      const events = Stream.concat(
        Stream.succeed(Sse.opened),
        Stream.merge(replayed, keepAlive, { haltStrategy: "left" })
      )
      return Sse.response(events.pipe(Stream.interruptWhen(options.ended)), sessionHeaders(session))
    })

    return { answer, replay, parseLastEventId, resume, keepAlive }
  })
