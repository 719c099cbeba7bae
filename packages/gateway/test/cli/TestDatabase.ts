/**
 * A Postgres database of a describe block's own for `janus` runs: created
 * before its tests and dropped (`WITH (FORCE)`) after, when Postgres is
 * available (`StorageTesting.requirePostgres` decides; in CI its absence is a
 * failure, not a skip). Call it inside the `describe`.
 */
import { afterAll, beforeAll } from "@effect/vitest"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"

export const testDatabase = (available: boolean): { readonly url: () => string } => {
  let scope: Scope.Closeable | undefined
  let url = ""
  beforeAll(async () => {
    if (!available) return
    scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(StorageTesting.layerTestDatabase, scope))
    url = Redacted.value(Context.get(context, StorageTesting.TestDatabase).url)
  }, 60_000)
  afterAll(async () => {
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  })
  return { url: () => url }
}
