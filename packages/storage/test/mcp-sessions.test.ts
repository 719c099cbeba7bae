/**
 * The MCP session repository, run against PGlite (in memory) and real
 * Postgres: sessions, expiry, streams, caps, wake-ups.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { TestClock } from "effect/testing"
import { McpSessions } from "../src/index.ts"
import { layerMemory, layerPostgres, requirePostgres } from "../src/testing.ts"
import { eventually, HOUR, session, unique } from "./helpers.ts"

const postgres = await requirePostgres()

type Services = SqlClient.SqlClient | McpSessions

const backends: ReadonlyArray<{ name: string; layer: () => Layer.Layer<Services, unknown>; run: boolean }> = [
  { name: "pglite (memory)", layer: () => layerMemory(), run: true },
  { name: "postgres", layer: () => layerPostgres(), run: postgres }
]

const count = (table: string, sessionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number | bigint }>`
      SELECT count(*) AS n FROM ${sql(table)} WHERE ${
      sql(table === "mcp_sessions" ? "id" : "session_id")
    } = ${sessionId}`
    return Number(rows[0]!.n)
  }).pipe(Effect.orDie)

for (const backend of backends) {
  describe.skipIf(!backend.run)(`mcp sessions: ${backend.name}`, () => {
    layer(backend.layer(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
      it.effect("create, get, touch, replace, delete", () =>
        Effect.gen(function*() {
          const sessions = yield* McpSessions
          const id = unique("s")
          const now = Date.now()
          const created = session(id, now)
          yield* sessions.create(created)
          assert.deepStrictEqual(Option.getOrThrow(yield* sessions.get(id, new Date(now))), created)
          assert.isTrue(Option.isNone(yield* sessions.get(unique("nope"), new Date(now))))

          yield* sessions.touch(id, new Date(now + 1_000), new Date(now + 1_000 + HOUR))
          const touched = Option.getOrThrow(yield* sessions.get(id, new Date(now)))
          assert.strictEqual(touched.lastSeenAt.getTime(), now + 1_000)
          assert.strictEqual(touched.expiresAt.getTime(), now + 1_000 + HOUR)
          assert.strictEqual(touched.createdAt.getTime(), now)

          // logging/setLevel is kept with the session
          assert.isTrue(yield* sessions.setLogLevel(id, "warning"))
          assert.strictEqual(Option.getOrThrow(yield* sessions.get(id, new Date(now))).logLevel, "warning")
          assert.isFalse(yield* sessions.setLogLevel(unique("nope"), "warning"))

          // No client info is stored as null; creating again with the same id replaces it and its streams.
          yield* sessions.openStream(id, "a", { maxStreams: 8 })
          yield* sessions.create(session(id, now, { clientInfo: null, ownerId: "token:bob" }))
          const replaced = Option.getOrThrow(yield* sessions.get(id, new Date(now)))
          assert.isNull(replaced.clientInfo)
          assert.strictEqual(replaced.ownerId, "token:bob")
          assert.isTrue(Option.isNone((yield* sessions.read(id, "a", 0, 10)).stream))

          assert.isTrue(yield* sessions.delete(id))
          assert.isFalse(yield* sessions.delete(id))
          assert.isTrue(Option.isNone(yield* sessions.get(id, new Date(now))))
        }))

      it.effect("a clientInfo and capabilities holding U+0000 and lone surrogates are stored as U+FFFD", () =>
        Effect.gen(function*() {
          const sessions = yield* McpSessions
          const id = unique("nul")
          const now = Date.now()
          yield* sessions.create(session(id, now, {
            clientInfo: { name: "client\u0000", version: "1\ud800", ["k\u0000"]: ["\udfff", "ok \ud83d\ude00"] },
            clientCapabilities: { ["x\u0000"]: { "\ud800": "\u0000" } }
          }))
          const stored = Option.getOrThrow(yield* sessions.get(id, new Date(now)))
          assert.deepStrictEqual(stored.clientInfo, {
            name: "client\ufffd",
            version: "1\ufffd",
            ["k\ufffd"]: ["\ufffd", "ok \ud83d\ude00"]
          })
          assert.deepStrictEqual(stored.clientCapabilities, { ["x\ufffd"]: { "\ufffd": "\ufffd" } })
        }))

      it.effect("cache: get serves a session from memory; this instance's setLogLevel, touch and delete reach it", () =>
        Effect.gen(function*() {
          const sessions = yield* McpSessions
          const sql = yield* SqlClient.SqlClient
          const id = unique("s")
          const now = Date.now()
          yield* sessions.create(session(id, now))
          // A change behind the store's back (no notification) shows whether `get` still reads the row.
          let n = 0
          yield* eventually(
            Effect.gen(function*() {
              yield* sessions.get(id, new Date(now))
              const version = `sneaky-${++n}`
              yield* sql`UPDATE mcp_sessions SET protocol_version = ${version} WHERE id = ${id}`
              const got = Option.getOrThrow(yield* sessions.get(id, new Date(now)))
              return got.protocolVersion !== version
            }).pipe(Effect.orDie),
            10_000
          )
          // Cached: this instance's setLogLevel and touch update the entry, its delete removes it.
          assert.isTrue(yield* sessions.setLogLevel(id, "error"))
          assert.strictEqual(Option.getOrThrow(yield* sessions.get(id, new Date(now))).logLevel, "error")
          yield* sessions.touch(id, new Date(now + 1_000), new Date(now + 2 * HOUR))
          const touched = Option.getOrThrow(yield* sessions.get(id, new Date(now)))
          assert.strictEqual(touched.lastSeenAt.getTime(), now + 1_000)
          assert.strictEqual(touched.expiresAt.getTime(), now + 2 * HOUR)
          // Past the cached expiry (another instance may have touched it): read again.
          yield* sql`UPDATE mcp_sessions SET expires_at = ${new Date(now + 4 * HOUR)}::timestamptz WHERE id = ${id}`
          const reread = Option.getOrThrow(yield* sessions.get(id, new Date(now + 3 * HOUR)))
          assert.strictEqual(reread.expiresAt.getTime(), now + 4 * HOUR)
          assert.isTrue(yield* sessions.delete(id))
          assert.isTrue(Option.isNone(yield* sessions.get(id, new Date(now))))
          // A replacing create is seen at once, not the cached record it replaced.
          yield* sessions.create(session(id, now, { ownerId: "token:carol" }))
          assert.strictEqual(Option.getOrThrow(yield* sessions.get(id, new Date(now))).ownerId, "token:carol")
        }))

      it.effect("expiry: get hides an expired session; deleteExpired removes it with its streams", () =>
        Effect.gen(function*() {
          const sessions = yield* McpSessions
          const now = Date.UTC(2040, 0, 1)
          const stale = unique("stale")
          const fresh = unique("fresh")
          yield* sessions.create(session(stale, now, { expiresAt: new Date(now + 1_000) }))
          yield* sessions.create(session(fresh, now, { expiresAt: new Date(now + 10_000) }))
          yield* sessions.openStream(stale, "a", { maxStreams: 8 })
          yield* sessions.append(stale, "a", "{}", { maxEvents: 8 })

          assert.isTrue(Option.isSome(yield* sessions.get(stale, new Date(now + 1_000))), "alive at its expiry")
          assert.isTrue(Option.isNone(yield* sessions.get(stale, new Date(now + 1_001))), "gone after")
          assert.isAtLeast(yield* sessions.deleteExpired(new Date(now + 1_001)), 1)
          assert.strictEqual(yield* count("mcp_sessions", stale), 0)
          assert.strictEqual(yield* count("mcp_session_streams", stale), 0)
          assert.strictEqual(yield* count("mcp_session_messages", stale), 0)
          assert.isTrue(Option.isSome(yield* sessions.get(fresh, new Date(now + 1_001))))
          yield* sessions.delete(fresh)
        }))

      it.effect("sweepEvery deletes expired sessions on the Clock's schedule (TestClock)", () =>
        Effect.scoped(
          Effect.gen(function*() {
            const sessions = yield* McpSessions
            const id = unique("swept")
            yield* TestClock.setTime(Date.UTC(2041, 0, 1))
            const now = Date.UTC(2041, 0, 1)
            yield* sessions.create(session(id, now, { expiresAt: new Date(now + 5_000) }))
            yield* sessions.sweepEvery("10 seconds")
            yield* TestClock.withLive(Effect.sleep("200 millis")) // the first sweep ran; the next is 10 s away
            yield* TestClock.adjust("6 seconds")
            yield* TestClock.withLive(Effect.sleep("100 millis"))
            assert.strictEqual(yield* count("mcp_sessions", id), 1, "the next sweep is at 10 s")
            yield* TestClock.adjust("4 seconds")
            let left = 1
            for (let i = 0; i < 50 && left > 0; i++) {
              yield* TestClock.withLive(Effect.sleep("20 millis"))
              left = yield* count("mcp_sessions", id)
            }
            assert.strictEqual(left, 0)
          }).pipe(Effect.provide(TestClock.layer()))
        ))

      it.effect("streams: open is idempotent, seqs count from 1, closed streams take no more", () =>
        Effect.gen(function*() {
          const sessions = yield* McpSessions
          const id = unique("s")
          yield* sessions.create(session(id, Date.now()))
          assert.strictEqual(yield* sessions.openStream(id, "a", { maxStreams: 8 }), 0)
          assert.strictEqual(yield* sessions.openStream(unique("nope"), "a", { maxStreams: 8 }), 0)
          const payloads = ["{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", "{ \"b\": 1,  \"a\": [2] }", "plain text"]
          const seqs = []
          for (const data of payloads) seqs.push(yield* sessions.append(id, "a", data, { maxEvents: 8 }))
          assert.deepStrictEqual(seqs, [1, 2, 3])
          assert.strictEqual(yield* sessions.openStream(id, "a", { maxStreams: 8 }), 3)

          const page = yield* sessions.read(id, "a", 1, 10)
          assert.deepStrictEqual(page.stream, Option.some({ lastSeq: 3, closed: false }))
          assert.deepStrictEqual(page.events, [{ seq: 2, data: payloads[1]! }, { seq: 3, data: payloads[2]! }])
          assert.deepStrictEqual((yield* sessions.read(id, "a", 0, 2)).events.map((e) => e.seq), [1, 2])
          assert.deepStrictEqual((yield* sessions.read(id, "a", 3, 10)).events, [])

          assert.strictEqual(yield* sessions.append(id, "unknown", "x", { maxEvents: 8 }), 0)
          yield* sessions.closeStream(id, "a")
          yield* sessions.closeStream(id, "a")
          assert.strictEqual(yield* sessions.append(id, "a", "late", { maxEvents: 8 }), 0)
          assert.deepStrictEqual(
            (yield* sessions.read(id, "a", 0, 10)).stream,
            Option.some({ lastSeq: 3, closed: true })
          )
          assert.isTrue(Option.isNone((yield* sessions.read(id, "unknown", 0, 10)).stream))
          yield* sessions.delete(id)
          assert.isTrue(Option.isNone((yield* sessions.read(id, "a", 0, 10)).stream))
        }))

      it.effect("caps: a stream keeps its newest maxEvents; a session its newest maxStreams", () =>
        Effect.gen(function*() {
          const sessions = yield* McpSessions
          const id = unique("s")
          yield* sessions.create(session(id, Date.now()))
          yield* sessions.openStream(id, "a", { maxStreams: 3 })
          for (let i = 1; i <= 10; i++) yield* sessions.append(id, "a", `m${i}`, { maxEvents: 4 })
          const page = yield* sessions.read(id, "a", 0, 100)
          assert.deepStrictEqual(page.events.map((e) => e.data), ["m7", "m8", "m9", "m10"])
          assert.deepStrictEqual((yield* sessions.read(id, "a", 8, 100)).events.map((e) => e.seq), [9, 10])

          for (const stream of ["b", "c"]) yield* sessions.openStream(id, stream, { maxStreams: 3 })
          assert.strictEqual(yield* count("mcp_session_streams", id), 3)
          yield* sessions.openStream(id, "d", { maxStreams: 3 })
          assert.isTrue(Option.isNone((yield* sessions.read(id, "a", 0, 10)).stream), "the oldest stream is evicted")
          assert.strictEqual(yield* count("mcp_session_messages", id), 0, "with its messages")
          for (const stream of ["b", "c", "d"]) {
            assert.isTrue(Option.isSome((yield* sessions.read(id, stream, 0, 10)).stream))
          }
          yield* sessions.delete(id)
        }))

      it.effect("watch: wakes on append, close and delete; a change before waiting is not lost", () =>
        Effect.scoped(Effect.gen(function*() {
          const sessions = yield* McpSessions
          const id = unique("s")
          yield* sessions.create(session(id, Date.now()))
          yield* sessions.openStream(id, "a", { maxStreams: 8 })
          const watch = yield* sessions.watch(id, "a")
          const other = yield* sessions.watch(id, "b")
          // Once LISTEN is established every watcher is woken (a spurious wake-up); take that one first.
          yield* Effect.sleep("300 millis")
          yield* watch.next(0)
          yield* other.next(0)

          // Changed before `next` is called: it returns at once.
          yield* sessions.append(id, "a", "one", { maxEvents: 8 })
          const start = Date.now()
          yield* watch.next("10 seconds")
          assert.isBelow(Date.now() - start, 1_000)

          // Waiting, then woken.
          const woken = yield* watch.next("10 seconds").pipe(Effect.timed, Effect.forkChild)
          yield* Effect.sleep("50 millis")
          yield* sessions.closeStream(id, "a")
          const [took] = yield* Fiber.join(woken)
          assert.isBelow(Duration.toMillis(took), 5_000)

          // Another stream's changes do not wake it (it times out); its session's deletion does.
          const [quiet] = yield* other.next("200 millis").pipe(Effect.timed)
          assert.isAtLeast(Duration.toMillis(quiet), 150)
          const byDelete = yield* watch.next("10 seconds").pipe(Effect.forkChild)
          yield* Effect.sleep("50 millis")
          yield* sessions.delete(id)
          yield* Fiber.join(byDelete).pipe(Effect.timeout("2 seconds"))
          yield* other.next("2 seconds").pipe(Effect.timeout("3 seconds"))
        })))
    })
  })
}
