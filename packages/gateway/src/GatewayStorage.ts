/**
 * Chooses the storage from the configuration: Postgres when `DATABASE_URL`
 * is set, otherwise the embedded database under `JANUS_HOME`.
 *
 * Both give the same services; the gateway never asks which one it has.
 *
 * @since 0.1.0
 */
import { AuditLogSettings, Embedded, MasterKey, type Notifications, Postgres, type Storage } from "@janus/storage"
import { Effect, Layer, Option } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import * as Path from "node:path"
import { JanusConfig } from "./config/JanusConfig.ts"
import * as StdioAllowList from "./federation/StdioAllowList.ts"

/** `Notifications` too: cross-replica signals of the gateway's own (e.g. `sessions/SqlCancellations.ts`). */
export type StorageServices = Storage.Storage | SqlClient.SqlClient | Notifications | MasterKey

/** Where the data lives, for the start-up message. */
export const describeStorage = (config: JanusConfig["Service"]): string =>
  Option.match(config.DATABASE_URL, {
    onNone: () => {
      const home = Path.resolve(config.JANUS_HOME)
      return `embedded database in ${Path.join(home, "data")} (master key ${Path.join(home, "master.key")})`
    },
    onSome: () => "Postgres (DATABASE_URL)"
  })

export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  const ttls = { configCacheTtl: config.CONFIG_CACHE_TTL, secretCacheTtl: config.SECRET_CACHE_TTL }
  return Option.match(config.DATABASE_URL, {
    onNone: (): Layer.Layer<StorageServices, Layer.Error<ReturnType<typeof Embedded.layer>>> =>
      Embedded.layer({
        janusDir: config.JANUS_HOME,
        masterKey: Option.getOrUndefined(config.JANUS_MASTER_KEY),
        ...ttls
      }),
    onSome: (url): Layer.Layer<StorageServices, Layer.Error<ReturnType<typeof Postgres.layer>>> =>
      Postgres.layer({
        url,
        maxConnections: config.DB_MAX_OPEN_CONNS,
        idleTimeout: config.DB_IDLE_TIMEOUT,
        connectionTTL: config.DB_CONN_MAX_LIFETIME,
        // JanusConfig refuses DATABASE_URL without JANUS_MASTER_KEY, so this is present.
        masterKey: Option.getOrThrow(config.JANUS_MASTER_KEY),
        previousMasterKeys: config.JANUS_MASTER_KEY_PREVIOUS,
        ...ttls
      })
  })
  // stdio connections are checked against JANUS_STDIO_COMMANDS (the CLI writes through this storage too)
})).pipe(
  Layer.provide(StdioAllowList.layer),
  // AUDIT_DURABILITY: whether a call waits for its audit row's commit
  Layer.provide(Layer.effect(
    AuditLogSettings,
    Effect.map(Effect.service(JanusConfig), (config) => ({ durability: config.AUDIT_DURABILITY }))
  ))
)
