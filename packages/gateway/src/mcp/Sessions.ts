/**
 * 2025-era MCP sessions (`Mcp-Session-Id`) and the server-to-client messages
 * kept for resumable SSE streams, behind a store service so another gateway
 * instance can serve a session later (SPEC "Scale-out": no sticky sessions; a
 * 2025-era stream resumes on another replica with `Last-Event-ID`).
 *
 * Spec rules (Streamable HTTP 2025-03-26 .. 2025-11-25):
 * - The session id is assigned on the `initialize` response; it MUST be
 *   globally unique and cryptographically secure, and contain only visible
 *   ASCII (0x21-0x7E): 32 CSPRNG bytes in base64url.
 * - Event ids MUST be unique within the session and identify the stream they
 *   belong to, so `Last-Event-ID` resumes exactly that stream: an event id is
 *   `<streamId>.<seq>`, `seq` counting from 1 per stream (0 is the priming
 *   event, which carries no message).
 * - On resumption the server replays the messages sent after the last event id
 *   on that stream, and only those (never another stream's).
 *
 * The in-memory layer bounds memory: idle sessions expire, each stream keeps
 * its last `maxEventsPerStream` events and each session its last
 * `maxStreamsPerSession` streams.
 *
 * @since 0.1.0
 */
import { Clock, Context, Deferred, Duration, Effect, Layer, Option, Schedule, Schema, Stream } from "effect"
import * as SecureRandom from "effect/crypto/SecureRandom"
import * as Base64Url from "effect/encoding/Base64Url"

/** A 2025-era session record. */
export interface McpSession {
  readonly id: string
  /** The `Caller.id` that created the session; only that caller may use it. */
  readonly ownerId: string
  readonly protocolVersion: string
  readonly clientInfo: Readonly<Record<string, unknown>> | undefined
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  readonly createdAt: number
  readonly lastSeenAt: number
  /** The level of the client's last `logging/setLevel`; absent when it sent none. */
  readonly logLevel?: string | undefined
}

/** A stored server-to-client message of a stream. */
export interface StoredEvent {
  readonly seq: number
  /** The JSON-RPC message, encoded. */
  readonly data: string
}

/** The store could not be reached or failed. */
export class McpSessionStoreError extends Schema.TaggedError<McpSessionStoreError>()("McpSessionStoreError", {
  detail: Schema.String
}) {}

/** `replay` of a stream the session does not have (never existed, expired or evicted). */
export class UnknownStream extends Schema.TaggedError<UnknownStream>()("UnknownStream", {
  streamId: Schema.String
}) {}

/** @since 0.1.0 */
export class McpSessionStore extends Context.Service<McpSessionStore, {
  readonly create: (session: McpSession) => Effect.Effect<void, McpSessionStoreError>
  readonly get: (id: string) => Effect.Effect<Option.Option<McpSession>, McpSessionStoreError>
  /** Records the client's `logging/setLevel` level (no-op for an unknown session). */
  readonly setLogLevel: (id: string, level: string) => Effect.Effect<void, McpSessionStoreError>
  /** Records activity (`lastSeenAt = now`); callers throttle it. */
  readonly touch: (id: string, now: number) => Effect.Effect<void, McpSessionStoreError>
  /** Ends the session and drops its streams. */
  readonly delete: (id: string) => Effect.Effect<void, McpSessionStoreError>
  /** Registers a stream (idempotent); returns its last stored seq (0 when new). */
  readonly openStream: (sessionId: string, streamId: string) => Effect.Effect<number, McpSessionStoreError>
  /** Appends a message to a stream; returns its seq. */
  readonly append: (sessionId: string, streamId: string, data: string) => Effect.Effect<number, McpSessionStoreError>
  /** Marks a stream complete: `replay` ends after its last event. */
  readonly closeStream: (sessionId: string, streamId: string) => Effect.Effect<void, McpSessionStoreError>
  /**
   * The events of a stream after `afterSeq`, then the ones appended later,
   * ending when the stream is closed (or the session deleted). Fails with
   * `UnknownStream` up front when the session has no such stream.
   */
  readonly replay: (
    sessionId: string,
    streamId: string,
    afterSeq: number
  ) => Effect.Effect<Stream.Stream<StoredEvent, McpSessionStoreError>, McpSessionStoreError | UnknownStream>
}>()("@janus/gateway/mcp/McpSessionStore") {
  /** The in-memory store (single instance). */
  static readonly layerMemory = (options?: MemoryStoreOptions): Layer.Layer<McpSessionStore> =>
    Layer.effect(McpSessionStore, makeMemory(options))
}

// ---------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------

/** A new session id: 32 CSPRNG bytes, base64url (visible ASCII). */
export const newSessionId = (): string => Base64Url.encode(SecureRandom.randomBytesUnsafe(32))

/** A new stream id: 12 CSPRNG bytes, base64url. */
export const newStreamId = (): string => Base64Url.encode(SecureRandom.randomBytesUnsafe(12))

/** The SSE event id of `seq` on `streamId`. */
export const eventId = (streamId: string, seq: number): string => `${streamId}.${seq}`

/** Parses a `Last-Event-ID`; `undefined` when it is not one of ours. */
export const parseEventId = (value: string): { readonly streamId: string; readonly seq: number } | undefined => {
  const dot = value.lastIndexOf(".")
  if (dot <= 0) return undefined
  const digits = value.slice(dot + 1)
  if (!/^\d{1,15}$/.test(digits)) return undefined
  return { streamId: value.slice(0, dot), seq: Number(digits) }
}

