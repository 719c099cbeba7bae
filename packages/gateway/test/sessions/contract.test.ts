/**
 * The `McpSessionStore` contract, run against the in-memory store and the
 * SQL store (PGlite): the same tests, the same expectations.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as StorageTesting from "@janus/storage/testing"
import { Clock, Effect, Fiber, Layer, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import { type McpSession, McpSessionStore, type StoredEvent } from "../../src/mcp/Sessions.ts"
import { SqlSessionStore, type SqlStoreOptions } from "../../src/sessions/index.ts"

let counter = 0
const sessionAt = (now: number, extra: Partial<McpSession> = {}): McpSession => ({
  id: `session-${++counter}-${Math.random().toString(36).slice(2)}`,
  ownerId: "token:alice",
  protocolVersion: "2025-11-25",
  clientInfo: { name: "inspector", version: "1.0.0" },
  clientCapabilities: { sampling: {}, roots: { listChanged: true } },
  createdAt: now,
  lastSeenAt: now,
  ...extra
})
const newSession = (extra: Partial<McpSession> = {}) =>
  Effect.map(Clock.currentTimeMillis, (now) => sessionAt(now, extra))

const pairs = (events: ReadonlyArray<StoredEvent>) => events.map((e) => [e.seq, e.data] as const)

/** Lets other fibers (and the database) make progress, also under the TestClock. */
const settle = (ms = 50) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/**
 * The contract against one store: `base` is built once per suite (the database), `store` gives a fresh store
 * per test over it.
 */
