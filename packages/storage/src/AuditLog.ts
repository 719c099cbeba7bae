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
import { hostname } from "node:os"
import * as AuditChainWriter from "./AuditChainWriter.ts"
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

  const writer = yield* AuditChainWriter.make({
    sql,
    keys,
    chain,
    onRefused: (refused, of) =>
      Effect.andThen(
        Metric.update(auditDropped, refused.length),
        Effect.logWarning(
          `audit log: Postgres refused ${refused.length} of ${of} records (${
            describeRefusals(refused)
          }); wrote the others, dropped those (counted in janus.audit.dropped)`
        )
      )
  })

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
          Effect.flatMap((done) => done._tag === "None" ? Metric.update(auditLate, 1) : Effect.void)
        )
      )
    })

  const record = (input: AuditInput): Effect.Effect<void> =>
    input.at instanceof Date && !Number.isNaN(input.at.getTime())
      ? push(input, input.at)
      : Effect.flatMap(Clock.currentTimeMillis, (now) => push(input, new Date(now)))

  /**
   * Takes one batch and writes it with one INSERT (by halves when Postgres refuses some record); when the
   * database fails puts it back in front. Never interrupted midway.
   */
  const writeBatch = (size: number): Effect.Effect<void, SqlError> =>
    Effect.uninterruptible(Effect.suspend(() => {
      const batch = buffer.take(size)
      if (batch.length === 0) return Effect.void
      const rows = batch.map((item) => item.row)
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
