/**
 * An effect/sql `SqlClient` over PGlite, the in-process WASM Postgres.
 *
 * **Why our own adapter**: the published `@effect/sql-pglite` (4.0.0-beta)
 * imports `effect/unstable/...` paths that effect 4.1 no longer has, so it
 * does not load; this module is the small adapter we need instead.
 *
 * **Rules**
 *
 * - PGlite is one session, so every use of it is serialized by one
 *   semaphore: a statement holds it while it runs, a transaction (and
 *   `reserve`) holds it from BEGIN until its scope closes, so no other
 *   fiber's statement can land inside someone else's transaction.
 * - COMMIT of a transaction that an error aborted answers `ROLLBACK`; that is
 *   reported as a failure, as `@effect/sql-pg` does.
 * - SQL errors are classified by SQLSTATE like `@effect/sql-pg`, so
 *   `UniqueViolation` carries the constraint name on both drivers.
 * - `LISTEN` and `UNLISTEN` also take the semaphore: issued inside another
 *   fiber's transaction they would be undone by its rollback.
 * - Statements use the Postgres compiler of `@effect/sql-pg`: one dialect.
 * - PGlite runs in a worker thread by default (`PgliteWorker`): its WASM work
 *   is synchronous and would otherwise stall this thread's event loop. The
 *   semaphore above still serializes; the worker runs statements in order.
 *
 * **Gotchas**
 *
 * - Opening PGlite takes seconds (WASM start and, for a new data directory,
 *   initdb); share one instance per process or test suite.
 *
 * @since 0.1.0
 */
