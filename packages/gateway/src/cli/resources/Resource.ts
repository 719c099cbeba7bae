/**
 * What the resource commands (`token`, `connection`, `endpoint`, `openapi`,
 * `secret`) share: the storage they write to, how they fail, and the check of
 * a URL flag.
 *
 * **Rules**
 *
 * - Every command writes through the same storage layers as `serve`
 *   (`GatewayStorage.layer`, audited as the CLI actor), after the embedded-mode guard
 *   of `Support.ts`: with the embedded database, a command is refused while a
 *   server runs on the same address (stop it, or use the admin API).
 * - Flags are checked before storage is opened: a mistake is reported without
 *   touching the database.
 * - A failure names the flag and the value given and says what is expected
 *   (`CliFailure`: message and fix, printed by `handled`).
 * - A URL flag is an absolute http(s) URL; its trailing `/` is dropped.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { Flag } from "effect/cli"
import { asCli, CliStorage } from "../AuditedStorage.ts"
import { CliFailure, guardEmbedded, handled } from "../Support.ts"

/** Runs `body` on the configured storage, after the embedded-mode guard; failures printed. */
export const stored = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  guardEmbedded.pipe(Effect.andThen(Effect.provide(asCli(body), CliStorage)))

/** {@link stored}, with failures printed (for commands that check nothing before storage). */
export const withStorage = <A, E, R>(body: Effect.Effect<A, E, R>) => handled(stored(body))

/** `flag`, optional, with what it is for (`--help`). */
export const optional = <A>(flag: Flag.Flag<A>, description: string) =>
  flag.pipe(Flag.withDescription(description), Flag.optional)

/** Fails the command with what was wrong and how to fix it. */
export const fail = (message: string, fix: string) => Effect.fail(new CliFailure({ message, fix }))

/** The URL of `flag`, absolute and http(s), without its trailing `/`. */
export const checkHttpUrl = (flag: string, raw: string) => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail(
      `${flag} ${JSON.stringify(raw)} is not a URL`,
      "give an absolute http(s) URL, e.g. https://api.example.com"
    )
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return fail(
      `${flag} ${JSON.stringify(raw)} is not http(s)`,
      "give an absolute http(s) URL, e.g. https://api.example.com"
    )
  }
  return Effect.succeed(url.toString().replace(/\/$/, ""))
}
