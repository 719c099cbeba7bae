/**
 * Upstream resource subscriptions, counted across the clients of this
 * replica: what `Features.hold` does for `FederatedFeatures.ts`.
 *
 * **Rules**
 *
 * - One upstream subscription per upstream and URI, however many clients
 *   hold it: the first holder subscribes, the last one to let go (its scope
 *   closes: unsubscribe, its 2025 session ended, its stream or its
 *   `subscriptions/listen` closed) unsubscribes.
 * - A 2025 upstream announcing `resources.subscribe` is sent
 *   `resources/subscribe` / `resources/unsubscribe`; a 2026-07-28 upstream is
 *   asked for the URI's updates through a `subscriptions/listen` of its own
 *   (`resourceSubscriptions`, see `UpstreamSession.watch`) that lasts while
 *   the URI is held; others have nothing to be told (their changes arrive
 *   as list changes).
 * - An upstream's refusal to subscribe is logged, never the holder's
 *   failure: the client's own subscribe was already answered.
 * - An upstream whose session was replaced (it was lost and connected
 *   again) is subscribed again on the new session within `RESYNC_EVERY`
 *   (the old one is not told: it is gone).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Exit, Predicate, Schedule, Scope } from "effect"
import type { Caller } from "../mcp/Caller.ts"
import type { RouteTarget } from "./FeatureView.ts"
import type { UpstreamSession } from "./upstream/Session.ts"

/** Sends `resources/subscribe` or `resources/unsubscribe` for `target` to its upstream. */
export type Forward = (
  caller: Caller,
  target: RouteTarget,
  method: "resources/subscribe" | "resources/unsubscribe"
) => Effect.Effect<unknown, unknown>

/** How often held URIs are checked for an upstream session that was replaced. */
export const RESYNC_EVERY = Duration.seconds(2)

interface Held {
  count: number
  readonly caller: Caller
  readonly target: RouteTarget
  /** Closed when the last holder lets go. */
  readonly scope: Scope.Closeable
  /** What the upstream session `session` was told; closed to end a 2026-07-28 watch or unsubscribe a 2025 one. */
  inner: Scope.Closeable
  session: UpstreamSession | undefined
}

export const make = Effect.fnUntraced(function*(forward: Forward) {
  const held = new Map<string, Held>()
  const scope = yield* Effect.scope
  yield* Scope.addFinalizer(
    scope,
    Effect.forEach([...held.values()], (h) => Scope.close(h.scope, Exit.void), { discard: true })
  )

  const logged = (what: string, target: RouteTarget) => (effect: Effect.Effect<unknown, unknown>) =>
    effect.pipe(
      Effect.catchCause((cause) =>
        Effect.logWarning(
          `${what} of ${JSON.stringify(target.name)} at ${target.upstream.connection.name} failed`,
          cause
        )
      ),
      Effect.asVoid
    )

  /** Starts what keeps `target`'s upstream telling of its updates, until `into` closes. */
  const start = (caller: Caller, target: RouteTarget, into: Scope.Closeable, session: UpstreamSession | undefined) =>
    Effect.gen(function*() {
      if (session === undefined) return
      if (session.watch !== undefined) {
        yield* Scope.provide(session.watch(target.name), into)
        return
      }
      const resources = session.capabilities.resources
      if (session.era !== "stateful" || !Predicate.isReadonlyObject(resources) || resources.subscribe !== true) return
      yield* logged("resources/subscribe", target)(forward(caller, target, "resources/subscribe"))
      yield* Scope.addFinalizer(
        into,
        Effect.suspend(() =>
          target.upstream.session === session
            ? logged("resources/unsubscribe", target)(forward(caller, target, "resources/unsubscribe"))
            : Effect.void
        )
      )
    })

  /** Holds `target` for the current scope. */
  const hold = (caller: Caller, target: RouteTarget): Effect.Effect<void, never, Scope.Scope> =>
    Effect.gen(function*() {
      const key = `${target.upstream.connection.name}\u0000${target.name}`
      let entry = held.get(key)
      if (entry === undefined) {
        const outer = yield* Scope.fork(scope)
        const session = target.upstream.session
        entry = { count: 0, caller, target, scope: outer, inner: yield* Scope.fork(outer), session }
        held.set(key, entry)
        entry.count++
        yield* start(caller, target, entry.inner, session)
      } else entry.count++
      const mine = entry
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          mine.count--
          if (mine.count > 0) return Effect.void
          if (held.get(key) === mine) held.delete(key)
          return Scope.close(mine.scope, Exit.void)
        })
      )
    })

  // a replaced upstream session knows nothing of what the old one was told
  const resync = Effect.suspend(() =>
    Effect.forEach([...held.values()], (entry) => {
      const session = entry.target.upstream.session
      if (session === entry.session || session === undefined || entry.target.upstream.state !== "healthy") {
        return Effect.void
      }
      return Effect.gen(function*() {
        yield* Scope.close(entry.inner, Exit.void)
        entry.session = session
        entry.inner = yield* Scope.fork(entry.scope)
        yield* start(entry.caller, entry.target, entry.inner, session)
      })
    }, { discard: true })
  )
  yield* resync.pipe(Effect.repeat(Schedule.spaced(RESYNC_EVERY)), Effect.delay(RESYNC_EVERY), Effect.forkIn(scope))

  /** How many holders `uri` of `connection` has (tests and diagnostics). */
  const holders = (connection: string, uri: string) => held.get(`${connection}\u0000${uri}`)?.count ?? 0

  return { hold, holders } as const
})
