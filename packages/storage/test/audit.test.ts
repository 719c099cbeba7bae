/**
 * The audit log, run against PGlite (in memory) and real Postgres: batching,
 * retry after failed flushes, the bounded buffer, the admin query.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, Metric } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { TestClock } from "effect/testing"
import {
  auditDropped,
  type AuditInput,
  AuditLog,
  type AuditLogOptions,
  type AuditRecord,
  type MasterKey
} from "../src/index.ts"
import { requirePostgres } from "../src/testing.ts"
import { backends, captureLogs, eventually, expectFailure, tableAway as tableAwayOf, unique } from "./helpers.ts"

const postgres = await requirePostgres()

type Services = SqlClient.SqlClient | AuditLog | MasterKey

/** A fresh audit log (its own buffer and flusher) on the suite's database, for the current scope. */
const freshLog = (options: AuditLogOptions, loggers: Layer.Layer<never> = Layer.empty) =>
  Effect.map(
    // these tests are about the buffer, so `record` does not wait for the commit (see audit-chain.test.ts for `sync`)
    Layer.build(Layer.fresh(AuditLog.layerWith({ durability: "async", ...options })).pipe(Layer.provide(loggers))),
    (context) => Context.get(context, AuditLog)
  )

/** Its background flusher's logs go nowhere. */
const quiet = Logger.layer([])

const entry = (identity: string, extra: Partial<AuditInput> = {}): AuditInput => ({
  identity,
  tool: "get_user",
  outcome: "ok",
  durationMs: 12,
  ...extra
})

/** Rows of `identity` per writing transaction (one INSERT statement = one transaction = one xmin). */
const batches = (identity: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number | bigint }>`
      SELECT count(*) AS n FROM audit_records WHERE identity = ${identity} GROUP BY xmin::text ORDER BY min(id)`
    return rows.map((row) => Number(row.n))
  }).pipe(Effect.orDie)

const stored = (identity: string) => Effect.map(batches(identity), (groups) => groups.reduce((a, b) => a + b, 0))

/** Makes `audit_records` unwritable (renamed away) until the returned effect restores it. */
const tableAway = tableAwayOf("audit_records")

const droppedCount = Effect.map(Metric.value(auditDropped), (state) => Number(state.count))

/** Wall-clock wait, also under the TestClock. */
const liveSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

