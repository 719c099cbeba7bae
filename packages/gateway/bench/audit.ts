/**
 * The audit work per tools/call, before and after issue #18, in process:
 *
 * - "before": what main did per call: the audit entry (13 fields) and its
 *   row (12 columns, values cleaned), appended to the buffer.
 * - "after": the entry with the caller by name, request and trace ids,
 *   bucket (`CallAudit.entryOf`), its row (29 columns, `AuditRows.toInsertRow`)
 *   and its chain hash (`AuditRows.hashOf`, SHA-256, computed when the batch
 *   is written).
 *
 * CPU µs per call = process CPU time over `N` calls / N; allocation per call =
 * heap growth between collections over the loop (V8 `GCProfiler`) / N.
 *
 * Then the durable wait (AUDIT_DURABILITY=sync, group commit) on in-memory
 * PGlite: `record` of 2,000 calls, 16 at a time, sync vs async: wall-clock µs
 * a call waits for its row, and INSERT statements per 1,000 records.
 *
 * Run: node packages/gateway/bench/audit.ts (or `npm run bench audit`)
 */
import { AuditLog, AuditRows } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Effect, Layer, Logger } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { GCProfiler, getHeapStatistics } from "node:v8"
import { entryOf } from "../src/calls/CallAudit.ts"
import * as CallRecord from "../src/calls/CallRecord.ts"
import type { Caller } from "../src/mcp/Caller.ts"

const N = Number(process.env.BENCH_AUDIT_N ?? 200_000)

const measure = (run: (i: number) => unknown) => {
  for (let i = 0; i < 10_000; i++) run(i) // warm-up
  const profiler = new GCProfiler()
  profiler.start()
  const startUsed = getHeapStatistics().used_heap_size
  const cpu = process.cpuUsage()
  let sink = 0
  for (let i = 0; i < N; i++) sink += run(i) === undefined ? 0 : 1
  const used = process.cpuUsage(cpu)
  const result = profiler.stop()
  let allocated = 0
  let previous = startUsed
  for (const gc of result?.statistics ?? []) {
    allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - previous)
    previous = gc.afterGC.heapStatistics.usedHeapSize
  }
  allocated += Math.max(0, getHeapStatistics().used_heap_size - previous)
  return { cpuUsPerCall: (used.user + used.system) / N, bytesPerCall: allocated / N, sink }
}

const caller: Caller = { id: "token:5f0c", scopes: [], kind: "client_token", name: "ci-bot", tokenId: "5f0c" }
const context = Context.empty() as Context.Context<never>

// main's per-call audit work (calls/CallAudit.ts and storage's toInsertRow before #18)
const clean = (value: string) =>
  value.length > 1_024 ? value.slice(0, 1_024) : value.toWellFormed().replaceAll("\0", "\uFFFD")
const count = (value: number) => Number.isFinite(value) ? Math.max(0, Math.round(value)) : 0
const before = (i: number) => {
  const now = 1_700_000_000_000 + i
  const entry = {
    identity: caller.id,
    tool: "get_pet",
    connection: "pets",
    outcome: "ok",
    status: 200,
    durationMs: 3,
    bytesIn: 12,
    bytesOut: 230,
    redactions: 0,
    at: new Date(now)
  }
  return {
    at: entry.at,
    identity: clean(entry.identity),
    tool: clean(entry.tool),
    connection: clean(entry.connection),
    outcome: entry.outcome,
    status: entry.status,
    duration_ms: count(entry.durationMs),
    bytes_in: count(entry.bytesIn),
    bytes_out: count(entry.bytesOut),
    redactions: count(entry.redactions),
    request_id: null,
    trace_id: null
  }
}

let prev = ""
const after = (i: number) => {
  const record = CallRecord.make(caller, "get_pet", 1_700_000_000_000 + i)
  record.connection = "pets"
  record.status = 200
  record.bytesIn = 12
  record.bytesOut = 230
  const entry = entryOf(record, "ok", 1_700_000_000_003 + i, context)
  const row = AuditRows.toInsertRow(entry, entry.at!)
  prev = AuditRows.hashOf("bench", i + 1, prev, row)
  return row
}

