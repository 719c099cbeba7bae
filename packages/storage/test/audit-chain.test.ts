/**
 * The audit log's durability and hash chains, on PGlite and real Postgres:
 * group commit (`sync`: `record` returns once its row is committed, concurrent
 * records share one INSERT), verification of three writers' chains on a busy
 * log, and the first bad link named after a row is edited, deleted, or two are
 * reordered directly in the database; retention by whole segments; signed
 * heads: a rewrite that recomputes every later hash and the head is `forged`,
 * a head without a MAC is only noted, master key rotation re-signs the heads
 * that verify and leaves a forged one forged.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { createHash } from "node:crypto"
import { COLUMNS, hashOf, type SelectRow, storedRow } from "../src/AuditRows.ts"
import {
  AuditChain,
  type AuditInput,
  AuditLog,
  type AuditLogOptions,
  MasterKey,
  SecretBox,
  Secrets
} from "../src/index.ts"
import { requirePostgres } from "../src/testing.ts"
import { backends, unique } from "./helpers.ts"

const postgres = await requirePostgres()

type Services = SqlClient.SqlClient | AuditLog | MasterKey | Secrets

const freshLog = (options: AuditLogOptions) =>
  Effect.map(
    Layer.build(Layer.fresh(AuditLog.layerWith(options)).pipe(Layer.provide(Logger.layer([])))),
    (context) => Context.get(context, AuditLog)
  )

const entry = (identity: string, i: number): AuditInput => ({
  identity,
  tool: "get_user",
  outcome: i % 7 === 0 ? "error" : "ok",
  durationMs: i,
  callerName: `ci-bot-${i % 3}`,
  requestId: `req-${i}`
})

/** Rows of `identity` per writing transaction. */
const batches = (identity: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number | bigint }>`
      SELECT count(*) AS n FROM audit_records WHERE identity = ${identity} GROUP BY xmin::text ORDER BY min(id)`
    return rows.map((row) => Number(row.n))
  }).pipe(Effect.orDie)

const problemOf = (chain: string) =>
  Effect.map(AuditChain.verify(), (report) => report.problems.find((p) => p.chain === chain))

const idAt = (chain: string, seq: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: unknown }>`SELECT id FROM audit_records WHERE chain = ${chain} AND seq = ${seq}`
    return Number(rows[0]!.id)
  }).pipe(Effect.orDie)

/** A chain of 10 records that verifies, and its writer. */
const chainOf10 = Effect.fnUntraced(function*(name: string) {
  const chain = unique(name)
  const log = yield* freshLog({ chain })
  for (let i = 0; i < 10; i++) yield* log.record(entry(chain, i))
  assert.isUndefined(yield* problemOf(chain))
  return { chain, log }
})

