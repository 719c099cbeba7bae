/**
 * One audit writer's chain in the database: numbers and hashes a batch after
 * the chain's position and writes it with the chain's head.
 *
 * **Details**
 *
 * - A batch is written in ONE statement while the head is what this writer
 *   last wrote and signed (`fastWrite`): the UPDATE of `audit_chains` matches
 *   only that head (start, end, MAC and key) and the INSERT, the rows as one
 *   jsonb array typed by `audit_records`' own row type, runs only if it
 *   moved. One round trip per batch where the checked way takes five
 *   (BEGIN, INSERT, SELECT head FOR UPDATE, UPSERT head, COMMIT).
 * - Otherwise (the first batch of a process, retention moved the chain's
 *   start, a rotation re-signed the head, someone rewrote it) nothing is
 *   written and the batch takes the checked way: one transaction that reads
 *   the head `FOR UPDATE`, checks its MAC (`AuditHeads`), inserts, and moves
 *   it, signed only if it was signed: a forged head is never laundered and
 *   an unsigned one stays unsigned.
 * - A batch Postgres refuses for its data is written again in one transaction
 *   finding the refused records by halves (`internal/Refusals.ts`); each part
 *   is chained after what the parts before it wrote, so the chain has no hole.
 *
 * **Gotchas**
 *
 * - `write` does not move the writer's position: the caller `advance`s it
 *   once the batch is committed, and retries a failed batch from the same
 *   position.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as AuditHeads from "./AuditHeads.ts"
import { type ChainedRow, HASHED, hashOf, type InsertRow } from "./AuditRows.ts"
import { isolate, isRefusal, type Refused } from "./internal/Refusals.ts"
import type { MasterKey } from "./MasterKey.ts"

/** Where a chain stands: the last seq written and its hash. */
export interface Position {
  readonly seq: number
  readonly hash: string
}

/** The head as this writer last wrote and signed it (what the one-statement write expects to find). */
interface KnownHead {
  readonly firstSeq: number
  readonly firstPrevHash: string
  readonly mac: string
  readonly keyId: string
}

/** The columns a batch writes (every column of `audit_records` but `id`). */
const ROW_COLUMNS = [...HASHED, "chain", "seq", "prev_hash", "hash"].join(", ")

export interface ChainWriter {
  /** The chain's last seq when this writer started. */
  readonly base: number
  /** Writes `batch` after the chain's position with its head; the position it reaches (not yet advanced to). */
  readonly write: (batch: ReadonlyArray<InsertRow>) => Effect.Effect<Position, SqlError>
  /** The batch that reached `to` is committed. */
  readonly advance: (to: Position) => void
}

export interface ChainWriterOptions {
  readonly sql: SqlClient.SqlClient
  readonly keys: MasterKey["Service"]
  readonly chain: string
  /** Postgres refused these records of a batch of `of` (they are dropped; the others are written). */
  readonly onRefused: (refused: ReadonlyArray<Refused<InsertRow>>, of: number) => Effect.Effect<void>
}

