/**
 * The embedded store's audit journal (AUDIT_DURABILITY=sync without a
 * commit per call): a record is durable once `record` returns, whatever
 * happens to the process after; recovery writes exactly the records a dead
 * process journaled and did not write, once; a clean shutdown leaves no
 * journal; a journal that cannot be written falls back to the commit.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, Metric } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as AuditJournal from "../src/AuditJournal.ts"
import type { InsertRow } from "../src/AuditRows.ts"
import { toInsertRow } from "../src/AuditRows.ts"
import { AuditChain, auditDropped, type AuditInput, AuditLog, type AuditLogOptions, Embedded } from "../src/index.ts"
import { layerMemory } from "../src/testing.ts"
import { unique } from "./helpers.ts"

const scratch = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-audit-journal-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

const segments = (dir: string) => Fs.existsSync(dir) ? Fs.readdirSync(dir).filter((n) => n.endsWith(".jsonl")) : []

const entry = (identity: string, i: number): AuditInput => ({
  identity,
  tool: "get_user",
  outcome: "ok",
  durationMs: i,
  requestId: `req-${i}`
})

const rowOf = (i: number): InsertRow => toInsertRow(entry("token:unit", i), new Date(1_700_000_000_000 + i))

describe("AuditJournal.recover (the records a chain's head does not cover)", () => {
  it.effect("keeps journal order, skips dropped records and a torn last line, counts from the writer's base", () =>
    Effect.gen(function*() {
      const dir = yield* scratch
      const journal = AuditJournal.open({ dir, chain: "host:1:abc", base: 40 }, () => assert.fail("no failure"))
      for (let jid = 1; jid <= 5; jid++) journal.append(jid, rowOf(jid))
      journal.rotate() // a flush started: later records go to a second segment
      journal.dropped([3]) // e.g. evicted from a full buffer before it was written
      for (let jid = 6; jid <= 8; jid++) journal.append(jid, rowOf(jid))
      assert.strictEqual(segments(dir).length, 2)
      // the process died mid-append: half a line at the end of the last segment
      const last = Path.join(dir, segments(dir).sort().at(-1)!)
      Fs.appendFileSync(last, `{"j":9,"r":{"kind":"call","at":"2023-`)

      // head at 44: 4 records were written (1, 2, 4, 5: 3 was dropped), 6, 7, 8 were not
      const recovered = yield* AuditJournal.recover(dir, (chain) => Effect.succeed(chain === "host:1:abc" ? 44 : -1))
      assert.deepStrictEqual(recovered.rows.map((row) => row.duration_ms), [6, 7, 8])
      assert.strictEqual(recovered.rows[0]!.at.getTime(), 1_700_000_000_006)
      assert.deepStrictEqual(recovered.rows[0], rowOf(6))
      assert.strictEqual(recovered.files.length, 2)

      // nothing written (no head row): every kept record; all written: none
      const none = yield* AuditJournal.recover(dir, () => Effect.succeed(undefined))
      assert.deepStrictEqual(none.rows.map((row) => row.duration_ms), [1, 2, 4, 5, 6, 7, 8])
      const all = yield* AuditJournal.recover(dir, () => Effect.succeed(47))
      assert.deepStrictEqual(all.rows, [])
    }).pipe(Effect.scoped))

  it.effect("counts the records of deleted segments from the oldest surviving segment's header", () =>
    Effect.gen(function*() {
      const dir = yield* scratch
      const journal = AuditJournal.open({ dir, chain: "c", base: 0 }, () => assert.fail("no failure"))
      const first = journal.append(1, rowOf(1))!
      journal.append(2, rowOf(2))
      journal.append(3, rowOf(3))
      journal.dropped([1]) // 1 dropped, 2 and 3 written: the first segment goes
      journal.rotate()
      journal.settle(first)
      journal.settle(first)
      journal.settle(first)
      for (let jid = 4; jid <= 6; jid++) journal.append(jid, rowOf(jid))
      assert.strictEqual(segments(dir).length, 1)
      const durations = (head: number) =>
        Effect.map(AuditJournal.recover(dir, () => Effect.succeed(head)), (r) => r.rows.map((row) => row.duration_ms))
      assert.deepStrictEqual(yield* durations(2), [4, 5, 6])
      // 4 and 5 written too, the process died before their segment went: only 6
      assert.deepStrictEqual(yield* durations(4), [6])
    }).pipe(Effect.scoped))

  it.effect("a line read back keeps the table's columns only; one without a valid time counts as unreadable", () =>
    Effect.gen(function*() {
      const dir = yield* scratch
      const journal = AuditJournal.open({ dir, chain: "c", base: 0 }, () => assert.fail("no failure"))
      journal.append(1, { ...rowOf(1), bogus: "a column the table lacks" } as InsertRow)
      journal.append(2, { ...rowOf(2), at: new Date(Number.NaN) })
      journal.append(3, rowOf(3))
      const recovered = yield* AuditJournal.recover(dir, () => Effect.succeed(undefined))
      assert.deepStrictEqual(recovered.rows, [rowOf(1), rowOf(3)])
      assert.strictEqual(recovered.unreadable, 1)
      // the unreadable record still holds its place in the chain's order: written up to it, only 3 is left
      assert.deepStrictEqual((yield* AuditJournal.recover(dir, () => Effect.succeed(2))).rows, [rowOf(3)])
    }).pipe(Effect.scoped))

  it.effect("a segment is deleted once every record in it is settled and a newer one took over", () =>
    Effect.gen(function*() {
      const dir = yield* scratch
      const journal = AuditJournal.open({ dir, chain: "c", base: 0 }, () => assert.fail("no failure"))
      const first = journal.append(1, rowOf(1))!
      journal.append(2, rowOf(2))
      journal.rotate()
      const second = journal.append(3, rowOf(3))!
      assert.strictEqual(segments(dir).length, 2)
      journal.settle(first)
      journal.settle(first)
      assert.strictEqual(segments(dir).length, 1, "the closed segment went with its last record")
      journal.settle(second)
      assert.strictEqual(segments(dir).length, 1, "the current segment stays while it is current")
      journal.close()
      assert.deepStrictEqual(segments(dir), [])
    }).pipe(Effect.scoped))

  it.effect("an unreadable directory recovers nothing; a journal that cannot be written says so once", () =>
    Effect.gen(function*() {
      const dir = yield* scratch
      const file = Path.join(dir, "not-a-directory")
      Fs.writeFileSync(file, "")
      assert.deepStrictEqual(yield* AuditJournal.recover(file, () => Effect.succeed(0)), {
        rows: [],
        files: [],
        unreadable: 0
      })
      const failures: Array<unknown> = []
      const journal = AuditJournal.open({ dir: file, chain: "c", base: 0 }, (error) => failures.push(error))
      assert.isUndefined(journal.append(1, rowOf(1)))
      assert.isUndefined(journal.append(2, rowOf(2)))
      assert.strictEqual(failures.length, 1)
    }).pipe(Effect.scoped))
})

const freshLog = (options: AuditLogOptions) =>
  Effect.map(
    Layer.build(Layer.fresh(AuditLog.layerWith(options)).pipe(Layer.provide(Logger.layer([])))),
    (context) => Context.get(context, AuditLog)
  )

const rowsOf = (identity: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ request_id: string; chain: string }>`
      SELECT request_id, chain FROM audit_records WHERE identity = ${identity} ORDER BY id`
  }).pipe(Effect.orDie)

describe("AuditLog with a journal (sync)", () => {
  layer(layerMemory(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("record returns once journaled, before the commit; query reads it; a clean close leaves no journal", () =>
      Effect.gen(function*() {
        const dir = yield* scratch
        const identity = unique("journaled")
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* freshLog({ durability: "sync", journalDir: dir, flushInterval: "1 hour" })
          for (let i = 0; i < 3; i++) yield* log.record(entry(identity, i))
          assert.strictEqual(yield* log.buffered, 3, "returned without waiting for a commit")
          assert.deepStrictEqual(yield* rowsOf(identity), [])
          assert.strictEqual(segments(dir).length, 1)
          // the admin query writes what is buffered first: a call's record is there when it is answered
          const page = yield* log.query({ identity, limit: 10 })
          assert.deepStrictEqual(page.items.map((r) => r.requestId), ["req-2", "req-1", "req-0"])
          yield* log.record(entry(identity, 3))
        }))
        assert.deepStrictEqual((yield* rowsOf(identity)).map((r) => r.request_id), ["req-0", "req-1", "req-2", "req-3"])
        assert.deepStrictEqual(segments(dir), [], "every record written: no segment left")
      }).pipe(Effect.scoped))

    it.effect("a journal that cannot be written: record waits for the commit instead", () =>
      Effect.gen(function*() {
        const dir = yield* scratch
        const file = Path.join(dir, "not-a-directory")
        Fs.writeFileSync(file, "")
        const identity = unique("fallback")
        const log = yield* freshLog({ durability: "sync", journalDir: file, flushInterval: "1 hour" })
        yield* log.record(entry(identity, 0))
        assert.deepStrictEqual((yield* rowsOf(identity)).map((r) => r.request_id), ["req-0"])
      }).pipe(Effect.scoped))

    it.effect("a new writer writes what a dead writer's journal holds beyond its chain's head, once, chained", () =>
      Effect.gen(function*() {
        const dir = yield* scratch
        const identity = unique("recovered")
        const dead = `dead-${identity}`
        // the dead writer: 2 records written (its head at 2), then 3 journaled and never written
        const journal = AuditJournal.open({ dir, chain: dead, base: 0 }, () => assert.fail("no failure"))
        const rows = [0, 1, 2, 3, 4].map((i) => toInsertRow(entry(identity, i), new Date(1_700_000_000_000 + i)))
        rows.forEach((row, i) => journal.append(i + 1, row))
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* freshLog({ durability: "async", chain: dead })
          yield* writer.record(entry(identity, 0))
          yield* writer.record(entry(identity, 1))
          yield* writer.flush
        }))
        const log = yield* freshLog({ durability: "sync", journalDir: dir, flushInterval: "1 hour" })
        yield* log.flush
        const written = yield* rowsOf(identity)
        assert.deepStrictEqual(written.map((r) => r.request_id), ["req-0", "req-1", "req-2", "req-3", "req-4"])
        assert.deepStrictEqual(written.slice(2).map((r) => r.chain), [log.chain, log.chain, log.chain])
        assert.deepStrictEqual(segments(dir).filter((n) => n.startsWith(dead)), [], "the dead journal is gone")
        const report = yield* AuditChain.verify()
        assert.deepStrictEqual(report.problems.filter((p) => p.chain === dead || p.chain === log.chain), [])
      }).pipe(Effect.scoped))

    it.effect("a recovered record Postgres refuses (a value of the wrong type) is dropped alone and counted", () =>
      Effect.gen(function*() {
        const dir = yield* scratch
        const identity = unique("refused")
        const journal = AuditJournal.open({ dir, chain: `dead-${identity}`, base: 0 }, () => assert.fail("no"))
        const rows = [0, 1, 2].map((i) => toInsertRow(entry(identity, i), new Date(1_700_000_000_000 + i)))
        journal.append(1, rows[0]!)
        journal.append(2, { ...rows[1]!, duration_ms: "lots" as unknown as number })
        journal.append(3, rows[2]!)
        const before = Number((yield* Metric.value(auditDropped)).count)
        const log = yield* freshLog({ durability: "sync", journalDir: dir, flushInterval: "1 hour" })
        yield* log.flush
        assert.deepStrictEqual((yield* rowsOf(identity)).map((r) => r.request_id), ["req-0", "req-2"])
        assert.strictEqual(Number((yield* Metric.value(auditDropped)).count) - before, 1)
        const report = yield* AuditChain.verify()
        assert.deepStrictEqual(report.problems.filter((p) => p.chain === log.chain), [])
      }).pipe(Effect.scoped))
  })
})

// --- kill -9 -------------------------------------------------------------------------------------------------

const killScript = fileURLToPath(new URL("./fixtures/audit-kill.ts", import.meta.url))

const runKilled = (janusDir: string, written: number, pending: number) =>
  Effect.callback<{ signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resume) => {
    const child = spawn(process.execPath, [killScript, janusDir, String(written), String(pending)], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("exit", (_code, signal) => resume(Effect.succeed({ signal, stdout, stderr })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("embedded store, AUDIT_DURABILITY=sync, kill -9", () => {
  it.live(
    "every record whose `record` returned before the process was killed is in the log exactly once",
    () =>
      Effect.gen(function*() {
        const janusDir = yield* scratch
        const killed = yield* runKilled(janusDir, 20, 30)
        assert.strictEqual(killed.signal, "SIGKILL", killed.stderr.slice(-2000))
        const answered = killed.stdout.trim().split("\n")
        assert.strictEqual(answered.length, 50, killed.stderr.slice(-2000))
        assert.isAbove(segments(`${janusDir}/data.audit-journal`).length, 0, "the dead process left its journal")

        const rows = yield* Effect.scoped(Effect.gen(function*() {
          // its recovery warns (the records it writes): not for this test's output
          const context = yield* Layer.build(Embedded.layer({ janusDir }).pipe(Layer.provide(Logger.layer([]))))
          const sql = Context.get(context, SqlClient.SqlClient)
          // recovered records are journaled again and written in the background: write them now
          yield* Context.get(context, AuditLog).flush
          const found = yield* sql<{ request_id: string }>`
            SELECT request_id FROM audit_records WHERE identity = 'token:kill' ORDER BY id`
          const report = yield* AuditChain.verify().pipe(Effect.provide(context))
          assert.deepStrictEqual(report.problems, [])
          return found.map((row) => row.request_id)
        }))
        assert.deepStrictEqual(rows, answered, "each answered record once, in order")
        assert.deepStrictEqual(segments(`${janusDir}/data.audit-journal`), [], "recovered and shut down cleanly")
      }).pipe(Effect.scoped),
    180_000
  )
})
