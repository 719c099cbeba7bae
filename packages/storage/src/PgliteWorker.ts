/**
 * PGlite in a `node:worker_threads` Worker, behind the small surface the
 * adapter in `PgliteClient` uses: `query`, `listen`, `close`.
 *
 * **Why**: PGlite is WASM Postgres and runs synchronously on the thread that
 * owns it; on the main event loop every audit/event-log flush and every query
 * stalls request handling (issue #6: stalls of 100-158 ms). In a worker the
 * statements run on another thread and the main loop only waits on messages.
 *
 * **Why by hand**: PGlite's own `./worker` export targets browser Web Workers
 * (`navigator.locks`, `postMessage` on `self`, tab leader election); it does
 * not run on Node's `worker_threads`.
 *
 * **Rules**
 *
 * - The worker executes requests in the order they arrive; callers keep their
 *   own serialization (the adapter's semaphore), this module adds none.
 * - Every request carries an id; its answer settles exactly that pending
 *   promise.
 * - A failed statement is rejected with an `Error` carrying the Postgres
 *   fields (`code`, `detail`, `constraint`, ...), so SQLSTATE classification
 *   works as in-thread. Statement text and parameters are not carried back.
 * - Notifications are forwarded to the listener that asked for them.
 * - `close` is queued behind the requests already sent (they finish first);
 *   requests sent once `close` was called fail at once, so no statement runs
 *   after it. If the worker crashes or exits, every pending request fails with
 *   an error saying so, and later requests fail at once.
 * - A worker is never terminated while it may be running PGlite: after the
 *   database is closed (or failed to open) the worker closes its port and its
 *   thread ends on its own; `close` waits for that. Only a worker that has
 *   not ended `EXIT_TIMEOUT_MS` after its database closed is terminated, and
 *   it is idle by then. Why: Node and V8 have had native crashes terminating
 *   a thread inside WebAssembly or a pending module evaluation (e.g.
 *   nodejs/node#43182, #56312), and a segfault takes the whole gateway down.
 * - The worker holds the process open only while it starts, while requests
 *   are pending, and while a `close` waits for its thread to end.
 * - The worker uses the main thread's module compile cache when that is on.
 * - A worker on a data directory holds its `DataDirLock` from spawn until the
 *   worker is gone (its database closed, or never opened): a directory in use
 *   by another process (or already open in this one) fails the start with
 *   `DataDirInUse`.
 * - `prestart(dataDir)` boots a worker ahead of time (a process' entry calls
 *   it before loading the rest of its modules, so PGlite's WASM boot runs
 *   alongside); the first `start` for the same resolved directory takes that
 *   worker over, open failure included, and later ones start their own. A
 *   worker nobody takes over stays open, unreferenced, until the process
 *   exits.
 *
 * @since 0.1.0
 */
// first: sets a V8 flag PGlite's WASM must see (see the module)
import "./internal/WasmWrapperTiering.ts"
import type { Results } from "@electric-sql/pglite"
import * as Module from "node:module"
import * as Path from "node:path"
import { Worker } from "node:worker_threads"
import * as DataDirLock from "./DataDirLock.ts"

/** What `PgliteClient` needs from a database: met by `PGlite` itself and by `start`. */
export interface PgliteHandle {
  query<T>(
    sql: string,
    params?: Array<unknown>,
    options?: { readonly rowMode?: "array" | "object" }
  ): Promise<Results<T>>
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>
  close(): Promise<void>
  readonly closed: boolean
}

/** Requests from the main thread; each carries `id`, answered by a `Reply` with the same id. */
export type Request =
  | {
    readonly _tag: "query"
    readonly id: number
    readonly sql: string
    readonly params: Array<unknown>
    readonly rowMode: "array" | "object" | undefined
  }
  | { readonly _tag: "listen"; readonly id: number; readonly channel: string }
  | { readonly _tag: "unlisten"; readonly id: number; readonly listener: number }
  | { readonly _tag: "close"; readonly id: number }

/** The Postgres fields of a failed statement that travel back (statement and parameters stay in the worker). */
export interface ErrorFields {
  readonly message: string
  readonly [field: string]: string | undefined
}

export type Reply =
  | { readonly _tag: "ready" }
  | { readonly _tag: "openFailed"; readonly error: ErrorFields }
  | { readonly _tag: "ok"; readonly id: number; readonly value: unknown }
  | { readonly _tag: "failed"; readonly id: number; readonly error: ErrorFields }
  | { readonly _tag: "notify"; readonly listener: number; readonly payload: string }

export const errorFieldNames = [
  "severity",
  "code",
  "detail",
  "hint",
  "position",
  "where",
  "schema",
  "table",
  "column",
  "dataType",
  "constraint",
  "routine"
] as const

const toError = (fields: ErrorFields): Error => Object.assign(new Error(fields.message), fields)

interface Pending {
  readonly resolve: (value: any) => void
  readonly reject: (error: Error) => void
}

/** `.ts` from source, `.js` from the image's build (`npm run build:dist`): the worker's module is beside this one. */
const ownExtension = import.meta.url.endsWith(".js") ? ".js" : ".ts"

const prestarted = new Map<string, Promise<WorkerHandle>>()

/**
 * Starts a worker on `dataDir` now, for the first `start` on that directory to take over (and returns what
 * that `start` will); a second `prestart` of a directory not yet taken over returns the first one's.
 */
export const prestart = (dataDir: string): Promise<WorkerHandle> => {
  const key = Path.resolve(dataDir)
  const existing = prestarted.get(key)
  if (existing !== undefined) return existing
  const handle = spawn({ dataDir })
  // not unhandled while nobody has taken it over yet: the `start` that does sees the failure
  handle.catch(() => undefined)
  prestarted.set(key, handle)
  return handle
}

