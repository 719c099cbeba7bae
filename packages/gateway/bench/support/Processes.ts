/**
 * Process plumbing shared by the gateway benchmarks: free ports, children that
 * announce themselves with one JSON line, readiness polling, resident memory,
 * and clean stops.
 *
 * Every child runs under the same Node as the benchmark (`process.execPath`)
 * and is stopped by its own pid, never by name.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { createServer } from "node:net"
import { availableParallelism } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"

export const benchDir = join(import.meta.dirname, "..")
export const gatewayBin = join(benchDir, "..", "src", "bin.ts")

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
    server.on("error", reject)
  })

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/**
 * `f` over `items`, at most `limit` at a time (default: one per core), results in order: for set-up that
 * is not measured (seeding, starting gateways), which one after another costs the bench its wall time and
 * all at once only thrashes a small machine.
 */
export const inParallel = async <A, B>(
  items: ReadonlyArray<A>,
  f: (item: A, index: number) => Promise<B>,
  limit = availableParallelism()
): Promise<Array<B>> => {
  const results: Array<B> = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await f(items[index]!, index)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker))
  return results
}

export const rssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024
}

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux). */
export const cpuMsOf = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  // fields[11], fields[12] = utime, stime (the 14th and 15th fields of stat) in clock ticks (100 Hz on Linux)
  return (Number(fields[11]) + Number(fields[12])) * 10
}

export interface Child {
  readonly process: ChildProcess
  readonly pid: number
  /** Every stdout line so far. */
  readonly lines: Array<string>
  /** Resolves with the first stdout line that parses as a JSON object. */
  readonly announced: Promise<Record<string, unknown>>
  /** Resolves with the first stdout line matching `pattern`. */
  readonly waitForLine: (pattern: RegExp, timeoutMs?: number) => Promise<string>
  /** SIGTERM, then SIGKILL after `graceMs`; resolves on exit. */
  readonly stop: (graceMs?: number) => Promise<void>
  readonly exited: Promise<number | null>
}

export interface SpawnOptions {
  readonly nodeArgs?: ReadonlyArray<string>
  readonly env?: Record<string, string | undefined>
  readonly cwd?: string
  /** Forward the child's stderr to ours (default true). */
  readonly stderr?: boolean
  /** A pipe to the child's stdin (default: none). */
  readonly stdin?: boolean
}

/** Runs `node [nodeArgs] script [args]`. */
export const spawnNode = (script: string, args: ReadonlyArray<string> = [], options: SpawnOptions = {}): Child => {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: { ...process.env, ...options.env },
    stdio: [options.stdin === true ? "pipe" : "ignore", "pipe", options.stderr === false ? "ignore" : "inherit"]
  })
  const lines: Array<string> = []
  const waiters: Array<{ readonly pattern: RegExp; readonly resolve: (line: string) => void }> = []
  // "close", not "exit": every stdout line has been read by then
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)))
  createInterface({ input: child.stdout! }).on("line", (line) => {
    lines.push(line)
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.pattern.test(line)) waiters.splice(i, 1)[0]!.resolve(line)
    }
  })
  const waitForLine = (pattern: RegExp, timeoutMs = 120_000): Promise<string> => {
    const seen = lines.find((line) => pattern.test(line))
    if (seen !== undefined) return Promise.resolve(seen)
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${script}: no line matching ${pattern} within ${timeoutMs} ms`)),
        timeoutMs
      )
      waiters.push({
        pattern,
        resolve: (line) => {
          clearTimeout(timer)
          resolve(line)
        }
      })
      void exited.then((code) => {
        clearTimeout(timer)
        reject(new Error(`${script} exited (${code}) before printing a line matching ${pattern}`))
      })
    })
  }
  const announced = waitForLine(/^\{.*\}$/).then((line) => JSON.parse(line) as Record<string, unknown>)
  announced.catch(() => {})
  const stop = async (graceMs = 15_000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs)
    await exited
    clearTimeout(timer)
  }
  return { process: child, pid: child.pid!, lines, announced, waitForLine, stop, exited }
}

/** Polls `url` until it answers 200. */
export const waitForOk = async (url: string, timeoutMs = 120_000, child?: Child): Promise<void> => {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (performance.now() > deadline) throw new Error(`${url} not ready within ${timeoutMs} ms`)
    if (child && (child.process.exitCode !== null || child.process.signalCode !== null)) {
      throw new Error(
        `the process behind ${url} exited (${child.process.exitCode ?? child.process.signalCode}); ` +
          `its last output: ${child.lines.slice(-8).join(" ⏎ ")}`
      )
    }
    const ok = await fetch(url).then((r) => r.status === 200, () => false)
    if (ok) return
    await sleep(20)
  }
}

/** Runs a node script to completion; resolves with its last stdout line parsed as JSON. */
export const runNode = async (
  script: string,
  args: ReadonlyArray<string> = [],
  options: SpawnOptions & { readonly timeoutMs?: number } = {}
): Promise<Record<string, unknown>> => {
  const child = spawnNode(script, args, options)
  const timer = setTimeout(() => child.process.kill("SIGKILL"), options.timeoutMs ?? 120_000)
  const code = await child.exited
  clearTimeout(timer)
  const last = child.lines.at(-1) ?? ""
  if (code !== 0) throw new Error(`${script} exited with ${code}; last line: ${last}`)
  return JSON.parse(last) as Record<string, unknown>
}

/** A load generator process that runs one phase per request (`support/loadgen.ts`, served). */
export interface Loadgen {
  readonly child: Child
  /** Runs one phase (a LoadConfig); resolves with its LoadResult. Phases run one at a time, in call order. */
  readonly run: (config: { readonly warmupMs: number; readonly durationMs: number }) => Promise<Record<string, unknown>>
}

/**
 * Starts `script` (the loadgen) once for many phases: a process start per phase cost the benchmarks about
 * half a second each, and its own warm-up, hundreds of times in `npm run bench`.
 */
export const startLoadgen = (script: string): Loadgen => {
  const child = spawnNode(script, [], { stdin: true })
  let queue: Promise<unknown> = Promise.resolve()
  const run = (config: { readonly warmupMs: number; readonly durationMs: number }) => {
    const phase = queue.then(async () => {
      const before = child.lines.length
      child.process.stdin!.write(JSON.stringify(config) + "\n")
      const deadline = performance.now() + config.warmupMs + config.durationMs + 120_000
      while (child.lines.length === before) {
        if (child.process.exitCode !== null || child.process.signalCode !== null) {
          throw new Error(`${script} exited (${child.process.exitCode ?? child.process.signalCode})`)
        }
        if (performance.now() > deadline) throw new Error(`${script}: no result within the phase's time limit`)
        await sleep(2)
      }
      return JSON.parse(child.lines[before]!) as Record<string, unknown>
    })
    queue = phase.catch(() => {})
    return phase
  }
  return { child, run }
}
