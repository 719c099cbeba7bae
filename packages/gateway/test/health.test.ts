import { assert, describe, layer } from "@effect/vitest"
import { StorageHealth, StorageUnavailable } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Effect, Layer } from "effect"
import { HttpClient } from "effect/http"
import * as GatewayTesting from "../src/testing.ts"

layer(GatewayTesting.layer(), { timeout: 60_000 })("probes on a migrated database", (it) => {
  it.effect("/healthz answers 200", () =>
    Effect.gen(function*() {
      const response = yield* HttpClient.get("/healthz")
      assert.strictEqual(response.status, 200)
      assert.deepStrictEqual(yield* response.json, { status: "ok" })
    }))

  it.effect("/readyz answers 200 when the database answers and migrations are applied", () =>
    Effect.gen(function*() {
      const response = yield* HttpClient.get("/readyz")
      assert.strictEqual(response.status, 200)
      assert.deepStrictEqual(yield* response.json, { status: "ready" })
    }))
})

describe("readiness when storage is unavailable", () => {
  const down = Layer.succeed(
    StorageHealth,
    StorageHealth.of({ check: Effect.fail(new StorageUnavailable({ reason: "database did not answer within 2 s" })) })
  )
  layer(
    // the later layer's StorageHealth replaces the real one
    GatewayTesting.layer({ storage: Layer.merge(StorageTesting.layerMemory(), down) }),
    { timeout: 60_000 }
  )("", (it) => {
    it.effect("/readyz answers 503 with the reason, /healthz still 200", () =>
      Effect.gen(function*() {
        const ready = yield* HttpClient.get("/readyz")
        assert.strictEqual(ready.status, 503)
        const body = (yield* ready.json) as { status: string; reason: string }
        assert.strictEqual(body.status, "unavailable")
        assert.include(body.reason, "did not answer")
        assert.strictEqual((yield* HttpClient.get("/healthz")).status, 200)
      }))
  })
})
