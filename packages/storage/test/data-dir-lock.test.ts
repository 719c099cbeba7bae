/**
 * One process per embedded data directory (`DataDirLock`): a live owner
 * refuses others, stale locks are taken over, and an embedded storage cannot
 * be opened twice on one directory.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as DataDirLock from "../src/DataDirLock.ts"
import { Embedded } from "../src/index.ts"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-lock-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

const writeLock = (dataDir: string, pid: number, hostname = Os.hostname()) =>
  Fs.writeFileSync(`${dataDir}.lock`, JSON.stringify({ pid, hostname, acquiredAt: "2026-01-01T00:00:00.000Z" }))

const lockPid = (dataDir: string): number => JSON.parse(Fs.readFileSync(`${dataDir}.lock`, "utf8")).pid

describe("DataDirLock", () => {
  it.effect("a directory is held once per process, until released", () =>
    Effect.gen(function*() {
      const dataDir = Path.join(yield* tempDir, "data")
      const release = DataDirLock.acquire(dataDir)
      assert.strictEqual(lockPid(dataDir), process.pid)
      assert.throws(() => DataDirLock.acquire(dataDir), /in use by process \d+ \(this process\)/)
      release()
      assert.isFalse(Fs.existsSync(`${dataDir}.lock`))
      const again = DataDirLock.acquire(dataDir)
      // a late second release of the first hold leaves the new one alone
      release()
      assert.isTrue(DataDirLock.isHeld(dataDir))
      assert.strictEqual(lockPid(dataDir), process.pid)
      again()
      assert.isFalse(DataDirLock.isHeld(dataDir))
    }).pipe(Effect.scoped))

  it.effect("a live process' lock refuses, naming it; a dead process' or another host's is taken over", () =>
    Effect.gen(function*() {
      const dataDir = Path.join(yield* tempDir, "data")
      const owner = spawn("sleep", ["30"], { stdio: "ignore" })
      yield* Effect.addFinalizer(() => Effect.sync(() => owner.kill("SIGKILL")))
      writeLock(dataDir, owner.pid!)
      const refused = (() => {
        try {
          DataDirLock.acquire(dataDir)
        } catch (error) {
          return error
        }
      })()
      assert.instanceOf(refused, DataDirLock.DataDirInUse)
      assert.include((refused as Error).message, `in use by process ${owner.pid} since 2026-01-01T00:00:00.000Z`)
      assert.include((refused as Error).message, "point JANUS_HOME at another directory")
      assert.strictEqual(lockPid(dataDir), owner.pid, "a refused acquire leaves the owner's lock alone")

      // a process that has exited
      const gone = spawnSync("true").pid
      writeLock(dataDir, gone)
      const released = DataDirLock.acquire(dataDir)
      assert.strictEqual(lockPid(dataDir), process.pid)
      released()

      // another host (its process cannot be checked from here), and a lock that cannot be read
      writeLock(dataDir, owner.pid!, "some-other-pod")
      DataDirLock.acquire(dataDir)()
      Fs.writeFileSync(`${dataDir}.lock`, "not json")
      DataDirLock.acquire(dataDir)()
      assert.isFalse(Fs.existsSync(`${dataDir}.lock`))
    }).pipe(Effect.scoped))

  it.live(
    "an embedded storage cannot be opened twice on one directory; it can once the first is closed",
    () =>
      Effect.gen(function*() {
        const janusDir = Path.join(yield* tempDir, ".janus")
        const first = yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(Embedded.layer({ janusDir }))
          const second = yield* Effect.exit(Effect.scoped(Layer.build(Embedded.layer({ janusDir }))))
          assert.isTrue(Exit.isFailure(second))
          assert.include(String(Exit.isFailure(second) ? second.cause : ""), "is in use by process")
          return Fs.existsSync(Path.join(janusDir, "data.lock"))
        }))
        assert.isTrue(first, "the lock exists while the storage is open")
        assert.isFalse(Fs.existsSync(Path.join(janusDir, "data.lock")), "closing releases it")
        yield* Effect.scoped(Layer.build(Embedded.layer({ janusDir })))
      }).pipe(Effect.scoped),
    120_000
  )
})
