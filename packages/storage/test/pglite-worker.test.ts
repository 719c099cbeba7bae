/**
 * PGlite in a worker thread: results, Postgres error fields, notifications and
 * close travel over the worker's message port.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as PgliteWorker from "../src/PgliteWorker.ts"

class Db extends Context.Service<Db, PgliteWorker.PgliteHandle>()("test/PgliteWorker/Db") {}

const DbLive = Layer.effect(
  Db,
  Effect.acquireRelease(Effect.promise(() => PgliteWorker.start({})), (db) => Effect.promise(() => db.close()))
)

const rejection = (promise: Promise<unknown>) =>
  Effect.promise(() => promise.then(() => assert.fail("expected a rejection"), (error: unknown) => error as Error))

describe("PgliteWorker", () => {
  layer(DbLive, { timeout: 120_000 })((it) => {
    it.effect("answers with rows as objects or arrays, parameters and types intact", () =>
      Effect.gen(function*() {
        const db = yield* Db
        const bytes = new Uint8Array([1, 2, 3])
        const result = yield* Effect.promise(() =>
          db.query<{ n: number; b: Uint8Array; t: Date }>(
            "SELECT $1::int + 1 AS n, $2::bytea AS b, '2020-01-02T00:00:00Z'::timestamptz AS t",
            [41, bytes]
          )
        )
        assert.strictEqual(result.rows[0]!.n, 42)
        assert.deepStrictEqual([...result.rows[0]!.b], [1, 2, 3])
        assert.strictEqual(result.rows[0]!.t.toISOString(), "2020-01-02T00:00:00.000Z")
        assert.strictEqual(result.command, "SELECT")
        const buffers = yield* Effect.promise(() => db.query<{ shared_buffers: string }>("SHOW shared_buffers"))
        assert.deepStrictEqual(buffers.rows, [{ shared_buffers: "16MB" }], "an in-memory database is sized alike")
        const values = yield* Effect.promise(() => db.query("SELECT 1 AS a, 'x' AS b", [], { rowMode: "array" }))
        assert.deepStrictEqual(values.rows, [[1, "x"]])
      }))

    it.effect("a failed statement carries its Postgres fields; later statements still run", () =>
      Effect.gen(function*() {
        const db = yield* Db
        yield* Effect.promise(() => db.query("CREATE TABLE uq (id int CONSTRAINT uq_id UNIQUE)"))
        yield* Effect.promise(() => db.query("INSERT INTO uq VALUES (1)"))
        const error = yield* rejection(db.query("INSERT INTO uq VALUES (1)")) as Effect.Effect<
          Error & { code?: string; constraint?: string; detail?: string }
        >
        assert.strictEqual(error.code, "23505")
        assert.strictEqual(error.constraint, "uq_id")
        assert.match(error.detail ?? "", /Key \(id\)=\(1\) already exists/)
        assert.match(error.message, /duplicate key/)
        const missing = yield* rejection(db.query("SELECT * FROM no_such_table")) as Effect.Effect<
          Error & { code?: string }
        >
        assert.strictEqual(missing.code, "42P01")
        const after = yield* Effect.promise(() => db.query<{ c: number }>("SELECT count(*)::int AS c FROM uq"))
        assert.strictEqual(after.rows[0]!.c, 1)
      }))

    it.effect("notifications reach the listener until it unlistens", () =>
      Effect.gen(function*() {
        const db = yield* Db
        const received: Array<string> = []
        const unlisten = yield* Effect.promise(() => db.listen("janus_test", (payload) => received.push(payload)))
        // A NOTIFY's message is posted before the statement's answer, so it has arrived when the query resolves.
        yield* Effect.promise(() => db.query("NOTIFY janus_test, 'one'"))
        assert.deepStrictEqual(received, ["one"])
        yield* Effect.promise(() => unlisten())
        yield* Effect.promise(() => db.query("NOTIFY janus_test, 'two'"))
        assert.deepStrictEqual(received, ["one"])
      }))
  })

  it.live("after close, statements fail saying the worker is closed", () =>
    Effect.gen(function*() {
      const db = yield* Effect.promise(() => PgliteWorker.start({}))
      yield* Effect.promise(() => db.close())
      assert.isTrue(db.closed)
      const error = yield* rejection(db.query("SELECT 1"))
      assert.match(error.message, /PGlite worker is closed/)
    }), 120_000)

  it.live(
    "a prestarted worker is what the first start on the same directory gets, and only the first",
    () =>
      Effect.gen(function*() {
        const dir = yield* Effect.acquireRelease(
          Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "janus-pglite-worker-"))),
          (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
        )
        const dataDir = Path.join(dir, "data")
        const early = PgliteWorker.prestart(dataDir)
        assert.strictEqual(PgliteWorker.prestart(dataDir), early)
        // the same directory spelled differently
        const taken = PgliteWorker.start({ dataDir: Path.join(dir, ".", "data") + "/" })
        assert.strictEqual(taken, early)
        const db = yield* Effect.promise(() => taken)
        yield* Effect.promise(() => db.query("CREATE TABLE kept (n int)"))
        yield* Effect.promise(() => db.query("INSERT INTO kept VALUES (7)"))
        yield* Effect.promise(() => db.close())
        // taken over: the next prestart of that directory is a new worker, on the same data
        const again = yield* Effect.acquireRelease(
          Effect.sync(() => PgliteWorker.prestart(dataDir)),
          (again) => Effect.promise(() => again.then((db) => db.close()))
        )
        assert.notStrictEqual(again, early)
        const second = PgliteWorker.start({ dataDir })
        assert.strictEqual(second, again)
        const reopened = yield* Effect.promise(() => second)
        const kept = yield* Effect.promise(() => reopened.query<{ n: number }>("SELECT n FROM kept"))
        assert.deepStrictEqual(kept.rows, [{ n: 7 }])
        // sized for a gateway (issue #19): 16 MB of shared buffers, not Postgres' 128 MB
        const buffers = yield* Effect.promise(() => reopened.query<{ shared_buffers: string }>("SHOW shared_buffers"))
        assert.deepStrictEqual(buffers.rows, [{ shared_buffers: "16MB" }])
      }).pipe(Effect.scoped),
    120_000
  )

  it.live("a data directory that cannot be created fails the start with the cause", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "janus-pglite-worker-"))),
        (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
      )
      const file = Path.join(dir, "a-file")
      yield* Effect.promise(() => Fs.writeFile(file, ""))
      const error = yield* rejection(PgliteWorker.start({ dataDir: Path.join(file, "data") }))
      assert.match(error.message, /ENOTDIR|EEXIST/)
    }).pipe(Effect.scoped), 60_000)
})