for (const backend of backends<Services>(postgres)) {
  describe.skipIf(!backend.run)(`audit log: ${backend.name}`, () => {
    layer(backend.layer(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
      it.effect("record only buffers; a flush writes the batch with ONE insert", () =>
        Effect.scoped(Effect.gen(function*() {
          const log = yield* freshLog({ flushInterval: "1 hour" })
          const who = unique("batch")
          for (let i = 0; i < 499; i++) yield* log.record(entry(who, { durationMs: i }))
          assert.strictEqual(yield* log.buffered, 499)
          assert.strictEqual(yield* stored(who), 0, "nothing written before the flush")
          yield* log.flush
          assert.deepStrictEqual(yield* batches(who), [499], "one statement for the whole batch")
          assert.strictEqual(yield* log.buffered, 0)
        })))

      it.effect("500 waiting flush at once, in batches of at most 500 rows, one INSERT each", () =>
        Effect.scoped(Effect.gen(function*() {
          const log = yield* freshLog({ flushInterval: "1 hour" })
          const who = unique("early")
          for (let i = 0; i < 500; i++) yield* log.record(entry(who))
          // No timer (1 hour) and no explicit flush: the backlog of 500 triggers it.
          yield* eventually(Effect.map(stored(who), (n) => n === 500), 5_000)

          const many = unique("many")
          for (let i = 0; i < 1_200; i++) yield* log.record(entry(many, { durationMs: i }))
          yield* log.flush
          const groups = yield* batches(many)
          assert.strictEqual(groups.reduce((a, b) => a + b, 0), 1_200)
          assert.isTrue(groups.every((n) => n <= 500), `batches of at most 500: ${groups}`)
          assert.isTrue(groups.includes(500), `full batches are one statement: ${groups}`)
          assert.isAtMost(groups.length, 5, `${groups}`)
          // In order: ids follow the recording order.
          const sql = yield* SqlClient.SqlClient
          const order = yield* sql<{ d: number }>`
            SELECT duration_ms AS d FROM audit_records WHERE identity = ${many} ORDER BY id`
          assert.deepStrictEqual(order.map((r) => r.d), Array.from({ length: 1_200 }, (_, i) => i))
        })))

      it.effect("the periodic flush runs every second (TestClock)", () =>
        Effect.scoped(
          Effect.gen(function*() {
            const log = yield* freshLog({})
            const who = unique("tick")
            yield* log.record(entry(who))
            yield* log.record(entry(who, { outcome: "denied", status: 403 }))
            yield* log.record(entry(who, { outcome: "timeout" }))
            yield* liveSleep(100)
            assert.strictEqual(yield* stored(who), 0)
            yield* TestClock.adjust("999 millis")
            yield* liveSleep(100)
            assert.strictEqual(yield* stored(who), 0, "not before a second has passed")
            yield* TestClock.adjust("1 millis")
            yield* TestClock.withLive(eventually(Effect.map(stored(who), (n) => n === 3), 3_000))
            assert.deepStrictEqual(yield* batches(who), [3])
            // `at` is the Clock's time (the TestClock starts at 0).
            const page = yield* log.query({ identity: who, limit: 10 })
            assert.isTrue(page.items.every((r) => r.at.getTime() === 0))
          }).pipe(Effect.provide(TestClock.layer()))
        ))

      it.effect("a failed flush keeps every record; the next one writes them (explicit and background retry)", () =>
        Effect.scoped(Effect.gen(function*() {
          const log = yield* freshLog({ flushInterval: "1 hour" })
          const who = unique("retry")
          const restore = yield* tableAway
          for (let i = 0; i < 10; i++) yield* log.record(entry(who, { durationMs: i }))
          const error = yield* expectFailure(log.flush, "StorageError")
          assert.strictEqual(error.operation, "auditLog.flush")
          assert.strictEqual(yield* log.buffered, 10)
          yield* log.record(entry(who, { durationMs: 10 }))
          yield* expectFailure(log.flush, "StorageError")
          yield* restore
          yield* log.flush
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ d: number }>`SELECT duration_ms AS d FROM audit_records WHERE identity = ${who}
            ORDER BY id`
          assert.deepStrictEqual(rows.map((r) => r.d), Array.from({ length: 11 }, (_, i) => i), "all, in order")

          // The background flusher retries on its own with backoff.
          const background = yield* freshLog({ flushInterval: "50 millis" }, quiet)
          const later = unique("later")
          const restoreAgain = yield* tableAway
          for (let i = 0; i < 5; i++) yield* background.record(entry(later))
          yield* Effect.sleep("600 millis") // a few failed attempts (200 ms, 400 ms backoff)
          assert.strictEqual(yield* background.buffered, 5)
          yield* restoreAgain
          yield* eventually(Effect.map(stored(later), (n) => n === 5), 5_000)
          assert.strictEqual(yield* background.buffered, 0)
        })))

      it.effect("the buffer is bounded: the oldest are dropped, counted, and warned about once per interval", () =>
        Effect.scoped(Effect.gen(function*() {
          const { lines: warnings, logger: capture } = captureLogs()
          // The flusher (triggered when 10 wait) may drop some too: its logs are captured as well.
          const log = yield* freshLog({ flushInterval: "1 hour", maxBuffered: 10, warnInterval: "1 hour" }, capture)
          const who = unique("bound")
          const restore = yield* tableAway
          const before = yield* droppedCount
          yield* Effect.gen(function*() {
            for (let i = 0; i < 25; i++) yield* log.record(entry(who, { durationMs: i }))
          }).pipe(Effect.provide(capture))
          assert.strictEqual((yield* droppedCount) - before, 15, "janus.audit.dropped counts every dropped record")
          assert.strictEqual(yield* log.buffered, 10)
          const dropWarnings = warnings.filter((w) => w.includes("dropped the"))
          assert.strictEqual(dropWarnings.length, 1, `one warning per interval: ${warnings}`)
          yield* restore
          yield* log.flush
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ d: number }>`SELECT duration_ms AS d FROM audit_records WHERE identity = ${who}
            ORDER BY id`
          assert.deepStrictEqual(rows.map((r) => r.d), Array.from({ length: 10 }, (_, i) => 15 + i), "the newest 10")
        })))

      it.effect("odd values never poison a batch", () =>
        Effect.scoped(Effect.gen(function*() {
          const log = yield* freshLog({ flushInterval: "1 hour" })
          const who = unique("odd")
          yield* log.record(entry(`${who}`, {
            tool: "nul\u0000tool",
            durationMs: -5,
            bytesIn: Number.NaN,
            bytesOut: 1.6,
            redactions: Infinity,
            status: 1e12,
            outcome: "bogus" as never
          }))
          yield* log.record(entry(who, { durationMs: 1.4, at: new Date(Number.NaN) }))
          yield* log.flush
          const page = yield* log.query({ identity: who, limit: 10 })
          assert.strictEqual(page.items.length, 2)
          // U+0000 is replaced, not removed: "nul\u0000tool" must not read as a tool of another name
          const odd = page.items.find((r) => r.tool === "nul\ufffdtool")!
          assert.strictEqual(odd.durationMs, 0)
          assert.strictEqual(odd.bytesIn, 0)
          assert.strictEqual(odd.bytesOut, 2)
          assert.strictEqual(odd.redactions, 0, "not finite: 0")
          assert.strictEqual(odd.status, 2_147_483_647)
          assert.strictEqual(odd.outcome, "error")
        })))

      it.effect("a record Postgres refuses is dropped alone, counted and reported; the others are written", () =>
        Effect.scoped(Effect.gen(function*() {
          const { lines: warnings, logger: capture } = captureLogs()
          const sql = yield* SqlClient.SqlClient
          yield* Effect.acquireRelease(
            Effect.orDie(sql`ALTER TABLE audit_records ADD CONSTRAINT no_poison CHECK (tool <> 'poison') NOT VALID`),
            () => Effect.orDie(sql`ALTER TABLE audit_records DROP CONSTRAINT IF EXISTS no_poison`)
          )
          const log = yield* freshLog({ flushInterval: "1 hour" }, capture)
          const who = unique("refused")
          const before = yield* droppedCount
          for (let i = 0; i < 30; i++) {
            yield* log.record(entry(who, { durationMs: i, tool: i % 10 === 3 ? "poison" : "t" }))
          }
          yield* log.flush.pipe(Effect.provide(capture))
          const rows = yield* sql<{ d: number }>`SELECT duration_ms AS d FROM audit_records WHERE identity = ${who}
            ORDER BY id`
          assert.deepStrictEqual(
            rows.map((r) => r.d),
            Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 10 !== 3),
            "all the others, in order"
          )
          assert.strictEqual((yield* droppedCount) - before, 3)
          const reports = warnings.filter((w) => w.includes("refused"))
          assert.strictEqual(reports.length, 1, warnings.join("\n"))
          assert.include(reports[0]!, "Postgres refused 3 of 30 records")
          assert.include(reports[0]!, "SQLSTATE 23514")
          assert.strictEqual(yield* log.buffered, 0)
        })))

      it.effect(
        "query: text filters holding U+0000 or lone surrogates find what was stored; dates Postgres " +
          "cannot hold are an InvalidInput",
        () =>
          Effect.scoped(Effect.gen(function*() {
            const log = yield* freshLog({ flushInterval: "1 hour" })
            const who = unique("nulq")
            yield* log.record(entry(`${who}\u0000`, { tool: "x\u0000", connection: "c\ud800" }))
            yield* log.flush
            for (
              const filter of [
                { identity: `${who}\u0000` },
                { identity: `${who}\ufffd`, tool: "x\u0000" },
                { identity: `${who}\ufffd`, connection: "c\udfff" }
              ]
            ) {
              const page = yield* log.query({ ...filter, limit: 10 })
              assert.deepStrictEqual(page.items.map((r) => [r.identity, r.tool, r.connection]), [
                [`${who}\ufffd`, "x\ufffd", "c\ufffd"]
              ], JSON.stringify(filter))
            }
            assert.deepStrictEqual((yield* log.query({ tool: "a\u0000b", limit: 10 })).items, [])
            for (
              const [field, at] of [
                ["from", new Date("-271821-04-20T00:00:00Z")],
                ["to", new Date("+275760-09-13T00:00:00Z")],
                ["from", new Date("0000-12-31T23:59:59.999Z")],
                ["to", new Date("+010000-01-01T00:00:00Z")]
              ] as const
            ) {
              const error = yield* expectFailure(log.query({ [field]: at, limit: 5 }), "InvalidInput")
              assert.strictEqual(error.field, field)
              assert.include(error.message, "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z")
            }
            // the extremes of the range are fine
            yield* log.query({
              from: new Date("0001-01-01T00:00:00Z"),
              to: new Date("9999-12-31T23:59:59.999Z"),
              limit: 5
            })
          }))
      )

      it.effect("query: filters, keyset pagination on (at desc, id desc), exact across microseconds", () =>
        Effect.scoped(Effect.gen(function*() {
          const log = yield* freshLog({ flushInterval: "1 hour" })
          const who = unique("q")
          const other = unique("q-other")
          const base = Date.UTC(2031, 0, 1)
          const inputs: Array<AuditInput> = []
          for (let i = 0; i < 12; i++) {
            inputs.push(entry(who, {
              // Four share each timestamp, so ids break the ties.
              at: new Date(base + Math.floor(i / 4) * 60_000),
              tool: i % 2 === 0 ? "get_user" : "list_users",
              connection: i % 3 === 0 ? null : "crm",
              outcome: i % 4 === 0 ? "error" : "ok",
              status: i % 4 === 0 ? 502 : 200,
              bytesIn: i,
              bytesOut: 10 * i,
              redactions: i % 2,
              requestId: `req-${i}`,
              traceId: i === 0 ? null : `trace-${i}`
            }))
          }
          for (const input of inputs) yield* log.record(input)
          yield* log.record(entry(other, { at: new Date(base) }))
          yield* log.flush

          const all = yield* log.query({ identity: who, limit: 1_000 })
          assert.strictEqual(all.items.length, 12)
          assert.isNull(all.nextCursor)
          for (let i = 1; i < all.items.length; i++) {
            const [a, b] = [all.items[i - 1]!, all.items[i]!]
            assert.isTrue(a.at > b.at || (a.at.getTime() === b.at.getTime() && a.id > b.id), "at desc, id desc")
          }
          const first = all.items.find((r) => r.requestId === "req-0")!
          assert.deepStrictEqual(
            { ...first, id: 0, seq: 0, hash: "" },
            {
              id: 0,
              kind: "call",
              at: new Date(base),
              identity: who,
              tool: "get_user",
              method: "tools/call",
              connection: null,
              outcome: "error",
              status: 502,
              durationMs: 12,
              bytesIn: 0,
              bytesOut: 0,
              redactions: 0,
              requestId: "req-0",
              traceId: null,
              callerName: null,
              callerSubject: null,
              callerClient: null,
              credentialKind: null,
              credentialFingerprint: null,
              bucket: null,
              reason: null,
              clientIp: null,
              repeats: 1,
              action: null,
              resourceKind: null,
              resourceId: null,
              resourceName: null,
              versionBefore: null,
              versionAfter: null,
              changes: null,
              interface: null,
              path: null,
              chain: first.chain,
              seq: 0,
              hash: ""
            } satisfies AuditRecord
          )

          // Pages of 5, 5, 2 cover everything once, in order.
          const paged: Array<AuditRecord> = []
          let cursor: string | undefined
          let pages = 0
          do {
            const page = yield* log.query({ identity: who, limit: 5, ...(cursor === undefined ? {} : { cursor }) })
            paged.push(...page.items)
            cursor = page.nextCursor ?? undefined
            pages++
          } while (cursor !== undefined)
          assert.strictEqual(pages, 3)
          assert.deepStrictEqual(paged, all.items)

          // Filters.
          const ids = (records: ReadonlyArray<AuditRecord>) => records.map((r) => r.requestId).sort()
          const q = (extra: object) =>
            Effect.map(log.query({ identity: who, limit: 100, ...extra }), (p) => ids(p.items))
          assert.deepStrictEqual(
            yield* q({ tool: "list_users" }),
            ids(all.items.filter((r) => r.tool === "list_users"))
          )
          assert.deepStrictEqual(yield* q({ outcome: "error" }), ["req-0", "req-4", "req-8"])
          assert.deepStrictEqual(yield* q({ connection: "crm" }), ids(all.items.filter((r) => r.connection === "crm")))
          assert.deepStrictEqual(
            yield* q({ from: new Date(base + 60_000), to: new Date(base + 120_000) }),
            ["req-4", "req-5", "req-6", "req-7"]
          )
          assert.deepStrictEqual(yield* q({ tool: "get_user", outcome: "error", connection: "crm" }), [
            "req-4",
            "req-8"
          ])
          const byTime = yield* log.query({ from: new Date(base), to: new Date(base + 1), limit: 100 })
          assert.includeMembers(byTime.items.map((r) => r.identity), [who, other])

          // Rows written by the database at microsecond precision page exactly too.
          const sql = yield* SqlClient.SqlClient
          const micro = unique("micro")
          for (const us of ["000001", "000002", "000003", "000999", "000998"]) {
            yield* sql`INSERT INTO audit_records (at, identity, tool, outcome, duration_ms)
              VALUES (${`2031-02-01T00:00:00.${us}Z`}::timestamptz, ${micro}, 't', 'ok', 1)`
          }
          const seen: Array<number> = []
          let next: string | null = null
          do {
            const page: { items: ReadonlyArray<AuditRecord>; nextCursor: string | null } = yield* log.query({
              identity: micro,
              limit: 1,
              ...(next === null ? {} : { cursor: next })
            })
            seen.push(...page.items.map((r) => r.id))
            next = page.nextCursor
          } while (next !== null)
          assert.strictEqual(seen.length, 5)
          assert.strictEqual(new Set(seen).size, 5)

          // Bad input.
          assert.strictEqual((yield* expectFailure(log.query({ limit: 0 }), "InvalidInput")).field, "limit")
          assert.strictEqual((yield* expectFailure(log.query({ limit: 1_001 }), "InvalidInput")).field, "limit")
          assert.strictEqual(
            (yield* expectFailure(log.query({ limit: 5, cursor: "garbage" }), "InvalidInput")).field,
            "cursor"
          )
          assert.strictEqual(
            (yield* expectFailure(log.query({ limit: 5, outcome: "nope" as never }), "InvalidInput")).field,
            "outcome"
          )
        })))

      it.effect("the Storage layer's audit log flushes what is buffered when its scope closes", () =>
        Effect.gen(function*() {
          const who = unique("close")
          yield* Effect.scoped(Effect.gen(function*() {
            const log = yield* freshLog({ flushInterval: "1 hour" })
            for (let i = 0; i < 7; i++) yield* log.record(entry(who))
          }))
          assert.strictEqual(yield* stored(who), 7)
          // And the one inside Storage is there too.
          const shared = yield* AuditLog
          yield* shared.record(entry(who))
          yield* shared.flush
          assert.strictEqual(yield* stored(who), 8)
        }))
    })
  })
}