const durableWait = (durability: "sync" | "async", journal = false) =>
  Effect.gen(function*() {
    // the embedded store's way: journaled (`AuditJournal`), the batches written in the background
    const journalDir = journal ? mkdtempSync(join(tmpdir(), "janus-bench-journal-")) : undefined
    if (journalDir !== undefined) {
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(journalDir, { recursive: true })))
    }
    const chain = `bench-${durability}${journal ? "-journaled" : ""}`
    const log = Context.get(
      yield* Layer.build(Layer.fresh(AuditLog.layerWith({ durability, chain, journalDir }))),
      AuditLog
    )
    const sql = yield* SqlClient.SqlClient
    const started = performance.now()
    const waits: Array<number> = []
    yield* Effect.forEach(Array.from({ length: 2_000 }, (_, i) => i), (i) =>
      Effect.gen(function*() {
        const t = performance.now()
        yield* log.record({ identity: caller.id, tool: "get_pet", outcome: "ok", durationMs: i })
        waits.push((performance.now() - t) * 1_000)
      }), { concurrency: 16 })
    yield* log.flush
    const elapsed = performance.now() - started
    const inserts = yield* sql<{ n: unknown }>`SELECT count(DISTINCT xmin::text) AS n FROM audit_records
      WHERE chain = ${chain}`
    waits.sort((a, b) => a - b)
    return {
      durability: journal ? `${durability}, journaled` : durability,
      meanWaitUs: Math.round(waits.reduce((a, b) => a + b, 0) / waits.length),
      p99WaitUs: Math.round(waits[Math.floor(waits.length * 0.99)]!),
      recordsPerSecond: Math.round(2_000 / (elapsed / 1_000)),
      insertsPer1000: Number(inserts[0]!.n) / 2
    }
  }).pipe(Effect.scoped)

const main = Effect.gen(function*() {
  const b = measure(before)
  const a = measure(after)
  const sync = yield* durableWait("sync")
  const journaled = yield* durableWait("sync", true)
  const async = yield* durableWait("async")
  // the whole figures for a reader (stderr), the runner's one line (stdout: `npm run bench audit`)
  console.error(JSON.stringify({ n: N, before: b, after: a, durable: [sync, journaled, async] }, null, 2))
  const results: Record<string, string> = {
    "before #18 (13-field entry, 12-column row): CPU µs/call; bytes allocated/call": `${b.cpuUsPerCall.toFixed(2)}; ${
      Math.round(b.bytesPerCall)
    }`,
    "after #18 (entry, 29-column row, chain hash): CPU µs/call; bytes allocated/call": `${a.cpuUsPerCall.toFixed(2)}; ${
      Math.round(a.bytesPerCall)
    }`
  }
  for (const d of [sync, journaled, async]) {
    results[`durable wait, ${d.durability}: mean; p99 µs per call; records/s; INSERTs per 1,000 records`] =
      `${d.meanWaitUs}; ${d.p99WaitUs}; ${d.recordsPerSecond}; ${d.insertsPer1000}`
  }
  console.log(JSON.stringify({
    title: "Audit work per tools/call (in process) and the durable wait",
    results,
    notes: [
      `per call: ${N.toLocaleString("en-US")} calls after 10,000 of warm-up; CPU from process.cpuUsage, allocation ` +
      "from V8's GCProfiler (heap growth between collections)",
      "durable wait: AuditLog.record of 2,000 calls, 16 at a time, on in-memory PGlite (one process, no gateway); " +
      "sync: each waits for its group's commit (Postgres, in-memory PGlite); sync, journaled: for its append to " +
      "the audit journal, as on the embedded store (the rows committed in the background, counted after a flush)"
    ]
  }))
}).pipe(Effect.provide(StorageTesting.layerMemory()), Effect.provide(Logger.layer([])))

Effect.runPromise(main as Effect.Effect<void, unknown, never>).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
