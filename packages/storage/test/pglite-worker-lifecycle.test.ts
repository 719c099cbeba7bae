/**
 * PGlite workers' lifecycle under churn, in a child process whose end the
 * test checks (issue #15 item 13: a vitest worker died with SIGSEGV while
 * gateways started and stopped PGlite workers): workers started two at a
 * time and closed with statements still queued, a statement after `close`, a
 * start that fails inside the worker, and `process.exit` while a statement
 * runs. The process must end with code 0 and no signal, every closed worker's
 * thread must end on its own (exit code 0: it was never terminated while it
 * could be running PGlite), the statements queued before `close` must
 * complete, and the one sent after it must fail at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const script = fileURLToPath(new URL("./fixtures/worker-churn.ts", import.meta.url))
const ROUNDS = 2

interface Report {
  readonly queued: ReadonlyArray<string>
  readonly afterClose: ReadonlyArray<string>
  readonly exitCodes: ReadonlyArray<number>
  readonly failedStart: string
  readonly failedWorkerGone: boolean
}

const run = (scratch: string) =>
  Effect.callback<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resume) => {
      const child = spawn(process.execPath, [script, String(ROUNDS), scratch], { stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk) => (stdout += chunk))
      child.stderr.on("data", (chunk) => (stderr += chunk))
      child.on("exit", (code, signal) => resume(Effect.succeed({ code, signal, stdout, stderr })))
      return Effect.sync(() => child.kill("SIGKILL"))
    }
  )

describe("PGlite worker lifecycle", () => {
  it.live(
    "workers closed under churn end on their own; the process ends cleanly, never by a signal",
    () =>
      Effect.gen(function*() {
        const scratch = yield* Effect.acquireRelease(
          Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "janus-worker-churn-"))),
          (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
        )
        const ended = yield* run(scratch)
        assert.strictEqual(
          ended.signal,
          null,
          `the process was killed by ${ended.signal}: ${ended.stderr.slice(-2000)}`
        )
        assert.strictEqual(ended.code, 0, ended.stderr.slice(-2000))
        const report = JSON.parse(ended.stdout.trim().split("\n").at(-1)!) as Report
        const workers = ROUNDS * 2
        assert.deepStrictEqual(report.queued, Array(workers * 3).fill("fulfilled"))
        assert.strictEqual(report.afterClose.length, workers)
        for (const message of report.afterClose) assert.strictEqual(message, "PGlite worker is closed")
        // 0: the thread ended by itself after its database closed (a terminated thread exits with 1)
        assert.deepStrictEqual(report.exitCodes, Array(workers).fill(0))
        assert.match(report.failedStart, /EEXIST|ENOTDIR|not a directory/i)
        assert.isTrue(report.failedWorkerGone, "the worker of the failed start ended and released the directory")
      }).pipe(Effect.scoped),
    240_000
  )
})
