/**
 * Two gateway instances (separate pools) on one Postgres database, each with
 * its own `SqlSessionStore`: a 2025-era session and its streams are served by
 * either, and a stream resumes on the other with Last-Event-ID.
 *
 * Followers poll only every 30 s here, so anything arriving within a second
 * was woken by NOTIFY.
 */
import { assert, describe, layer } from "@effect/vitest"
import { layerPostgresOn, layerTestDatabase, requirePostgres } from "@janus/storage/testing"
import { Clock, Context, Effect, Fiber, Layer, Option, Random, Stream } from "effect"
import {
  type McpSession,
  McpSessionStore,
  newSessionId,
  newStreamId,
  type StoredEvent
} from "../../src/mcp/Sessions.ts"
import { SqlSessionStore } from "../../src/sessions/index.ts"

const postgres = await requirePostgres()

/** One instance: its own pool, listeners and store, in the current scope. */
const instance = Effect.map(
  Layer.build(
    SqlSessionStore.layer({ pollInterval: "30 seconds" }).pipe(
      Layer.provide(layerPostgresOn({ maxConnections: 4 }))
    )
  ),
  (context) => Context.get(context, McpSessionStore)
)

const newSession = Effect.map(Clock.currentTimeMillis, (now): McpSession => ({
  id: newSessionId(),
  ownerId: "token:alice",
  protocolVersion: "2025-06-18",
  clientInfo: { name: "client", version: "2.0.0" },
  clientCapabilities: { elicitation: {} },
  createdAt: now,
  lastSeenAt: now
}))

interface Arrival {
  readonly event: StoredEvent
  readonly at: number
}

/** Runs `stream` in the background, recording each event with its arrival time. */
const follow = (stream: Stream.Stream<StoredEvent, unknown>) =>
  Effect.gen(function*() {
    const arrivals: Array<Arrival> = []
    const fiber = yield* stream.pipe(
      Stream.runForEach((event) => Effect.sync(() => arrivals.push({ event, at: Date.now() }))),
      Effect.forkChild
    )
    return { arrivals, fiber }
  })

const until = (check: () => boolean, ms: number) =>
  Effect.gen(function*() {
    const start = Date.now()
    while (!check()) {
      if (Date.now() - start > ms) return yield* Effect.die(new Error(`condition not met within ${ms} ms`))
      yield* Effect.sleep("10 millis")
    }
  })

