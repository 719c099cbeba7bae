/**
 * Every storage service over one migrated database, whatever the driver.
 *
 * **Rules**
 *
 * - Migrations run before any service is built, so no repository ever sees
 *   an old schema.
 * - The embedded (`Embedded.ts`) and Postgres (`Postgres.ts`) layers give
 *   exactly these services; they differ only in the `SqlClient` /
 *   `Notifications` underneath and where the master key comes from.
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import type { MigrationError } from "effect/sql/Migrator"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { AdminTokens } from "./AdminTokens.ts"
import { AuditLog } from "./AuditLog.ts"
import { ChangeFeed } from "./ChangeFeed.ts"
import { ClientTokens } from "./ClientTokens.ts"
import { ConfigCache } from "./ConfigCache.ts"
import { Connections } from "./Connections.ts"
import { Endpoints } from "./Endpoints.ts"
import type { StorageError } from "./Errors.ts"
import { EventLog } from "./EventLog.ts"
import type { MasterKey } from "./MasterKey.ts"
import { McpSessions } from "./McpSessions.ts"
import * as Migrations from "./Migrations.ts"
import type { Notifications } from "./Notifications.ts"
import { SecretCache } from "./SecretCache.ts"
import { Secrets } from "./Secrets.ts"
import { StorageHealth } from "./StorageHealth.ts"
import { TokenCache } from "./TokenCache.ts"
import { VirtualServers } from "./VirtualServers.ts"

/** The repositories of what operators configure (the admin API's and the CLI's resources). */
export type Repositories = Connections | Endpoints | VirtualServers | ClientTokens | AdminTokens | Secrets

/** The services both storage layers provide. */
export type Storage =
  | Repositories
  | ConfigCache
  | TokenCache
  | SecretCache
  | ChangeFeed
  | StorageHealth
  | EventLog
  | AuditLog
  | McpSessions

/** What building a storage layer can fail with (before any request). */
export type StorageStartError = SqlError | MigrationError | StorageError

const repositories = Layer.mergeAll(
  Connections.layer,
  Endpoints.layer,
  VirtualServers.layer,
  ClientTokens.layer,
  AdminTokens.layer,
  Secrets.layer
)

const caches = Layer.mergeAll(ConfigCache.layer, TokenCache.layer, SecretCache.layer)

/** All services, given a `SqlClient`, its `Notifications` and a `MasterKey`; runs migrations first. */
export const layerServices: Layer.Layer<
  Storage,
  StorageStartError,
  SqlClient.SqlClient | Notifications | MasterKey
> = caches.pipe(
  Layer.provideMerge(repositories),
  Layer.provideMerge(ChangeFeed.layer),
  Layer.merge(StorageHealth.layer),
  Layer.merge(EventLog.layer),
  Layer.merge(AuditLog.layer),
  Layer.merge(McpSessions.layer),
  Layer.provide(Migrations.layer)
)
