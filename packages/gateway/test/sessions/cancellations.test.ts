/**
 * `SqlCancellations`: a cancellation published by one instance reaches every
 * instance on the same database (its own included), and a payload that is
 * not a cancellation is ignored.
 */
import { assert, describe, layer } from "@effect/vitest"
import { layerPostgresOn, layerTestDatabase, requirePostgres } from "@janus/storage/testing"
import { Context, Effect, Layer, Ref, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { CallCancellations, type RelayedCancellation } from "../../src/mcp/Cancellations.ts"
import { SqlCancellations } from "../../src/sessions/index.ts"

const postgres = await requirePostgres()

/** One instance: its own pool and LISTEN connection. */
const instance = Effect.map(
  Layer.build(Layer.provideMerge(SqlCancellations.layer, layerPostgresOn({ maxConnections: 4 }))),
  (context) => ({
    cancellations: Context.get(context, CallCancellations),
    sql: Context.get(context, SqlClient.SqlClient)
  })
)

describe.skipIf(!postgres)("SqlCancellations", () => {
  layer(layerTestDatabase, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("a cancellation published on A is received by B and by A", () =>
      Effect.gen(function*() {
        const a = yield* instance
        const b = yield* instance
        const received = (i: typeof a) =>
          Effect.gen(function*() {
            const seen = yield* Ref.make<ReadonlyArray<RelayedCancellation>>([])
            yield* i.cancellations.received.pipe(
              Stream.runForEach((c) => Ref.update(seen, (all) => [...all, c])),
              Effect.forkScoped
            )
            return seen
          })
        const onA = yield* received(a)
        const onB = yield* received(b)
        const cancellation = { sessionId: "session-1", requestKey: "number:7" }
        // the LISTENs come up in the background: publish (after a payload that is not ours) until B has one
        for (let i = 0; i < 100 && (yield* Ref.get(onB)).length === 0; i++) {
          yield* b.sql`SELECT pg_notify(${SqlCancellations.channel}, 'not json')`
          yield* a.cancellations.publish(cancellation)
          yield* Effect.sleep("100 millis")
        }
        const [gotA, gotB] = [yield* Ref.get(onA), yield* Ref.get(onB)]
        assert.isAbove(gotB.length, 0)
        for (const got of [gotA, gotB]) {
          for (const c of got) assert.deepStrictEqual(c, cancellation)
        }
        assert.isAbove(gotA.length, 0, "the publisher receives its own too")
      }).pipe(Effect.scoped))
  })
})
