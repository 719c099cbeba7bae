/**
 * Runs the `janus` command as a user would: `node packages/gateway/src/bin.ts
 * ...` in a child process with its own environment (nothing inherited but
 * PATH and HOME), and collects stdout, stderr and the exit code.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export const BIN = fileURLToPath(new URL("../../src/bin.ts", import.meta.url))
export const FIXTURES = fileURLToPath(new URL("../fixtures/openapi/", import.meta.url))

export interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export { freePort } from "../support/Ports.ts"

/**
 * The time limit of a test that runs a sequence of `janus` commands. Each command is a new process that loads
 * the CLI's modules and opens the database (PGlite boots from its files each time): 2-5 s on a quiet 2-core
 * machine, several times that while CI runs two test files at once. It bounds a hang, not speed: speed lives
 * in the benchmarks.
 */
export const CLI_SEQUENCE_TIMEOUT = 300_000

export const tempHome = (): string => Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-cli-"))

export const janus = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  stdin?: string
): Promise<Ran> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? Os.tmpdir(),
        LOG_LEVEL: "warn",
        // ~30% faster start of every process after the first
        NODE_COMPILE_CACHE: Path.join(Os.tmpdir(), "janus-cli-test-compile-cache"),
        ...env
      },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
    if (stdin !== undefined) child.stdin.end(stdin)
    else child.stdin.end()
  })

/** A stand-in for a running `janus serve`: answers /healthz and /readyz. */
export const fakeServer = (): Promise<{ readonly port: number; readonly close: () => Promise<void> }> =>
  new Promise((resolve) => {
    const server = Http.createServer((req, res) => {
      res.writeHead(req.url === "/healthz" || req.url === "/readyz" ? 200 : 404, { "content-type": "application/json" })
      res.end(JSON.stringify({ status: "ok" }))
    })
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      resolve({ port, close: () => new Promise((r) => server.close(() => r())) })
    })
  })