const contract = <R>(
  name: string,
  base: Layer.Layer<R, unknown>,
  store: (options?: SqlStoreOptions) => Layer.Layer<McpSessionStore, never, R>
) =>
  describe(`McpSessionStore contract: ${name}`, () => {
    layer(base, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
      const withStore = <A, E>(effect: Effect.Effect<A, E, McpSessionStore>, options?: SqlStoreOptions) =>
        effect.pipe(Effect.provide(store(options)))

      it.effect("sessions: create, get, touch, delete", () =>
        withStore(Effect.gen(function*() {
          const store = yield* McpSessionStore
          const session = yield* newSession()
          yield* store.create(session)
          assert.deepStrictEqual(Option.getOrThrow(yield* store.get(session.id)), session)
          assert.isTrue(Option.isNone(yield* store.get("no-such-session")))

          const bare = yield* newSession({ clientInfo: undefined, clientCapabilities: {} })
          yield* store.create(bare)
          assert.deepStrictEqual(Option.getOrThrow(yield* store.get(bare.id)), bare)

          yield* store.touch(session.id, session.lastSeenAt + 5_000)
          assert.strictEqual(Option.getOrThrow(yield* store.get(session.id)).lastSeenAt, session.lastSeenAt + 5_000)
          yield* store.touch("no-such-session", session.lastSeenAt)

          yield* store.delete(session.id)
          yield* store.delete(session.id)
          assert.isTrue(Option.isNone(yield* store.get(session.id)))
          assert.isTrue(Option.isSome(yield* store.get(bare.id)))
        })))

      it.effect("streams: open is idempotent and returns the last seq; append counts from 1; close stops appends", () =>
        withStore(Effect.gen(function*() {
          const store = yield* McpSessionStore
          const session = yield* newSession()
          yield* store.create(session)
          assert.strictEqual(yield* store.openStream(session.id, "a"), 0)
          assert.strictEqual(yield* store.openStream("no-such-session", "a"), 0)
          assert.strictEqual(yield* store.append(session.id, "a", "{\"n\":1}"), 1)
          assert.strictEqual(yield* store.append(session.id, "a", "{ \"n\" : 2 }"), 2)
          assert.strictEqual(yield* store.openStream(session.id, "a"), 2)
          assert.strictEqual(yield* store.openStream(session.id, "b"), 0)
          assert.strictEqual(yield* store.append(session.id, "b", "b1"), 1)
          assert.strictEqual(yield* store.append(session.id, "unknown", "x"), 0)
          assert.strictEqual(yield* store.append("no-such-session", "a", "x"), 0)

          yield* store.closeStream(session.id, "a")
          yield* store.closeStream(session.id, "a")
          yield* store.closeStream(session.id, "unknown")
          assert.strictEqual(yield* store.append(session.id, "a", "late"), 0)
          // A closed stream replays what it has (exact text), then ends.
          const replay = yield* store.replay(session.id, "a", 0)
          assert.deepStrictEqual(pairs(yield* Stream.runCollect(replay)), [[1, "{\"n\":1}"], [2, "{ \"n\" : 2 }"]])
        })))

      it.effect("replay: exactly the events after afterSeq, of that stream only, then live ones until closed", () =>
        withStore(Effect.gen(function*() {
          const store = yield* McpSessionStore
          const session = yield* newSession()
          yield* store.create(session)
          yield* store.openStream(session.id, "a")
          yield* store.openStream(session.id, "b")
          for (const data of ["a1", "a2", "a3"]) yield* store.append(session.id, "a", data)
          yield* store.append(session.id, "b", "b1")
          const replay = yield* store.replay(session.id, "a", 1)
          const received: Array<StoredEvent> = []
          const fiber = yield* Stream.runForEach(replay, (event) => Effect.sync(() => received.push(event))).pipe(
            Effect.forkChild
          )
          yield* Effect.sleep("50 millis")
          assert.deepStrictEqual(pairs(received), [[2, "a2"], [3, "a3"]])
          yield* store.append(session.id, "a", "a4")
          yield* store.append(session.id, "b", "b2")
          yield* Effect.sleep("50 millis")
          assert.deepStrictEqual(pairs(received), [[2, "a2"], [3, "a3"], [4, "a4"]], "live, before the close")
          yield* store.append(session.id, "a", "a5")
          yield* store.closeStream(session.id, "a")
          yield* Fiber.join(fiber).pipe(Effect.timeout("2 seconds"))
          assert.deepStrictEqual(pairs(received), [[2, "a2"], [3, "a3"], [4, "a4"], [5, "a5"]])

          // After the last event: nothing more, and a closed stream ends at once.
          assert.deepStrictEqual(yield* Stream.runCollect(yield* store.replay(session.id, "a", 5)), [])
          // Unknown streams fail up front.
          assert.strictEqual((yield* Effect.flip(store.replay(session.id, "nope", 0)))._tag, "UnknownStream")
          assert.strictEqual((yield* Effect.flip(store.replay("no-such-session", "a", 0)))._tag, "UnknownStream")
        })))

      it.effect("replay of a never-closed stream waits for appends; deleting the session ends it", () =>
        withStore(Effect.gen(function*() {
          const store = yield* McpSessionStore
          const session = yield* newSession()
          yield* store.create(session)
          yield* store.openStream(session.id, "standalone")
          const fiber = yield* Stream.runCollect(yield* store.replay(session.id, "standalone", 0)).pipe(
            Effect.forkChild
          )
          yield* Effect.sleep("50 millis")
          yield* store.append(session.id, "standalone", "n1")
          yield* Effect.sleep("50 millis")
          yield* store.delete(session.id)
          const events = yield* Fiber.join(fiber).pipe(Effect.timeout("2 seconds"))
          assert.deepStrictEqual(pairs(events), [[1, "n1"]])
          assert.strictEqual((yield* Effect.flip(store.replay(session.id, "standalone", 0)))._tag, "UnknownStream")
        })))

      it.effect("caps: a stream keeps its last maxEventsPerStream events", () =>
        withStore(
          Effect.gen(function*() {
            const store = yield* McpSessionStore
            const session = yield* newSession()
            yield* store.create(session)
            yield* store.openStream(session.id, "a")
            for (let i = 1; i <= 7; i++) yield* store.append(session.id, "a", `m${i}`)
            yield* store.closeStream(session.id, "a")
            const all = yield* Stream.runCollect(yield* store.replay(session.id, "a", 0))
            assert.deepStrictEqual(pairs(all), [[5, "m5"], [6, "m6"], [7, "m7"]])
            const after = yield* Stream.runCollect(yield* store.replay(session.id, "a", 5))
            assert.deepStrictEqual(pairs(after), [[6, "m6"], [7, "m7"]])
          }),
          { maxEventsPerStream: 3 }
        ))

      it.effect("caps: a session keeps its last maxStreamsPerSession streams; an evicted one ends its replay", () =>
        withStore(
          Effect.gen(function*() {
            const store = yield* McpSessionStore
            const session = yield* newSession()
            yield* store.create(session)
            yield* store.openStream(session.id, "s1")
            yield* store.openStream(session.id, "s2")
            yield* store.append(session.id, "s1", "x")
            const following = yield* Stream.runCollect(yield* store.replay(session.id, "s1", 0)).pipe(Effect.forkChild)
            yield* Effect.sleep("50 millis")
            yield* store.openStream(session.id, "s3")
            const events = yield* Fiber.join(following).pipe(Effect.timeout("2 seconds"))
            assert.deepStrictEqual(pairs(events), [[1, "x"]])
            assert.strictEqual((yield* Effect.flip(store.replay(session.id, "s1", 0)))._tag, "UnknownStream")
            assert.strictEqual(yield* store.append(session.id, "s1", "y"), 0)
            assert.strictEqual(yield* store.append(session.id, "s2", "y"), 1)
            assert.strictEqual(yield* store.append(session.id, "s3", "y"), 1)
          }),
          { maxStreamsPerSession: 2 }
        ))

      it.effect("idle sessions expire after idleTimeout unless touched, ending their replays (TestClock)", () =>
        withStore(
          Effect.gen(function*() {
            const store = yield* McpSessionStore
            yield* settle() // the first sweep has run; the next is 1 s away
            const idle = yield* newSession()
            const active = yield* newSession()
            yield* store.create(idle)
            yield* store.create(active)
            yield* store.openStream(idle.id, "a")
            const following = yield* Stream.runCollect(yield* store.replay(idle.id, "a", 0)).pipe(Effect.forkChild)
            yield* settle()

            for (let second = 1; second <= 7; second++) {
              yield* TestClock.adjust("1 second")
              yield* store.touch(active.id, yield* Clock.currentTimeMillis)
              yield* settle()
              if (second === 3) assert.isTrue(Option.isSome(yield* store.get(idle.id)), "alive within the timeout")
            }
            assert.isTrue(Option.isNone(yield* store.get(idle.id)), "expired")
            assert.isTrue(Option.isSome(yield* store.get(active.id)), "kept alive by touch")
            yield* TestClock.withLive(Fiber.join(following).pipe(Effect.timeout("2 seconds")))
          }),
          { idleTimeout: "4 seconds" }
        ).pipe(Effect.provide(TestClock.layer())))
    })
  })

contract("memory", Layer.empty, (options) => McpSessionStore.layerMemory(options))
contract("sql (pglite)", StorageTesting.layerMemory(), (options) => SqlSessionStore.layer(options))