describe.skipIf(!postgres)("SqlSessionStore on two instances (Postgres)", () => {
  layer(layerTestDatabase, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("a session created on A is found on B; B's touch and delete are seen by A", () =>
      Effect.gen(function*() {
        const a = yield* instance
        const b = yield* instance
        const session = yield* newSession
        yield* a.create(session)
        assert.deepStrictEqual(Option.getOrThrow(yield* b.get(session.id)), session)
        yield* b.touch(session.id, session.lastSeenAt + 10_000)
        assert.strictEqual(Option.getOrThrow(yield* a.get(session.id)).lastSeenAt, session.lastSeenAt + 10_000)
        yield* b.delete(session.id)
        assert.isTrue(Option.isNone(yield* a.get(session.id)))
      }))

    it.effect("a stream opened on A and appended on B is replayed on A live, in order, exactly once", () =>
      Effect.gen(function*() {
        const a = yield* instance
        const b = yield* instance
        const session = yield* newSession
        yield* a.create(session)
        const streamId = newStreamId()
        assert.strictEqual(yield* a.openStream(session.id, streamId), 0)
        assert.strictEqual(yield* b.append(session.id, streamId, "before-replay"), 1)

        const { arrivals, fiber } = yield* follow(yield* a.replay(session.id, streamId, 0))
        yield* until(() => arrivals.length === 1, 2_000)

        const sent: Array<{ readonly seq: number; readonly at: number }> = []
        for (let i = 2; i <= 40; i++) {
          const at = Date.now()
          sent.push({ seq: yield* b.append(session.id, streamId, JSON.stringify({ i })), at })
          yield* Effect.sleep(`${yield* Random.nextIntBetween(0, 15)} millis`)
        }
        // Live: the early ones arrived while B was still appending.
        assert.isAbove(arrivals.length, 1)
        yield* until(() => arrivals.length === 40, 2_000)
        assert.isTrue(
          arrivals.length > 1 && arrivals[1]!.at < sent[sent.length - 1]!.at,
          "arrived before the last append"
        )
        yield* b.closeStream(session.id, streamId)
        yield* Fiber.join(fiber).pipe(Effect.timeout("2 seconds"))

        assert.deepStrictEqual(arrivals.map((x) => x.event.seq), Array.from({ length: 40 }, (_, i) => i + 1))
        assert.deepStrictEqual(
          arrivals.slice(1).map((x) => x.event.data),
          Array.from({ length: 39 }, (_, i) => JSON.stringify({ i: i + 2 }))
        )
        const latencies = sent.map(({ at, seq }) => arrivals.find((x) => x.event.seq === seq)!.at - at)
        assert.isBelow(Math.max(...latencies), 1_000, `woken by NOTIFY, not by the 30 s poll: ${latencies}`)
      }))

    it.effect("Last-Event-ID on the other instance replays exactly the missed messages, then follows", () =>
      Effect.gen(function*() {
        const a = yield* instance
        const b = yield* instance
        const session = yield* newSession
        yield* a.create(session)
        const streamId = newStreamId()
        yield* a.openStream(session.id, streamId)
        for (let i = 1; i <= 10; i++) yield* a.append(session.id, streamId, `m${i}`)

        // The client read up to seq 4 from A, then its connection dropped.
        const seen = yield* Stream.runCollect(Stream.take(yield* a.replay(session.id, streamId, 0), 4))
        assert.deepStrictEqual(seen.map((e) => e.seq), [1, 2, 3, 4])

        // It reconnects to B with Last-Event-ID <stream>.4; A keeps producing.
        const resumed = yield* follow(yield* b.replay(session.id, streamId, 4))
        yield* until(() => resumed.arrivals.length === 6, 2_000)
        yield* a.append(session.id, streamId, "m11")
        yield* a.append(session.id, streamId, "m12")
        yield* until(() => resumed.arrivals.length === 8, 1_000)
        yield* a.closeStream(session.id, streamId)
        yield* Fiber.join(resumed.fiber).pipe(Effect.timeout("2 seconds"))
        assert.deepStrictEqual(
          resumed.arrivals.map((x) => [x.event.seq, x.event.data]),
          Array.from({ length: 8 }, (_, i) => [i + 5, `m${i + 5}`])
        )
      }))

    it.effect("delete on B ends A's replay stream at once", () =>
      Effect.gen(function*() {
        const a = yield* instance
        const b = yield* instance
        const session = yield* newSession
        yield* a.create(session)
        yield* a.openStream(session.id, "standalone")
        const { arrivals, fiber } = yield* follow(yield* a.replay(session.id, "standalone", 0))
        yield* b.append(session.id, "standalone", "list_changed")
        yield* until(() => arrivals.length === 1, 1_000)
        const start = Date.now()
        yield* b.delete(session.id)
        yield* Fiber.join(fiber).pipe(Effect.timeout("2 seconds"))
        assert.isBelow(Date.now() - start, 1_000, "ended by NOTIFY, not by the 30 s poll")
        assert.deepStrictEqual(arrivals.map((x) => x.event.data), ["list_changed"])
        assert.strictEqual((yield* Effect.flip(a.replay(session.id, "standalone", 0)))._tag, "UnknownStream")
      }))

    it.effect("concurrent appends from both instances get unique, gapless seqs, replayed in order", () =>
      Effect.gen(function*() {
        const a = yield* instance
        const b = yield* instance
        const session = yield* newSession
        yield* a.create(session)
        const streamId = newStreamId()
        yield* a.openStream(session.id, streamId)
        const seqs = yield* Effect.forEach(
          Array.from({ length: 60 }, (_, i) => i),
          (i) => (i % 2 === 0 ? a : b).append(session.id, streamId, `x${i}`),
          { concurrency: 8 }
        )
        assert.deepStrictEqual([...seqs].sort((x, y) => x - y), Array.from({ length: 60 }, (_, i) => i + 1))
        yield* b.closeStream(session.id, streamId)
        const kept = yield* Stream.runCollect(yield* a.replay(session.id, streamId, 0))
        assert.deepStrictEqual(kept.map((e) => e.seq), Array.from({ length: 60 }, (_, i) => i + 1))
      }))
  })
})
