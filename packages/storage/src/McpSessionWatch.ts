/**
 * The wake-ups of the MCP session store (`McpSessions`): who follows which
 * stream, the `janus_mcp` notifications that say a stream or a session
 * changed, and the one LISTEN connection that receives them.
 *
 * **Rules**
 *
 * - A notification carries `[origin, sessionId, streamId | null]` (null: the
 *   whole session), as `notice` writes it; the repository's statements that
 *   notify for many rows build the same array in SQL. Notifications this
 *   instance sent itself are ignored: its own writes `wake` its watchers
 *   directly after the write.
 * - `watch` wakes a follower on every change of its stream (or session). The
 *   LISTEN connection is taken only while someone holds it (`listen`: a
 *   watcher, or the session cache while sessions are read) plus one idle
 *   minute, so a replica without 2025-era streams holds no extra pooled
 *   connection. It re-listens every second when the connection is lost.
 * - When LISTEN is (re)established every watcher is woken, since
 *   notifications sent meanwhile are lost; followers should still re-read
 *   periodically as a backstop. `onListening` tells the session cache when
 *   it may trust its entries (only while LISTEN is up), `onSessionChanged`
 *   when another instance changed a whole session.
 *
 * @internal
 */
import { type Duration, Effect, Queue, RcRef, Schedule, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import { Notifications } from "./Notifications.ts"

export const channel = "janus_mcp"

/** The payload of a notification from `origin`: the stream (or, with null, the whole session) changed. */
export const notice = (origin: string, sessionId: string, streamId: string | null): string =>
  JSON.stringify([origin, sessionId, streamId])

/** Wake-ups for one stream. */
export interface McpStreamWatch {
  /**
   * Completes when the stream (or its session) changed since the previous
   * `next` returned (at once if it already did), or after `timeout`.
   */
  readonly next: (timeout: Duration.Input) => Effect.Effect<void>
}

export interface SessionSignals {
  /** This instance's id in the notifications it sends. */
  readonly origin: string
  /** Wakes this instance's watchers of the stream (null: of every stream of the session). */
  readonly wake: (sessionId: string, streamId: string | null) => void
  /** Holds the LISTEN connection until the scope closes. */
  readonly listen: Effect.Effect<void, never, Scope.Scope>
  /** Wake-ups for changes of the stream by any instance, until the scope closes. */
  readonly watch: (sessionId: string, streamId: string) => Effect.Effect<McpStreamWatch, never, Scope.Scope>
}

export const make = (hooks: {
  /** LISTEN is up (true) or lost (false): changes by other instances reach us only while it is up. */
  readonly onListening: (live: boolean) => void
  /** Another instance changed the whole session (created, replaced, deleted, expired, its log level). */
  readonly onSessionChanged: (sessionId: string) => void
}): Effect.Effect<SessionSignals, never, Notifications | Scope.Scope> =>
  Effect.gen(function*() {
    const notifications = yield* Notifications
    const origin = randomUUID()
    // session id -> stream id -> the sliding(1) queues of its watchers
    const watchers = new Map<string, Map<string, Set<Queue.Queue<void>>>>()

    const wake = (sessionId: string, streamId: string | null): void => {
      const streams = watchers.get(sessionId)
      if (streams === undefined) return
      const targets = streamId === null ? Array.from(streams.values()) : [streams.get(streamId)]
      for (const queues of targets) {
        if (queues !== undefined) { for (const queue of queues) Queue.offerUnsafe(queue, undefined) }
      }
    }
    const wakeAll = (): void => {
      for (const sessionId of watchers.keys()) wake(sessionId, null)
    }

    const dispatch = (text: string): void => {
      try {
        const value = JSON.parse(text) as unknown
        if (!Array.isArray(value) || value[0] === origin || typeof value[1] !== "string") return
        const streamId = typeof value[2] === "string" ? value[2] : null
        if (streamId === null) hooks.onSessionChanged(value[1])
        wake(value[1], streamId)
      } catch {
        // not ours
      }
    }

    // One LISTEN while anyone holds it (kept one idle minute); re-listens every second when the connection is lost.
    const listening = Effect.scoped(Effect.gen(function*() {
      const queue = yield* notifications.listen(channel)
      yield* Effect.addFinalizer(() => Effect.sync(() => hooks.onListening(false)))
      // whatever was sent while nobody listened
      hooks.onListening(true)
      wakeAll()
      while (true) dispatch(yield* Queue.take(queue))
    }))
    const listener = yield* RcRef.make({
      acquire: listening.pipe(
        Effect.tapError((error) => Effect.logWarning("mcp sessions: LISTEN connection lost; re-listening", error)),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped,
        Effect.asVoid
      ),
      idleTimeToLive: "1 minute"
    })
    const listen = RcRef.get(listener)

    const watch = (sessionId: string, streamId: string) =>
      Effect.gen(function*() {
        yield* listen
        const queue = yield* Queue.sliding<void>(1)
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            let streams = watchers.get(sessionId)
            if (streams === undefined) watchers.set(sessionId, streams = new Map())
            let queues = streams.get(streamId)
            if (queues === undefined) streams.set(streamId, queues = new Set())
            queues.add(queue)
          }),
          () =>
            Effect.sync(() => {
              const streams = watchers.get(sessionId)
              const queues = streams?.get(streamId)
              queues?.delete(queue)
              if (queues !== undefined && queues.size === 0) streams!.delete(streamId)
              if (streams !== undefined && streams.size === 0) watchers.delete(sessionId)
            })
        )
        return {
          next: (timeout: Duration.Input) => Effect.asVoid(Effect.timeoutOption(Queue.take(queue), timeout))
        } satisfies McpStreamWatch
      })

    return { origin, wake, listen, watch } satisfies SessionSignals
  })