// first: sets a V8 flag PGlite's WASM must see (see the module)
import "./internal/WasmWrapperTiering.ts"
import * as PgClient from "@effect/sql-pg/PgClient"
import type { PGliteOptions } from "@electric-sql/pglite"
import { Context, Effect, Layer, Queue, Scope, Semaphore, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as SqlClient from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import {
  AuthenticationError,
  AuthorizationError,
  ConnectionError,
  ConstraintError,
  DeadlockError,
  LockTimeoutError,
  SerializationError,
  SqlError,
  type SqlErrorReason,
  SqlSyntaxError,
  StatementTimeoutError,
  UniqueViolation,
  UnknownError
} from "effect/sql/SqlError"
import * as Fs from "node:fs/promises"
import * as DataDirLock from "./DataDirLock.ts"
import { withGatewaySettings } from "./internal/PgliteSettings.ts"
import { Notifications } from "./Notifications.ts"
import * as PgliteWorker from "./PgliteWorker.ts"

/** The PGlite instance behind the client (for tooling such as dumps; queries go through `SqlClient`). */
export class Pglite extends Context.Service<Pglite, {
  readonly db: PgliteWorker.PgliteHandle
  readonly dataDir: string | undefined
}>()("@janus/storage/Pglite") {}

export interface PgliteOptions {
  /** A directory for the data files; omit for an in-memory database. */
  readonly dataDir?: string | undefined
  /**
   * Where PGlite runs: `"worker"` (default) in a worker thread, so its
   * synchronous WASM work does not stall this thread's event loop; `"main"`
   * on this thread.
   */
  readonly thread?: "worker" | "main" | undefined
  /**
   * In memory only: a tar file written by PGlite's `dumpDataDir` to start
   * the database from, instead of running initdb (seconds) on every open.
   * Tests use one of a migrated schema (`testing/Snapshot`).
   */
  readonly snapshot?: string | undefined
}

/**
 * PGlite's module, loaded when a database is opened on this thread: a gateway
 * on Postgres, or one whose PGlite runs in the worker, never loads it on its
 * main thread (half a megabyte of source, #19).
 */
const loadPglite = () => import("@electric-sql/pglite")

/** PGlite's options for an in-memory database, started from `snapshot` when one is given. */
export const memoryOptions = async (snapshot: string | undefined): Promise<PGliteOptions> =>
  withGatewaySettings(
    (await loadPglite()).PGlite.defaultStartParams,
    snapshot === undefined ? {} : { loadDataDir: new Blob([await Fs.readFile(snapshot)]) }
  )

const classify = (cause: unknown, operation: string): SqlErrorReason => {
  const error = cause as { readonly code?: unknown; readonly constraint?: unknown; readonly message?: unknown }
  const message = typeof error?.message === "string" ? error.message : "PGlite statement failed"
  const props = { cause, message, operation }
  const code = typeof error?.code === "string" ? error.code : undefined
  if (code === undefined) return new UnknownError(props)
  if (code.startsWith("08")) return new ConnectionError(props)
  if (code.startsWith("28")) return new AuthenticationError(props)
  if (code === "42501") return new AuthorizationError(props)
  if (code.startsWith("42")) return new SqlSyntaxError(props)
  if (code === "23505") {
    const constraint = typeof error.constraint === "string" && error.constraint !== "" ? error.constraint : "unknown"
    return new UniqueViolation({ ...props, constraint })
  }
  if (code.startsWith("23")) return new ConstraintError(props)
  if (code === "40P01") return new DeadlockError(props)
  if (code === "40001") return new SerializationError(props)
  if (code === "55P03") return new LockTimeoutError(props)
  if (code === "57014") return new StatementTimeoutError(props)
  return new UnknownError(props)
}

const attempt = <A>(operation: string, f: () => Promise<A>): Effect.Effect<A, SqlError> =>
  Effect.tryPromise({ try: f, catch: (cause) => new SqlError({ reason: classify(cause, operation) }) })

class PgliteConnection implements Connection {
  readonly db: PgliteWorker.PgliteHandle
  constructor(db: PgliteWorker.PgliteHandle) {
    this.db = db
  }
  private rows(operation: string, sql: string, params: ReadonlyArray<unknown>) {
    return Effect.map(attempt(operation, () => this.db.query<any>(sql, params as Array<unknown>)), (r) => r.rows)
  }
  execute(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const rows = this.rows("execute", sql, params)
    return transformRows ? Effect.map(rows, transformRows) : rows
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return attempt("executeRaw", () => this.db.query<any>(sql, params as Array<unknown>))
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return Effect.map(
      attempt("executeValues", () => this.db.query<any>(sql, params as Array<unknown>, { rowMode: "array" })),
      (r) => r.rows as ReadonlyArray<ReadonlyArray<unknown>>
    )
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.executeValues(sql, params)
  }
  executeUnprepared(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return this.execute(sql, params, transformRows)
  }
  executeStream(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    // PGlite returns whole results; a stream of them keeps the SqlClient contract.
    return Stream.fromArrayEffect(this.execute(sql, params, transformRows))
  }
}

/** Postgres answers COMMIT on an aborted transaction with ROLLBACK: surface it instead of reporting success. */
const commit = (conn: Connection): Effect.Effect<void, SqlError> =>
  Effect.flatMap(
    conn.executeRaw("COMMIT", []) as Effect.Effect<{ readonly command?: string }, SqlError>,
    (result) =>
      result.command === "ROLLBACK"
        ? Effect.fail(
          new SqlError({
            reason: new UnknownError({
              cause: new Error("COMMIT rolled back an aborted transaction"),
              message: "PGlite: COMMIT rolled back an aborted transaction",
              operation: "commit"
            })
          })
        )
        : Effect.void
  )

const openInThread = async (options: PgliteOptions): Promise<PgliteWorker.PgliteHandle> => {
  const dataDir = options.dataDir
  if (dataDir === undefined) {
    const { PGlite } = await loadPglite()
    const db = new PGlite(await memoryOptions(options.snapshot))
    await db.waitReady
    return db
  }
  // one process per data directory (as the worker does), held until close
  const release = DataDirLock.acquire(dataDir)
  try {
    // PGlite creates only the last path segment; the folders above it may not exist yet.
    await Fs.mkdir(dataDir, { recursive: true, mode: 0o700 })
    const { PGlite } = await loadPglite()
    const db = new PGlite(dataDir, withGatewaySettings(PGlite.defaultStartParams))
    await db.waitReady
    return {
      query: (sql, params, queryOptions) => db.query(sql, params, queryOptions),
      listen: (channel, callback) => db.listen(channel, callback),
      get closed() {
        return db.closed
      },
      close: () => db.close().finally(release)
    }
  } catch (error) {
    release()
    throw error
  }
}

const open = (options: PgliteOptions): Effect.Effect<PgliteWorker.PgliteHandle, SqlError, Scope.Scope> =>
  Effect.acquireRelease(
    attempt("open", () => options.thread === "main" ? openInThread(options) : PgliteWorker.start(options)),
    (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
  )

/** Opens PGlite and builds the SqlClient, the Notifications service and the `Pglite` handle on it. */
export const make = Effect.fnUntraced(function*(options: PgliteOptions) {
  const db = yield* open(options)
  const connection = new PgliteConnection(db)
  const semaphore = yield* Semaphore.make(1)
  // Leases hold the semaphore until the caller's scope closes (transactions, reserve, streams).
  const lease = Effect.uninterruptibleMask((restore) =>
    Effect.as(restore(semaphore.takeScoped(1)), connection as Connection)
  )
  const client = yield* SqlClient.make({
    acquirer: lease,
    transactionAcquirer: lease,
    borrower: (f) => semaphore.withPermit(f(connection)),
    compiler: PgClient.makeCompiler(),
    commit,
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
    driver: "pglite",
    spanAttributes: [["db.system.name", "postgresql"]]
  })

  const listen = (channel: string) =>
    Effect.gen(function*() {
      const queue = yield* Queue.unbounded<string, SqlError>()
      yield* Effect.acquireRelease(
        semaphore.withPermit(
          attempt("listen", () => db.listen(channel, (payload) => Queue.offerUnsafe(queue, payload)))
        ),
        (unlisten) =>
          semaphore.withPermit(Effect.promise(() => db.closed ? Promise.resolve() : unlisten())).pipe(
            Effect.ignore
          )
      )
      return queue as Queue.Dequeue<string, SqlError>
    })

  return {
    client,
    notifications: Notifications.of({ listen }),
    pglite: Pglite.of({ db, dataDir: options.dataDir })
  }
})

/** `SqlClient`, `Notifications` and `Pglite` over one PGlite database (in memory when `dataDir` is omitted). */
export const layer = (options: PgliteOptions = {}): Layer.Layer<
  SqlClient.SqlClient | Notifications | Pglite,
  SqlError
> =>
  Layer.effectContext(
    Effect.map(make(options), ({ client, notifications, pglite }) =>
      Context.make(SqlClient.SqlClient, client).pipe(
        Context.add(Notifications, notifications),
        Context.add(Pglite, pglite)
      ))
  ).pipe(Layer.provide(Reactivity.layer))
