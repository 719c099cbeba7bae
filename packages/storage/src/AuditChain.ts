/**
 * Checking the audit log's hash chains, and retention by whole segments.
 *
 * **Rules**
 *
 * - `verify` checks every chain named in `audit_chains`, and that no record
 *   belongs to a chain without a head. For each chain it reads the head
 *   first, then the records up to the head's last seq in seq order (pages of
 *   2,000, so a busy writer's newer records are left for the next run: a
 *   head is moved in the transaction of its records, so everything up to it
 *   is committed). A record is bad when its seq is not the next one
 *   (`missing`: a deleted record, named by the seq expected and the record
 *   before it), its `prev_hash` is not the previous record's hash (`broken`)
 *   or its hash is not what its fields give (`altered`: an edited field, or
 *   two records whose seq or place were swapped). The chain must end at the
 *   head's last seq and hash (`truncated` otherwise). The first problem of
 *   each chain is reported; a chain is not read past it.
 * - Signed heads (`AuditHeads`): every head move (the writer's batch,
 *   `prune` moving the retained start, master key rotation) stores an
 *   HMAC-SHA256 of the head under a key derived from the master key, in the
 *   same transaction. The hashes alone are keyless: whoever can write to the
 *   database can edit a record, recompute every later hash and the head, and
 *   the chain checks. The master key never is in the database, so such a
 *   rewrite leaves a head whose MAC does not match: `forged` ("the head of
 *   chain X is not signed by this deployment's key"), checked first, and the
 *   chain's records are not read (their hashes prove nothing then). A head
 *   without a MAC (written before migration 0011) is not a failure: its
 *   chain is checked by its hashes only and named in `unsigned`.
 * - Limits: a rolled-back head (an older signed head put back together with
 *   deleting the records written after it) verifies, and so does a head
 *   whose MAC was removed (it reads as unsigned, like a pre-0011 head); both
 *   need an external anchor (e.g. heads exported elsewhere) to be seen.
 * - `since`: only records at or after that instant are checked; the first of
 *   them is taken as the start (its `prev_hash` is trusted). Heads' MACs
 *   are checked whatever `since` (a head is current state, not history).
 * - Records written before the chain existed (no `chain`) are not checked
 *   and are counted apart (`unchained`).
 * - `prune` (AUDIT_RETENTION, default 90 days) deletes, per chain, whole
 *   segments of `SEGMENT` (10,000) seqs whose every record is older than the
 *   cutoff, and moves the chain's retained start (`first_seq`,
 *   `first_prev_hash`: the hash of the last deleted record) in the same
 *   transaction, so the chain stays verifiable from there. Records without
 *   a chain older than the cutoff are deleted too.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { fieldsOf, HEAD_COLUMNS, type HeadRow, sign, stateOf } from "./AuditHeads.ts"
import { COLUMNS, hashOf, type SelectRow, storedRow } from "./AuditRows.ts"
import type { StorageError } from "./Errors.ts"
import { storageError, toNumber } from "./internal/sql.ts"
import { MasterKey } from "./MasterKey.ts"

/** Seqs per retention segment. */
export const SEGMENT = 10_000
const PAGE = 2_000

/** The first problem found in a chain. */
export interface ChainProblem {
  readonly chain: string
  readonly kind: "missing" | "broken" | "altered" | "truncated" | "headless" | "forged"
  /** The record at fault (null when it is missing). */
  readonly recordId: number | null
  readonly seq: number
  readonly message: string
}

export interface VerifyReport {
  readonly chains: number
  readonly records: number
  readonly unchained: number
  /** Chains whose head carries no MAC (written before migration 0011): checked by their hashes only. */
  readonly unsigned: ReadonlyArray<string>
  readonly problems: ReadonlyArray<ChainProblem>
}

/** Checks every chain (see the rules). */
export const verify = (options: { readonly since?: Date | undefined } = {}): Effect.Effect<
  VerifyReport,
  StorageError,
  SqlClient.SqlClient | MasterKey
> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const keys = yield* MasterKey
    const heads = yield* sql<HeadRow>`SELECT ${sql.literal(HEAD_COLUMNS)} FROM audit_chains ORDER BY chain`
    const problems: Array<ChainProblem> = []
    const unsigned: Array<string> = []
    let records = 0
    for (const head of heads) {
      const state = yield* stateOf(keys, head)
      if (state === "forged") {
        // the hashes below could have been recomputed by whoever rewrote the head: they prove nothing now
        problems.push({
          chain: head.chain,
          kind: "forged",
          recordId: null,
          seq: toNumber(head.last_seq),
          message: `the head of chain ${head.chain} is not signed by this deployment's key: its records or head ` +
            `were rewritten`
        })
        continue
      }
      if (state === "unsigned") unsigned.push(head.chain)
      const lastSeq = toNumber(head.last_seq)
      let expected = toNumber(head.first_seq)
      let prev = head.first_prev_hash
      let prevId: number | null = null
      let problem: ChainProblem | undefined
      if (options.since !== undefined) {
        const first = yield* sql<{ seq: unknown; prev_hash: string }>`SELECT seq, prev_hash FROM audit_records
          WHERE chain = ${head.chain} AND at >= ${options.since} AND seq <= ${lastSeq}
          ORDER BY seq LIMIT 1`
        if (first[0] === undefined) continue
        expected = toNumber(first[0].seq)
        prev = first[0].prev_hash
      }
      while (problem === undefined && expected <= lastSeq) {
        const rows = yield* sql<SelectRow>`SELECT ${sql.literal(COLUMNS)} FROM audit_records
          WHERE chain = ${head.chain} AND seq >= ${expected} AND seq <= ${lastSeq}
          ORDER BY seq LIMIT ${PAGE}`
        if (rows.length === 0) break
        for (const row of rows) {
          const id = toNumber(row.id)
          const seq = toNumber(row.seq)
          const at = (kind: ChainProblem["kind"], recordId: number | null, message: string): ChainProblem => ({
            chain: head.chain,
            kind,
            recordId,
            seq: kind === "missing" ? expected : seq,
            message
          })
          if (seq !== expected) {
            problem = at(
              "missing",
              null,
              `record seq ${expected} is missing (${
                prevId === null ? "at the chain's start" : `after record id ${prevId}`
              }; the next one found is record id ${id}, seq ${seq})`
            )
            break
          }
          if (row.prev_hash !== prev) {
            problem = at("broken", id, `record id ${id} (seq ${seq}) does not follow the record before it`)
            break
          }
          if (row.hash !== hashOf(head.chain, seq, prev, storedRow(row))) {
            problem = at("altered", id, `record id ${id} (seq ${seq}) was changed after it was written`)
            break
          }
          records++
          prev = row.hash
          prevId = id
          expected++
        }
      }
      if (problem === undefined && expected <= lastSeq) {
        problem = {
          chain: head.chain,
          kind: expected === toNumber(head.first_seq) ? "missing" : "truncated",
          recordId: null,
          seq: expected,
          message: `records seq ${expected} to ${lastSeq} are missing (${
            prevId === null ? "the chain has none left" : `the last one found is record id ${prevId}`
          })`
        }
      }
      if (problem === undefined && lastSeq >= toNumber(head.first_seq) && prev !== head.last_hash) {
        problem = {
          chain: head.chain,
          kind: "truncated",
          recordId: prevId,
          seq: lastSeq,
          message: `the chain's last record (seq ${lastSeq}) does not match its head`
        }
      }
      if (problem !== undefined) problems.push(problem)
    }
    const headless = yield* sql<{ chain: string; n: unknown; id: unknown }>`
      SELECT chain, count(*) AS n, min(id) AS id FROM audit_records
      WHERE chain IS NOT NULL AND chain NOT IN (SELECT chain FROM audit_chains) GROUP BY chain`
    for (const row of headless) {
      problems.push({
        chain: row.chain,
        kind: "headless",
        recordId: toNumber(row.id),
        seq: 0,
        message: `${toNumber(row.n)} records (from id ${toNumber(row.id)}) belong to a chain that has no head`
      })
    }
    const unchained = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM audit_records WHERE chain IS NULL`
    return { chains: heads.length, records, unchained: toNumber(unchained[0]?.n ?? 0), unsigned, problems }
  }).pipe(storageError("auditChain.verify"))

/** What `prune` removed. */
export interface PruneReport {
  readonly deleted: number
}

/** Deletes whole segments older than `cutoff` (see the rules). */
export const prune = (cutoff: Date): Effect.Effect<PruneReport, StorageError, SqlClient.SqlClient | MasterKey> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const keys = yield* MasterKey
    const heads = yield* sql<HeadRow>`SELECT ${sql.literal(HEAD_COLUMNS)} FROM audit_chains`
    let deleted = 0
    for (const head of heads) {
      // the first record still inside retention bounds what may go: segments strictly before it
      const young = yield* sql<{ seq: unknown }>`SELECT min(seq) AS seq FROM audit_records
        WHERE chain = ${head.chain} AND at >= ${cutoff}`
      const firstYoung = young[0]?.seq === null || young[0]?.seq === undefined
        ? toNumber(head.last_seq) + 1
        : toNumber(young[0].seq)
      const end = Math.floor((firstYoung - 1) / SEGMENT) * SEGMENT
      if (end < toNumber(head.first_seq)) continue
      const n = yield* sql.withTransaction(Effect.gen(function*() {
        const boundary = yield* sql<{ hash: string }>`SELECT hash FROM audit_records
          WHERE chain = ${head.chain} AND seq = ${end}`
        const removed = yield* sql<{ id: unknown }>`DELETE FROM audit_records
          WHERE chain = ${head.chain} AND seq <= ${end} RETURNING id`
        // the head as it is now (a writer may have moved it since it was read), locked until commit
        const now = yield* sql<HeadRow>`SELECT ${sql.literal(HEAD_COLUMNS)} FROM audit_chains
          WHERE chain = ${head.chain} FOR UPDATE`
        const moved = {
          ...fieldsOf(now[0] ?? head),
          firstSeq: end + 1,
          firstPrevHash: boundary[0]?.hash ?? head.first_prev_hash
        }
        // only a head that verifies is re-signed: a forged one stays forged, an unsigned one unsigned
        const signed = (yield* stateOf(keys, now[0] ?? head)) === "signed" ? yield* sign(keys, moved) : undefined
        yield* sql`UPDATE audit_chains SET first_seq = ${moved.firstSeq}, first_prev_hash = ${moved.firstPrevHash},
          head_mac = COALESCE(${signed?.mac ?? null}, head_mac), head_key_id = COALESCE(${signed?.keyId ?? null},
          head_key_id) WHERE chain = ${head.chain}`
        return removed.length
      }))
      deleted += n
    }
    const old = yield* sql<{ id: unknown }>`DELETE FROM audit_records WHERE chain IS NULL AND at < ${cutoff}
      RETURNING id`
    return { deleted: deleted + old.length }
  }).pipe(storageError("auditChain.prune"))
