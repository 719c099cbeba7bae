/**
 * How long an open stream may live: as long as the credential that opened it.
 *
 * **Rules**
 *
 * - A stream opened with a client token or an admin token ends when that
 *   token is revoked or deleted, on whichever replica: every write of a token
 *   is a change signal to every replica (storage's `ChangeFeed`, the signal
 *   that purges the token caches), and on a signal about a token some open
 *   stream holds, this replica reads the token and ends its streams if it is
 *   no longer active. An unreadable token (the database is away) ends them
 *   too: the client reconnects, and admission decides then.
 * - A signal without ids ("anything may have changed", after the change
 *   feed reconnects) re-reads every token an open stream holds.
 * - A credential that expires (a client token's `expiresAt`, an access
 *   token's `exp` plus the clock skew) ends its streams then (`Clock`).
 * - No gap between admission and the stream: a stream also re-reads its token
 *   when a signal about it arrived after its request did (the admission may
 *   have read the token just before the revocation was delivered). Otherwise
 *   opening a stream reads nothing: the signals say when to look.
 * - Anonymous callers' streams never end this way.
 *
 * @since 0.1.0
 */
import { AdminTokens, ChangeFeed, ClientTokens, type StorageError } from "@janus/storage"
import { Clock, Context, Deferred, Duration, Effect, Layer } from "effect"
import type { Caller } from "../mcp/Caller.ts"
import type { AdminPrincipal } from "./AdminPrincipal.ts"

/** What a stream's lifetime depends on. */
export type Credential =
  | { readonly kind: "client_token" | "admin_token"; readonly id: string; readonly expiresAt: number | undefined }
  | { readonly kind: "expiring"; readonly expiresAt: number }
  | { readonly kind: "none" }

/** The credential of an MCP caller. */
export const ofCaller = (caller: Caller): Credential =>
  caller.tokenId !== undefined ?
    { kind: "client_token", id: caller.tokenId, expiresAt: caller.expiresAt } :
    caller.expiresAt !== undefined ?
    { kind: "expiring", expiresAt: caller.expiresAt } :
    { kind: "none" }

/** The credential of an admin API caller. */
export const ofPrincipal = (principal: AdminPrincipal): Credential =>
  principal.kind === "admin_token" ?
    { kind: "admin_token", id: principal.tokenId, expiresAt: undefined } :
    { kind: "expiring", expiresAt: principal.expiresAt }

/**
 * Signals remembered for streams whose request arrived before the signal and
 * whose stream starts after it: a stream starts within moments of its request
 * (a tools/call stream at its first progress), long before 10,000 token writes
 * pass.
 */
export const REMEMBERED_SIGNALS = 10_000

type TokenKind = "client_token" | "admin_token"

