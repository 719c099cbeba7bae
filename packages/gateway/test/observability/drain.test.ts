/**
 * Graceful drain of a real gateway process (`support/drain-main.ts`: `janus
 * serve` with the observability recipe applied) on an embedded database in
 * a temporary JANUS_HOME: 50 slow tools/call calls are in flight when
 * SIGTERM arrives.
 *
 * Expected: readiness is 503 at once, new requests are refused with 503 and
 * `Retry-After`, `/healthz` still answers, all 50 calls complete, open
 * streams (Studio events, the 2025 MCP GET stream, a 2026-07-28
 * subscriptions/listen) end with a `retry:` hint, the audit and event logs
 * are flushed (their rows are in the database afterwards), and the process
 * exits 0 well within JANUS_SHUTDOWN_TIMEOUT.
 *
 * And the end without a drain: `kill -9` right after a run of calls was
 * answered (AUDIT_DURABILITY=sync, the default): every answered call has
 * its audit row once the data directory is opened again.
 */
import { assert, describe, it } from "@effect/vitest"
import { AuditChain, AuditLog, Embedded } from "@janus/storage"
import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { initialize, STATELESS, stateless } from "../mcp/http-client.ts"
import * as Downstream from "../support/Downstream.ts"

const MAIN = Path.join(import.meta.dirname, "support/drain-main.ts")
const CALLS = 50
const CALL_MS = 2_500
const SHUTDOWN_TIMEOUT_S = 15

interface Child {
  readonly process: ChildProcess
  readonly url: string
  readonly adminToken: string
  readonly output: () => string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>
}

