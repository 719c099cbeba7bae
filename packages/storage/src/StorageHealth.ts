/**
 * Readiness of the storage: the database answers and is fully migrated.
 *
 * **Rules**
 *
 * - `check` succeeds only when the newest applied migration is the newest
 *   this code knows (`Migrations.latestId`); it fails with
 *   `StorageUnavailable` saying why otherwise, including a database that
 *   does not answer within 2 seconds. The gateway's `/readyz` uses it.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { StorageUnavailable } from "./Errors.ts"
import { toNumber } from "./internal/sql.ts"
import * as Migrations from "./Migrations.ts"

export class StorageHealth extends Context.Service<StorageHealth, {
  readonly check: Effect.Effect<void, StorageUnavailable>
}>()("@janus/storage/StorageHealth") {
  static readonly layer: Layer.Layer<StorageHealth, never, SqlClient.SqlClient> = Layer.effect(
    StorageHealth,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const check = Effect.gen(function*() {
        const exists = yield* sql<{ present: boolean }>`
          SELECT to_regclass(${Migrations.table}) IS NOT NULL AS present`
        if (exists[0]?.present !== true) {
          return yield* new StorageUnavailable({ reason: "no migrations applied (run `janus migrate`)" })
        }
        const rows = yield* sql<{ id: number | bigint | null }>`
          SELECT max(migration_id) AS id FROM ${sql(Migrations.table)}`
        const applied = toNumber(rows[0]?.id ?? 0)
        if (applied < Migrations.latestId) {
          return yield* new StorageUnavailable({
            reason: `database is at migration ${applied}, this version needs ${Migrations.latestId}`
          })
        }
      }).pipe(
        Effect.timeoutOrElse({
          duration: "2 seconds",
          orElse: () => Effect.fail(new StorageUnavailable({ reason: "database did not answer within 2 seconds" }))
        }),
        Effect.catchTag(
          "SqlError",
          (error) => Effect.fail(new StorageUnavailable({ reason: `database error: ${error.message}` }))
        )
      )
      return StorageHealth.of({ check })
    })
  )
}
