/**
 * Private Postgres and Redis instances for the cluster harness, on free
 * loopback ports, which a test may stop, kill and start again.
 *
 * **Rules**
 *
 * - Never the shared services on 5432/6379: the failure tests stop these, so
 *   each is this run's own, in a temporary directory removed at the end.
 * - Postgres: `initdb` into the temporary directory (trust auth, loopback,
 *   fsync off: the data is thrown away), run as the `postgres` OS user with
 *   `runuser` when the test runs as root (Postgres refuses to run as root).
 * - Redis: `redis-server` as a child process without persistence.
 * - `stopAllNow` is synchronous, for `process.on("exit")`: nothing outlives a
 *   crashed run.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

import { freePort } from "../../../test/support/Ports.ts"

export { freePort }

/** Resolves once something accepts TCP connections on the port, or rejects after `timeoutMs`. */
export const waitForPort = async (port: number, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = Net.connect({ host: "127.0.0.1", port })
      socket.once("connect", () => {
        socket.destroy()
        resolve(true)
      })
      socket.once("error", () => resolve(false))
    })
    if (open) return
    await sleep(100)
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`)
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const cleanups = new Set<() => void>()
process.once("exit", () => stopAllNow())

/** Stops every instance still running, synchronously. */
export const stopAllNow = () => {
  for (const cleanup of cleanups) {
    try {
      cleanup()
    } catch {
      // best effort at exit
    }
  }
  cleanups.clear()
}

// ---------------------------------------------------------------------------
// Postgres
// ---------------------------------------------------------------------------

const postgresBin = (): string => {
  const root = "/usr/lib/postgresql"
  const versions = Fs.existsSync(root) ?
    Fs.readdirSync(root).filter((v) => Fs.existsSync(Path.join(root, v, "bin", "initdb"))) :
    []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  if (newest === undefined) throw new Error(`no Postgres binaries under ${root}/*/bin; install postgresql`)
  return Path.join(root, newest, "bin")
}

const asRoot = process.getuid?.() === 0

/** `runuser` lives in an sbin directory, which a non-login PATH (CI's, say) may lack. */
const runuser = (): string =>
  ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser", "/bin/runuser"].find((p) => Fs.existsSync(p)) ??
    "runuser"

/** Runs a Postgres binary as the `postgres` OS user (when we are root) and waits for it. */
const pgRun = (bin: string, args: ReadonlyArray<string>) => {
  const command = asRoot ? runuser() : bin
  const argv = asRoot ? ["-u", "postgres", "--", bin, ...args] : [...args]
  const result = spawnSync(command, argv, { encoding: "utf8", timeout: 60_000 })
  if (result.status !== 0) {
    throw new Error(
      `${Path.basename(bin)} ${args.join(" ")} failed (${result.error?.message ?? `exit ${result.status}`}): ${
        result.stderr ?? ""
      }${result.stdout ?? ""}`
    )
  }
  return result.stdout
}

export interface PrivatePostgres {
  readonly port: number
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string
  readonly start: () => void
  /** `pg_ctl stop -m fast`: every connection is closed. */
  readonly stop: () => void
  readonly destroy: () => void
}

export const startPostgres = async (): Promise<PrivatePostgres> => {
  const bin = postgresBin()
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-cluster-pg-"))
  if (asRoot) spawnSync("chown", ["postgres:postgres", dir])
  const data = Path.join(dir, "data")
  pgRun(Path.join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
  const port = await freePort()
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`
  let running = false
  const start = () => {
    pgRun(Path.join(bin, "pg_ctl"), ["-D", data, "-o", options, "-l", Path.join(dir, "log"), "-w", "-t", "60", "start"])
    running = true
  }
  const stop = () => {
    if (!running) return
    running = false
    pgRun(Path.join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"])
  }
  const destroy = () => {
    cleanups.delete(destroy)
    try {
      stop()
    } catch {
      spawnSync(asRoot ? runuser() : Path.join(bin, "pg_ctl"), [
        ...(asRoot ? ["-u", "postgres", "--", Path.join(bin, "pg_ctl")] : []),
        "-D",
        data,
        "-m",
        "immediate",
        "stop"
      ])
    }
    Fs.rmSync(dir, { recursive: true, force: true })
  }
  cleanups.add(destroy)
  start()
  return { port, url: `postgres://postgres@127.0.0.1:${port}/postgres`, start, stop, destroy }
}

// ---------------------------------------------------------------------------
// Redis
// ---------------------------------------------------------------------------

export interface PrivateRedis {
  readonly port: number
  readonly url: string
  readonly start: () => Promise<void>
  /** SIGKILL: the server vanishes without a goodbye. */
  readonly kill: () => Promise<void>
  readonly destroy: () => Promise<void>
}

export const startRedis = async (): Promise<PrivateRedis> => {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    child = spawn("redis-server", [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--loglevel",
      "warning"
    ], { stdio: "ignore" })
    await waitForPort(port, 10_000)
  }
  const kill = async () => {
    const running = child
    child = undefined
    if (running === undefined || running.exitCode !== null) return
    const exited = new Promise((resolve) => running.once("exit", resolve))
    running.kill("SIGKILL")
    await exited
  }
  const killNow = () => child?.kill("SIGKILL")
  cleanups.add(killNow)
  await start()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    kill,
    destroy: async () => {
      cleanups.delete(killNow)
      await kill()
    }
  }
}

/** Registers a synchronous cleanup that runs at exit if the test did not run it. */
export const onExit = (cleanup: () => void): () => void => {
  cleanups.add(cleanup)
  return () => cleanups.delete(cleanup)
}

/**
 * Whether this machine can run the cluster tests (Postgres server binaries and
 * `redis-server`). Like the shared-service checks: with `CI` set a missing tool
 * fails the run; elsewhere the suite is skipped with the reason printed.
 */
export const requireClusterTools = (): boolean => {
  const problems: Array<string> = []
  try {
    postgresBin()
  } catch (error) {
    problems.push(String((error as Error).message))
  }
  if (spawnSync("redis-server", ["--version"], { encoding: "utf8" }).status !== 0) {
    problems.push("redis-server is not on PATH; install redis-server")
  }
  if (problems.length === 0) return true
  const message = `cluster tests need ${problems.join("; ")}`
  if (process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false") {
    throw new Error(`${message}; CI is set, so they must run`)
  }
  console.warn(`[janus tests] skipping the cluster suites: ${message}`)
  return false
}