const start = (home: string, downstream: string): Promise<Child> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN], {
      cwd: Path.resolve(import.meta.dirname, "../../../.."),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        JANUS_HOME: home,
        JANUS_HOST: "127.0.0.1",
        JANUS_PORT: "0",
        JANUS_ALLOW_ANONYMOUS: "true",
        JANUS_SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_S}s`,
        LOG_LEVEL: "info",
        DRAIN_TEST_DOWNSTREAM: downstream
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((done) =>
      child.once("exit", (code, signal) => done({ code, signal, at: Date.now() }))
    )
    const timer = setTimeout(() => reject(new Error(`the gateway did not start:\n${out}`)), 60_000)
    const onData = (chunk: Buffer) => {
      out += chunk.toString("utf8")
      const url = /TEST_LISTENING (\S+)/.exec(out)?.[1]
      const adminToken = /TEST_ADMIN_TOKEN (\S+)/.exec(out)?.[1]
      if (url !== undefined && adminToken !== undefined) {
        clearTimeout(timer)
        resolve({ process: child, url, adminToken, output: () => out, exited })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", () => reject(new Error(`the gateway exited before serving:\n${out}`)))
  })

/** Reads a streamed body to its end (or `timeoutMs`), as text. */
const readAll = async (response: Response, timeoutMs: number): Promise<{ text: string; ended: boolean }> => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  let ended = false
  const timer = setTimeout(() => reader.cancel().catch(() => {}), timeoutMs)
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (value !== undefined) text += decoder.decode(value, { stream: true })
      if (done) {
        ended = true
        break
      }
    }
  } catch {
    // cancelled by the timer
  } finally {
    clearTimeout(timer)
  }
  return { text, ended }
}

const openStream = async (url: string, init: RequestInit) => {
  const response = await fetch(url, init)
  assert.strictEqual(response.status, 200, `${init.method ?? "GET"} ${url}`)
  assert.include(response.headers.get("content-type") ?? "", "text/event-stream")
  return response
}

/** A gateway on a fresh JANUS_HOME and the test's downstream; killed, and its home removed, with the scope. */
const startScoped = Effect.gen(function*() {
  const downstream = yield* Downstream.Downstream
  const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-drain-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(home, { recursive: true, force: true })))
  const child = yield* Effect.promise(() => start(home, downstream.url))
  yield* Effect.addFinalizer(() => Effect.sync(() => child.process.kill("SIGKILL")))
  return { child, downstream, home }
})

describe("graceful drain of a gateway process", () => {
  it.live(
    "SIGTERM with 50 slow calls in flight: all complete, new requests refused, streams end with retry:, exit 0",
    () =>
      Effect.scoped(
        Effect.gen(function*() {
          const { child, downstream, home } = yield* startScoped
          const { url } = child
          const mcp = `${url}/mcp`

          // Open streams: Studio events, a 2025 session's GET stream, a 2026-07-28 listen.
          const events = yield* Effect.promise(() =>
            openStream(`${url}/api/v1/events`, { headers: { authorization: `Bearer ${child.adminToken}` } })
          )
          const session = yield* initialize(mcp)
          const getStream = yield* Effect.promise(() =>
            openStream(mcp, {
              headers: {
                accept: "text/event-stream",
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25"
              }
            })
          )
          const listen = yield* Effect.promise(() =>
            openStream(mcp, {
              method: "POST",
              headers: {
                "content-type": "application/json",
                accept: "application/json, text/event-stream",
                "mcp-protocol-version": STATELESS,
                "mcp-method": "subscriptions/listen"
              },
              body: JSON.stringify({
                jsonrpc: "2.0",
                id: "listen-1",
                method: "subscriptions/listen",
                params: {
                  notifications: { toolsListChanged: true },
                  _meta: {
                    "io.modelcontextprotocol/protocolVersion": STATELESS,
                    "io.modelcontextprotocol/clientCapabilities": {}
                  }
                }
              })
            })
          )
          const streams = [events, getStream, listen].map((response) => readAll(response, 20_000))

          // 50 slow calls in flight.
          const calls = Array.from(
            { length: CALLS },
            (_, i) =>
              Effect.runPromise(stateless(mcp, "tools/call", { name: "slow", arguments: { ms: String(CALL_MS + i) } }))
          )
          for (let i = 0; i < 200 && (downstream.hits.get("GET /slow") ?? 0) < CALLS; i++) {
            yield* Effect.sleep("25 millis")
          }
          assert.strictEqual(downstream.hits.get("GET /slow"), CALLS, "all calls reached the downstream")

          const sentAt = Date.now()
          child.process.kill("SIGTERM")
          yield* Effect.sleep("150 millis")

          // Readiness flips at once; new work is refused; liveness still answers.
          const ready = yield* Effect.promise(() => fetch(`${url}/readyz`))
          assert.strictEqual(ready.status, 503)
          assert.deepInclude(yield* Effect.promise(() => ready.json()), { status: "unavailable" })
          const refused = yield* stateless(mcp, "tools/call", { name: "slow", arguments: { ms: "1" } })
          assert.strictEqual(refused.status, 503)
          assert.strictEqual(refused.headers.get("retry-after"), "1")
          assert.strictEqual(refused.body.error.code, -32000)
          assert.strictEqual(refused.body.error.data.reason, "draining")
          const admin = yield* Effect.promise(() =>
            fetch(`${url}/api/v1/connections`, { headers: { authorization: `Bearer ${child.adminToken}` } })
          )
          assert.strictEqual(admin.status, 503)
          assert.strictEqual(admin.headers.get("retry-after"), "1")
          assert.strictEqual(
            (yield* Effect.promise(() => fetch(`${url}/healthz`))).status,
            200
          )

          // The open streams ended, each with the retry hint.
          const ended = yield* Effect.promise(() => Promise.all(streams))
          for (const stream of ended) {
            assert.isTrue(stream.ended, `stream did not end: ${stream.text.slice(-200)}`)
            assert.match(stream.text, /: janus is shutting down; reconnect\nretry: 1000\n\n$/)
          }

          // Every call in flight completed with its result.
          const replies = yield* Effect.promise(() => Promise.all(calls))
          assert.deepStrictEqual(replies.map((r) => r.status), Array.from({ length: CALLS }, () => 200))
          for (const reply of replies) assert.deepStrictEqual(reply.body.result.structuredContent, { slow: true })
          assert.strictEqual(downstream.aborted, 0)

          // The process exits 0, well within the drain timeout.
          const exit = yield* Effect.promise(() => child.exited)
          assert.strictEqual(exit.code, 0, child.output())
          assert.isBelow(exit.at - sentAt, SHUTDOWN_TIMEOUT_S * 1000)
          assert.isBelow(exit.at - sentAt, CALL_MS + 4_000, "the drain waited for the calls, not for a timeout")

          // The drain logged what it did, as JSON.
          const logs = child.output().split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line))
          const complete = logs.find((l) => l.message === "drain complete")
          assert.isDefined(complete, child.output())
          assert.deepInclude(complete.annotations, { unfinished: 0, flushed: "audit log:ok,event log:ok" })

          // The audit and event writers flushed: every call is in the database.
          const counts = yield* Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            const audits = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_records WHERE tool = 'slow'`
            const calls = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM broker_event WHERE topic = 'calls'`
            return { audits: audits[0]!.n, events: calls[0]!.n }
          }).pipe(Effect.provide(Embedded.layer({ janusDir: home })))
          // 50 completed calls + the refused one (refused at the HTTP level: never a call) = 50
          assert.deepStrictEqual(counts, { audits: CALLS, events: CALLS })
        }).pipe(Effect.provide(Downstream.layer))
      ),
    { timeout: 120_000 }
  )

  it.live(
    "kill -9 right after 30 answered calls: each has exactly one audit row when the data is opened again",
    () =>
      Effect.scoped(
        Effect.gen(function*() {
          const { child, home } = yield* startScoped
          const mcp = `${child.url}/mcp`
          const answered: Array<number> = []
          for (let i = 0; i < 30; i++) {
            const reply = yield* stateless(mcp, "tools/call", { name: "slow", arguments: { ms: "0" } })
            answered.push(reply.status)
          }
          // no drain, no final flush: records buffered for the next batch live only in the audit journal
          child.process.kill("SIGKILL")
          const exit = yield* Effect.promise(() => child.exited)
          assert.strictEqual(exit.signal, "SIGKILL")
          assert.deepStrictEqual(answered, Array.from({ length: 30 }, () => 200))

          const found = yield* Effect.gen(function*() {
            yield* (yield* AuditLog).flush
            const sql = yield* SqlClient.SqlClient
            const rows = yield* sql<{ n: number }>`
              SELECT count(*)::int AS n FROM audit_records WHERE tool = 'slow' AND outcome = 'ok'`
            return { rows: rows[0]!.n, problems: (yield* AuditChain.verify()).problems }
          }).pipe(Effect.provide(Embedded.layer({ janusDir: home })))
          assert.deepStrictEqual(found, { rows: 30, problems: [] })
        }).pipe(Effect.provide(Downstream.layer))
      ),
    { timeout: 120_000 }
  )
})
