/**
 * `janus migrate`, `janus doctor`, `janus key rotate`.
 *
 * - `migrate` applies pending migrations on the configured database and
 *   names each one it applied.
 * - `doctor` checks, each with one verdict line (`ok`, `warn`, `FAIL`,
 *   `skip`): configuration, master key, database reachable and migrated,
 *   Redis reachable (when `REDIS_URL`), for every connection whether the
 *   egress policy allows its URL, and with OAuth on, the OAuth settings as
 *   `serve` checks them and each issuer's metadata and signing keys (a FAIL
 *   names the issuer), and `JANUS_CONFIG_FILE` read and validated (its
 *   references too; what needs the database is checked when a server
 *   applies it). Exit code 1 when any check fails. An
 *   invalid configuration stops before the checks: `janus` prints every
 *   problem and exits 78 (EX_CONFIG), as `serve` does. `doctor` only reads;
 *   in embedded mode with a server running it checks the server's `/readyz`
 *   instead of opening the database.
 * - `key rotate` re-encrypts every secret under a fresh master key
 *   (`Secrets.rotate`). Embedded mode with the key file: the file is
 *   rewritten (new key first, old keys kept to open old data). With
 *   `JANUS_MASTER_KEY`: the new key is printed once with how to set
 *   `JANUS_MASTER_KEY` and `JANUS_MASTER_KEY_PREVIOUS`.
 *
 * @since 0.1.0
 */
import { Migrations, PgliteClient, PostgresClient, SecretBox, Secrets } from "@janus/storage"
import { Console, Effect, Layer, Option, Redacted, Result } from "effect"
import { Command } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Dns from "node:dns/promises"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import * as Tls from "node:tls"
import { JanusConfig, unknownJanusVariables } from "../config/JanusConfig.ts"
import * as Plan from "../configuration/Plan.ts"
import { load } from "../configuration/Sources.ts"
import { AllowList, EgressPolicy, portOf } from "../egress/index.ts"
import { describeStorage } from "../GatewayStorage.ts"
import { diagnose, metadataUrl, resolveOAuthOptions } from "../oauth/index.ts"
import * as OAuthVariables from "../oauth/Variables.ts"
import { asCli, CliStorage } from "./AuditedStorage.ts"
import { CliFailure, guardEmbedded, handled, json, printJson, serverAnswering } from "./Support.ts"

/** Decodes a base64 master key; the failure names `source`, never the key. */
const parseKey = (source: string, encoded: Redacted.Redacted<string>) => {
  const decoded = SecretBox.decodeKey(encoded)
  return typeof decoded === "string"
    ? Effect.fail(new CliFailure({ message: `${source}: ${decoded}`, fix: "use 32 random bytes in base64" }))
    : Effect.succeed(SecretBox.keyMaterial(decoded))
}

/** The bare SQL client of the configured database: no migrations, no services. */
const sqlOnly: Layer.Layer<SqlClient.SqlClient, SqlError, JanusConfig> = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  return Option.match(config.DATABASE_URL, {
    onNone: (): Layer.Layer<SqlClient.SqlClient, SqlError> =>
      PgliteClient.layer({ dataDir: Path.join(config.JANUS_HOME, "data") }),
    onSome: (url): Layer.Layer<SqlClient.SqlClient, SqlError> =>
      PostgresClient.layer({ url, maxConnections: 2, connectTimeout: "5 seconds" })
  })
}))

// -----------------------------------------------------------------------------
// migrate
// -----------------------------------------------------------------------------

export const migrate = Command.make("migrate", { json }, (input) =>
  handled(Effect.gen(function*() {
    yield* guardEmbedded
    const config = yield* JanusConfig
    const applied = yield* Effect.provide(Migrations.run, sqlOnly)
    const list = applied.map(([id, name]) => ({ id, name }))
    if (input.json) {
      return yield* printJson({ database: describeStorage(config), applied: list, latest: Migrations.latestId })
    }
    if (list.length === 0) {
      return yield* Console.log(`Database is up to date (migration ${Migrations.latestId}): ${describeStorage(config)}`)
    }
    yield* Console.log(`Applied ${list.length} migration${list.length === 1 ? "" : "s"} to ${describeStorage(config)}:`)
    for (const m of list) {
      yield* Console.log(`  ${m.id} ${m.name}`)
    }
  }))).pipe(Command.withDescription("Apply pending database migrations"))

