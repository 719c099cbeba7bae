/**
 * The audit log (`audit_records`): one record per tools/call attempt, admin
 * change and refused authentication (see `AuditRows`), written in batches,
 * hash-chained per writer, and the admin query over it (`AuditRead`).
 *
 * **Rules**
 *
 * - `record` stamps `at` from the `Clock` (unless given), cleans the values
 *   so that no record can make a batch fail (`AuditRows.toInsertRow`), and
 *   appends to an in-memory buffer. It never fails.
 * - Durability (`durability`, AUDIT_DURABILITY): `"sync"` (the default)
 *   makes `record` wait until the batch holding its record is committed:
 *   group commit, every record buffered while one batch is being written
 *   goes into the next single INSERT, so concurrent calls share one round
 *   trip and a call answered after `record` returned has its row. The wait is
 *   bounded by `durableTimeout` (10 s; while the database is down): past it
 *   `record` returns, the record stays buffered and retried, and the late
 *   record is counted in `janus.audit.late`. `"async"`: `record` returns at
 *   once; records buffered when the process dies (at most `flushInterval`,
 *   1 s, of records, or what an outage kept) are lost.
 * - Chains: each writer (one per process) has its own chain (`chain`, by
 *   default `<host>:<pid>:<random>`), so replicas and concurrent calls never
 *   wait on a shared lock: the writer numbers its records (`seq` from 1) and
 *   hashes each over the previous one's hash (`AuditRows.hashOf`) when it
 *   writes the batch, and moves the chain's head (`audit_chains`: last seq
 *   and hash) in the same transaction, signing it with a MAC from the master
 *   key (`AuditHeads`). `AuditChain.verify` checks both.
 * - A fiber flushes the buffer every `flushInterval` (1 second), at once when
 *   `batchSize` (500) records are waiting, and once more when the scope
 *   closes. A flush writes batches of at most `batchSize` records, each with
 *   ONE statement: the head moves (and is re-signed) only if it is still
 *   what this writer last wrote, and the rows are inserted only if it moved
 *   (`fastWrite`: one round trip per batch, where a transaction takes five).
 *   When the head is not what the writer last saw (the first batch of a
 *   process, retention moved its start, a rotation re-signed it, or someone
 *   rewrote it), nothing is written and the batch goes the checked way: one
 *   transaction that reads the head `FOR UPDATE`, checks its MAC, inserts,
 *   and moves it (signed only if it was).
 * - A batch that fails because the database failed goes back to the front
 *   of the buffer, in order, and the fiber retries with exponential backoff
 *   (200 ms doubling up to `maxBackoff`, 30 s): an outage loses nothing as
 *   long as the buffer holds. A batch write is uninterruptible, so shutdown
 *   never cuts one in half.
 * - No record can block a flush: should Postgres refuse a batch for its data
 *   (see `internal/Refusals.ts`), the batch is written again in one
 *   transaction finding the refused records by halves; those are dropped,
 *   counted in `janus.audit.dropped` and reported in one log line, the
 *   others are written.
 * - The buffer is bounded (`maxBuffered`, 100,000 records, plus at most one
 *   batch in flight). The call path must never block and memory must stay
 *   bounded, so when it is full the OLDEST record is dropped to make room
 *   (the newest are the most useful during an incident) — never silently:
 *   every dropped record is counted in the `janus.audit.dropped` counter and
 *   a warning with the count is logged at most once per `warnInterval`
 *   (10 s). Records the final flush at shutdown cannot write are counted and
 *   logged the same way.
 * - `query` pages newest first with keyset pagination on `(at desc, id desc)`;
 *   the cursor carries `at` at microsecond precision, so no record is skipped
 *   or repeated between pages. `limit` is 1..1000. Text filters are compared
 *   as `record` would have stored them, so a filter holding U+0000 finds the
 *   records of the name the client sent (and never fails the query); `from`
 *   and `to` are instants of the years 0001 to 9999 (`InvalidInput`
 *   otherwise: Postgres' timestamps do not reach JavaScript's extremes).
 *
 * @since 0.1.0
 */