/** Starts the worker and opens PGlite in it (in memory when `dataDir` is omitted), or takes over a `prestart`ed one. */
export const start = (options: WorkerOptions): Promise<WorkerHandle> => {
  if (options.dataDir !== undefined) {
    const key = Path.resolve(options.dataDir)
    const early = prestarted.get(key)
    if (early !== undefined) {
      prestarted.delete(key)
      return early
    }
  }
  return spawn(options)
}

/**
 * How long a worker whose database is closed (or failed to open) may take to end on its own before it is
 * terminated. Its thread has nothing left to run by then; a few hundred milliseconds on a loaded machine.
 */
export const EXIT_TIMEOUT_MS = 5_000

/** A worker's handle, with when its thread ended (for tests: 0 when it ended on its own, 1 when terminated). */
export interface WorkerHandle extends PgliteHandle {
  readonly exited: Promise<number>
}

/** Where the worker's database lives: `dataDir`, or memory (started from `snapshot` when given). */
export interface WorkerOptions {
  readonly dataDir?: string | undefined
  readonly snapshot?: string | undefined
}

const spawn = (options: WorkerOptions): Promise<WorkerHandle> =>
  new Promise((resolveStart, rejectStart) => {
    const dataDir = options.dataDir
    // one process per data directory: held from here until the worker is gone
    // (throwing here rejects the start with `DataDirInUse`)
    const release = dataDir === undefined ? () => {} : DataDirLock.acquire(dataDir)
    const worker = new Worker(new URL(`./PgliteWorkerMain${ownExtension}`, import.meta.url), {
      workerData: {
        dataDir: options.dataDir,
        snapshot: options.snapshot,
        compileCacheDir: Module.getCompileCacheDir()
      },
      name: "janus-pglite"
    })
    const pending = new Map<number, Pending>()
    const listeners = new Map<number, (payload: string) => void>()
    let nextId = 0
    let opened = false
    let closed = false
    let failure: Error | undefined
    let markExited: (code: number) => void = () => {}
    const exited = new Promise<number>((resolve) => (markExited = resolve))

    const settleAll = (error: Error) => {
      failure ??= error
      closed = true
      for (const request of pending.values()) request.reject(error)
      pending.clear()
      listeners.clear()
      if (!opened) rejectStart(error)
    }

    /**
     * Waits for the thread to end on its own; terminates it (idle by now) only past `EXIT_TIMEOUT_MS`.
     * `hold`: whether the wait keeps the process alive (a `close` does; a failed start does not).
     */
    const ended = async (hold: boolean): Promise<void> => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), EXIT_TIMEOUT_MS)
        if (!hold) timer.unref()
      })
      try {
        if (await Promise.race([exited, late]) === "late") await worker.terminate()
      } finally {
        clearTimeout(timer)
      }
    }

    worker.on("message", (reply: Reply) => {
      switch (reply._tag) {
        case "ready":
          opened = true
          worker.unref()
          resolveStart(handle)
          return
        case "openFailed":
          // the worker ends on its own (it closes its port); it must not hold the process meanwhile
          worker.unref()
          settleAll(toError(reply.error))
          void ended(false)
          return
        case "notify":
          listeners.get(reply.listener)?.(reply.payload)
          return
        case "ok":
        case "failed": {
          const request = pending.get(reply.id)
          if (request === undefined) return
          pending.delete(reply.id)
          if (pending.size === 0) worker.unref()
          if (reply._tag === "ok") request.resolve(reply.value)
          else request.reject(toError(reply.error))
        }
      }
    })
    worker.on("error", (error) => settleAll(new Error(`PGlite worker crashed: ${error.message}`, { cause: error })))
    worker.on("exit", (code) => {
      settleAll(new Error(closed ? "PGlite worker is closed" : `PGlite worker exited unexpectedly with code ${code}`))
      release()
      markExited(code)
    })

    const post = <A>(request: (id: number) => Request): Promise<A> => {
      const id = nextId++
      return new Promise<A>((resolve, reject) => {
        if (pending.size === 0) worker.ref()
        pending.set(id, { resolve, reject })
        worker.postMessage(request(id))
      })
    }

    const send = <A>(request: (id: number) => Request): Promise<A> => {
      if (failure !== undefined) return Promise.reject(failure)
      if (closed) return Promise.reject(new Error("PGlite worker is closed"))
      return post(request)
    }

    let closing: Promise<void> | undefined
    const handle: WorkerHandle = {
      exited,
      get closed() {
        return closed
      },
      query: (sql, params = [], queryOptions) =>
        send((id) => ({ _tag: "query", id, sql, params, rowMode: queryOptions?.rowMode })),
      listen: async (channel, callback) => {
        const listener = nextId
        listeners.set(listener, callback)
        try {
          await send((id) => ({ _tag: "listen", id, channel }))
        } catch (error) {
          listeners.delete(listener)
          throw error
        }
        return async () => {
          if (!listeners.delete(listener) || closed) return
          await send((id) => ({ _tag: "unlisten", id, listener }))
        }
      },
      close: () => {
        if (closing !== undefined) return closing
        // from here on requests fail at once: nothing may run after the close
        const wasClosed = closed
        closed = true
        closing = (async () => {
          try {
            // behind the requests already sent; the worker closes its port after answering, so its thread ends
            if (!wasClosed && failure === undefined) await post((id) => ({ _tag: "close", id }))
          } finally {
            await ended(true)
          }
        })()
        return closing
      }
    }
  })
