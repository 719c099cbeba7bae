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
 *   record is counted in `janus.audit.late`. With a journal (`journalDir`,
 *   the embedded store) `"sync"` instead returns once the record is appended
 *   to it (`AuditJournal`, as durable there as the commit) and the batches
 *   are written as with `"async"`; `query` then writes what is buffered
 *   first, so an answered call's record is always found; records a dead
 *   process journaled are written when the next writer starts.
 *   `"async"`: `record` returns at
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
 *   its chain's head in one statement or one transaction
 *   (`AuditChainWriter`).
 * - A batch that fails because the database failed goes back to the front
 *   of the buffer, in order, and the fiber retries with exponential backoff
 *   (200 ms doubling up to `maxBackoff`, 30 s): an outage loses nothing as
 *   long as the buffer holds. A batch write is uninterruptible, so shutdown
 *   never cuts one in half.
 * - No record can block a flush: should Postgres refuse a batch for its data
 *   (see `internal/Refusals.ts`), the records it refuses are found by halves
 *   (`AuditChainWriter`), dropped, counted in `janus.audit.dropped` and
 *   reported in one log line; the others are written.
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
import * as Fs from "node:fs"
import { hostname } from "node:os"
import * as AuditChainWriter from "./AuditChainWriter.ts"
import * as AuditJournal from "./AuditJournal.ts"
import { type AuditPage, type AuditQuery, makeQuery } from "./AuditRead.ts"
import { type AuditInput, type InsertRow, toInsertRow } from "./AuditRows.ts"
import type { InvalidInput } from "./Errors.ts"
import { StorageError } from "./Errors.ts"
import * as DropReport from "./internal/DropReport.ts"
import { describeRefusals } from "./internal/Refusals.ts"
import { Ring } from "./internal/Ring.ts"
import { storageError } from "./internal/sql.ts"
import { MasterKey } from "./MasterKey.ts"

/** Records dropped because the buffer was full, Postgres refused them, or the final flush failed. */
export const auditDropped = Metric.counter("janus.audit.dropped", {
  description: "Audit records dropped because the in-memory buffer was full, Postgres refused them, or the final " +
    "flush at shutdown failed",
  incremental: true
})

