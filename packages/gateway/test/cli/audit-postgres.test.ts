/**
 * The CLI's admin changes in the audit trail, on a Postgres database of its
 * own: `janus key rotate`, `janus openapi import`, `janus token revoke` and
 * a `janus apply` changing a token each write their rows (interface `cli`,
 * `apply` for the apply; actor `cli:<user>`) with the right action and
 * diff, and the whole audit table and event log are searched for the key
 * material, secret value, token value, hash and prefix used: none is there. (`janus audit verify` on these rows is tested in
 * usage-postgres.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { PostgresClient } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Effect, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import * as Path from "node:path"
import { FIXTURES, freePort, janus } from "./run.ts"
import { testDatabase } from "./TestDatabase.ts"

interface Row {
  readonly identity: string
  readonly iface: string
  readonly action: string
  readonly kind: string
  readonly rid: string | null
  readonly rname: string | null
  readonly changes: string
}

describe("CLI admin changes in the audit trail (Postgres)", async () => {
  const available = await StorageTesting.requirePostgres()
  const database = testDatabase(available)

  const query = <A>(body: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    Effect.runPromise(
      Effect.scoped(Effect.flatMap(Effect.service(SqlClient.SqlClient), body)).pipe(
        Effect.provide(PostgresClient.layer({ url: Redacted.make(database.url()), maxConnections: 1 }))
      )
    )

  const rows = () =>
    query((sql) =>
      sql<Row>`SELECT identity, interface AS iface, action, resource_kind AS kind, resource_id AS rid,
        resource_name AS rname, changes FROM audit_records WHERE kind = 'admin' ORDER BY id`
    )

  it.skipIf(!available)(
    "key rotate, openapi import, apply, token revoke: one row each change, no credential",
    async () => {
      const oldKey = randomBytes(32).toString("base64")
      const env = { DATABASE_URL: database.url(), JANUS_MASTER_KEY: oldKey, JANUS_PORT: String(await freePort()) }
      const expiresAt = "2031-01-01T00:00:00Z"
      const secretValue = `cli-secret-${randomBytes(8).toString("hex")}`

      let r = await janus(["secret", "set", "api_key"], env, secretValue)
      assert.strictEqual(r.code, 0, r.stderr)
      const token = await janus(["token", "create", "ci bot", "--json"], env)
      assert.strictEqual(token.code, 0, token.stderr)
      const tokenValue = (JSON.parse(token.stdout) as { token: string }).token
      // an apply (from stdin) changes the token's expiry: an update made by the CLI user through apply
      const document = { apiVersion: "janus/v1", kind: "Configuration", clientTokens: [{ name: "ci bot", expiresAt }] }
      r = await janus(["apply", "-f", "-"], env, JSON.stringify(document))
      assert.strictEqual(r.code, 0, r.stdout + r.stderr)
      r = await janus(["token", "revoke", "ci bot"], env)
      assert.strictEqual(r.code, 0, r.stderr)
      r = await janus(["openapi", "import", Path.join(FIXTURES, "petstore.yaml"), "--connection", "pets"], env)
      assert.strictEqual(r.code, 0, r.stderr)
      r = await janus(["key", "rotate", "--json"], env)
      assert.strictEqual(r.code, 0, r.stderr)
      const rotated = JSON.parse(r.stdout) as {
        keyId: string
        reencrypted: number
        auditHeads: { resigned: number; unsigned: number; forged: Array<string> }
        JANUS_MASTER_KEY: string
      }
      assert.strictEqual(rotated.reencrypted, 1)
      // the chains of the commands before it (secret set, openapi import) re-signed under the new key
      assert.isAtLeast(rotated.auditHeads.resigned, 2)
      assert.deepStrictEqual([rotated.auditHeads.unsigned, rotated.auditHeads.forged], [0, []])

      const all = await rows()
      for (const row of all) {
        assert.strictEqual(row.iface, row.action === "update" ? "apply" : "cli", `${row.action} ${row.kind}`)
        assert.match(row.identity, /^cli:\S+$/)
      }
      const about = (kind: string) => all.filter((row) => row.kind === kind)

      // key rotate: exactly one row, named, with no key material
      const rotations = about("master_key")
      assert.lengthOf(rotations, 1)
      assert.deepInclude(rotations[0]!, { action: "rotate", rid: rotated.keyId })
      assert.deepStrictEqual(JSON.parse(rotations[0]!.changes), { key: "changed", reencrypted: { old: null, new: 1 } })

      // openapi import: the connection and its three endpoints
      assert.deepStrictEqual(
        [...about("connection"), ...about("endpoint")].map((row) => `${row.action} ${row.kind} ${row.rname}`).sort(),
        [
          "create connection pets",
          "create endpoint createPets",
          "create endpoint listPets",
          "create endpoint showPetById"
        ]
      )

      // token create, update through an apply, revoke: each diff names only what changed
      const tokens = about("client_token")
      assert.deepStrictEqual(tokens.map((row) => `${row.action} ${row.rname}`), [
        "create ci bot",
        "update ci bot",
        "revoke ci bot"
      ])
      assert.deepStrictEqual(JSON.parse(tokens[1]!.changes), {
        expiresAt: { old: null, new: "2031-01-01T00:00:00.000Z" }
      })
      const revoke = JSON.parse(tokens[2]!.changes)
      assert.deepStrictEqual(Object.keys(revoke), ["revokedAt"])
      assert.isNull(revoke.revokedAt.old)
      assert.match(revoke.revokedAt.new, /^\d{4}-\d\d-\d\dT/)
      assert.strictEqual(JSON.parse(tokens[0]!.changes).value, "changed")

      // nothing secret anywhere: keys (as printed and as raw bytes in hex), the secret, the token and its hash
      const stored = await query((sql) =>
        sql<{ hex: string; b64: string; prefix: string }>`SELECT encode(token_hash, 'hex') AS hex,
        encode(token_hash, 'base64') AS b64, prefix FROM client_tokens WHERE name = 'ci bot'`
      )
      assert.lengthOf(stored, 1)
      const secrets = [
        oldKey,
        rotated.JANUS_MASTER_KEY,
        Buffer.from(oldKey, "base64").toString("hex"),
        Buffer.from(rotated.JANUS_MASTER_KEY, "base64").toString("hex"),
        secretValue,
        tokenValue,
        stored[0]!.hex,
        stored[0]!.b64,
        stored[0]!.prefix
      ]
      const leaked = await query((sql) =>
        Effect.forEach(secrets, (secret) =>
          Effect.map(
            sql<{ n: unknown }>`SELECT
            (SELECT count(*) FROM audit_records WHERE position(${secret} in audit_records::text) > 0) +
            (SELECT count(*) FROM broker_event WHERE position(${secret} in broker_event::text) > 0) AS n`,
            (hits) => Number(hits[0]!.n)
          ))
      )
      assert.deepStrictEqual(leaked, secrets.map(() => 0), "a credential leaked into the audit trail")
    },
    120_000
  )
})
