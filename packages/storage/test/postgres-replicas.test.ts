/**
 * Several storage instances ("replicas") with separate pools on one Postgres
 * database: change signals across instances, and the ordered event log.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Fiber, Layer, Option, Random, Redacted, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { LOCK_KEY } from "../src/EventLog.ts"
import {
  AdminTokens,
  ChangeFeed,
  ClientTokens,
  ConfigCache,
  Connections,
  EventLog,
  type LoggedEvent,
  McpSessions,
  SecretCache,
  Secrets,
  TokenCache
} from "../src/index.ts"
import { layerPostgresOn, layerTestDatabase, requirePostgres } from "../src/testing.ts"
import { eventually, restInput, session, unique } from "./helpers.ts"

const postgres = await requirePostgres()

/** Builds one instance in the current scope; long TTLs, so only a change signal can explain a fresh read. */
const replica = Effect.map(
  Layer.build(layerPostgresOn({ maxConnections: 4, configCacheTtl: "1 hour", secretCacheTtl: "1 hour" })),
  (context) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, context as Context.Context<any>)
)

describe.skipIf(!postgres)("postgres replicas", () => {
  layer(layerTestDatabase, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("replicas starting at once on an empty database create exactly one initial admin token", () =>
      Effect.gen(function*() {
        const instances = yield* Effect.all([replica, replica, replica])
        const created = yield* Effect.all(
          instances.map((on) => on(AdminTokens.use((a) => a.createInitial("initial admin")))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(created.filter(Option.isSome).length, 1)
        assert.strictEqual(yield* instances[0]!(AdminTokens.use((a) => a.count)), 1)
      }))

    it.effect("a write through one instance purges another instance's caches within 1 s (NOTIFY)", () =>
      Effect.gen(function*() {
        const a = yield* replica
        const b = yield* replica

        // Config: B has a cached snapshot; A adds a connection.
        const before = yield* b(ConfigCache.use((c) => c.snapshot))
        const connection = yield* a(Connections.use((c) => c.create(restInput(unique("api")))))
        const configMs = yield* eventually(
          b(ConfigCache.use((c) => c.snapshot)).pipe(Effect.map((s) => s.connectionById.has(connection.id))),
          1_000
        )
        assert.isFalse(before.connectionById.has(connection.id))

        // Tokens: B has verified (and cached) a token; A revokes it.
        const { plaintext, token } = yield* a(ClientTokens.use((t) => t.create({ name: unique("t") })))
        assert.isTrue(Option.isSome(yield* b(TokenCache.use((t) => t.verify(plaintext)))))
        yield* a(ClientTokens.use((t) => t.revoke(token.id)))
        const tokenMs = yield* eventually(
          b(TokenCache.use((t) => t.verify(plaintext))).pipe(Effect.map(Option.isNone)),
          1_000
        )

        // Secrets: B has the old value cached; A replaces it.
        const name = unique("s")
        yield* a(Secrets.use((s) => s.set(name, Redacted.make("old"))))
        assert.strictEqual(Redacted.value(yield* b(SecretCache.use((s) => s.reveal(name)))), "old")
        yield* a(Secrets.use((s) => s.set(name, Redacted.make("new"))))
        const secretMs = yield* eventually(
          b(SecretCache.use((s) => s.reveal(name))).pipe(Effect.map((v) => Redacted.value(v) === "new")),
          1_000
        )
        yield* Effect.logDebug(`purged after ${configMs} / ${tokenMs} / ${secretMs} ms`)
      }))

    it.effect("another instance's writes appear on this instance's `changes`, its own only once", () =>
      Effect.gen(function*() {
        const a = yield* replica
        const b = yield* replica
        const onB = yield* b(ChangeFeed.use((f) => Effect.succeed(f.changes)))
        const onA = yield* a(ChangeFeed.use((f) => Effect.succeed(f.changes)))
        const seenByB = yield* onB.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild)
        const seenByA = yield* onA.pipe(Stream.take(2), Stream.runCollect, Effect.forkChild)
        yield* Effect.sleep("100 millis")
        const created = yield* a(Connections.use((c) => c.create(restInput(unique("api")))))
        assert.deepStrictEqual(yield* Fiber.join(seenByB).pipe(Effect.timeout("1 second")), [
          { kind: "connection", ids: [created.id] }
        ])
        // A got its own change once (after commit), not a second time from its NOTIFY.
        yield* a(Connections.use((c) => c.delete(created.id)))
        const mine = yield* Fiber.join(seenByA).pipe(Effect.timeout("1 second"))
        assert.deepStrictEqual(mine, [{ kind: "connection", ids: [created.id] }, {
          kind: "connection",
          ids: [created.id]
        }])
      }))

    it.effect("a lost LISTEN connection is re-established, and then every kind is signalled as changed", () =>
      Effect.gen(function*() {
        const a = yield* replica
        const b = yield* replica
        const changes = yield* a(ChangeFeed.use((f) => Effect.succeed(f.changes)))
        const everything = yield* changes.pipe(
          Stream.filter((change) => change.ids.length === 0),
          Stream.take(6),
          Stream.runCollect,
          Effect.forkChild
        )
        yield* Effect.sleep("100 millis")
        const killed = yield* b(SqlClient.SqlClient.use((sql) =>
          sql<{ pid: number }>`
            SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'janus listen'`.pipe(
            Effect.tap((rows) => Effect.forEach(rows, (row) => sql`SELECT pg_terminate_backend(${row.pid})`))
          )
        ))
        assert.strictEqual(killed.length, 2, "one listening connection per instance")
        const kinds = (yield* Fiber.join(everything).pipe(Effect.timeout("5 seconds"))).map((c) => c.kind).sort()
        assert.deepStrictEqual(kinds, [
          "admin_token",
          "client_token",
          "connection",
          "endpoint",
          "secret",
          "virtual_server"
        ])

        // Listening again: B's writes reach A's cache.
        yield* Effect.sleep("200 millis")
        yield* a(ConfigCache.use((c) => c.snapshot))
        const created = yield* b(Connections.use((c) => c.create(restInput(unique("api")))))
        yield* eventually(
          a(ConfigCache.use((c) => c.snapshot)).pipe(Effect.map((s) => s.connectionById.has(created.id))),
          1_000
        )
      }))

    it.effect("mcp sessions: an append on one instance wakes a watcher on another at once (NOTIFY at commit)", () =>
      Effect.gen(function*() {
        const a = yield* replica
        const b = yield* replica
        const listeners = b(SqlClient.SqlClient.use((sql) =>
          sql<{ n: number | bigint }>`
            SELECT count(*) AS n FROM pg_stat_activity
            WHERE datname = current_database() AND query = 'LISTEN "janus_mcp"'`.pipe(
            Effect.map((rows) => Number(rows[0]!.n))
          )
        ))
        assert.strictEqual(yield* listeners, 0, "no LISTEN connection while nobody watches")

        const id = unique("s")
        const now = Date.now()
        yield* a(McpSessions.use((s) => s.create(session(id, now))))
        yield* b(McpSessions.use((s) => s.openStream(id, "x", { maxStreams: 4 })))
        const watch = yield* a(McpSessions.use((s) => s.watch(id, "x")))
        yield* Effect.sleep("300 millis")
        assert.strictEqual(yield* listeners, 1, "one LISTEN once someone watches")
        yield* watch.next(0) // the wake-up of (re)listening

        const woken = yield* watch.next("10 seconds").pipe(Effect.timed, Effect.forkChild)
        yield* Effect.sleep("50 millis")
        yield* b(McpSessions.use((s) => s.append(id, "x", "hello", { maxEvents: 8 })))
        const [took] = yield* Fiber.join(woken)
        assert.isBelow(Duration.toMillis(took), 1_000)
        const page = yield* a(McpSessions.use((s) => s.read(id, "x", 0, 10)))
        assert.deepStrictEqual(page.events, [{ seq: 1, data: "hello" }], "committed when the notification arrives")
      }))

    it.effect("mcp sessions: a session cached by one instance changes there with another instance's setLogLevel, ends with its delete", () =>
      Effect.gen(function*() {
        const a = yield* replica
        const b = yield* replica
        const id = unique("s")
        const now = Date.now()
        yield* a(McpSessions.use((s) => s.create(session(id, now))))
        // B serves the session from its cache: a change behind the stores' backs (no notification) stays unseen.
        let n = 0
        yield* eventually(
          b(Effect.gen(function*() {
            const sessions = yield* McpSessions
            const sql = yield* SqlClient.SqlClient
            yield* sessions.get(id, new Date(now))
            const version = `sneaky-${++n}`
            yield* sql`UPDATE mcp_sessions SET protocol_version = ${version} WHERE id = ${id}`
            const got = Option.getOrThrow(yield* sessions.get(id, new Date(now)))
            return got.protocolVersion !== version
          })).pipe(Effect.orDie),
          10_000
        )
        // A sets the session's log level: B's cached entry goes with A's notification.
        assert.isTrue(yield* a(McpSessions.use((s) => s.setLogLevel(id, "error"))))
        yield* eventually(
          b(McpSessions.use((s) => s.get(id, new Date(now)))).pipe(
            Effect.map((got) => Option.getOrThrow(got).logLevel === "error")
          ),
          5_000
        )
        // A deletes it: B's cached entry goes with A's notification.
        assert.isTrue(yield* a(McpSessions.use((s) => s.delete(id))))
        yield* eventually(b(McpSessions.use((s) => s.get(id, new Date(now)))).pipe(Effect.map(Option.isNone)), 5_000)
      }))

    it.effect(
      "event log: a writer whose transaction holds an id keeps every later writer from committing above it",
      () =>
        Effect.gen(function*() {
          // The rule (EventLog.ts): once a reader has seen id N, no id below N can still commit. Writer A's
          // transaction is held open (a trigger of this test) after its INSERT drew an id; writer B flushes
          // then. With the flush lock, B waits for A; without it, B commits an id above A's first, a
          // client that saw B's id and asks for what came after never gets A's event.
          const a = yield* replica
          const b = yield* replica
          const reader = yield* replica
          // the test's own connections: the trigger, the hold, and what it reads of pg_locks
          const sql = yield* (yield* replica)(Effect.service(SqlClient.SqlClient))
          const HOLD_KEY = 4_242
          yield* sql.unsafe(`
            CREATE OR REPLACE FUNCTION test_hold_event() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_advisory_xact_lock_shared(${HOLD_KEY}); RETURN NEW; END $$`)
          yield* sql.unsafe(`
            CREATE OR REPLACE TRIGGER test_hold_event AFTER INSERT ON broker_event
            FOR EACH ROW WHEN (NEW.topic = 'test.held') EXECUTE FUNCTION test_hold_event()`)
          // the test holds HOLD_KEY in a transaction of its own until `release` is done
          const release = yield* Deferred.make<void>()
          const holding = yield* Deferred.make<void>()
          const holder = yield* sql.withTransaction(
            sql`SELECT pg_advisory_xact_lock(${HOLD_KEY})`.pipe(
              Effect.andThen(Deferred.succeed(holding, undefined)),
              Effect.andThen(Deferred.await(release))
            )
          ).pipe(Effect.forkChild)
          yield* Deferred.await(holding)

          const waitingOn = (classid: number, objid: number) =>
            sql<{ n: number | bigint }>`
              SELECT count(*) AS n FROM pg_locks
              WHERE locktype = 'advisory' AND NOT granted AND classid = ${classid} AND objid = ${objid}
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.pipe(
              Effect.map((rows) => Number(rows[0]!.n) > 0)
            )
          const visible = (topic: string) =>
            sql<{ n: number | bigint }>`SELECT count(*) AS n FROM broker_event WHERE topic = ${topic}`.pipe(
              Effect.map((rows) => Number(rows[0]!.n))
            )

          // A: its row has drawn an id, and its transaction waits in the trigger
          const flushA = yield* a(
            EventLog.use((log) => Effect.andThen(log.append({ topic: "test.held", data: { writer: "a" } }), log.flush))
          ).pipe(Effect.forkChild)
          yield* eventually(waitingOn(0, HOLD_KEY), 10_000)

          // B: either it waits for the flush lock (LOCK_KEY: classid its high, objid its low 32 bits),
          // or, were nothing serializing flushes, its row commits now
          const flushB = yield* b(
            EventLog.use((log) => Effect.andThen(log.append({ topic: "test.free", data: { writer: "b" } }), log.flush))
          ).pipe(Effect.forkChild)
          yield* eventually(
            Effect.zipWith(
              waitingOn(Math.floor(LOCK_KEY / 2 ** 32), LOCK_KEY % 2 ** 32),
              visible("test.free"),
              (waiting, rows) => waiting || rows > 0
            ),
            10_000
          )

          // a client reads everything committed so far, then asks for what came after
          const lastSeen = yield* reader(EventLog.use((log) => log.latestId))
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(holder)
          yield* Fiber.join(flushA).pipe(Effect.timeout("10 seconds"))
          yield* Fiber.join(flushB).pipe(Effect.timeout("10 seconds"))
          const later = yield* reader(EventLog.use((log) => log.after(lastSeen, 100)))
          assert.deepStrictEqual(
            later.map((event) => event.topic).filter((topic) => topic.startsWith("test.")),
            ["test.held", "test.free"],
            `after(${lastSeen}) must hold A's event, committed after the client had read up to ${lastSeen}`
          )
          yield* sql.unsafe("DROP TRIGGER test_hold_event ON broker_event")
        }),
      { timeout: 60_000 }
    )

    it.effect(
      "event log: 3 writers, 1 reader: every event exactly once, ids strictly increasing, replay agrees; a writer's own stream too",
      () =>
        Effect.gen(function*() {
          const writers = [yield* replica, yield* replica, yield* replica]
          const reader = yield* replica
          const perWriter = 250
          const total = writers.length * perWriter
          const start = yield* reader(EventLog.use((log) => log.latestId))

          const streamed: Array<LoggedEvent> = []
          const committed = yield* reader(EventLog.use((log) => Effect.succeed(log.committed)))
          const streaming = yield* committed.pipe(
            Stream.take(total),
            Stream.runForEach((event) => Effect.sync(() => streamed.push(event))),
            Effect.forkChild
          )
          // A writer's own stream: its batches are published from memory, the others' read (see EventLog.ts).
          const writerStreamed: Array<LoggedEvent> = []
          const writerCommitted = yield* writers[0]!(EventLog.use((log) => Effect.succeed(log.committed)))
          const writerStreaming = yield* writerCommitted.pipe(
            Stream.take(total),
            Stream.runForEach((event) => Effect.sync(() => writerStreamed.push(event))),
            Effect.forkChild
          )
          yield* Effect.sleep("100 millis")

          // At random points, a client that has seen up to `lastSeen` asks for what came after.
          const replays: Array<{ readonly lastSeen: number; readonly events: ReadonlyArray<LoggedEvent> }> = []
          const replaying = yield* Effect.gen(function*() {
            while (true) {
              yield* Effect.sleep(`${yield* Random.nextIntBetween(20, 100)} millis`)
              const lastSeen = streamed.at(-1)?.id ?? start
              const events = yield* reader(EventLog.use((log) => log.after(lastSeen, 100_000)))
              replays.push({ lastSeen, events })
            }
          }).pipe(Effect.forkChild)

          // Writers append concurrently and flush at random points besides their own 1 s tick.
          yield* Effect.forEach(writers, (writer, w) =>
            writer(EventLog.use((log) =>
              Effect.gen(function*() {
                for (let i = 0; i < perWriter; i++) {
                  yield* log.append({ topic: "test.event", about: [`writer:${w}`], data: { w, i } })
                  if ((yield* Random.nextIntBetween(0, 20)) === 0) yield* log.flush
                  yield* Effect.sleep(`${yield* Random.nextIntBetween(0, 12)} millis`)
                }
                yield* log.flush
              })
            )), { concurrency: "unbounded", discard: true })

          yield* Fiber.join(streaming).pipe(Effect.timeoutOption("10 seconds"))
          yield* Fiber.join(writerStreaming).pipe(Effect.timeoutOption("10 seconds"))
          yield* Fiber.interrupt(replaying)

          // Every event exactly once, in strictly increasing id order.
          assert.strictEqual(streamed.length, total, "events streamed within 10 s of the last append")
          for (let i = 1; i < streamed.length; i++) assert.isTrue(streamed[i]!.id > streamed[i - 1]!.id)
          const keys = new Set(streamed.map((e) => JSON.stringify(e.data)))
          assert.strictEqual(keys.size, total)
          for (let w = 0; w < writers.length; w++) {
            const mine = streamed.filter((e) => (e.data as { w: number }).w === w).map((e) =>
              (e.data as { i: number }).i
            )
            assert.deepStrictEqual(mine, Array.from({ length: perWriter }, (_, i) => i), `writer ${w} in append order`)
          }

          // Each replay is exactly the stream's next events after its lastSeen: no gap, nothing extra.
          assert.isAbove(replays.length, 3)
          for (const { events, lastSeen } of replays) {
            const expected = streamed.filter((e) => e.id > lastSeen).slice(0, events.length)
            assert.deepStrictEqual(events, expected)
          }
          assert.deepStrictEqual(yield* reader(EventLog.use((log) => log.after(start, 100_000))), streamed)
          assert.deepStrictEqual(writerStreamed, streamed, "the writer's own stream is the reader's")
        }),
      { timeout: 60_000 }
    )
  })
})
