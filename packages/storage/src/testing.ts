/**
 * Test support: storage layers for tests and service checks.
 *
 * **Rules**
 *
 * - `layerMemory` is the embedded storage in memory with a random master key,
 *   started from a migrated snapshot when the test run made one.
 * - `layerTestDatabase` creates a fresh database `janus_test_<random>` on the
 *   test Postgres (`JANUS_TEST_DATABASE_URL`, default 127.0.0.1:5432 as
 *   `postgres`) and drops it (`WITH (FORCE)`) when its scope closes;
 *   `layerPostgres` is the Postgres storage, migrated, on such a database.
 * - `requirePostgres` / `requireRedis`: in CI a missing service fails the
 *   run; elsewhere the suite is skipped with the reason printed.
 *
 * @since 0.1.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Effect, Layer, Redacted } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { randomBytes } from "node:crypto"
import * as SecretBox from "./Crypto.ts"
import * as Embedded from "./Embedded.ts"
import type { InvalidMasterKey } from "./Errors.ts"
import * as Postgres from "./Postgres.ts"
import type { StorageStartError } from "./Storage.ts"
import { postgresAdminUrl } from "./testing/Services.ts"
import * as Snapshot from "./testing/Snapshot.ts"

export { postgresAdminUrl, redisUrl, requirePostgres, requireRedis } from "./testing/Services.ts"

/**
 * The embedded storage in memory with a random master key, started from the
 * migrated snapshot named by `JANUS_TEST_PGLITE_SNAPSHOT` when it is set (vitest's
 * global setup sets it; see `testing/Snapshot`).
 */
export const layerMemory = (options: Parameters<typeof Embedded.layerMemory>[0] = {}) =>
  Embedded.layerMemory({ snapshot: process.env[Snapshot.envVar], ...options })

/** A database created for this test run. */
export class TestDatabase extends Context.Service<TestDatabase, {
  readonly name: string
  readonly url: Redacted.Redacted<string>
}>()("@janus/storage/testing/TestDatabase") {}

const withAdmin = <A>(f: (sql: PgClient.PgClient) => Effect.Effect<A, SqlError>) =>
  Effect.flatMap(Effect.service(PgClient.PgClient), f).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(postgresAdminUrl()), maxConnections: 1 }))
  )

/** Creates `janus_test_<random>` and drops it when the scope closes. */
export const layerTestDatabase: Layer.Layer<TestDatabase, SqlError> = Layer.effect(
  TestDatabase,
  Effect.acquireRelease(
    Effect.gen(function*() {
      const name = `janus_test_${randomBytes(6).toString("hex")}`
      yield* withAdmin((sql) => sql.unsafe(`CREATE DATABASE ${name}`))
      const url = new URL(postgresAdminUrl())
      url.pathname = `/${name}`
      return TestDatabase.of({ name, url: Redacted.make(url.toString()) })
    }),
    ({ name }) => withAdmin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).pipe(Effect.orDie)
  )
)

/** A master key shared by every instance of one test (instances must agree to read each other's secrets). */
export const testMasterKey: Redacted.Redacted<string> = Redacted.make(SecretBox.encodeKey(SecretBox.generateKey()))

/** The Postgres storage on the `TestDatabase` in context (use several for several "replicas"). */
export const layerPostgresOn = (
  options: Partial<Omit<Postgres.PostgresStorageOptions, "url">> = {}
): Layer.Layer<Postgres.PostgresServices, StorageStartError | InvalidMasterKey, TestDatabase> =>
  Layer.unwrap(Effect.map(Effect.service(TestDatabase), (db) =>
    Postgres.layer({
      maxConnections: 4,
      masterKey: testMasterKey,
      ...options,
      url: db.url
    })))

/** The Postgres storage, migrated, on a fresh test database that is dropped afterwards. */
export const layerPostgres = (
  options: Partial<Omit<Postgres.PostgresStorageOptions, "url">> = {}
): Layer.Layer<Postgres.PostgresServices | TestDatabase, StorageStartError | InvalidMasterKey> =>
  layerPostgresOn(options).pipe(Layer.provideMerge(layerTestDatabase))
