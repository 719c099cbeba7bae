/**
 * `janus token create|list|revoke`: the client tokens MCP clients present.
 *
 * **Rules**
 *
 * - `token create` prints the token once (stdout only); it is stored as a
 *   hash and never printed again. `list` and `revoke` show its id, name and
 *   prefix, never its value.
 * - `--expires` is a duration from now (`30d`, `12h`, `45m`) or an ISO-8601
 *   date/time, and must lie in the future; without it the token never
 *   expires. `--tools` and `--servers` restrict it (default: every tool and
 *   every virtual server).
 * - `token revoke` takes an id, or a name when exactly one active token has
 *   it.
 * - `--json` prints machine-readable output on stdout, a token in the admin
 *   API's representation (`admin/TokenJson.ts`); progress and notes go to
 *   stderr.
 *
 * @since 0.1.0
 */
import { ClientTokens, Instants } from "@janus/storage"
import { Console, Effect, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { presentClientToken } from "../../admin/TokenJson.ts"
import { handled, json, printJson, splitList } from "../Support.ts"
import { fail, optional, stored, withStorage } from "./Resource.ts"

/** `30d`, `12h`, `45m` from now, or an RFC 3339 date or date-time that exists on the calendar. */
export const parseExpires = (raw: string, now: Date): Date | undefined => {
  const relative = /^(\d+)\s*([dhm])$/.exec(raw.trim())
  if (relative) {
    const unit = relative[2] === "d" ? 86_400_000 : relative[2] === "h" ? 3_600_000 : 60_000
    return new Date(now.getTime() + Number(relative[1]) * unit)
  }
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw.trim())) return undefined
  // a date or date-time that exists on the calendar (2027-02-30 is refused, not read as 2 March)
  const date = Instants.parseInstant(raw.trim())
  return Instants.isRefusal(date) ? undefined : date
}

const tokenCreate = Command.make("create", {
  name: Argument.String("name").pipe(Argument.withDescription("A name for the token (who or what uses it)")),
  tools: optional(Flag.String("tools"), "Comma-separated tool names the token may call (default: every tool)"),
  servers: optional(
    Flag.String("servers"),
    "Comma-separated virtual servers the token may use (default: every server)"
  ),
  expires: optional(
    Flag.String("expires"),
    "Expiry: 30d, 12h, 45m from now, or an ISO date such as 2027-01-31 (default: never)"
  ),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    const now = new Date()
    let expiresAt: Date | null = null
    if (Option.isSome(input.expires)) {
      const parsed = parseExpires(input.expires.value, now)
      if (parsed === undefined) {
        return yield* fail(
          `--expires ${JSON.stringify(input.expires.value)} is not a duration or a date`,
          "use 30d, 12h, 45m or a date that exists on the calendar, such as 2027-01-31 or 2027-01-31T12:00:00Z"
        )
      }
      if (parsed.getTime() <= now.getTime()) {
        return yield* fail(`--expires ${input.expires.value} is in the past`, "give a future date or a duration")
      }
      expiresAt = parsed
    }
    return yield* stored(Effect.gen(function*() {
      const created = yield* (yield* ClientTokens).create({
        name: input.name,
        allowedTools: Option.match(input.tools, { onNone: () => null, onSome: splitList }),
        allowedVirtualServers: Option.match(input.servers, { onNone: () => null, onSome: splitList }),
        expiresAt
      })
      const plaintext = Redacted.value(created.plaintext)
      if (input.json) return yield* printJson({ ...presentClientToken(created.token, now), token: plaintext })
      yield* Console.log(`Created client token ${created.token.name} (id ${created.token.id})`)
      yield* Console.log("Token (shown once; store it now, it cannot be shown again):")
      yield* Console.log(`  ${plaintext}`)
    }))
  }))).pipe(Command.withDescription("Create a client token; prints it once"))

const tokenList = Command.make("list", { json }, (input) =>
  withStorage(Effect.gen(function*() {
    const tokens = yield* (yield* ClientTokens).list
    const now = new Date()
    if (input.json) return yield* printJson(tokens.map((t) => presentClientToken(t, now)))
    if (tokens.length === 0) return yield* Console.log("No client tokens. Create one with `janus token create NAME`.")
    for (const t of tokens) {
      const state = t.revokedAt ? "revoked" : t.isActiveAt(now) ? "active" : "expired"
      yield* Console.log(
        `${t.id}  ${t.prefix}…  ${state.padEnd(7)}  ${t.name}` +
          (t.allowedTools ? `  tools=${t.allowedTools.join(",")}` : "") +
          (t.allowedVirtualServers ? `  servers=${t.allowedVirtualServers.join(",")}` : "") +
          (t.expiresAt ? `  expires=${t.expiresAt.toISOString()}` : "")
      )
    }
  }))).pipe(Command.withDescription("List client tokens (never their values)"))

const tokenRevoke = Command.make("revoke", {
  token: Argument.String("id-or-name").pipe(Argument.withDescription("The token's id, or its name when unique")),
  json
}, (input) =>
  withStorage(Effect.gen(function*() {
    const tokens = yield* ClientTokens
    const all = yield* tokens.list
    const byId = all.find((t) => t.id === input.token)
    const byName = all.filter((t) => t.name === input.token && t.revokedAt === null)
    if (byId === undefined && byName.length > 1) {
      return yield* fail(
        `${byName.length} active tokens are named ${JSON.stringify(input.token)}`,
        "revoke by id (see `janus token list`)"
      )
    }
    const target = byId ?? byName[0]
    if (target === undefined) {
      return yield* fail(`no client token has the id or name ${JSON.stringify(input.token)}`, "see `janus token list`")
    }
    const revoked = yield* tokens.revoke(target.id)
    if (input.json) return yield* printJson(presentClientToken(revoked, new Date()))
    yield* Console.log(`Revoked client token ${revoked.name} (id ${revoked.id})`)
  }))).pipe(Command.withDescription("Revoke a client token"))

export const token = Command.make("token").pipe(
  Command.withDescription("Client tokens: create, list, revoke"),
  Command.withSubcommands([tokenCreate, tokenList, tokenRevoke])
)