import { Clock, Context, Deferred, Duration, Effect, Layer, Metric, Queue, Semaphore } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import * as AuditHeads from "./AuditHeads.ts"
import { type AuditPage, type AuditQuery, makeQuery } from "./AuditRead.ts"
import { type AuditInput, type ChainedRow, hashOf, type InsertRow, toInsertRow } from "./AuditRows.ts"
import type { InvalidInput } from "./Errors.ts"
import { StorageError } from "./Errors.ts"
import * as DropReport from "./internal/DropReport.ts"
import { describeRefusals, isolate, isRefusal } from "./internal/Refusals.ts"
import { Ring } from "./internal/Ring.ts"
import { storageError } from "./internal/sql.ts"
import { MasterKey } from "./MasterKey.ts"

/** Records dropped because the buffer was full, Postgres refused them, or the final flush failed. */
export const dropped = Metric.counter("janus.audit.dropped", {
  description: "Audit records dropped because the in-memory buffer was full, Postgres refused them, or the final " +
    "flush at shutdown failed",
  incremental: true
})

/** Calls answered before their record was durable (AUDIT_DURABILITY=sync, the database slower than durableTimeout). */
export const late = Metric.counter("janus.audit.late", {
  description: "Audit records whose call was answered before they were durable (the database was slower than the " +
    "durable timeout); they stay buffered and are retried",
  incremental: true
})

/** `sync`: `record` returns once the record is committed (group commit). `async`: at once (see the rules). */
export type AuditDurability = "sync" | "async"

export interface AuditLogOptions {
  /** Flush period (default 1 second). */
  readonly flushInterval?: Duration.Input | undefined
  /** Records per INSERT, and the backlog that triggers an early flush (default 500). */
  readonly batchSize?: number | undefined
  /** Records kept waiting at most; beyond, the oldest are dropped and counted (default 100,000). */
  readonly maxBuffered?: number | undefined
  /** At most one "dropped" warning per this period (default 10 seconds). */
  readonly warnInterval?: Duration.Input | undefined
  /** Longest wait between retries of a failing flush (default 30 seconds). */
  readonly maxBackoff?: Duration.Input | undefined
  /** Default `sync`. */
  readonly durability?: AuditDurability | undefined
  /** `sync`: the longest `record` waits for its commit (default 10 seconds). */
  readonly durableTimeout?: Duration.Input | undefined
  /** This writer's chain (default `<host>:<pid>:<random>`). */
  readonly chain?: string | undefined
}

/** The options of the storage's own audit log (the gateway sets them from AUDIT_DURABILITY). */
export const AuditLogSettings = Context.Reference<AuditLogOptions>("@janus/storage/AuditLogSettings", {
  defaultValue: () => ({})
})

export class AuditLog extends Context.Service<AuditLog, {
  /** Buffers a record; with `sync` durability returns once it is committed. Never fails. */
  readonly record: (entry: AuditInput) => Effect.Effect<void>
  /** Writes every record buffered now (batch by batch); on failure the unwritten ones stay buffered. */
  readonly flush: Effect.Effect<void, StorageError>
  /** Records waiting to be written. */
  readonly buffered: Effect.Effect<number>
  /** This writer's chain. */
  readonly chain: string
  /** A page of records, newest first. */
  readonly query: (query: AuditQuery) => Effect.Effect<AuditPage, InvalidInput | StorageError>
}>()("@janus/storage/AuditLog") {
  /** The audit log with the given limits. */
  static readonly layerWith = (
    options: AuditLogOptions = {}
  ): Layer.Layer<AuditLog, never, SqlClient.SqlClient | MasterKey> =>
    Layer.effect(AuditLog, Effect.suspend(() => make(options)))

  /** The audit log with `AuditLogSettings` (default: 1 s, 500 per batch, 100,000 buffered, `sync`). */
  static readonly layer: Layer.Layer<AuditLog, never, SqlClient.SqlClient | MasterKey> = Layer.unwrap(
    Effect.map(Effect.service(AuditLogSettings), (options) => AuditLog.layerWith(options))
  )
}

