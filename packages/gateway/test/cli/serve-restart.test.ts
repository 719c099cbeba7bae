/**
 * `janus serve` restarted on an existing embedded home: PGlite's worker is
 * started before the command's modules load (cli/EarlyStorage.ts), and the
 * gateway still answers every request from the moment it listens.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { dataDirToPrestart } from "../../src/cli/EarlyStorage.ts"
import { BIN, freePort, janus, tempHome } from "./run.ts"

/** Starts `janus serve`, asks /readyz every few ms until 200 (each answer within 5 s), then stops it. */
const serveUntilReady = async (
  home: string,
  during: () => Promise<void> = async () => {}
): Promise<{ readonly stdout: string; readonly statuses: Set<number> }> => {
  const port = await freePort()
  const child = spawn(process.execPath, [BIN, "serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? Os.tmpdir(),
      LOG_LEVEL: "warn",
      NODE_COMPILE_CACHE: Path.join(Os.tmpdir(), "janus-cli-test-compile-cache"),
      JANUS_HOME: home,
      JANUS_PORT: String(port)
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")))
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
  const statuses = new Set<number>()
  try {
    const deadline = Date.now() + 60_000
    for (;;) {
      assert.isBelow(Date.now(), deadline, `not ready within 60 s; stderr: ${stderr}`)
      // refused before it listens; once it listens, every request is answered (a hang fails here)
      const status = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
        (response) => response.status,
        (error: Error) => {
          if (error.name === "TimeoutError") throw new Error("/readyz was accepted but not answered within 5 s")
          return undefined
        }
      )
      if (status !== undefined) statuses.add(status)
      if (status === 200) break
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    await during()
  } finally {
    child.kill("SIGTERM")
    await exited
  }
  return { stdout, statuses }
}

describe("janus serve restart", () => {
  it("starts PGlite's worker early only for serve on an existing embedded database", () => {
    const home = tempHome()
    try {
      const env = { JANUS_HOME: home }
      assert.isUndefined(dataDirToPrestart(["serve"], env), "no database yet: a first start opens as before")
      Fs.mkdirSync(Path.join(home, "data"))
      Fs.writeFileSync(Path.join(home, "data", "PG_VERSION"), "17\n")
      assert.strictEqual(dataDirToPrestart(["serve"], env), Path.join(home, "data"))
      assert.strictEqual(dataDirToPrestart(["serve"], { JANUS_HOME: `  ${home} ` }), Path.join(home, "data"))
      assert.isUndefined(dataDirToPrestart(["migrate"], env))
      assert.isUndefined(dataDirToPrestart([], env))
      assert.isUndefined(dataDirToPrestart(["serve"], { ...env, DATABASE_URL: "postgres://localhost/janus" }))
      assert.strictEqual(dataDirToPrestart(["serve"], { ...env, DATABASE_URL: " " }), Path.join(home, "data"))
    } finally {
      Fs.rmSync(home, { recursive: true, force: true })
    }
  })

  it("a second janus serve on the same home (another port) is refused in one line naming the owner", async () => {
    const home = tempHome()
    try {
      await serveUntilReady(home, async () => {
        const second = await janus(["serve"], { JANUS_HOME: home, JANUS_PORT: String(await freePort()) })
        assert.strictEqual(second.code, 1, second.stdout)
        assert.match(
          second.stderr,
          /^Error: janus serve could not start: the embedded database \S+ is in use by process \d+ since /
        )
        assert.notMatch(second.stderr, /\n\s+at /, "no stack trace")
        assert.notMatch(second.stdout, /Admin token/)
      })
    } finally {
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)

  it("a restart with the early worker answers every request and becomes ready on the same data", async () => {
    const home = tempHome()
    try {
      const first = await serveUntilReady(home)
      assert.match(first.stdout, /Admin token \(shown once/)
      const again = await serveUntilReady(home)
      // the admin token made by the first start is in the database the restart opened
      assert.notMatch(again.stdout, /Admin token/)
      for (const status of again.statuses) assert.include([200, 503], status)
    } finally {
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)
})
