/**
 * `janus` usage errors and flag validation (no database opened), and
 * `migrate` / `doctor` against a real Postgres test database.
 */
import { assert, describe, it } from "@effect/vitest"
import { PostgresClient } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Effect, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import { CLI_SEQUENCE_TIMEOUT, freePort, janus, tempHome } from "./run.ts"
import { testDatabase } from "./TestDatabase.ts"

const COMMANDS = [
  "serve",
  "migrate",
  "doctor",
  "token",
  "connection",
  "endpoint",
  "openapi",
  "secret",
  "key",
  "export",
  "apply",
  "audit"
]

describe.concurrent("janus usage and flag errors", () => {
  it("--help everywhere, and each mistake named with its fix", async () => {
    const env = { JANUS_HOME: tempHome(), JANUS_PORT: String(await freePort()) }
    let r = await janus(["--help"], env)
    assert.strictEqual(r.code, 0)
    for (const command of COMMANDS) assert.match(r.stdout, new RegExp(`^ +${command} +\\S`, "m"))
    for (
      const [args, flags] of [
        [["token", "create", "--help"], ["--tools", "--servers", "--expires", "--json"]],
        [["connection", "add", "--help"], ["--base-url", "--auth", "--secret", "--allow"]],
        [["endpoint", "add", "--help"], ["--connection", "--method", "--path", "--arg", "--schema"]]
      ] as const
    ) {
      r = await janus(args, env)
      assert.strictEqual(r.code, 0, args.join(" "))
      for (const flag of flags) assert.include(r.stdout, flag, args.join(" "))
    }

    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, RegExp, string?]> = [
      [["connection", "add", "x", "--base-url", "https://x", "--bogus"], /Unrecognized flag: --bogus/],
      [["token", "create"], /name/i],
      [["endpoint", "add", "e", "--connection", "c", "--method", "FETCH", "--path", "/"], /FETCH/],
      [
        ["connection", "add", "bad", "--base-url", "notaurl"],
        /Error: --base-url "notaurl" is not a URL\n {2}Fix: give an absolute http\(s\) URL/
      ],
      [
        ["connection", "add", "bad", "--base-url", "https://x.example", "--auth", "bearer"],
        /Error: --auth bearer needs --secret\n {2}Fix: add --secret NAME/
      ],
      [["connection", "add", "bad", "--base-url", "https://x.example", "--allow", "10.0.0.0/99"], /prefix length/],
      [
        ["connection", "add", "bad", "--base-url", "https://x.example", "--allow", "http://10.0.0.1:8443"],
        /--allow: allow-list entry "http:\/\/10\.0\.0\.1:8443": it is a URL.*billing\.internal:8443/
      ],
      [["connection", "add", "bad", "--base-url", "https://x.example", "--allow", "10.0.0.1:0"], /port must be/],
      [["token", "create", "t", "--expires", "soon"], /--expires "soon" is not a duration or a date/],
      [
        ["endpoint", "add", "e", "--connection", "c", "--method", "GET", "--path", "/", "--arg", "q=nowhere"],
        /--arg "q=nowhere" is not NAME=LOCATION\n {2}Fix: use --arg NAME=path/
      ],
      [
        ["endpoint", "add", "e", "--connection", "c", "--method", "GET", "--path", "/", "--schema", "{bad"],
        /--schema is not a JSON object/
      ],
      [["secret", "set", "s"], /Error: no value for secret s\n {2}Fix: pipe it on stdin/, ""],
      [["openapi", "import", "/no/such.yaml", "--connection", "x"], /cannot read \/no\/such\.yaml/],
      [["openapi", "import", "spec.yaml", "--connection", "x", "--base-url", "nope"], /--base-url "nope" is not a URL/]
    ]
    for (const [args, stderr, stdin] of cases) {
      r = await janus(args, env, stdin)
      assert.notStrictEqual(r.code, 0, args.join(" "))
      assert.match(r.stderr, stderr, args.join(" "))
      assert.notMatch(r.stderr, /\n\s+at /, "no stack trace") // the operator's mistake, not a crash
    }
  }, CLI_SEQUENCE_TIMEOUT)

  it("an invalid configuration is listed, with exit code 78", async () => {
    const r = await janus(["doctor"], { DATABASE_URL: "postgres://127.0.0.1:1/x", JANUS_PORT: "99999" })
    assert.strictEqual(r.code, 78)
    assert.match(r.stderr, /Invalid configuration \(2 problems\)/)
    assert.match(r.stderr, /JANUS_MASTER_KEY=\(unset\): expected a key when DATABASE_URL is set/)
    assert.match(r.stderr, /JANUS_PORT="99999"/)
  }, 30_000)
})

