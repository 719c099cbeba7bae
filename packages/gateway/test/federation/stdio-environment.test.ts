/**
 * A stdio connection's `env` cannot make Janus's own `node` (the supervisor
 * of each stdio program) or the program's interpreter run other code: a
 * whole gateway whose `JANUS_STDIO_COMMANDS` allows this Node executable,
 * `/usr/bin/true` and `/bin/bash`.
 *
 * Expected:
 * - the hostile request (`/usr/bin/true` with `NODE_OPTIONS=--import=data:...`
 *   whose code would write a marker file) is refused with 400 naming
 *   `env.NODE_OPTIONS`, and the marker never appears;
 * - a connection stored directly in the database, past the write-time check
 *   (a row from an older rule), with `NODE_OPTIONS` or `BASH_ENV` is not
 *   run: its upstream reports the refusal naming the variable, and neither
 *   marker appears;
 * - the supervisor's environment (read from `/proc`) is empty, while the
 *   program (`server-everything`) gets the connection's `API_KEY`.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, ChangeFeed, Connections } from "@janus/storage"
import { Effect, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import { randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as GatewayTesting from "../../src/testing.ts"
import { EVERYTHING } from "./stdio-servers.ts"
import { waitUntil } from "./support.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-stdio-env-"))
const marker = (name: string) => Path.join(dir, name)
/** NODE_OPTIONS that makes any node it reaches write `file`: the hostile probe's payload. */
const nodeOptions = (file: string) =>
  `--import=data:text/javascript;base64,${
    Buffer.from(`import { writeFileSync } from "node:fs"; writeFileSync(${JSON.stringify(file)}, "ran")`).toString(
      "base64"
    )
  }`

const gateway = () =>
  GatewayTesting.layer({ config: { JANUS_STDIO_COMMANDS: [process.execPath, "/usr/bin/true", "/bin/bash"] } })

const api = (method: string, path: string, body?: unknown) =>
  Effect.gen(function*() {
    const token = Redacted.value((yield* (yield* AdminTokens).create({ name: `t-${randomUUID()}` })).plaintext)
    const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(`/api/v1/${path}`, base)))
    return yield* Effect.promise(async () => {
      const response = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      return { status: response.status, body: (text === "" ? undefined : JSON.parse(text)) as any }
    })
  }).pipe(Effect.orDie)

interface Status {
  readonly connection: string
  readonly state: string
  readonly pid: number | null
  readonly lastError: string | null
}

const status = (name: string) =>
  Effect.map(api("GET", "upstreams"), (r) => (r.body.items as Array<Status>).find((s) => s.connection === name))

/** A stdio connection written straight into the table, as a row stored under an older rule would be. */
const storeDirectly = (name: string, stdio: { command: string; args: Array<string>; env: Record<string, string> }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const feed = yield* ChangeFeed
    const id = randomUUID()
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`
        INSERT INTO connections (id, name, kind, description, transport, auth_scheme, timeout_ms, breaker_policy,
          poll_interval_ms, stdio)
        VALUES (${id}, ${name}, 'mcp', '', 'stdio', 'none', 10000,
          ${JSON.stringify({ consecutiveFailures: 5, openMs: 30_000 })}::jsonb, 30000,
          ${JSON.stringify({ ...stdio, cwd: null })}::jsonb)`
      yield* feed.publish({ kind: "connection", ids: [id] })
    }))
    // it is there, as storage reads it: only the spawn stands between it and the program
    const stored = yield* (yield* Connections).get(id)
    assert.deepStrictEqual(stored.kind === "mcp" ? stored.stdio?.env : undefined, stdio.env)
  }).pipe(Effect.orDie)

/** `/proc/<pid>/environ` as a record (Linux). */
const environ = (pid: number): Record<string, string> =>
  Object.fromEntries(
    Fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter((e) => e !== "").map((e) => {
      const at = e.indexOf("=")
      return [e.slice(0, at), e.slice(at + 1)]
    })
  )

/** The parent pid of `pid` (field 4 of `/proc/<pid>/stat`, after the parenthesised name). */
const parentOf = (pid: number): number => {
  const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}

