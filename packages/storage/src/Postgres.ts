/**
 * The Postgres storage: the system of record shared by N stateless replicas.
 *
 * **Rules**
 *
 * - The pool is bounded (see `PostgresClient.ts`): `DB_MAX_OPEN_CONNS`
 *   (default 15) per replica for queries; every listener (change feed, event
 *   log, MCP sessions, relayed cancellations) shares one more connection
 *   beside it (`PgListener.ts`).
 * - The master key is required (`JANUS_MASTER_KEY`); previous keys
 *   (`JANUS_MASTER_KEY_PREVIOUS`, comma-separated) still open secrets sealed
 *   before a rotation.
 * - It provides the same services as the embedded layer (`Storage`); writes on
 *   any replica purge every replica's caches through LISTEN/NOTIFY within a
 *   second.
 *
 * @since 0.1.0
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import { Config, Duration, Effect, Layer, Option, Redacted } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import * as CacheSettings from "./CacheSettings.ts"
import type { InvalidMasterKey } from "./Errors.ts"
import { MasterKey } from "./MasterKey.ts"
import type { Notifications } from "./Notifications.ts"
import * as PostgresClient from "./PostgresClient.ts"
import { layerServices, type Storage, type StorageStartError } from "./Storage.ts"

export interface PostgresStorageOptions extends PostgresClient.PostgresOptions {
  /** `JANUS_MASTER_KEY`: base64 of 32 bytes. */
  readonly masterKey: Redacted.Redacted<string>
  /** `JANUS_MASTER_KEY_PREVIOUS`: keys that still open secrets sealed before a rotation. */
  readonly previousMasterKeys?: ReadonlyArray<Redacted.Redacted<string>> | undefined
  /** `CONFIG_CACHE_TTL` (default 5 seconds). */
  readonly configCacheTtl?: Duration.Input | undefined
  /** `SECRET_CACHE_TTL` (default 30 seconds). */
  readonly secretCacheTtl?: Duration.Input | undefined
}

export type PostgresServices = Storage | SqlClient.SqlClient | PgClient.PgClient | Notifications | MasterKey

/** The Postgres storage from plain options. */
export const layer = (
  options: PostgresStorageOptions
): Layer.Layer<PostgresServices, StorageStartError | InvalidMasterKey> =>
  // `fresh`: every call is its own instance (pool, caches, listeners), although the service layers inside
  // are shared values that one memo map would otherwise build once.
  Layer.fresh(layerServices.pipe(
    Layer.provideMerge(Layer.merge(
      PostgresClient.layer(options),
      MasterKey.layer({ key: options.masterKey, previous: options.previousMasterKeys })
    )),
    Layer.provide(Layer.succeed(CacheSettings.CacheSettings, CacheSettings.make(options)))
  ))

/** The environment variables of this layer, validated by `Config`. */
export const config: Config.Config<PostgresStorageOptions> = Config.all({
  pool: PostgresClient.config,
  masterKey: Config.Redacted("JANUS_MASTER_KEY"),
  previous: Config.option(Config.String("JANUS_MASTER_KEY_PREVIOUS")),
  ttls: CacheSettings.config
}).pipe(Config.map(({ masterKey, pool, previous, ttls }) => ({
  ...pool,
  masterKey,
  previousMasterKeys: Option.match(previous, {
    onNone: () => [],
    onSome: (list) =>
      list.split(",").map((key) => key.trim()).filter((key) => key !== "").map((key) => Redacted.make(key))
  }),
  configCacheTtl: ttls.config,
  secretCacheTtl: ttls.secrets
})))

/** `layer` with options read through `Config`. */
export const layerConfig: Layer.Layer<
  PostgresServices,
  StorageStartError | InvalidMasterKey | Config.ConfigError
> = Layer.unwrap(Effect.gen(function*() {
  return layer(yield* config)
}))
