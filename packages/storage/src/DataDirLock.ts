/**
 * One process at a time owns an embedded database directory: PGlite is a
 * single-process Postgres, and two processes writing one data directory
 * corrupt it. This lock turns that mistake (a second `janus serve` on the
 * same JANUS_HOME and another port, a CLI command next to a running server)
 * into a clear refusal.
 *
 * **Rules**
 *
 * - The lock is the file `<dataDir>.lock` beside the directory (not in it:
 *   Postgres' initdb wants an empty directory), created exclusively, holding
 *   `{"pid", "hostname", "acquiredAt"}`.
 * - An existing lock of a live process on this host refuses: `DataDirInUse`
 *   names the directory, the process id and since when.
 * - A lock is stale, and taken over, when its process is gone, when it names
 *   this very process id without this process holding it (a container
 *   restarted with the same PID), when it was written on another host (its
 *   process cannot be checked from here, and a pod that died uncleanly must not
 *   block its replacement), or when it cannot be read.
 * - Within one process a directory is held once; `acquire` again fails the
 *   same way until the holder releases it.
 * - `acquire` returns the release of that hold: idempotent, and it removes
 *   the file only while that hold is current (a late release after a new
 *   hold of the same directory leaves the new one alone).
 *
 * **Gotchas**
 *
 * - Advisory only: it guards Janus against Janus, not other tools.
 * - Taking a stale lock over is read, compare, remove, create: two processes
 *   finding the same stale lock in the same instant could both pass (the
 *   exclusive create settles every other case).
 *
 * @since 0.1.0
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/** The directory is owned by another live process. */
export class DataDirInUse extends Error {
  readonly dataDir: string
  readonly pid: number
  constructor(dataDir: string, pid: number, since: string | undefined) {
    super(
      `the embedded database ${dataDir} is in use by process ${pid}${since === undefined ? "" : ` since ${since}`}` +
        (pid === process.pid ? " (this process)" : "") +
        "; stop that process (or use its admin API), or point JANUS_HOME at another directory"
    )
    this.name = "DataDirInUse"
    this.dataDir = dataDir
    this.pid = pid
  }
}

interface LockFile {
  readonly pid: number
  readonly hostname: string
  readonly acquiredAt: string
}

const held = new Map<string, symbol>()

const lockPathOf = (dataDir: string): string => `${Path.resolve(dataDir)}.lock`

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it exists, owned by someone else
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const read = (path: string): LockFile | undefined => {
  try {
    const parsed = JSON.parse(Fs.readFileSync(path, "utf8")) as Partial<LockFile>
    if (typeof parsed.pid !== "number" || typeof parsed.hostname !== "string") return undefined
    return { pid: parsed.pid, hostname: parsed.hostname, acquiredAt: String(parsed.acquiredAt ?? "") }
  } catch {
    return undefined
  }
}

/** Takes the lock of `dataDir` for this process and returns its release, or throws `DataDirInUse`. */
export const acquire = (dataDir: string): () => void => {
  const path = lockPathOf(dataDir)
  if (held.has(path)) throw new DataDirInUse(Path.resolve(dataDir), process.pid, undefined)
  Fs.mkdirSync(Path.dirname(path), { recursive: true, mode: 0o700 })
  const mine: LockFile = { pid: process.pid, hostname: Os.hostname(), acquiredAt: new Date().toISOString() }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      Fs.writeFileSync(path, JSON.stringify(mine), { flag: "wx", mode: 0o600 })
      const token = Symbol(path)
      held.set(path, token)
      return () => {
        if (held.get(path) !== token) return
        held.delete(path)
        if (read(path)?.pid === process.pid) Fs.rmSync(path, { force: true })
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    }
    const other = read(path)
    if (
      other !== undefined && other.hostname === Os.hostname() && other.pid !== process.pid && alive(other.pid)
    ) {
      throw new DataDirInUse(Path.resolve(dataDir), other.pid, other.acquiredAt || undefined)
    }
    // stale: remove it unless it changed since it was read (another process took it over), then try again
    const raw = other === undefined ? undefined : JSON.stringify(other)
    const now = read(path)
    if ((now === undefined ? undefined : JSON.stringify(now)) === raw) Fs.rmSync(path, { force: true })
  }
  throw new Error(`could not take the lock ${path}: it keeps being recreated; is another janus starting on it?`)
}

/** Whether this process holds the lock of `dataDir`. */
export const isHeld = (dataDir: string): boolean => held.has(lockPathOf(dataDir))