/** The writer of `chain`, starting where the chain's head stands (a new chain starts at 0). */
export const make = Effect.fnUntraced(function*({ chain, keys, onRefused, sql }: ChainWriterOptions) {
  const stored = yield* sql<{ last_seq: unknown; last_hash: string }>`
    SELECT last_seq, last_hash FROM audit_chains WHERE chain = ${chain}`.pipe(
    Effect.orElseSucceed(() => [])
  )
  let position: Position = stored[0] === undefined
    ? { seq: 0, hash: "" }
    : { seq: Number(stored[0].last_seq), hash: stored[0].last_hash }
  const base = position.seq
  let warnedForged = false
  // the signed head this writer last wrote, while nobody else has moved it; undefined = take the checked way
  let known: KnownHead | undefined

  /** `rows` numbered and hashed after `from`. */
  const chained = (rows: ReadonlyArray<InsertRow>, from: Position): ReadonlyArray<ChainedRow> => {
    let { hash, seq } = from
    return rows.map((row) => {
      seq++
      const prev = hash
      hash = hashOf(chain, seq, prev, row)
      return { ...row, chain, seq, prev_hash: prev, hash }
    })
  }

  const insert = (rows: ReadonlyArray<ChainedRow>) =>
    sql`INSERT INTO audit_records ${sql.insert(rows as unknown as [Record<string, unknown>])}`

  /** Moves the head to `to`, signed when the head it replaces was (see `AuditHeads`); in the batch's transaction. */
  const moveHead = (to: Position) =>
    Effect.gen(function*() {
      const old = yield* sql<AuditHeads.HeadRow>`SELECT ${sql.literal(AuditHeads.HEAD_COLUMNS)} FROM audit_chains
        WHERE chain = ${chain} FOR UPDATE`
      const state = old[0] === undefined ? "signed" : yield* AuditHeads.stateOf(keys, old[0])
      const firstSeq = old[0] === undefined ? 1 : Number(old[0].first_seq)
      const firstPrevHash = old[0]?.first_prev_hash ?? ""
      const head = { chain, firstSeq, firstPrevHash, lastSeq: to.seq, lastHash: to.hash }
      // a forged head keeps its (now stale) MAC and an unsigned one stays unsigned: a write never launders them
      const signed = state === "signed" ? yield* AuditHeads.sign(keys, head) : undefined
      if (state === "forged" && !warnedForged) {
        warnedForged = true
        yield* Effect.logWarning(
          `audit log: the head of chain ${chain} is not signed by this deployment's key (its records or head were ` +
            "rewritten in the database); records are still written, the head is not re-signed"
        )
      }
      // set before the commit: should the transaction roll back, the next one-statement write finds another
      // head in the table than this one, writes nothing, and takes the checked way again
      known = signed === undefined ? undefined : { firstSeq, firstPrevHash, mac: signed.mac, keyId: signed.keyId }
      yield* sql`INSERT INTO audit_chains (chain, first_seq, first_prev_hash, last_seq, last_hash, head_mac,
          head_key_id)
        VALUES (${chain}, ${firstSeq}, ${firstPrevHash}, ${to.seq}, ${to.hash}, ${signed?.mac ?? null},
          ${signed?.keyId ?? null})
        ON CONFLICT (chain) DO UPDATE SET last_seq = excluded.last_seq, last_hash = excluded.last_hash,
          head_mac = COALESCE(excluded.head_mac, audit_chains.head_mac),
          head_key_id = COALESCE(excluded.head_key_id, audit_chains.head_key_id), updated_at = now()`
    })

  const last = (rows: ReadonlyArray<ChainedRow>, otherwise: Position): Position => {
    const row = rows[rows.length - 1]
    return row === undefined ? otherwise : { seq: row.seq, hash: row.hash }
  }

  /**
   * The batch and the head in ONE statement, when the head is still `known`: the UPDATE matches only the head
   * this writer last wrote (start, end, MAC and key), and the INSERT runs only if it did. The rows travel as
   * one JSON array typed by the table's own row type, so one parameter carries the whole batch. Whether the
   * head moved (false: nothing was written).
   */
  const fastWrite = (rows: ReadonlyArray<ChainedRow>, from: Position, to: Position, head: KnownHead) =>
    Effect.flatMap(
      AuditHeads.sign(keys, {
        chain,
        firstSeq: head.firstSeq,
        firstPrevHash: head.firstPrevHash,
        lastSeq: to.seq,
        lastHash: to.hash
      }),
      (signed) =>
        sql<{ moved: number }>`WITH head AS (
            UPDATE audit_chains SET last_seq = ${to.seq}, last_hash = ${to.hash}, head_mac = ${signed.mac},
              head_key_id = ${signed.keyId}, updated_at = now()
            WHERE chain = ${chain} AND first_seq = ${head.firstSeq} AND first_prev_hash = ${head.firstPrevHash}
              AND last_seq = ${from.seq} AND last_hash = ${from.hash} AND head_mac = ${head.mac}
              AND head_key_id = ${head.keyId}
            RETURNING 1
          ), inserted AS (
            INSERT INTO audit_records (${sql.literal(ROW_COLUMNS)})
            SELECT ${sql.literal(ROW_COLUMNS)}
            FROM jsonb_populate_recordset(NULL::audit_records, ${JSON.stringify(rows)}::jsonb) WITH ORDINALITY
            WHERE EXISTS (SELECT 1 FROM head) ORDER BY ordinality
          )
          SELECT count(*)::int AS moved FROM head`.pipe(
          Effect.map((result) => {
            if (result[0]?.moved !== 1) return false
            known = { ...head, mac: signed.mac, keyId: signed.keyId }
            return true
          })
        )
    )

  /** The whole batch and the head: one statement when the head is `known`, else checked in a transaction. */
  const writeAll = (batch: ReadonlyArray<InsertRow>) =>
    Effect.suspend(() => {
      const rows = chained(batch, position)
      const to = last(rows, position)
      const checked = Effect.as(sql.withTransaction(Effect.andThen(insert(rows), moveHead(to))), to)
      if (known === undefined || rows.length === 0) return checked
      return Effect.flatMap(fastWrite(rows, position, to, known), (moved) => {
        if (moved) return Effect.succeed(to)
        known = undefined
        return checked
      })
    })

  /**
   * The batch again in one transaction, finding the records Postgres refuses by halves (each part chained
   * after what the parts before it wrote, so the chain has no hole); those are dropped and reported.
   */
  const writeIsolating = (batch: ReadonlyArray<InsertRow>) =>
    sql.withTransaction(Effect.gen(function*() {
      let at = position
      const { refused } = yield* isolate(sql, batch, (part) =>
        Effect.suspend(() => {
          const rows = chained(part, at)
          return Effect.map(insert(rows), () => {
            at = last(rows, at)
            return rows
          })
        }))
      yield* moveHead(at)
      if (refused.length > 0) yield* onRefused(refused, batch.length)
      return at
    }))

  return {
    base,
    write: (batch) => Effect.catchIf(writeAll(batch), isRefusal, () => writeIsolating(batch)),
    advance: (to) => {
      position = to
    }
  } satisfies ChainWriter
})
