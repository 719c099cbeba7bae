/**
 * `McpSessionStore` over the database (`@janus/storage` `McpSessions`): the
 * 2025-era sessions and their resumable streams shared by every replica, so
 * any replica serves any request and a stream resumes on another replica
 * with `Last-Event-ID` (SPEC "Scale-out").
 *
 * **Rules** (the in-memory store's semantics, `../mcp/Sessions.ts`)
 *
 * - Sessions idle longer than `idleTimeout` (default 30 minutes) end:
 *   `expires_at = lastSeenAt + idleTimeout` is stored on create and touch,
 *   `get` no longer returns the session once it has passed, and a sweep
 *   (every `idleTimeout / 4`, between 1 s and 60 s, like the memory store)
 *   deletes expired sessions, which ends their followers. Every replica
 *   sweeps; the deletes are idempotent.
 * - Each stream keeps its last `maxEventsPerStream` events (default 512) and
 *   each session its last `maxStreamsPerSession` streams (default 64); an
 *   evicted stream is unknown to `replay` afterwards and ends its followers.
 * - `append` to a closed, evicted or unknown stream stores nothing and
 *   returns 0; `openStream` on an unknown session returns 0.
 * - `replay` fails with `UnknownStream` up front when the stream does not
 *   exist, then emits the stored events after `afterSeq` in seq order and
 *   follows the appends of ANY instance: it re-reads when woken (this
 *   instance's writes at once, other instances' through `NOTIFY janus_mcp`)
 *   and every `pollInterval` (default 15 s) as a backstop for a lost
 *   notification. It ends once the stream is closed and fully read, or the
 *   stream / session is gone (deleted, expired, evicted). Each event is
 *   emitted exactly once: the follower reads strictly after the last seq it
 *   emitted, and seqs of a stream commit in order.
 * - Unlike the memory store, events stored but not yet read when a session
 *   is deleted are not delivered: deletion removes them.
 * - Database failures are `McpSessionStoreError` (the transport answers 503
 *   or ends the stream; the client resumes with `Last-Event-ID`).
 *
 * @since 0.1.0
 */
import { type McpSessionRecord, McpSessions, type StorageError } from "@janus/storage"
import { Clock, Duration, Effect, Layer, Option, Stream } from "effect"
import {
  type McpSession,
  McpSessionStore,
  McpSessionStoreError,
  type MemoryStoreOptions,
  type StoredEvent,
  UnknownStream
} from "../mcp/Sessions.ts"

/** @since 0.1.0 */
export interface SqlStoreOptions extends MemoryStoreOptions {
  /** How often a follower re-reads its stream without a wake-up (default 15 seconds). */
  readonly pollInterval?: Duration.Input | undefined
  /** Events read per query while catching up (default 256). */
  readonly pageSize?: number | undefined
}

const storeError = (error: StorageError) => new McpSessionStoreError({ detail: error.message })

/** Builds the store; the expiry sweep runs until the scope closes. */
export const make = Effect.fnUntraced(function*(options?: SqlStoreOptions) {
  const sessions = yield* McpSessions
  const idleMs = Duration.toMillis(Duration.fromInputUnsafe(options?.idleTimeout ?? "30 minutes"))
  const maxEvents = options?.maxEventsPerStream ?? 512
  const maxStreams = options?.maxStreamsPerSession ?? 64
  const pollInterval = Duration.fromInputUnsafe(options?.pollInterval ?? "15 seconds")
  const pageSize = Math.max(1, options?.pageSize ?? 256)

  yield* sessions.sweepEvery(Duration.millis(Math.max(1000, Math.min(60_000, idleMs / 4))))

  const toSession = (record: McpSessionRecord): McpSession => ({
    id: record.id,
    ownerId: record.ownerId,
    protocolVersion: record.protocolVersion,
    clientInfo: record.clientInfo ?? undefined,
    clientCapabilities: record.clientCapabilities,
    createdAt: record.createdAt.getTime(),
    lastSeenAt: record.lastSeenAt.getTime(),
    ...(record.logLevel == null ? {} : { logLevel: record.logLevel })
  })

  const replay = (sessionId: string, streamId: string, afterSeq: number) =>
    Effect.gen(function*() {
      const first = yield* sessions.read(sessionId, streamId, afterSeq, pageSize).pipe(Effect.mapError(storeError))
      if (Option.isNone(first.stream)) return yield* new UnknownStream({ streamId })
      return Stream.unwrap(Effect.gen(function*() {
        // Registered before any read below, so a change after a read always wakes the next wait.
        const watch = yield* sessions.watch(sessionId, streamId)
        let pending: typeof first | undefined = first
        return Stream.paginate<number, StoredEvent, McpSessionStoreError>(afterSeq, (cursor) =>
          Effect.gen(function*() {
            while (true) {
              const page = pending ?? (yield* sessions.read(sessionId, streamId, cursor, pageSize))
              pending = undefined
              // Gone: deleted, expired or evicted. Its stored events went with it.
              if (Option.isNone(page.stream)) return [page.events, Option.none<number>()] as const
              const { closed } = page.stream.value
              const events = page.events
              if (events.length > 0) {
                const next = events[events.length - 1]!.seq
                // A closed stream read to its end (a short page) is complete.
                const done = closed && events.length < pageSize
                return [events, done ? Option.none<number>() : Option.some(next)] as const
              }
              if (closed) return [[], Option.none<number>()] as const
              yield* watch.next(pollInterval)
            }
          }).pipe(Effect.mapError(storeError)))
      }))
    })

  return McpSessionStore.of({
    create: (session) =>
      sessions.create({
        id: session.id,
        ownerId: session.ownerId,
        protocolVersion: session.protocolVersion,
        clientInfo: session.clientInfo ?? null,
        clientCapabilities: session.clientCapabilities,
        createdAt: new Date(session.createdAt),
        lastSeenAt: new Date(session.lastSeenAt),
        expiresAt: new Date(session.lastSeenAt + idleMs),
        logLevel: session.logLevel ?? null
      }).pipe(Effect.mapError(storeError)),
    setLogLevel: (id, level) => sessions.setLogLevel(id, level).pipe(Effect.asVoid, Effect.mapError(storeError)),
    get: (id) =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) => sessions.get(id, new Date(now))),
        Effect.map(Option.map(toSession)),
        Effect.mapError(storeError)
      ),
    touch: (id, now) => sessions.touch(id, new Date(now), new Date(now + idleMs)).pipe(Effect.mapError(storeError)),
    delete: (id) => sessions.delete(id).pipe(Effect.asVoid, Effect.mapError(storeError)),
    openStream: (sessionId, streamId) =>
      sessions.openStream(sessionId, streamId, { maxStreams }).pipe(Effect.mapError(storeError)),
    append: (sessionId, streamId, data) =>
      sessions.append(sessionId, streamId, data, { maxEvents }).pipe(Effect.mapError(storeError)),
    closeStream: (sessionId, streamId) => sessions.closeStream(sessionId, streamId).pipe(Effect.mapError(storeError)),
    replay
  })
})

/** `McpSessionStore` on the database: provide it (over the storage layer) instead of `McpSessionStore.layerMemory`. */
export const layer = (options?: SqlStoreOptions): Layer.Layer<McpSessionStore, never, McpSessions> =>
  Layer.effect(McpSessionStore, make(options))
