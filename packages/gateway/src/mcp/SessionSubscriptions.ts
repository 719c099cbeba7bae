/**
 * The resources each 2025-era session of this replica subscribed to
 * (`resources/subscribe`), for its stream's `notifications/resources/updated`,
 * and the holds (`Features.hold`) that keep the upstreams telling of them.
 *
 * **Rules**
 *
 * - A successful `resources/subscribe` holds the URI for the session (once,
 *   however many times it is subscribed; at most 1,000 URIs a session); a
 *   successful `resources/unsubscribe` lets it go.
 * - When the session ends (DELETE; an HTTP+SSE session's stream closes)
 *   every URI it still holds is let go, so an upstream subscription never
 *   outlives its last subscriber; so does everything when the endpoint stops.
 * - A session that ends without a word (it expired in the session store,
 *   perhaps on another replica) is found by a sweep every `sweepEvery`
 *   (default 1 minute) asking `alive`; a store that cannot answer counts as
 *   alive (the next sweep asks again).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Exit, Option, Schedule, Scope } from "effect"
import type { Caller } from "./Caller.ts"
import type { Features } from "./Features.ts"

/** At most this many URIs held by one session. */
export const MAX_PER_SESSION = 1_000

/** The default interval of the sweep for sessions that ended without a word. */
export const SWEEP_EVERY = Duration.minutes(1)

export interface SweepOptions {
  /** Whether the session still exists (a failure counts as yes). */
  readonly alive: (sessionId: string) => Effect.Effect<boolean, unknown>
  readonly sweepEvery?: Duration.Duration | undefined
}

export const make = Effect.fnUntraced(function*(
  features: Option.Option<Features["Service"]>,
  sweep?: SweepOptions
) {
  const sessions = new Map<string, Map<string, Scope.Closeable>>()
  const parent = yield* Effect.scope

  const end = (sessionId: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      const held = sessions.get(sessionId)
      sessions.delete(sessionId)
      return held === undefined
        ? Effect.void
        : Effect.forEach([...held.values()], (scope) => Scope.close(scope, Exit.void), { discard: true })
    })

  yield* Scope.addFinalizer(parent, Effect.forEach([...sessions.keys()], end, { discard: true }))

  if (sweep !== undefined) {
    const gone = (sessionId: string) =>
      Effect.flatMap(
        Effect.orElseSucceed(sweep.alive(sessionId), () => true),
        (alive) => alive ? Effect.void : end(sessionId)
      )
    yield* Effect.suspend(() => Effect.forEach([...sessions.keys()], gone, { discard: true })).pipe(
      Effect.repeat(Schedule.spaced(sweep.sweepEvery ?? SWEEP_EVERY)),
      Effect.delay(sweep.sweepEvery ?? SWEEP_EVERY),
      Effect.forkIn(parent)
    )
  }

  /** Records a successful `resources/subscribe` or `resources/unsubscribe` of `uri`. */
  const record = (sessionId: string, caller: Caller, method: string, uri: unknown): Effect.Effect<void> =>
    Effect.gen(function*() {
      if (typeof uri !== "string") return
      if (method === "resources/unsubscribe") {
        const scope = sessions.get(sessionId)?.get(uri)
        if (scope === undefined) return
        sessions.get(sessionId)!.delete(uri)
        return yield* Scope.close(scope, Exit.void)
      }
      if (method !== "resources/subscribe") return
      const held = sessions.get(sessionId) ?? new Map<string, Scope.Closeable>()
      if (held.has(uri) || held.size >= MAX_PER_SESSION) return
      sessions.set(sessionId, held)
      const scope = yield* Scope.fork(parent)
      held.set(uri, scope)
      if (Option.isSome(features)) yield* Scope.provide(scope)(features.value.hold(caller, uri))
    })

  /** Whether the session subscribed to `uri`. */
  const has = (sessionId: string, uri: string) => sessions.get(sessionId)?.has(uri) === true

  return { record, has, end } as const
})

export type SessionSubscriptions = Effect.Success<ReturnType<typeof make>>