/** Records committed together wake their waiters together. */
interface Group {
  readonly done: Deferred.Deferred<void>
  pending: number
}

interface Buffered {
  readonly row: InsertRow
  readonly group: Group | undefined
}

/** Where a chain stands: the last seq written and its hash. */
interface Position {
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
const ROW_COLUMNS = [
  "kind",
  "at",
  "identity",
  "tool",
  "method",
  "connection",
  "outcome",
  "status",
  "duration_ms",
  "bytes_in",
  "bytes_out",
  "redactions",
  "request_id",
  "trace_id",
  "caller_name",
  "caller_subject",
  "caller_client",
  "credential_kind",
  "credential_fingerprint",
  "bucket",
  "client_ip",
  "repeats",
  "action",
  "resource_kind",
  "resource_id",
  "resource_name",
  "version_before",
  "version_after",
  "changes",
  "interface",
  "chain",
  "seq",
  "prev_hash",
  "hash"
].join(", ")

const defaultChain = (): string => `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`

// -----------------------------------------------------------------------------
// Service
// -----------------------------------------------------------------------------

const make = Effect.fnUntraced(function*(options: AuditLogOptions) {
  const sql = yield* SqlClient.SqlClient
  const keys = yield* MasterKey
  const flushInterval = Duration.fromInputUnsafe(options.flushInterval ?? "1 second")
  const batchSize = Math.max(1, options.batchSize ?? 500)
  const maxBuffered = Math.max(1, options.maxBuffered ?? 100_000)
  const warnEveryMs = Duration.toMillis(Duration.fromInputUnsafe(options.warnInterval ?? "10 seconds"))
  const maxBackoffMs = Duration.toMillis(Duration.fromInputUnsafe(options.maxBackoff ?? "30 seconds"))
  const durableTimeout = Duration.fromInputUnsafe(options.durableTimeout ?? "10 seconds")
  const sync = (options.durability ?? "sync") === "sync"
  const chain = options.chain ?? defaultChain()
  const earlyFlushAt = Math.min(batchSize, maxBuffered)

  const buffer = new Ring<Buffered>(maxBuffered)
  const wake = yield* Queue.sliding<void>(1)
  const writing = yield* Semaphore.make(1)
  // the group the records buffered now join; replaced when a batch takes them
  let group: Group | undefined
  // where this writer's chain stands (only the flush, under `writing`, moves it)
  let position: Position = { seq: 0, hash: "" }
  let warnedForged = false
  // the signed head this writer last wrote, while nobody else has moved it; undefined = take the checked way
  let known: KnownHead | undefined

  const drops = DropReport.make({
    metric: dropped,
    metricName: "janus.audit.dropped",
    writer: "audit log",
    noun: "records",
    warnEveryMs,
    message: (n) =>
      `audit log: buffer full (${maxBuffered} records waiting for the database); dropped the ${n} oldest ` +
      `(counted in janus.audit.dropped)`
  })

  /** Marks `batch` committed (or given up): the groups whose every record is settled wake up. */
  const settle = (batch: ReadonlyArray<Buffered>) => {
    for (const item of batch) {
      if (item.group !== undefined && --item.group.pending === 0) Deferred.doneUnsafe(item.group.done, Effect.void)
    }
  }

  // --- writer --------------------------------------------------------------------
  const push = (input: AuditInput, at: Date): Effect.Effect<void> =>
    Effect.suspend(() => {
      let joined: Group | undefined
      if (sync) {
        joined = group ??= { done: Deferred.makeUnsafe<void>(), pending: 0 }
        joined.pending++
      }
      const droppedOne = buffer.push({ row: toInsertRow(input, at), group: joined })
      if (sync || buffer.size >= earlyFlushAt) Queue.offerUnsafe(wake, undefined)
      const noted = droppedOne ? drops.note(1) : Effect.void
      if (joined === undefined) return noted
      return Effect.andThen(
        noted,
        Deferred.await(joined.done).pipe(
          Effect.timeoutOption(durableTimeout),
          Effect.flatMap((done) => done._tag === "None" ? Metric.update(late, 1) : Effect.void)
        )
      )
    })

  const record = (input: AuditInput): Effect.Effect<void> =>
    input.at instanceof Date && !Number.isNaN(input.at.getTime())
      ? push(input, input.at)
      : Effect.flatMap(Clock.currentTimeMillis, (now) => push(input, new Date(now)))

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
      if (refused.length > 0) {
        yield* Metric.update(dropped, refused.length)
        yield* Effect.logWarning(
          `audit log: Postgres refused ${refused.length} of ${batch.length} records (${
            describeRefusals(refused)
          }); wrote the others, dropped those (counted in janus.audit.dropped)`
        )
      }
      return at
    }))

  /**
   * Takes one batch and writes it with one INSERT (by halves when Postgres refuses some record); when the
   * database fails puts it back in front. Never interrupted midway.
   */
  const writeBatch = (size: number): Effect.Effect<void, SqlError> =>
    Effect.uninterruptible(Effect.suspend(() => {
      const batch = buffer.take(size)
      if (batch.length === 0) return Effect.void
      const rows = batch.map((item) => item.row)
      return writeAll(rows).pipe(
        Effect.catchIf(isRefusal, () => writeIsolating(rows)),
        Effect.flatMap((to) =>
          Effect.sync(() => {
            position = to
            settle(batch)
          })
        ),
        Effect.tapCause(() =>
          Effect.suspend(() => {
            const lost = buffer.unshiftAll(batch)
            if (lost > 0) settle(batch.slice(0, lost))
            return lost > 0 ? drops.note(lost) : Effect.void
          })
        )
      )
    }))

  const flush: Effect.Effect<void, StorageError> = writing.withPermit(Effect.suspend(() => {
    // the records buffered now form one group; later ones join the next
    group = undefined
    let remaining = buffer.size
    const next: Effect.Effect<void, SqlError> = Effect.suspend(() => {
      if (remaining <= 0) return Effect.void
      const size = Math.min(batchSize, remaining)
      remaining -= size
      return Effect.andThen(writeBatch(size), next)
    })
    return next
  })).pipe(storageError("auditLog.flush"))

  // Where this chain stands when the writer restarts with a given chain name (a new name starts at 0).
  const head = yield* sql<{ last_seq: unknown; last_hash: string }>`
    SELECT last_seq, last_hash FROM audit_chains WHERE chain = ${chain}`.pipe(
    Effect.orElseSucceed(() => [])
  )
  if (head[0] !== undefined) position = { seq: Number(head[0].last_seq), hash: head[0].last_hash }

  // Final flush when the scope closes (registered first, so it runs after the flusher is interrupted).
  yield* Effect.addFinalizer(() =>
    drops.finalFlush(flush, () => {
      const rest = buffer.take(buffer.size)
      settle(rest)
      return rest.length
    })
  )

  const backoff = (failures: number): Duration.Duration =>
    Duration.millis(Math.min(maxBackoffMs, 200 * 2 ** Math.min(failures - 1, 20)))

  yield* Effect.gen(function*() {
    let failures = 0
    while (true) {
      if (failures === 0) yield* Effect.timeoutOption(Queue.take(wake), flushInterval)
      else yield* Effect.sleep(backoff(failures))
      yield* drops.report()
      const result = yield* Effect.result(flush)
      if (result._tag === "Failure") {
        failures++
        yield* Effect.logWarning(
          `audit log: flush failed (attempt ${failures}); ${buffer.size} records kept, retrying in ${
            Duration.format(backoff(failures))
          }`,
          result.failure
        )
      } else if (failures > 0) {
        yield* Effect.logInfo(`audit log: flush recovered after ${failures} failed attempts`)
        failures = 0
      }
    }
  }).pipe(Effect.forkScoped)

  return AuditLog.of({
    record,
    flush,
    buffered: Effect.sync(() => buffer.size),
    chain,
    query: makeQuery(sql)
  })
})

export type { StorageError }