export class CredentialLifetime extends Context.Service<CredentialLifetime, {
  /**
   * Completes when `credential` stops being valid; `since` is when the request
   * that presented it arrived (epoch ms, the `Clock`'s).
   */
  readonly until: (credential: Credential, since: number) => Effect.Effect<void>
}>()("@janus/gateway/auth/CredentialLifetime") {
  static readonly layer: Layer.Layer<CredentialLifetime, never, ChangeFeed | ClientTokens | AdminTokens> = Layer
    .effect(
      CredentialLifetime,
      Effect.gen(function*() {
        const feed = yield* ChangeFeed
        const clientTokens = yield* ClientTokens
        const adminTokens = yield* AdminTokens
        const scope = yield* Effect.scope
        /** Open streams by `kind:id`. */
        const watchers = new Map<string, Set<Deferred.Deferred<void>>>()
        /** When the last signal about `kind:id` arrived, the oldest first. */
        const signalled = new Map<string, number>()
        /** When the last signal about some or all tokens of a kind arrived. */
        const signalledAll: Record<TokenKind, number> = { client_token: -Infinity, admin_token: -Infinity }
        const keyOf = (kind: TokenKind, id: string) => `${kind}:${id}`

        const active = (kind: TokenKind, id: string): Effect.Effect<boolean, StorageError> =>
          kind === "client_token" ?
            Effect.flatMap(
              Effect.all([clientTokens.get(id), Clock.currentTimeMillis]),
              ([token, now]) => Effect.succeed(token.isActiveAt(new Date(now)))
            ).pipe(Effect.catchTag("NotFound", () => Effect.succeed(false))) :
            Effect.map(adminTokens.list, (tokens) => tokens.some((t) => t.id === id && t.revokedAt === null))

        /** Reads the tokens and ends the streams of those no longer active. */
        const check = (kind: TokenKind, ids: ReadonlyArray<string>) =>
          Effect.forEach(ids, (id) =>
            active(kind, id).pipe(
              Effect.catch((error) =>
                Effect.as(
                  Effect.logWarning(
                    "A token holding open streams could not be read; its streams end (clients reconnect)",
                    error.message
                  ),
                  false
                )
              ),
              Effect.flatMap((alive) => {
                const streams = watchers.get(keyOf(kind, id))
                if (alive || streams === undefined) return Effect.void
                return Effect.andThen(
                  Effect.forEach(streams, (ended) => Deferred.succeed(ended, undefined), { discard: true }),
                  Effect.logInfo(`Ended ${streams.size} open stream(s) of a revoked, deleted or expired ${kind}`)
                )
              })
            ), { discard: true })

        const remember = (key: string, now: number) => {
          signalled.delete(key)
          signalled.set(key, now)
          if (signalled.size > REMEMBERED_SIGNALS) signalled.delete(signalled.keys().next().value!)
        }

        yield* feed.register((change) => {
          if (change.kind !== "client_token" && change.kind !== "admin_token") return Effect.void
          const kind = change.kind
          return Effect.flatMap(Clock.currentTimeMillis, (now) => {
            let held: Array<string>
            if (change.ids.length === 0) {
              signalledAll[kind] = now
              const prefix = `${kind}:`
              held = Array.from(watchers.keys()).filter((key) => key.startsWith(prefix)).map((key) =>
                key.slice(prefix.length)
              )
            } else {
              for (const id of change.ids) remember(keyOf(kind, id), now)
              held = change.ids.filter((id) => watchers.has(keyOf(kind, id)))
            }
            // off the change feed's delivery: the purge of the caches must not wait for these reads
            return held.length === 0 ? Effect.void : Effect.asVoid(Effect.forkIn(check(kind, held), scope))
          })
        })

        const expiry = (expiresAt: number | undefined): Effect.Effect<void> =>
          expiresAt === undefined ?
            Effect.never :
            Effect.flatMap(
              Clock.currentTimeMillis,
              (now) => Effect.sleep(Duration.millis(Math.max(0, expiresAt - now)))
            )

        const until = (credential: Credential, since: number): Effect.Effect<void> => {
          switch (credential.kind) {
            case "none":
              return Effect.never
            case "expiring":
              return expiry(credential.expiresAt)
          }
          const { id, kind } = credential
          const key = keyOf(kind, id)
          return Effect.acquireUseRelease(
            Effect.map(Deferred.make<void>(), (ended) => {
              const streams = watchers.get(key) ?? new Set()
              streams.add(ended)
              watchers.set(key, streams)
              return ended
            }),
            (ended) => {
              const missed = (signalled.get(key) ?? -Infinity) >= since || signalledAll[kind] >= since
              return Effect.andThen(
                missed ? Effect.forkIn(check(kind, [id]), scope) : Effect.void,
                Effect.raceFirst(Deferred.await(ended), expiry(credential.expiresAt))
              )
            },
            (ended) =>
              Effect.sync(() => {
                const streams = watchers.get(key)
                streams?.delete(ended)
                if (streams?.size === 0) watchers.delete(key)
              })
          )
        }

        return CredentialLifetime.of({ until })
      })
    )
}