describe.concurrent("janus migrate and doctor on Postgres", async () => {
  const available = await StorageTesting.requirePostgres()
  const database = testDatabase(available)
  const key = randomBytes(32).toString("base64")

  it.skipIf(!available)("doctor fails before migrate, migrate applies, doctor passes; unreachable fails", async () => {
    const env = { DATABASE_URL: database.url(), JANUS_MASTER_KEY: key, JANUS_PORT: String(await freePort()) }
    let r = await janus(["doctor"], env)
    assert.strictEqual(r.code, 1, r.stdout + r.stderr)
    assert.match(r.stdout, /FAIL {2}database: reachable; 13 migration\(s\) pending: run `janus migrate`/)

    r = await janus(["migrate"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /Applied 13 migrations to Postgres \(DATABASE_URL\):\n {2}1 config\n/)
    r = await janus(["migrate"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /Database is up to date \(migration 13\)/)

    r = await janus(["doctor"], { ...env, REDIS_URL: "redis://127.0.0.1:1" })
    assert.strictEqual(r.code, 1)
    assert.match(r.stdout, /ok {4}database: reachable, migrations applied \(13\)/)
    assert.match(r.stdout, /ok {4}master key: JANUS_MASTER_KEY valid/)
    assert.match(r.stdout, /FAIL {2}redis: REDIS_URL not usable/)
    assert.match(r.stdout, /skip {2}egress: no connections/)

    if (await StorageTesting.requireRedis()) {
      r = await janus(["doctor"], { ...env, REDIS_URL: StorageTesting.redisUrl() })
      assert.strictEqual(r.code, 0, r.stdout + r.stderr)
      assert.match(r.stdout, /ok {4}redis: reachable/)
      assert.match(r.stdout, /All checks passed\./)
    }

    const down = new URL(database.url())
    down.port = String(await freePort())
    r = await janus(["doctor", "--json"], { ...env, DATABASE_URL: down.toString() })
    assert.strictEqual(r.code, 1)
    const report = JSON.parse(r.stdout) as {
      ok: boolean
      checks: Array<{ check: string; verdict: string; detail: string }>
    }
    assert.isFalse(report.ok)
    const db = report.checks.find((c) => c.check === "database")!
    assert.strictEqual(db.verdict, "FAIL")
    assert.match(db.detail, /not reachable: .*check DATABASE_URL/)
    for (const o of [r.stdout, r.stderr]) assert.notInclude(o, key)
  }, CLI_SEQUENCE_TIMEOUT)
})

describe("janus audit verify on Postgres", async () => {
  const available = await StorageTesting.requirePostgres()
  // a database of its own: the suite above expects a fresh one when it starts
  const database = testDatabase(available)
  const key = randomBytes(32).toString("base64")

  it.skipIf(!available)("janus audit verify: passes, then names the record edited in the database", async () => {
    const env = { DATABASE_URL: database.url(), JANUS_MASTER_KEY: key, JANUS_PORT: String(await freePort()) }
    // CLI changes are audited (cli:<user>), each command on a chain of its own
    for (const name of ["audit-a", "audit-b", "audit-c"]) {
      const made = await janus(["token", "create", name], env)
      assert.strictEqual(made.code, 0, made.stderr)
    }
    let forgedChain = ""
    const secretValue = `cli-secret-${randomBytes(8).toString("hex")}`
    const set = await janus(["secret", "set", "crm_key"], env, secretValue)
    assert.strictEqual(set.code, 0, set.stderr)
    let r = await janus(["audit", "verify"], env)
    assert.strictEqual(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /^ok {2}\d+ records in \d+ chain\(s\) checked; 0 broken/m)
    const rows = await Effect.runPromise(
      Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const found = yield* sql<{ id: unknown; iface: string; who: string }>`SELECT id, interface AS iface,
        identity AS who FROM audit_records WHERE kind = 'admin' AND resource_name = 'audit-b'`
        const secret = yield* sql<{ changes: string; iface: string }>`SELECT changes, interface AS iface
          FROM audit_records WHERE kind = 'admin' AND resource_kind = 'secret' AND resource_name = 'crm_key'`
        assert.deepStrictEqual(secret.map((row) => [row.iface, JSON.parse(row.changes)]), [[
          "cli",
          { value: "changed" }
        ]])
        const leaked = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM audit_records
          WHERE position(${secretValue} in audit_records::text) > 0`
        assert.strictEqual(Number(leaked[0]!.n), 0, "the secret's value is nowhere in the audit table")
        yield* sql`UPDATE audit_records SET resource_name = 'someone-else' WHERE id = ${Number(found[0]!.id)}`
        // a head rewritten without the master key: its MAC no longer matches
        const forged = yield* sql<{ chain: string }>`UPDATE audit_chains SET first_prev_hash = 'rewritten'
          WHERE chain = (SELECT chain FROM audit_records WHERE kind = 'admin' AND resource_name = 'audit-c')
          RETURNING chain`
        assert.strictEqual(forged.length, 1)
        forgedChain = forged[0]!.chain
        return found
      })).pipe(Effect.provide(PostgresClient.layer({ url: Redacted.make(database.url()), maxConnections: 1 })))
    )
    assert.strictEqual(rows.length, 1, "one admin row for the CLI's token create")
    assert.strictEqual(rows[0]!.iface, "cli")
    assert.match(rows[0]!.who, /^cli:/)
    r = await janus(["audit", "verify"], env)
    assert.strictEqual(r.code, 1, r.stdout + r.stderr)
    assert.match(r.stdout, new RegExp(`FAIL {2}chain .*: record id ${Number(rows[0]!.id)} \\(seq 1\\) was changed`))
    assert.include(
      r.stdout,
      `FAIL  chain ${forgedChain}: the head of chain ${forgedChain} is not signed by this deployment's key: its ` +
        "records or head were rewritten"
    )
    assert.match(r.stdout, /FAIL {2}\d+ records in \d+ chain\(s\) checked; 2 broken/)
    r = await janus(["audit", "verify", "--since", "2999-01-01"], env)
    // no record written since then is checked; a head's signature is, whatever the window
    assert.strictEqual(r.code, 1, r.stdout + r.stderr)
    assert.notInclude(r.stdout, "was changed")
    assert.match(r.stdout, /FAIL {2}0 records in \d+ chain\(s\) checked since 2999-01-01T00:00:00.000Z; 1 broken/)
  }, 120_000)
})