/** What someone with write access but no key can do: edit record `seq`, recompute every later hash and the head. */
const rewrite = (chain: string, seq: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE audit_records SET caller_name = 'someone-else' WHERE chain = ${chain} AND seq = ${seq}`
    const rows = yield* sql<SelectRow>`SELECT ${sql.literal(COLUMNS)} FROM audit_records
      WHERE chain = ${chain} AND seq >= ${seq} ORDER BY seq`
    let prev = rows[0]!.prev_hash as string
    for (const row of rows) {
      const hash = hashOf(chain, Number(row.seq), prev, storedRow(row))
      yield* sql`UPDATE audit_records SET prev_hash = ${prev}, hash = ${hash} WHERE id = ${Number(row.id)}`
      prev = hash
    }
    yield* sql`UPDATE audit_chains SET last_hash = ${prev} WHERE chain = ${chain}`
  }).pipe(Effect.orDie)

for (const backend of backends<Services>(postgres)) {
  describe.skipIf(!backend.run)(`audit chains: ${backend.name}`, () => {
    layer(backend.layer(), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
      it.effect("sync: record returns once its row is committed; concurrent records share one INSERT", () =>
        Effect.scoped(Effect.gen(function*() {
          const log = yield* freshLog({ flushInterval: "1 hour", chain: unique("group") })
          const who = unique("sync")
          yield* log.record(entry(who, 1))
          assert.deepStrictEqual(yield* batches(who), [1], "written before record returned")
          yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) => log.record(entry(who, i)), {
            concurrency: "unbounded"
          })
          const groups = yield* batches(who)
          assert.strictEqual(groups.reduce((a, b) => a + b, 0), 201, "every record written when the calls return")
          assert.isAtMost(groups.length, 4, `group commit: 200 concurrent records in a few INSERTs, got ${groups}`)
          // each batch moved the head in its own transaction: the head is the last batch's
          const sql = yield* SqlClient.SqlClient
          const [rows] = yield* sql<{ rows: string; head: string; seq: unknown }>`
            SELECT (SELECT xmin::text FROM audit_records WHERE chain = ${log.chain} ORDER BY seq DESC LIMIT 1) AS rows,
              xmin::text AS head, last_seq AS seq FROM audit_chains WHERE chain = ${log.chain}`
          assert.strictEqual(rows!.head, rows!.rows)
          assert.strictEqual(Number(rows!.seq), 201)
          assert.isUndefined(yield* problemOf(log.chain))
        })))

      it.effect("three writers on a busy log: every chain verifies; verify reads a consistent prefix", () =>
        Effect.scoped(Effect.gen(function*() {
          const chains = [unique("w1"), unique("w2"), unique("w3")]
          const logs = yield* Effect.forEach(chains, (chain) => freshLog({ chain, flushInterval: "10 millis" }))
          const who = unique("busy")
          const writing = Effect.forEach(
            Array.from({ length: 300 }, (_, i) => i),
            (i) => logs[i % 3]!.record(entry(who, i)),
            { concurrency: 16 }
          )
          // verify while the writers write, then once more after
          const [, during] = yield* Effect.all([writing, AuditChain.verify()], { concurrency: 2 })
          assert.deepStrictEqual(during.problems.filter((p) => chains.includes(p.chain)), [])
          const after = yield* AuditChain.verify()
          assert.deepStrictEqual(after.problems.filter((p) => chains.includes(p.chain)), [])
          const sql = yield* SqlClient.SqlClient
          const perChain = yield* sql<{ chain: string; n: unknown; max: unknown }>`
            SELECT chain, count(*) AS n, max(seq) AS max FROM audit_records WHERE identity = ${who} GROUP BY chain`
          assert.strictEqual(perChain.length, 3)
          for (const row of perChain) assert.strictEqual(Number(row.n), 100)
          for (const row of perChain) assert.strictEqual(Number(row.max), 100, "seq 1..100 per chain")
        })))

      it.effect("a refused admin write (outcome refused, method, path) is stored and chained; its path is hashed", () =>
        Effect.scoped(Effect.gen(function*() {
          const chain = unique("refused")
          const log = yield* freshLog({ chain })
          yield* log.record(entry(chain, 1))
          yield* log.record({
            kind: "admin",
            identity: "admin:00000000-0000-0000-0000-000000000001",
            outcome: "refused",
            status: 400,
            method: "POST",
            path: "/api/v1/connections\u0000",
            reason: "invalid_input: name \ud800"
          })
          yield* log.record(entry(chain, 2))
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ outcome: string; method: string; path: string | null; reason: string | null }>`
            SELECT outcome, method, path, reason FROM audit_records WHERE chain = ${chain} ORDER BY seq`
          assert.deepStrictEqual(rows.map((r) => [r.outcome, r.method, r.path, r.reason]), [
            ["ok", "tools/call", null, null],
            ["refused", "POST", "/api/v1/connections\ufffd", "invalid_input: name \ufffd"],
            ["ok", "tools/call", null, null]
          ])
          assert.isUndefined(yield* problemOf(chain))
          // the path is part of the hash: editing it breaks the chain at that record
          yield* sql`UPDATE audit_records SET path = '/api/v1/elsewhere' WHERE chain = ${chain} AND seq = 2`
          assert.deepInclude(yield* problemOf(chain), { kind: "altered", seq: 2 })
          // a record without a path hashes as before the column existed (its hash has no `path` in it)
          const [first] = yield* sql<SelectRow>`SELECT ${sql.literal(COLUMNS)} FROM audit_records
            WHERE chain = ${chain} AND seq = 1`
          const stored = storedRow(first!)
          const before: Array<unknown> = [chain, 1, first!.prev_hash]
          for (const [field, value] of Object.entries(stored)) {
            if (field === "reason" || field === "path") continue
            before.push(value instanceof Date ? value.getTime() : value)
          }
          assert.strictEqual(first!.hash, createHash("sha256").update(JSON.stringify(before)).digest("hex"))
        })))

      it.effect("editing one row, deleting one, reordering two: verify names the record", () =>
        Effect.scoped(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const setUp = Effect.fnUntraced(function*() {
            const chain = unique("tamper")
            const log = yield* freshLog({ chain })
            for (let i = 0; i < 10; i++) yield* log.record(entry(chain, i))
            assert.isUndefined(yield* problemOf(chain))
            return chain
          })

          const edited = yield* setUp()
          const fifth = yield* idAt(edited, 5)
          yield* sql`UPDATE audit_records SET outcome = 'ok', caller_name = 'someone-else' WHERE id = ${fifth}`
          const e = (yield* problemOf(edited))!
          assert.deepInclude(e, { kind: "altered", recordId: fifth, seq: 5 })
          assert.include(e.message, `record id ${fifth} (seq 5)`)

          const deleted = yield* setUp()
          const [third, fourth] = [yield* idAt(deleted, 3), yield* idAt(deleted, 4)]
          yield* sql`DELETE FROM audit_records WHERE id = ${fourth}`
          const d = (yield* problemOf(deleted))!
          assert.deepInclude(d, { kind: "missing", recordId: null, seq: 4 })
          assert.include(d.message, `after record id ${third}`)

          const lastGone = yield* setUp()
          yield* sql`DELETE FROM audit_records WHERE id = ${yield* idAt(lastGone, 10)}`
          assert.deepInclude((yield* problemOf(lastGone))!, { kind: "truncated", seq: 10 })

          const reordered = yield* setUp()
          const [six, seven] = [yield* idAt(reordered, 6), yield* idAt(reordered, 7)]
          yield* sql`UPDATE audit_records SET seq = -seq WHERE id IN (${six}, ${seven})`
          yield* sql`UPDATE audit_records SET seq = 13 - (-seq) WHERE id IN (${six}, ${seven})`
          const r = (yield* problemOf(reordered))!
          assert.strictEqual(r.seq, 6)
          assert.include(r.message, `record id ${seven}`)

          const since = yield* AuditChain.verify({ since: new Date(Date.now() + 3_600_000) })
          assert.strictEqual(since.problems.filter((p) => p.chain === edited).length, 0, "nothing after `since`")
        })))

      it.effect("the last record of a chain: its content, its prev hash, its removal, its swap with the one before", () =>
        Effect.scoped(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const hashAt = (chain: string, seq: number) =>
            sql<{ hash: string }>`SELECT hash FROM audit_records WHERE chain = ${chain} AND seq = ${seq}`.pipe(
              Effect.map((rows) => rows[0]!.hash),
              Effect.orDie
            )

          // its content changed: the hash of its fields is not the stored one
          const { chain: edited } = yield* chainOf10("last-edited")
          const editedId = yield* idAt(edited, 10)
          yield* sql`UPDATE audit_records SET caller_name = 'someone-else' WHERE id = ${editedId}`
          assert.deepStrictEqual(yield* problemOf(edited), {
            chain: edited,
            kind: "altered",
            recordId: editedId,
            seq: 10,
            message: `record id ${editedId} (seq 10) was changed after it was written`
          })

          // its prev hash pointed elsewhere (at seq 8's record), its own hash and the head left as written: only
          // the prev-hash link tells, since its hash is computed from the chain's own previous hash
          const { chain: relinked } = yield* chainOf10("last-relinked")
          const relinkedId = yield* idAt(relinked, 10)
          yield* sql`UPDATE audit_records SET prev_hash = ${yield* hashAt(relinked, 8)} WHERE id = ${relinkedId}`
          assert.deepStrictEqual(yield* problemOf(relinked), {
            chain: relinked,
            kind: "broken",
            recordId: relinkedId,
            seq: 10,
            message: `record id ${relinkedId} (seq 10) does not follow the record before it`
          })

          // the same, with its hash recomputed to match the new link (what a writer without the key can do
          // short of rewriting the head)
          const { chain: recomputed } = yield* chainOf10("last-recomputed")
          const recomputedId = yield* idAt(recomputed, 10)
          const [last] = yield* sql<SelectRow>`SELECT ${
            sql.literal(COLUMNS)
          } FROM audit_records WHERE id = ${recomputedId}`
          const elsewhere = yield* hashAt(recomputed, 8)
          yield* sql`UPDATE audit_records SET prev_hash = ${elsewhere},
            hash = ${hashOf(recomputed, 10, elsewhere, storedRow(last!))} WHERE id = ${recomputedId}`
          assert.deepInclude(yield* problemOf(recomputed), { kind: "broken", recordId: recomputedId, seq: 10 })

          // deleted: the head still names seq 10 and its hash
          const { chain: gone } = yield* chainOf10("last-deleted")
          const ninth = yield* idAt(gone, 9)
          yield* sql`DELETE FROM audit_records WHERE id = ${yield* idAt(gone, 10)}`
          assert.deepStrictEqual(yield* problemOf(gone), {
            chain: gone,
            kind: "truncated",
            recordId: null,
            seq: 10,
            message: `records seq 10 to 10 are missing (the last one found is record id ${ninth})`
          })

          // deleted, and the head moved back to seq 9 by hand: the head's MAC no longer matches
          const { chain: headMoved } = yield* chainOf10("last-deleted-head-moved")
          yield* sql`DELETE FROM audit_records WHERE id = ${yield* idAt(headMoved, 10)}`
          yield* sql`UPDATE audit_chains SET last_seq = 9, last_hash = ${yield* hashAt(headMoved, 9)}
            WHERE chain = ${headMoved}`
          assert.deepInclude(yield* problemOf(headMoved), { kind: "forged", recordId: null, seq: 9 })

          // the last two swapped (their seqs exchanged): seq 9 is now the old last record, which follows the old 9th
          const { chain: swapped } = yield* chainOf10("last-swapped")
          const [nine, ten] = [yield* idAt(swapped, 9), yield* idAt(swapped, 10)]
          yield* sql`UPDATE audit_records SET seq = -seq WHERE id IN (${nine}, ${ten})`
          yield* sql`UPDATE audit_records SET seq = 19 - (-seq) WHERE id IN (${nine}, ${ten})`
          assert.deepStrictEqual(yield* problemOf(swapped), {
            chain: swapped,
            kind: "broken",
            recordId: ten,
            seq: 9,
            message: `record id ${ten} (seq 9) does not follow the record before it`
          })

          // two records' request ids exchanged, seqs and links left in place: neither hash fits its fields
          const { chain: exchanged } = yield* chainOf10("contents-swapped")
          const [four, five] = [yield* idAt(exchanged, 4), yield* idAt(exchanged, 5)]
          yield* sql`UPDATE audit_records SET request_id = CASE id WHEN ${four} THEN 'req-4' ELSE 'req-3' END
            WHERE id IN (${four}, ${five})`
          assert.deepInclude(yield* problemOf(exchanged), { kind: "altered", recordId: four, seq: 4 })
        })))

      it.effect("a record rewritten with every later hash and the head recomputed: the head is forged", () =>
        Effect.scoped(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { chain, log } = yield* chainOf10("forged")
          yield* rewrite(chain, 5)
          const forged = (yield* problemOf(chain))!
          assert.deepStrictEqual(forged, {
            chain,
            kind: "forged",
            recordId: null,
            seq: 10,
            message: `the head of chain ${chain} is not signed by this deployment's key: its records or head were ` +
              `rewritten`
          })
          // without the MAC the keyless hashes pass: the rewrite is only seen through the signature
          const [mac] = yield* sql<{ head_mac: string; head_key_id: string }>`
            SELECT head_mac, head_key_id FROM audit_chains WHERE chain = ${chain}`
          yield* sql`UPDATE audit_chains SET head_mac = NULL, head_key_id = NULL WHERE chain = ${chain}`
          const report = yield* AuditChain.verify()
          assert.isUndefined(report.problems.find((p) => p.chain === chain))
          assert.include(report.unsigned, chain)
          yield* sql`UPDATE audit_chains SET head_mac = ${mac!.head_mac}, head_key_id = ${mac!.head_key_id}
            WHERE chain = ${chain}`

          // the writer's next batch does not launder it
          yield* log.record(entry(chain, 11))
          assert.strictEqual((yield* problemOf(chain))?.kind, "forged")
        })))

      it.effect("a head without a MAC (written before 0011) verifies and is noted unsigned; a signed head is not", () =>
        Effect.scoped(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { chain, log } = yield* chainOf10("unsigned")
          assert.notInclude((yield* AuditChain.verify()).unsigned, chain)
          yield* sql`UPDATE audit_chains SET head_mac = NULL, head_key_id = NULL WHERE chain = ${chain}`
          const report = yield* AuditChain.verify()
          assert.isUndefined(report.problems.find((p) => p.chain === chain))
          assert.include(report.unsigned, chain)
          // the writer's next batch (which expected its own signed head) moves the head but does not sign it
          yield* log.record(entry(chain, 11))
          const after = yield* AuditChain.verify()
          assert.isUndefined(after.problems.find((p) => p.chain === chain))
          assert.include(after.unsigned, chain)
          const [head] = yield* sql<{ last_seq: unknown }>`SELECT last_seq FROM audit_chains WHERE chain = ${chain}`
          assert.strictEqual(Number(head!.last_seq), 11)
        })))

      it.effect("key rotation re-signs every valid head under the new key; a forged head stays forged", () =>
        Effect.scoped(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { chain, log } = yield* chainOf10("rotated")
          const { chain: bad } = yield* chainOf10("forged-at-rotation")
          yield* rewrite(bad, 3)
          const newKey = SecretBox.generateKey()
          const result = yield* (yield* Secrets).rotate(newKey)
          assert.include(result.heads.forged, bad)
          assert.notInclude(result.heads.forged, chain)
          assert.isAtLeast(result.heads.resigned, 1)
          const heads = yield* sql<{ head_key_id: string }>`SELECT head_key_id FROM audit_chains WHERE chain = ${chain}`
          assert.strictEqual(heads[0]!.head_key_id, result.keyId)
          // signed by the new key alone: a ring holding only it verifies the chain
          const newOnly = yield* AuditChain.verify().pipe(
            Effect.provide(MasterKey.layerKeys([newKey]))
          )
          assert.isUndefined(newOnly.problems.find((p) => p.chain === chain))
          assert.strictEqual(newOnly.problems.find((p) => p.chain === bad)?.kind, "forged")
          // the writer goes on signing with the new key
          yield* log.record(entry(chain, 11))
          assert.isUndefined(yield* problemOf(chain))
          assert.strictEqual((yield* problemOf(bad))?.kind, "forged")
          assert.strictEqual(Redacted.value((yield* (yield* MasterKey).current).key), Redacted.value(newKey))
        })))

      it.effect("retention deletes whole segments older than the cutoff; the chain still verifies", () =>
        Effect.scoped(Effect.gen(function*() {
          const chain = unique("retained")
          const log = yield* freshLog({ chain, durability: "async", flushInterval: "1 hour" })
          const old = new Date("2020-01-01T00:00:00Z")
          for (let i = 0; i < AuditChain.SEGMENT + 50; i++) {
            yield* log.record({ ...entry(chain, i), at: i < AuditChain.SEGMENT + 20 ? old : new Date() })
          }
          yield* log.flush
          const report = yield* AuditChain.prune(new Date("2021-01-01T00:00:00Z"))
          assert.isAtLeast(report.deleted, AuditChain.SEGMENT)
          const sql = yield* SqlClient.SqlClient
          const left = yield* sql<{ n: unknown; min: unknown }>`
            SELECT count(*) AS n, min(seq) AS min FROM audit_records WHERE chain = ${chain}`
          assert.strictEqual(Number(left[0]!.n), 50, "the partial segment stays whole")
          assert.strictEqual(Number(left[0]!.min), AuditChain.SEGMENT + 1)
          assert.isUndefined(yield* problemOf(chain))
          yield* log.record(entry(chain, 1))
          yield* log.flush
          assert.isUndefined(yield* problemOf(chain))
        })))
    })
  })
}
