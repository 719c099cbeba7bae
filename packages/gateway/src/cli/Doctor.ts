/**
 * `janus doctor`: checks, each with one verdict line (`ok`, `warn`, `FAIL`,
 * `skip`).
 *
 * **Rules**
 *
 * - Checked: configuration, master key, database reachable and migrated,
 *   secrets sealed under a key this configuration has, Redis reachable (when
 *   `REDIS_URL`), for every connection whether the egress policy allows its
 *   URL, `JANUS_CONFIG_FILE` read and validated (its references too; what
 *   needs the database is checked when a server applies it), and with OAuth
 *   on, the OAuth settings as `serve` checks them and each issuer's metadata
 *   and signing keys (a FAIL names the issuer), what a token from it must
 *   carry, and whether it offers what MCP clients need (`DoctorOAuth.ts`:
 *   PKCE S256 is a FAIL, the rest warnings). The probes are in
 *   `DoctorChecks.ts`.
 * - Exit code 1 when any check fails. An invalid configuration stops before
 *   the checks: `janus` prints every problem and exits 78 (EX_CONFIG), as
 *   `serve` does.
 * - `doctor` only reads; in embedded mode with a server running it checks
 *   the server's `/readyz` instead of opening the database.
 * - A master key is named by its source and key id, never shown.
 *
 * @since 0.1.0
 */
import { Migrations, SecretBox } from "@janus/storage"
import { Console, Effect, Option, Redacted, Result } from "effect"
import { Command } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { JanusConfig, unknownVariables } from "../config/JanusConfig.ts"
import { EgressPolicy } from "../egress/index.ts"
import { describeStorage } from "../GatewayStorage.ts"
import { diagnose, metadataUrl, resolveOAuthOptions } from "../oauth/index.ts"
import * as OAuthVariables from "../oauth/Variables.ts"
import { type Check, checkEgress, configFileCheck, metricsTokenCheck, redisPing } from "./DoctorChecks.ts"
import { clientSupport, tokenRequirements } from "./DoctorOAuth.ts"
import { sqlOnly } from "./Migrate.ts"
import { CliFailure, handled, json, printJson, serverAnswering } from "./Support.ts"

/** Decodes a base64 master key; the failure names `source`, never the key. */
const parseKey = (source: string, encoded: Redacted.Redacted<string>) => {
  const decoded = SecretBox.decodeKey(encoded)
  return typeof decoded === "string"
    ? Effect.fail(new CliFailure({ message: `${source}: ${decoded}`, fix: "use 32 random bytes in base64" }))
    : Effect.succeed(SecretBox.keyMaterial(decoded))
}