// ---------------------------------------------------------------------------
// In-memory store
// ---------------------------------------------------------------------------

/** @since 0.1.0 */
export interface MemoryStoreOptions {
  /** Sessions idle longer than this are removed. Default 30 minutes. */
  readonly idleTimeout?: Duration.Input | undefined
  /** Events kept per stream. Default 512. */
  readonly maxEventsPerStream?: number | undefined
  /** Streams kept per session (oldest dropped first). Default 64. */
  readonly maxStreamsPerSession?: number | undefined
}

interface StreamState {
  readonly events: Array<StoredEvent>
  lastSeq: number
  closed: boolean
  /** Completed and replaced on every append / close. */
  changed: Deferred.Deferred<void>
}

interface SessionState {
  record: McpSession
  readonly streams: Map<string, StreamState>
}

const makeMemory = Effect.fnUntraced(function*(options?: MemoryStoreOptions) {
  const idleTimeout = Duration.toMillis(Duration.fromInputUnsafe(options?.idleTimeout ?? "30 minutes"))
  const maxEvents = options?.maxEventsPerStream ?? 512
  const maxStreams = options?.maxStreamsPerSession ?? 64
  const sessions = new Map<string, SessionState>()

  const signal = (stream: StreamState) => {
    const previous = stream.changed
    stream.changed = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(previous, Effect.void)
  }
  const closeAll = (session: SessionState) => {
    for (const stream of session.streams.values()) {
      stream.closed = true
      signal(stream)
    }
  }
  const streamOf = (sessionId: string, streamId: string): StreamState | undefined =>
    sessions.get(sessionId)?.streams.get(streamId)

  // Sweep idle sessions.
  yield* Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    for (const [id, session] of sessions) {
      if (now - session.record.lastSeenAt > idleTimeout) {
        sessions.delete(id)
        closeAll(session)
      }
    }
  }).pipe(
    Effect.repeat(Schedule.spaced(Duration.millis(Math.max(1000, Math.min(60_000, idleTimeout / 4))))),
    Effect.forkScoped
  )

  return McpSessionStore.of({
    create: (session) =>
      Effect.sync(() => {
        sessions.set(session.id, { record: session, streams: new Map() })
      }),
    get: (id) => Effect.sync(() => Option.fromNullishOr(sessions.get(id)?.record)),
    setLogLevel: (id, level) =>
      Effect.sync(() => {
        const session = sessions.get(id)
        if (session !== undefined) session.record = { ...session.record, logLevel: level }
      }),
    touch: (id, now) =>
      Effect.sync(() => {
        const session = sessions.get(id)
        if (session !== undefined) session.record = { ...session.record, lastSeenAt: now }
      }),
    delete: (id) =>
      Effect.sync(() => {
        const session = sessions.get(id)
        if (session === undefined) return
        sessions.delete(id)
        closeAll(session)
      }),
    openStream: (sessionId, streamId) =>
      Effect.sync(() => {
        const session = sessions.get(sessionId)
        if (session === undefined) return 0
        const existing = session.streams.get(streamId)
        if (existing !== undefined) return existing.lastSeq
        if (session.streams.size >= maxStreams) {
          // Evict the oldest stream (Map iteration order is insertion order).
          const oldest = session.streams.keys().next().value!
          const evicted = session.streams.get(oldest)!
          session.streams.delete(oldest)
          evicted.closed = true
          signal(evicted)
        }
        session.streams.set(streamId, { events: [], lastSeq: 0, closed: false, changed: Deferred.makeUnsafe() })
        return 0
      }),
    append: (sessionId, streamId, data) =>
      Effect.sync(() => {
        const stream = streamOf(sessionId, streamId)
        if (stream === undefined || stream.closed) return 0
        const seq = ++stream.lastSeq
        stream.events.push({ seq, data })
        if (stream.events.length > maxEvents) stream.events.shift()
        signal(stream)
        return seq
      }),
    closeStream: (sessionId, streamId) =>
      Effect.sync(() => {
        const stream = streamOf(sessionId, streamId)
        if (stream === undefined || stream.closed) return
        stream.closed = true
        signal(stream)
      }),
    replay: (sessionId, streamId, afterSeq) =>
      Effect.suspend(() => {
        const stream = streamOf(sessionId, streamId)
        if (stream === undefined) return Effect.fail(new UnknownStream({ streamId }))
        return Effect.succeed(Stream.paginate(afterSeq, (cursor: number) =>
          Effect.suspend(function loop(): Effect.Effect<readonly [ReadonlyArray<StoredEvent>, Option.Option<number>]> {
            const events = stream.events
            if (stream.lastSeq > cursor) {
              // Events are contiguous: index of `cursor + 1` is found from the first kept seq.
              const first = events.length === 0 ? stream.lastSeq + 1 : events[0]!.seq
              const from = Math.max(0, cursor + 1 - first)
              const batch = events.slice(from)
              const next = stream.lastSeq
              return Effect.succeed([batch, stream.closed ? Option.none() : Option.some(next)] as const)
            }
            if (stream.closed) {
              return Effect.succeed([[], Option.none()] as const)
            }
            return Effect.flatMap(Deferred.await(stream.changed), loop)
          })))
      })
  })
})