// -----------------------------------------------------------------------------
// doctor
// -----------------------------------------------------------------------------

type Verdict = "ok" | "warn" | "FAIL" | "skip"
interface Check {
  readonly check: string
  readonly verdict: Verdict
  readonly detail: string
}

const redisPing = (raw: string): Promise<string | undefined> =>
  new Promise((resolve) => {
    const url = new URL(raw)
    const port = url.port === "" ? 6379 : Number(url.port)
    const host = url.hostname
    const socket = url.protocol === "rediss:"
      ? Tls.connect({ host, port, servername: host })
      : Net.connect({ host, port })
    let answer = ""
    const done = (problem: string | undefined) => {
      socket.destroy()
      resolve(problem)
    }
    socket.setTimeout(2_000, () => done("no answer within 2 s"))
    socket.once("error", (e) => done(e.message))
    socket.once(url.protocol === "rediss:" ? "secureConnect" : "connect", () => {
      const resp = (...parts: Array<string>) =>
        `*${parts.length}\r\n` + parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join("")
      const password = decodeURIComponent(url.password)
      const user = decodeURIComponent(url.username)
      if (password !== "") socket.write(user !== "" ? resp("AUTH", user, password) : resp("AUTH", password))
      socket.write(resp("PING"))
    })
    socket.on("data", (chunk) => {
      answer += chunk.toString("utf8")
      if (answer.includes("+PONG")) return done(undefined)
      if (answer.startsWith("-")) return done(`Redis answered ${answer.split("\r\n")[0]!.slice(0, 80)}`)
    })
  })

const checkEgress = (policy: EgressPolicy["Service"], name: string, raw: string, allowEntries: ReadonlyArray<string>) =>
  Effect.promise(async (): Promise<Check> => {
    const check = `egress ${name}`
    const allow = AllowList.make(allowEntries)
    if (Result.isFailure(allow)) return { check, verdict: "FAIL", detail: allow.failure }
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return { check, verdict: "FAIL", detail: `${JSON.stringify(raw)} is not a URL` }
    }
    const refused = policy.checkUrl(url, allow.success, "url")
    if (refused) {
      return {
        check,
        verdict: "FAIL",
        detail:
          `${url.origin} refused: ${refused.address} is ${refused.reason}; add it to the connection's allow-list if intended`
      }
    }
    if (Net.isIP(url.hostname.replace(/^\[|\]$/g, "")) !== 0) {
      return { check, verdict: "ok", detail: `${url.origin} allowed` }
    }
    const addresses = await Promise.race([
      Dns.lookup(url.hostname, { all: true }).then((all) => all.map((a) => a.address), (e: Error) => e),
      new Promise<Error>((r) => setTimeout(() => r(new Error("no answer within 3 s")), 3_000).unref())
    ])
    if (addresses instanceof Error) {
      return { check, verdict: "warn", detail: `${url.hostname} does not resolve here (${addresses.message})` }
    }
    for (const address of addresses) {
      const no = policy.checkResolved(url.hostname, address, allow.success, portOf(url))
      if (no) {
        return {
          check,
          verdict: "FAIL",
          detail: `${url.hostname} resolves to ${no.address}, which is ${no.reason}; ` +
            "add the host or range to the connection's allow-list if intended"
        }
      }
    }
    return { check, verdict: "ok", detail: `${url.origin} allowed (${addresses.join(", ")})` }
  })

/**
 * JANUS_CONFIG_FILE read and decoded, and its references checked as a whole
 * (`Plan.make` against nothing stored): what the database and the server's
 * environment would add is checked when a server applies it.
 */
const configFileCheck = (config: JanusConfig["Service"]) =>
  Effect.gen(function*() {
    const check = "config file"
    if (Option.isNone(config.JANUS_CONFIG_FILE)) {
      return { check, verdict: "skip", detail: "JANUS_CONFIG_FILE unset" } satisfies Check
    }
    const path = config.JANUS_CONFIG_FILE.value
    const loaded = yield* Effect.result(load(path))
    const empty = { secrets: [], connections: [], endpoints: [], virtualServers: [], clientTokens: [] }
    const planned = Result.isSuccess(loaded)
      ? Plan.make(loaded.success.configuration, empty, { prune: false, issueTokens: true, resolved: new Map() })
      : loaded.failure
    if ("_tag" in planned) {
      const problems = planned._tag === "ConfigurationInvalid" ? planned.problems.map((p) => p.line) : [planned.message]
      return {
        check,
        verdict: "FAIL",
        detail: `${problems.slice(0, 3).join("; ")}${problems.length > 3 ? ` (and ${problems.length - 3} more)` : ""}`
      } satisfies Check
    }
    const doc = Result.getOrThrow(loaded).configuration
    const count = doc.secrets.length + doc.connections.length + doc.endpoints.length + doc.virtualServers.length +
      doc.clientTokens.length
    return { check, verdict: "ok", detail: `${path} is valid (${count} resources)` } satisfies Check
  })

