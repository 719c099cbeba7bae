/**
 * The in-process cache of session records behind `McpSessions.get`, so a
 * session's requests do not each read the database.
 *
 * **Rules**
 *
 * - At most `CACHE_MAX` records, the oldest evicted first.
 * - An entry is used only while this instance LISTENs (`setLive`): only then
 *   does a change by another instance reach the cache. Losing or
 *   (re)establishing the LISTEN connection empties it. `keepListening` holds
 *   the LISTEN connection while sessions are read, until `CACHE_HOLD` passes
 *   without a read.
 * - Every session-level change drops the entry (`invalidate`): this
 *   instance's create, delete, log level and expiry sweep, and any other
 *   instance's (their notifications). A read that raced a session-level
 *   change is not cached.
 * - A cached entry past its `expiresAt` is read again (another instance may
 *   have touched it); this instance's `touch` updates the entry.
 *
 * @internal
 */
import { Duration, Effect, Option, type Scope } from "effect"
import type { McpSessionRecord } from "./McpSessionRepository.ts"

/** Session records cached at most. */
const CACHE_MAX = 10_000
/** The cache keeps the LISTEN connection while sessions were read within this time. */
const CACHE_HOLD = Duration.minutes(1)

export class SessionCache {
  private readonly entries = new Map<string, McpSessionRecord>()
  /** True while the LISTEN connection is up. */
  private live = false
  /** Bumped on every session-level change; a read that saw it move is not cached. */
  private epoch = 0

  /** The cached record, if the cache may be trusted and the record has not expired at `now`. */
  lookup(id: string, now: Date): McpSessionRecord | undefined {
    const hit = this.live ? this.entries.get(id) : undefined
    return hit !== undefined && hit.expiresAt.getTime() >= now.getTime() ? hit : undefined
  }

  /** Runs a database read of a session and remembers what it found, unless a session-level change raced it. */
  readThrough<E>(read: Effect.Effect<Option.Option<McpSessionRecord>, E>) {
    return Effect.suspend(() => {
      const readAt = this.epoch
      return Effect.tap(read, (found) =>
        Effect.sync(() => {
          if (Option.isSome(found)) this.remember(found.value, readAt)
        }))
    })
  }

  /** A session-level change: the entry is dropped and reads in flight are not cached. */
  invalidate(id: string): void {
    this.epoch++
    this.entries.delete(id)
  }

  /** LISTEN went up or down: the cache starts over. */
  setLive(live: boolean): void {
    this.epoch++
    this.entries.clear()
    this.live = live
  }

  /** This instance's `touch`. */
  touched(id: string, lastSeenAt: Date, expiresAt: Date): void {
    const cached = this.entries.get(id)
    if (cached !== undefined) this.entries.set(id, { ...cached, lastSeenAt, expiresAt })
  }

  private remember(record: McpSessionRecord, readAt: number): void {
    if (!this.live || this.epoch !== readAt) return
    this.entries.delete(record.id)
    if (this.entries.size >= CACHE_MAX) this.entries.delete(this.entries.keys().next().value!)
    this.entries.set(record.id, record)
  }
}

/**
 * Call the returned function on every session read: it holds `listen` in a fiber of the current (the
 * layer's) scope that lets go after a `CACHE_HOLD` without a read (so between one and two `CACHE_HOLD`s
 * after the last one).
 */
export const keepListening = (
  listen: Effect.Effect<void, never, Scope.Scope>
): Effect.Effect<() => Effect.Effect<void>, never, Scope.Scope> =>
  Effect.map(Effect.scope, (layerScope) => {
    let holding = false
    let reads = 0
    const hold: Effect.Effect<void> = Effect.scoped(Effect.gen(function*() {
      yield* listen
      do {
        reads = 0
        yield* Effect.sleep(CACHE_HOLD)
      } while (reads > 0)
    })).pipe(Effect.ensuring(Effect.sync(() => {
      holding = false
    })))
    return (): Effect.Effect<void> => {
      reads++
      if (holding) return Effect.void
      holding = true
      return Effect.asVoid(Effect.forkIn(hold, layerScope))
    }
  })
