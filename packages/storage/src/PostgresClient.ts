/**
 * The Postgres connection pool (`@effect/sql-pg`) for the scaled-out mode.
 *
 * **Rules**
 *
 * - The pool is bounded: `maxConnections` (`DB_MAX_OPEN_CONNS`, default 15)
 *   is the most this process opens for queries, so `replicas x
 *   maxConnections` stays under Postgres' `max_connections` minus its
 *   reserve (10 x 15 = 150 against 200).
 * - Idle connections close after `idleTimeout` (`DB_IDLE_TIMEOUT`,
 *   default 5 minutes) and every connection is replaced after
 *   `connectionTTL` (`DB_CONN_MAX_LIFETIME`, default 30 minutes), so
 *   failovers and PgBouncer/DNS changes are picked up.
 * - Every LISTEN shares one more connection, outside the pool
 *   (`PgListener.ts`): listeners never hold pooled connections. The deploy
 *   budget counts it: `(replicas + surge) x (maxConnections + 1)`.
 * - Options are plain values (the URL is `Redacted`), so the gateway's
 *   central config can validate the environment once and call `layer`;
 *   `layerConfig` reads the same variables itself.
 *
 * @since 0.1.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as PgConnection from "@effect/sql-pg/PgConnection"
import { Config, Duration, Effect, Layer, type Redacted } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { Notifications } from "./Notifications.ts"
import * as PgListener from "./PgListener.ts"

export interface PostgresOptions {
  /** `DATABASE_URL`, e.g. `postgres://user:pass@host:5432/janus`. */
  readonly url: Redacted.Redacted<string>
  /** `DB_MAX_OPEN_CONNS`: upper bound of the pool (default 15). */
  readonly maxConnections?: number | undefined
  /** Connections kept open when idle (default 1). */
  readonly minConnections?: number | undefined
  /** `DB_IDLE_TIMEOUT`: close connections idle this long (default 5 minutes). */
  readonly idleTimeout?: Duration.Input | undefined
  /** `DB_CONN_MAX_LIFETIME`: replace connections older than this (default 30 minutes). */
  readonly connectionTTL?: Duration.Input | undefined
  /** Give up connecting after this long (default 5 seconds). */
  readonly connectTimeout?: Duration.Input | undefined
  /** Shown in `pg_stat_activity` (default "janus"). */
  readonly applicationName?: string | undefined
}

export const defaults = {
  maxConnections: 15,
  minConnections: 1,
  idleTimeout: "5 minutes",
  connectionTTL: "30 minutes",
  connectTimeout: "5 seconds",
  applicationName: "janus"
} as const

/** The environment variables of the pool, validated by `Config`. */
export const config: Config.Config<PostgresOptions> = Config.all({
  url: Config.Redacted("DATABASE_URL"),
  maxConnections: Config.Int("DB_MAX_OPEN_CONNS").pipe(Config.withDefault(defaults.maxConnections)),
  idleTimeout: Config.Duration("DB_IDLE_TIMEOUT").pipe(
    Config.withDefault(Duration.fromInputUnsafe(defaults.idleTimeout))
  ),
  connectionTTL: Config.Duration("DB_CONN_MAX_LIFETIME").pipe(
    Config.withDefault(Duration.fromInputUnsafe(defaults.connectionTTL))
  )
})

/** `SqlClient` and `PgClient` over a bounded pool, and `Notifications` over one connection beside it. */
export const layer = (
  options: PostgresOptions
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | Notifications, SqlError> => {
  const client = PgClient.layer({
    url: options.url,
    maxConnections: options.maxConnections ?? defaults.maxConnections,
    minConnections: options.minConnections ?? defaults.minConnections,
    idleTimeout: options.idleTimeout ?? defaults.idleTimeout,
    connectionTTL: options.connectionTTL ?? defaults.connectionTTL,
    connectTimeout: options.connectTimeout ?? defaults.connectTimeout,
    applicationName: options.applicationName ?? defaults.applicationName
  })
  const notifications = Layer.effect(
    Notifications,
    PgListener.make(PgConnection.make({
      url: options.url,
      connectTimeout: options.connectTimeout ?? defaults.connectTimeout,
      applicationName: `${options.applicationName ?? defaults.applicationName} listen`
    }))
  )
  return Layer.merge(notifications, client)
}

/** `layer` with options read from `DATABASE_URL`, `DB_MAX_OPEN_CONNS`, `DB_IDLE_TIMEOUT`, `DB_CONN_MAX_LIFETIME`. */
export const layerConfig: Layer.Layer<
  SqlClient.SqlClient | PgClient.PgClient | Notifications,
  SqlError | Config.ConfigError
> = Layer.unwrap(Effect.gen(function*() {
  return layer(yield* config)
}))
