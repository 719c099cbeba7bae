/**
 * No program of a stdio upstream outlives the gateway process, checked by
 * pid (issue #17): a real `janus serve` (embedded database in a temporary
 * JANUS_HOME, `JANUS_STDIO_COMMANDS` allowing this Node executable) runs
 * `@modelcontextprotocol/server-everything` over stdio, created through the
 * admin API.
 *
 * - `kill -9` of the gateway: nothing can run in it any more, yet the
 *   program ends within seconds (its supervisor sees the lifeline close).
 * - SIGTERM (drain): the program is stopped before the gateway exits.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BIN } from "../cli/run.ts"
import { freePort } from "../support/Ports.ts"
import { alive, EVERYTHING } from "./stdio-servers.ts"

interface Gateway {
  readonly process: ChildProcess
  readonly url: string
  readonly output: () => string
  readonly exited: Promise<number | null>
}

const TOKEN = /Admin token[^\n]*\n\s+(\S+)/

/** Starts `janus serve`; resolves once it listens (and, on the first start, printed its admin token). */
const start = (home: string, port: number, first: boolean): Promise<Gateway> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "serve"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? Os.tmpdir(),
        JANUS_HOME: home,
        JANUS_PORT: String(port),
        JANUS_STDIO_COMMANDS: process.execPath,
        LOG_LEVEL: "info"
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
    const timer = setTimeout(() => reject(new Error(`the gateway did not start:\n${out}`)), 60_000)
    const onData = (chunk: Buffer) => {
      out += chunk.toString("utf8")
      if (out.includes("Janus is listening on") && (!first || TOKEN.test(out))) {
        clearTimeout(timer)
        resolve({ process: child, url: `http://127.0.0.1:${port}`, output: () => out, exited })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", () => reject(new Error(`the gateway exited before serving:\n${out}`)))
  })

const until = async <A>(what: string, check: () => Promise<A | undefined> | A | undefined, seconds = 30) => {
  for (let i = 0; i < seconds * 10; i++) {
    const value = await check()
    if (value !== undefined) return value
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** The program's pid as `/api/v1/upstreams` reports it, once the upstream is healthy. */
const programPid = (gateway: Gateway, token: string) =>
  until("the stdio upstream to be healthy", async () => {
    const response = await fetch(`${gateway.url}/api/v1/upstreams`, { headers: { authorization: `Bearer ${token}` } })
    const body = await response.json() as { items: Array<{ connection: string; state: string; pid: number | null }> }
    const upstream = body.items.find((i) => i.connection === "everything")
    return upstream?.state === "healthy" && upstream.pid !== null ? upstream.pid : undefined
  }, 60)

describe("stdio programs never outlive the gateway process", () => {
  it("kill -9 of the gateway, then SIGTERM (drain): the program is gone both times", async () => {
    const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-stdio-"))
    const port = await freePort()
    let gateway = await start(home, port, true)
    try {
      const token = TOKEN.exec(gateway.output())?.[1]
      assert.isString(token, gateway.output())
      const created = await fetch(`${gateway.url}/api/v1/connections`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          kind: "mcp",
          transport: "stdio",
          name: "everything",
          command: process.execPath,
          args: [EVERYTHING, "stdio"]
        })
      })
      assert.strictEqual(created.status, 201, await created.text())

      const first = await programPid(gateway, token!)
      assert.isTrue(alive(first))
      gateway.process.kill("SIGKILL")
      await gateway.exited
      // the gateway ran no finalizer: the supervisor's lifeline is what stops the program
      await until("the program to end after the gateway was killed", () => alive(first) ? undefined : true, 15)

      gateway = await start(home, port, false)
      const second = await programPid(gateway, token!)
      assert.notStrictEqual(second, first)
      gateway.process.kill("SIGTERM")
      assert.strictEqual(await gateway.exited, 0, gateway.output())
      // stopped by the drain, before the gateway exited
      assert.isFalse(alive(second), "the program outlived a drained gateway")
      assert.notMatch(gateway.output(), /SECRET|MASTER_KEY/)
    } finally {
      gateway.process.kill("SIGKILL")
    }
  }, 180_000)
})