const doctorChecks = Effect.gen(function*() {
  const config = yield* JanusConfig
  const checks: Array<Check> = []
  const unknown = unknownVariables(process.env)
  checks.push({
    check: "configuration",
    verdict: unknown.length === 0 ? "ok" : "warn",
    detail: `valid; ${describeStorage(config)}` +
      (unknown.length === 0 ?
        "" :
        `; unknown variables ignored: ${
          unknown.map((u) =>
            u.name + Option.match(u.suggestion, { onNone: () => "", onSome: (s) => ` (did you mean ${s}?)` })
          ).join(", ")
        }`)
  })

  // Master key
  const keyIds: Array<string> = []
  if (Option.isSome(config.JANUS_MASTER_KEY)) {
    const parsed = yield* Effect.result(Effect.forEach(
      [
        ["JANUS_MASTER_KEY", config.JANUS_MASTER_KEY.value] as const,
        ...config.JANUS_MASTER_KEY_PREVIOUS.map((k, i) => [`JANUS_MASTER_KEY_PREVIOUS[${i}]`, k] as const)
      ],
      ([source, key]) => parseKey(source, key)
    ))
    if (Result.isFailure(parsed)) checks.push({ check: "master key", verdict: "FAIL", detail: parsed.failure.message })
    else {
      keyIds.push(...parsed.success.map((k) => k.id))
      checks.push({
        check: "master key",
        verdict: "ok",
        detail: `JANUS_MASTER_KEY valid (key id ${keyIds[0]}), ${keyIds.length - 1} previous key(s)`
      })
    }
  } else {
    const file = Path.resolve(config.JANUS_HOME, "master.key")
    if (!Fs.existsSync(file)) {
      checks.push({
        check: "master key",
        verdict: "warn",
        detail: `no key file at ${file} yet; \`janus serve\` or \`janus migrate\` creates it`
      })
    } else {
      const lines = Fs.readFileSync(file, "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "")
      const parsed = yield* Effect.result(
        Effect.forEach(lines, (line, i) => parseKey(`${file} line ${i + 1}`, Redacted.make(line)))
      )
      if (lines.length === 0) checks.push({ check: "master key", verdict: "FAIL", detail: `${file} is empty` })
      else if (Result.isFailure(parsed)) {
        checks.push({ check: "master key", verdict: "FAIL", detail: parsed.failure.message })
      } else {
        keyIds.push(...parsed.success.map((k) => k.id))
        const mode = Fs.statSync(file).mode & 0o077
        checks.push({
          check: "master key",
          verdict: mode === 0 ? "ok" : "warn",
          detail: `${file} valid (key id ${keyIds[0]}, ${keyIds.length} key(s))` +
            (mode === 0 ? "" : "; readable by other users: chmod 600 it")
        })
      }
    }
  }

  // Database (and what depends on it)
  const embedded = Option.isNone(config.DATABASE_URL)
  const running = embedded ? yield* serverAnswering(config) : Option.none<string>()
  const dataDir = Path.resolve(config.JANUS_HOME, "data")
  if (Option.isSome(running)) {
    const readyz = running.value.replace(/\/healthz$/, "/readyz")
    const status = yield* Effect.promise(() =>
      fetch(readyz, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status, () => 0)
    )
    checks.push({
      check: "database",
      verdict: status === 200 ? "ok" : "FAIL",
      detail: `embedded database in use by the server at ${running.value}; its ${readyz} answered ${
        status || "nothing"
      }`
    })
    checks.push({ check: "egress", verdict: "skip", detail: "stop the server to check each connection's egress" })
  } else if (embedded && !Fs.existsSync(dataDir)) {
    checks.push({
      check: "database",
      verdict: "warn",
      detail: `no embedded database at ${dataDir} yet; \`janus migrate\` or \`janus serve\` creates it`
    })
  } else {
    const db = yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`SELECT 1`
      const exists = yield* sql<{ t: string | null }>`SELECT to_regclass(${Migrations.table})::text AS t`
      const latest = exists[0]?.t
        ? Number(
          (yield* sql<{ id: number | null }>`SELECT max(migration_id) AS id FROM ${sql(Migrations.table)}`)[0]
            ?.id ?? 0
        )
        : 0
      const connections = latest === 0 ? [] : yield* sql<{
        name: string
        base_url: string | null
        url: string | null
        egress_allow: ReadonlyArray<string> | null
      }>`SELECT name, base_url, url, egress_allow FROM connections ORDER BY name`
      const sealed = latest === 0 ? [] : yield* sql<{ key_id: string; n: number }>`
        SELECT key_id, count(*)::int AS n FROM secrets GROUP BY key_id`
      return { latest, connections, sealed }
    }).pipe(
      Effect.provide(sqlOnly),
      Effect.timeout("15 seconds"),
      Effect.result
    )
    if (Result.isFailure(db)) {
      checks.push({
        check: "database",
        verdict: "FAIL",
        detail: `not reachable: ${db.failure.message}; check ${embedded ? "JANUS_HOME" : "DATABASE_URL"}`
      })
    } else {
      const { connections, latest, sealed } = db.success
      checks.push(
        latest < Migrations.latestId
          ? {
            check: "database",
            verdict: "FAIL",
            detail: `reachable; ${Migrations.latestId - latest} migration(s) pending: run \`janus migrate\``
          }
          : latest > Migrations.latestId
          ? { check: "database", verdict: "warn", detail: `reachable; schema ${latest} is newer than this janus` }
          : { check: "database", verdict: "ok", detail: `reachable, migrations applied (${latest})` }
      )
      const unknownKeys = sealed.filter((s) => !keyIds.includes(s.key_id))
      if (unknownKeys.length > 0 && keyIds.length > 0) {
        checks.push({
          check: "secrets",
          verdict: "FAIL",
          detail: `${unknownKeys.reduce((n, s) => n + s.n, 0)} secret(s) sealed under a key this configuration ` +
            "does not have: add it to JANUS_MASTER_KEY_PREVIOUS"
        })
      }
      const policy = yield* Effect.provide(Effect.service(EgressPolicy), EgressPolicy.layerDefault)
      if (connections.length === 0) checks.push({ check: "egress", verdict: "skip", detail: "no connections" })
      for (const c of connections) {
        checks.push(yield* checkEgress(policy, c.name, c.base_url ?? c.url ?? "", c.egress_allow ?? []))
      }
    }
  }

  // Redis
  if (Option.isSome(config.REDIS_URL)) {
    const problem = yield* Effect.promise(() => redisPing(Redacted.value(config.REDIS_URL.pipe(Option.getOrThrow))))
    checks.push(
      problem === undefined
        ? { check: "redis", verdict: "ok", detail: "reachable (PING answered)" }
        : { check: "redis", verdict: "FAIL", detail: `REDIS_URL not usable: ${problem}` }
    )
  } else {
    checks.push({ check: "redis", verdict: "skip", detail: "REDIS_URL unset (single replica: limits in memory)" })
  }

  // the configuration document `serve` applies (JANUS_CONFIG_FILE): whether it reads and validates here
  checks.push(yield* configFileCheck(config))

  // GET /metrics open beyond loopback without JANUS_METRICS_TOKEN
  checks.push(metricsTokenCheck(config))

  // OAuth: what `serve` would refuse, then each issuer's metadata and keys
  if (!config.OAUTH_ENABLED) {
    checks.push({ check: "oauth", verdict: "skip", detail: "OAUTH_ENABLED is false (client tokens only)" })
  } else {
    const settings = yield* Effect.result(resolveOAuthOptions(OAuthVariables.options(config)))
    if (Result.isFailure(settings)) {
      checks.push({ check: "oauth", verdict: "FAIL", detail: settings.failure.problems.join("; ") })
    } else {
      checks.push({
        check: "oauth",
        verdict: "ok",
        detail: `resource ${settings.success.resource}, metadata at ${metadataUrl(settings.success)}`
      })
      const found = yield* Effect.provide(diagnose(settings.success), FetchHttpClient.layer)
      const servers = [...settings.success.authorizationServers.values()]
      for (const [i, { detail, issuer, metadata, verdict }] of found.entries()) {
        checks.push({ check: `oauth ${issuer}`, verdict, detail })
        checks.push(tokenRequirements(settings.success, servers[i]!))
        checks.push(...clientSupport(settings.success, servers[i]!, metadata))
      }
    }
  }
  return checks
})

export const doctor = Command.make("doctor", { json }, (input) =>
  handled(Effect.gen(function*() {
    const checks = yield* doctorChecks
    const failed = checks.filter((c) => c.verdict === "FAIL").length
    if (input.json) yield* printJson({ ok: failed === 0, checks })
    else {
      for (const c of checks) yield* Console.log(`${c.verdict.padEnd(4)}  ${c.check}: ${c.detail}`)
      yield* Console.log(failed === 0 ? "All checks passed." : `${failed} check(s) failed.`)
    }
    if (failed > 0) {
      return yield* new CliFailure({ message: `${failed} doctor check(s) failed`, fix: "see the FAIL lines above" })
    }
  }))).pipe(
    Command.withDescription(
      "Check configuration, database, Redis, master key, egress and OAuth issuers; exit 1 on failure"
    )
  )