const doctorChecks = Effect.gen(function*() {
  const config = yield* JanusConfig
  const checks: Array<Check> = []
  const unknown = unknownJanusVariables(process.env)
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
      for (const issuer of found) checks.push({ check: `oauth ${issuer.issuer}`, ...issuer })
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

// -----------------------------------------------------------------------------
// key rotate
// -----------------------------------------------------------------------------

const keyRotate = Command.make("rotate", { json }, (input) =>
  handled(Effect.gen(function*() {
    yield* guardEmbedded
    const config = yield* JanusConfig
    const envMode = Option.isSome(config.JANUS_MASTER_KEY)
    const key = SecretBox.generateKey()
    const result = yield* Effect.provide(
      asCli(Effect.flatMap(Effect.service(Secrets), (s) => s.rotate(key))),
      CliStorage
    )
    if (!envMode) {
      const file = Path.resolve(config.JANUS_HOME, "master.key")
      if (input.json) {
        return yield* printJson({
          keyId: result.keyId,
          reencrypted: result.reencrypted,
          auditHeads: result.heads,
          keyFile: file
        })
      }
      yield* Console.log(
        `Rotated the master key: ${result.reencrypted} secret(s) re-encrypted under key ${result.keyId}`
      )
      yield* headsReport(result.heads)
      yield* Console.log(`The key file ${file} now starts with the new key; older keys stay in it to open old data.`)
      return
    }
    const encoded = SecretBox.encodeKey(key)
    const previous = "<the value JANUS_MASTER_KEY has now>" +
      (config.JANUS_MASTER_KEY_PREVIOUS.length > 0 ? ",<the values JANUS_MASTER_KEY_PREVIOUS has now>" : "")
    if (input.json) {
      return yield* printJson({
        keyId: result.keyId,
        reencrypted: result.reencrypted,
        auditHeads: result.heads,
        JANUS_MASTER_KEY: encoded,
        JANUS_MASTER_KEY_PREVIOUS: previous
      })
    }
    yield* Console.log(`Rotated the master key: ${result.reencrypted} secret(s) re-encrypted under key ${result.keyId}`)
    yield* headsReport(result.heads)
    yield* Console.log("")
    yield* Console.log("New master key (shown once; store it in your secret manager now):")
    yield* Console.log(`  ${encoded}`)
    yield* Console.log("")
    yield* Console.log("Now, on every replica, set and restart:")
    yield* Console.log(`  JANUS_MASTER_KEY=${encoded}`)
    yield* Console.log(`  JANUS_MASTER_KEY_PREVIOUS=${previous}`)
    yield* Console.log(
      "Until a replica restarts with the new key it cannot open secrets changed since the rotation " +
        "(values it has cached keep working). Drop the old key from JANUS_MASTER_KEY_PREVIOUS after every replica " +
        "runs with the new one (a replica still on the old key signs its audit chain heads with it until then)."
    )
  }))).pipe(Command.withDescription("Re-encrypt every secret under a new master key"))

/** What rotation did to the audit chains' signed heads (a forged head is not re-signed: it keeps failing verify). */
const headsReport = (
  heads: { readonly resigned: number; readonly unsigned: number; readonly forged: ReadonlyArray<string> }
) =>
  Effect.gen(function*() {
    yield* Console.log(
      `Audit chain heads re-signed under the new key: ${heads.resigned}` +
        (heads.unsigned > 0 ? `; ${heads.unsigned} unsigned (written before signing existed) left unsigned` : "")
    )
    for (const chain of heads.forged) {
      yield* Console.log(
        `WARNING  the head of audit chain ${chain} is not signed by this deployment's key; it was not re-signed ` +
          "(run `janus audit verify`)"
      )
    }
  })

export const key = Command.make("key").pipe(
  Command.withDescription("Master key: rotate"),
  Command.withSubcommands([keyRotate])
)