/** Calls answered before their record was durable (AUDIT_DURABILITY=sync, the database slower than durableTimeout). */
export const auditLate = Metric.counter("janus.audit.late", {
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
  /**
   * `sync`: journal each record in this directory and return once it is appended, instead of waiting for
   * its commit (`AuditJournal`: the embedded store, whose commit is no more durable than the append).
   */
  readonly journalDir?: string | undefined
}

/** The options of the storage's own audit log (the gateway sets them from AUDIT_DURABILITY). */
export const AuditLogSettings = Context.Reference<AuditLogOptions>("@janus/storage/AuditLogSettings", {
  defaultValue: () => ({})
})

/** Where the storage keeps the audit journal, if it has one (the embedded store sets it; see `AuditJournal`). */
export const AuditJournalDir = Context.Reference<string | undefined>("@janus/storage/AuditJournalDir", {
  defaultValue: () => undefined
})

export class AuditLog extends Context.Service<AuditLog, {
  /** Buffers a record; with `sync` durability returns once it is durable (committed or journaled). Never fails. */
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
    Effect.gen(function*() {
      const options = yield* AuditLogSettings
      const journalDir = options.journalDir ?? (yield* AuditJournalDir)
      return AuditLog.layerWith({ ...options, journalDir })
    })
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
  /** Its number and segment in the journal, when journaled. */
  readonly jid: number
  readonly segment: AuditJournal.Segment | undefined
}

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

  // the batch being written (the journal marks the records Postgres refuses in it dropped)
  let writingBatch: ReadonlyArray<Buffered> = []
  const writer = yield* AuditChainWriter.make({
    sql,
    keys,
    chain,
    onRefused: (refused, of): Effect.Effect<void> =>
      Effect.andThen(
        Effect.sync(() => {
          const rows = new Set(refused.map(({ row }) => row))
          journal?.dropped(
            writingBatch.flatMap((item) => item.segment !== undefined && rows.has(item.row) ? [item.jid] : [])
          )
        }),
        Metric.update(auditDropped, refused.length)
      ).pipe(Effect.andThen(
        Effect.logWarning(
          `audit log: Postgres refused ${refused.length} of ${of} records (${
            describeRefusals(refused)
          }); wrote the others, dropped those (counted in janus.audit.dropped)`
        )
      ))
  })

  // AUDIT_DURABILITY=sync on the embedded store: a record is durable once journaled (see `AuditJournal`)
  const journalDir = sync ? options.journalDir : undefined
  // the layer's services (its logger), for the warning the journal's failure gives outside any fiber
  const services = yield* Effect.context<never>()
  const journal: AuditJournal.AuditJournal | undefined = journalDir === undefined ? undefined : AuditJournal.open(
    { dir: journalDir, chain, base: writer.base },
    (error) =>
      Effect.runForkWith(services)(Effect.logWarning(
        `audit log: cannot write the audit journal in ${journalDir} (${
          error instanceof Error ? error.message : String(error)
        }); calls now wait for their record's commit instead`
      ))
  )
  let nextJid = 0

  const drops = DropReport.make({
    metric: auditDropped,
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
      if (item.segment !== undefined) journal!.settle(item.segment)
    }
  }

  /** `batch` is dropped unwritten: the journal says so (a replay skips it), then it is settled. */
  const dropUnwritten = (batch: ReadonlyArray<Buffered>) => {
    journal?.dropped(batch.flatMap((item) => item.segment === undefined ? [] : [item.jid]))
    settle(batch)
  }

  // --- writer --------------------------------------------------------------------
  const push = (row: InsertRow): Effect.Effect<void> =>
    Effect.suspend(() => {
      let joined: Group | undefined
      const jid = ++nextJid
      const segment = journal?.append(jid, row)
      if (sync && segment === undefined) {
        joined = group ??= { done: Deferred.makeUnsafe<void>(), pending: 0 }
        joined.pending++
      }
      const evicted = buffer.pushEvicting({ row, group: joined, jid, segment })
      if (evicted !== undefined) dropUnwritten([evicted])
      if (joined !== undefined || buffer.size >= earlyFlushAt) Queue.offerUnsafe(wake, undefined)
      const noted = evicted !== undefined ? drops.note(1) : Effect.void
      if (joined === undefined) return noted
      return Effect.andThen(
        noted,
        Deferred.await(joined.done).pipe(
          Effect.timeoutOption(durableTimeout),
          Effect.flatMap((done) => done._tag === "None" ? Metric.update(auditLate, 1) : Effect.void)
        )
      )
    })

  const record = (input: AuditInput): Effect.Effect<void> =>
    input.at instanceof Date && !Number.isNaN(input.at.getTime())
      ? push(toInsertRow(input, input.at))
      : Effect.flatMap(Clock.currentTimeMillis, (now) => push(toInsertRow(input, new Date(now))))

  /**
   * Takes one batch and writes it with one INSERT (by halves when Postgres refuses some record); when the
   * database fails puts it back in front. Never interrupted midway.
   */
  const writeBatch = (size: number): Effect.Effect<void, SqlError> =>
    Effect.uninterruptible(Effect.suspend(() => {
      const batch = buffer.take(size)
      if (batch.length === 0) return Effect.void
      const rows = batch.map((item) => item.row)
      writingBatch = batch
      return writer.write(rows).pipe(
        Effect.flatMap((to) =>
          Effect.sync(() => {
            writer.advance(to)
            settle(batch)
          })
        ),
        Effect.tapCause(() =>
          Effect.suspend(() => {
            const lost = buffer.unshiftAll(batch)
            if (lost > 0) dropUnwritten(batch.slice(0, lost))
            return lost > 0 ? drops.note(lost) : Effect.void
          })
        )
      )
    }))

  const flush: Effect.Effect<void, StorageError> = writing.withPermit(Effect.suspend(() => {
    // the records buffered now form one group (and journal segment); later ones join the next
    group = undefined
    journal?.rotate()
    let remaining = buffer.size
    const next: Effect.Effect<void, SqlError> = Effect.suspend(() => {
      if (remaining <= 0) return Effect.void
      const size = Math.min(batchSize, remaining)
      remaining -= size
      return Effect.andThen(writeBatch(size), next)
    })
    return next
  })).pipe(storageError("auditLog.flush"))

  // Final flush when the scope closes (registered first, so it runs after the flusher is interrupted).
  yield* Effect.addFinalizer(() =>
    drops.finalFlush(flush, () => {
      const rest = buffer.take(buffer.size)
      // their waiters wake; their journal segments stay, for the next start to write them
      settle(rest.map((item) => ({ ...item, segment: undefined })))
      return rest.length
    }).pipe(Effect.ensuring(Effect.sync(() => journal?.close())))
  )

  // Records journaled by a process that ended before writing them: written by this writer (see `AuditJournal`).
  if (options.journalDir !== undefined) yield* recoverJournal(options.journalDir)

  /** Buffers what the journals in `dir` hold and their chains do not; removes those journals once safe. */
  function recoverJournal(dir: string) {
    return Effect.gen(function*() {
      const recovered = yield* AuditJournal.recover(dir, (of) =>
        Effect.map(
          sql<{ last_seq: unknown }>`SELECT last_seq FROM audit_chains WHERE chain = ${of}`,
          (rows) => rows[0] === undefined ? undefined : Number(rows[0].last_seq)
        ))
      if (recovered.files.length === 0) return
      if (recovered.unreadable > 0) {
        yield* Metric.update(auditDropped, recovered.unreadable)
        yield* Effect.logWarning(
          `audit log: ${recovered.unreadable} records of the audit journal in ${dir} could not be read back ` +
            "(no row, or no valid time); dropped (counted in janus.audit.dropped)"
        )
      }
      let journaled = true
      for (const row of recovered.rows) {
        const jid = ++nextJid
        const segment = journal?.append(jid, row)
        if (segment === undefined) journaled = false
        const evicted = buffer.pushEvicting({ row, group: undefined, jid, segment })
        if (evicted !== undefined) dropUnwritten([evicted])
      }
      // journaled again, the old journals can go; otherwise only once the records are written
      if (!journaled) yield* flush
      for (const file of recovered.files) Fs.rmSync(file, { force: true })
      if (recovered.rows.length > 0) {
        yield* Effect.logWarning(
          `audit log: ${recovered.rows.length} records journaled by a process that ended before writing them ` +
            `are written now (chain ${chain})`
        )
      }
    }).pipe(Effect.catch((error) =>
      Effect.logWarning(
        `audit log: the audit journal in ${dir} could not be recovered now (kept for the next start)`,
        error
      )
    ))
  }

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
    // journaled records are written in the background: a query first writes what is buffered (read your writes)
    query: journal === undefined
      ? makeQuery(sql)
      : (query) => Effect.andThen(Effect.ignore(flush), makeQuery(sql)(query))
  })
})

export type { StorageError }
