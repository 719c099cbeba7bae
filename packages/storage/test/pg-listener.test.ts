/**
 * `Notifications` on Postgres (`PgListener.ts`): every LISTEN over one
 * connection outside the pool, opened on the first listener and closed after
 * the last, replaced when it is lost.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Queue, Scope } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { Notifications } from "../src/Notifications.ts"
import * as PostgresClient from "../src/PostgresClient.ts"
import { layerTestDatabase, requirePostgres, TestDatabase } from "../src/testing.ts"

const postgres = await requirePostgres()

/** A pool of ONE connection for queries, and the listener beside it. */
const client = Layer.unwrap(Effect.map(
  Effect.service(TestDatabase),
  (db) =>
    PostgresClient.layer({ url: db.url, maxConnections: 1, minConnections: 1, applicationName: "pg-listener-test" })
))

/** Another session on the same database, to look at the client from outside and to send notifications. */
class Observer extends Context.Service<Observer, PgClient.PgClient>()("test/Observer") {}
const observer = Layer.unwrap(Effect.map(
  Effect.service(TestDatabase),
  (db) =>
    Layer.effect(Observer, Effect.service(PgClient.PgClient)).pipe(
      Layer.provide(PgClient.layer({ url: db.url, maxConnections: 1 }))
    )
))

/** The client's listening backends, seen from the observer. */
const listeningBackends = Effect.gen(function*() {
  const pg = yield* Observer
  const rows = yield* pg<{ pid: number }>`
    SELECT pid FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = 'pg-listener-test listen'`
  return rows.map((row) => row.pid)
})

const notify = (channel: string, payload: string) =>
  Effect.flatMap(Effect.service(Observer), (pg) => pg`SELECT pg_notify(${channel}, ${payload})`)

describe.skipIf(!postgres)("PgListener", () => {
  layer(Layer.mergeAll(client, observer).pipe(Layer.provideMerge(layerTestDatabase)), {
    timeout: 60_000
  })((it) => {
    it.effect("one connection for every channel, outside the pool; none once the last listener leaves", () =>
      Effect.gen(function*() {
        const notifications = yield* Notifications
        const sql = yield* SqlClient.SqlClient
        assert.deepStrictEqual(yield* listeningBackends, [], "nobody listens: no connection")

        const scope = yield* Scope.make()
        const a = yield* notifications.listen("chan_a").pipe(Scope.provide(scope))
        const b1 = yield* notifications.listen("chan_b").pipe(Scope.provide(scope))
        const b2 = yield* notifications.listen("chan_b").pipe(Scope.provide(scope))
        assert.strictEqual((yield* listeningBackends).length, 1, "three listeners, two channels, one connection")
        // the pool's one connection is free for queries while they listen
        const [row] = yield* sql<{ one: number }>`SELECT 1 AS one`.pipe(Effect.timeout("5 seconds"))
        assert.strictEqual(row!.one, 1)

        yield* notify("chan_a", "to a")
        yield* notify("chan_b", "to b")
        assert.strictEqual(yield* Queue.take(a).pipe(Effect.timeout("5 seconds")), "to a")
        assert.strictEqual(yield* Queue.take(b1).pipe(Effect.timeout("5 seconds")), "to b")
        assert.strictEqual(yield* Queue.take(b2).pipe(Effect.timeout("5 seconds")), "to b")
        assert.strictEqual(yield* Queue.size(a), 0, "a channel's listener gets only its channel")

        yield* Scope.close(scope, Exit.void)
        for (let i = 0; i < 50 && (yield* listeningBackends).length > 0; i++) yield* Effect.sleep("20 millis")
        assert.deepStrictEqual(yield* listeningBackends, [], "the last listener gone: the connection closed")
      }))

    it.effect("a lost connection fails every listener's queue; the next listen opens a new one", () =>
      Effect.gen(function*() {
        const notifications = yield* Notifications
        const scope = yield* Scope.make()
        const a = yield* notifications.listen("chan_a").pipe(Scope.provide(scope))
        const b = yield* notifications.listen("chan_b").pipe(Scope.provide(scope))
        const [pid] = yield* listeningBackends
        const pg = yield* Observer
        yield* pg`SELECT pg_terminate_backend(${pid!})`
        const failedA = yield* Effect.flip(Queue.take(a)).pipe(Effect.timeout("5 seconds"))
        const failedB = yield* Effect.flip(Queue.take(b)).pipe(Effect.timeout("5 seconds"))
        assert.strictEqual(failedA._tag, "SqlError")
        assert.strictEqual(failedB._tag, "SqlError")

        // re-listening (as callers do) while the lost connection's listeners are still open
        const again = yield* Effect.scoped(Effect.gen(function*() {
          const queue = yield* notifications.listen("chan_a")
          const backends = yield* listeningBackends
          yield* notify("chan_a", "after")
          return { backends, payload: yield* Queue.take(queue).pipe(Effect.timeout("5 seconds")) }
        }))
        assert.strictEqual(again.payload, "after")
        assert.strictEqual(again.backends.length, 1)
        assert.notStrictEqual(again.backends[0], pid, "a new connection")
        yield* Scope.close(scope, Exit.void)
      }))
  })
})
