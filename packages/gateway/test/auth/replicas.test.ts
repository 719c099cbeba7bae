/**
 * A revoked client token stops working on another Postgres-backed instance
 * within a second: two storage instances on one test database, each with its
 * own Admission; token cache TTLs of an hour, so only the change signal
 * (LISTEN/NOTIFY) can explain it.
 */
import { assert, describe, layer } from "@effect/vitest"
import { ClientTokens } from "@janus/storage"
import { layerPostgresOn, layerTestDatabase, requirePostgres } from "@janus/storage/testing"
import { Context, Effect, Layer, Redacted } from "effect"
import { Admission } from "../../src/auth/index.ts"
import { request, unique } from "./support.ts"

const postgres = await requirePostgres()

/** One instance: its storage (own pool and listener) and its Admission. */
const instance = Effect.gen(function*() {
  const storage = yield* Layer.build(layerPostgresOn({ maxConnections: 4, configCacheTtl: "1 hour" }))
  const admission = yield* Layer.build(
    Admission.layer({ limits: { identity: { rate: 10_000, burst: 10_000 } } }).pipe(
      Layer.provide(Layer.succeedContext(storage))
    )
  )
  return {
    admission: Context.get(admission, Admission),
    run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, storage as Context.Context<any>)
  }
})

describe.skipIf(!postgres)("Admission across Postgres-backed instances", () => {
  layer(layerTestDatabase, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("a token revoked on instance A is refused by instance B within 1 s", () =>
      Effect.gen(function*() {
        const a = yield* instance
        const b = yield* instance
        const { plaintext, token } = yield* a.run(ClientTokens.use((t) => t.create({ name: unique("ci") })))
        const req = request({ token: Redacted.value(plaintext) })

        // B admits it, and has it cached for an hour.
        assert.strictEqual((yield* b.admission.admit(req)).id, `token:${token.id}`)
        assert.strictEqual((yield* b.admission.admit(req)).id, `token:${token.id}`)

        yield* a.run(ClientTokens.use((t) => t.revoke(token.id)))
        const revokedAt = Date.now()
        let elapsed = 0
        while (true) {
          const result = yield* Effect.result(b.admission.admit(req))
          elapsed = Date.now() - revokedAt
          if (result._tag === "Failure") {
            assert.strictEqual(result.failure.status, 401)
            break
          }
          if (elapsed > 5_000) assert.fail("B still admits the revoked token after 5 s")
          yield* Effect.sleep("10 millis")
        }
        console.log(`revoked token refused on instance B after ${elapsed} ms`)
        assert.isBelow(elapsed, 1_000, `refused on B after ${elapsed} ms`)
        // And it stays refused on both.
        assert.strictEqual((yield* Effect.flip(a.admission.admit(req))).status, 401)
        assert.strictEqual((yield* Effect.flip(b.admission.admit(req))).status, 401)
      }))
  })
})
