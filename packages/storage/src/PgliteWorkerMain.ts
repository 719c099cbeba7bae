/**
 * The worker-thread side of `PgliteWorker`: owns the PGlite instance and
 * answers requests from the main thread, one at a time, in arrival order.
 *
 * Loaded by `new Worker(new URL(...))` as plain TypeScript under Node's type
 * stripping: erasable syntax only.
 *
 * After answering `close`, or after a failed open, it closes its port: the
 * thread then has nothing left and ends by itself, so the main thread never
 * has to terminate it while PGlite runs.
 *
 * @since 0.1.0
 */
import type { PGlite } from "@electric-sql/pglite"
import * as Fs from "node:fs/promises"
import * as Module from "node:module"
import { parentPort, workerData } from "node:worker_threads"
import { withGatewaySettings } from "./internal/PgliteSettings.ts"
import { errorFieldNames, type ErrorFields, type Reply, type Request } from "./PgliteWorker.ts"

const port = parentPort!
const post = (reply: Reply) => port.postMessage(reply)

const fields = (cause: unknown): ErrorFields => {
  const error = cause as Record<string, unknown> | undefined
  const message = typeof error?.message === "string" ? error.message : String(cause)
  const out: Record<string, string> = { message }
  for (const name of errorFieldNames) {
    const value = error?.[name]
    if (typeof value === "string") out[name] = value
  }
  return out as ErrorFields
}

const { compileCacheDir, dataDir, snapshot } = workerData as {
  readonly dataDir: string | undefined
  readonly snapshot: string | undefined
  readonly compileCacheDir: string | undefined
}
// Same compile cache as the main thread (bin.ts turns it on there): PGlite is loaded below, after it is on.
if (compileCacheDir !== undefined) Module.enableCompileCache(compileCacheDir)

const open = async (): Promise<PGlite> => {
  // PGlite creates only the last path segment; the folders above it may not exist yet.
  if (dataDir !== undefined) await Fs.mkdir(dataDir, { recursive: true, mode: 0o700 })
  const { PGlite } = await import("@electric-sql/pglite")
  const db = dataDir === undefined
    ? new PGlite(withGatewaySettings(
      PGlite.defaultStartParams,
      snapshot === undefined ? {} : { loadDataDir: new Blob([await Fs.readFile(snapshot)]) }
    ))
    : new PGlite(dataDir, withGatewaySettings(PGlite.defaultStartParams))
  await db.waitReady
  return db
}

const unlistens = new Map<number, () => Promise<void>>()

const answer = async (db: PGlite, request: Request): Promise<unknown> => {
  switch (request._tag) {
    case "query": {
      const result = await db.query(
        request.sql,
        request.params,
        request.rowMode === undefined ? undefined : { rowMode: request.rowMode }
      )
      return result
    }
    case "listen": {
      const listener = request.id
      unlistens.set(
        listener,
        await db.listen(request.channel, (payload) => post({ _tag: "notify", listener, payload }))
      )
      return undefined
    }
    case "unlisten": {
      const unlisten = unlistens.get(request.listener)
      unlistens.delete(request.listener)
      if (unlisten !== undefined && !db.closed) await unlisten()
      return undefined
    }
    case "close":
      unlistens.clear()
      await db.close()
      return undefined
  }
}

try {
  const db = await open()
  // One chain: each request starts after the previous one settled.
  let queue: Promise<void> = Promise.resolve()
  port.on("message", (request: Request) => {
    queue = queue.then(async () => {
      let reply: Reply
      try {
        reply = { _tag: "ok", id: request.id, value: await answer(db, request) }
      } catch (error) {
        reply = { _tag: "failed", id: request.id, error: fields(error) }
      }
      try {
        post(reply)
      } catch (error) {
        // A result that cannot be cloned fails its own request, not the chain.
        post({ _tag: "failed", id: request.id, error: fields(error) })
      }
      // Closed: nothing is left to run, so the thread ends on its own (see PgliteWorker: never terminated mid-run).
      if (request._tag === "close") port.close()
    })
  })
  post({ _tag: "ready" })
} catch (error) {
  post({ _tag: "openFailed", error: fields(error) })
  port.close()
}