layer(gateway(), { timeout: 120_000, excludeTestServices: true })("a stdio connection's environment", (it) => {
  it.effect("the probe's request (NODE_OPTIONS with an --import data: URL) is refused with 400 and runs nothing", () =>
    Effect.gen(function*() {
      const file = marker("probe")
      const refused = yield* api("POST", "connections", {
        kind: "mcp",
        transport: "stdio",
        name: "probe",
        command: "/usr/bin/true",
        env: { NODE_OPTIONS: nodeOptions(file) }
      })
      assert.strictEqual(refused.status, 400, JSON.stringify(refused.body))
      assert.strictEqual(refused.body.error.fields[0].path, "env.NODE_OPTIONS")
      assert.include(refused.body.error.message, "upper-case letters")
      assert.include(refused.body.error.message, "NODE_*")
      assert.isUndefined(yield* status("probe"))
      assert.isFalse(Fs.existsSync(file))

      // the same through PATCH of an allowed connection, and for the shell's and loaders' knobs
      const created = yield* api("POST", "connections", {
        kind: "mcp",
        transport: "stdio",
        name: "quiet",
        command: "/usr/bin/true",
        env: { API_KEY: "k" }
      })
      assert.strictEqual(created.status, 201, JSON.stringify(created.body))
      for (const name of ["BASH_ENV", "NODE_PATH", "GCONV_PATH", "PATH", "PYTHONSTARTUP", "LD_PRELOAD"]) {
        const patched = yield* api("PATCH", `connections/${created.body.id}`, {
          version: created.body.version,
          env: { [name]: "/tmp/x" }
        })
        assert.strictEqual(patched.status, 400, `${name}: ${JSON.stringify(patched.body)}`)
        assert.strictEqual(patched.body.error.fields[0].path, `env.${name}`)
      }
      assert.strictEqual((yield* api("DELETE", `connections/${created.body.id}?version=1`)).status, 204)
    }))

  it.effect("a row stored past the write-time check with NODE_OPTIONS or BASH_ENV is refused at spawn; nothing runs", () =>
    Effect.gen(function*() {
      const viaNode = marker("node-options")
      const viaBash = marker("bash-env")
      yield* storeDirectly("old-node", {
        command: "/usr/bin/true",
        args: [],
        env: { NODE_OPTIONS: nodeOptions(viaNode) }
      })
      yield* storeDirectly("old-bash", {
        command: "/bin/bash",
        args: ["-c", "true"],
        // bash expands BASH_ENV's value (command substitution included) before it reads the file it names
        env: { BASH_ENV: `$(echo ran > ${viaBash})` }
      })
      for (const [name, variable] of [["old-node", "NODE_OPTIONS"], ["old-bash", "BASH_ENV"]] as const) {
        yield* waitUntil(
          Effect.map(status(name), (s) => s?.lastError?.includes(`env.${variable}`) === true),
          `the refusal of ${name}`,
          30
        )
        const s = (yield* status(name))!
        assert.strictEqual(s.state, "unhealthy")
        assert.isNull(s.pid)
        assert.include(s.lastError, "is refused: expected")
      }
      assert.isFalse(Fs.existsSync(viaNode), "NODE_OPTIONS ran code")
      assert.isFalse(Fs.existsSync(viaBash), "BASH_ENV ran code")
    }))

  it.effect("the supervisor's environment is empty; the program gets the connection's API_KEY", () =>
    Effect.gen(function*() {
      const created = yield* api("POST", "connections", {
        kind: "mcp",
        transport: "stdio",
        name: "everything",
        command: process.execPath,
        args: [EVERYTHING, "stdio"],
        env: { API_KEY: "for-the-program-only" }
      })
      assert.strictEqual(created.status, 201, JSON.stringify(created.body))
      yield* waitUntil(
        Effect.map(status("everything"), (s) => s?.state === "healthy" && s.pid !== null),
        "the program to run",
        60
      )
      const program = (yield* status("everything"))!.pid!
      const supervisor = parentOf(program)
      assert.include(Fs.readFileSync(`/proc/${supervisor}/cmdline`, "utf8"), "stdio-supervisor")
      assert.deepStrictEqual(environ(supervisor), {})
      const env = environ(program)
      assert.strictEqual(env.API_KEY, "for-the-program-only")
      // PATH is the gateway's
      assert.strictEqual(env.PATH, process.env.PATH)
    }))
})
