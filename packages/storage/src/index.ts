/**
 * `@janus/storage`: what Janus keeps, and how.
 *
 * - Layers: `Embedded.layer` / `Embedded.layerMemory` (PGlite in process) and
 *   `Postgres.layer` / `Postgres.layerConfig` (a bounded `@effect/sql-pg`
 *   pool) give the same services (`Storage`). `Storage.layerServices` builds
 *   them over any `SqlClient` + `Notifications` + `MasterKey`.
 * - Repositories: `Connections`, `Endpoints`, `VirtualServers`,
 *   `ClientTokens`, `AdminTokens`, `Secrets`.
 * - Hot-path caches: `ConfigCache`, `TokenCache`, `SecretCache`, purged by
 *   `ChangeFeed` signals (LISTEN/NOTIFY across instances).
 * - `AuditLog` (batched audit records and the admin query), `McpSessions`
 *   (2025-era MCP sessions and resumable streams shared across replicas).
 * - `EventLog` (the ordered `broker_event` log), `Storable` (what Postgres
 *   can store, for every writer), `Instants` (dates and date-times read
 *   from text, checked against the calendar), `StorageHealth` (readiness),
 *   `Migrations`, `MasterKey`, `SecretBox` (AES-256-GCM and tokens).
 *
 * @since 0.1.0
 */

// Layers and clients
export * as CacheSettings from "./CacheSettings.ts"
export * as Embedded from "./Embedded.ts"
export type { EmbeddedOptions, EmbeddedServices } from "./Embedded.ts"
export * as Migrations from "./Migrations.ts"
export { Notifications } from "./Notifications.ts"
export * as PgliteClient from "./PgliteClient.ts"
export type { PostgresServices, PostgresStorageOptions } from "./Postgres.ts"
export * as Postgres from "./Postgres.ts"
export * as PostgresClient from "./PostgresClient.ts"
export type { StorageStartError } from "./Storage.ts"
export * as Storage from "./Storage.ts"

// Repositories
export { AdminTokens, type CreatedAdminToken } from "./AdminTokens.ts"
export {
  ClientTokens,
  type ClientTokenWriteError,
  type ClientTokenWriteOptions,
  type CreatedClientToken
} from "./ClientTokens.ts"
export { Connections, type ConnectionWriteError, StdioAllowList } from "./Connections.ts"
export { Endpoints, type EndpointWriteError } from "./Endpoints.ts"
export { MAX_SECRET_BYTES, Secrets } from "./Secrets.ts"
export * as StdioEnvironment from "./StdioEnvironment.ts"
export { VirtualServers, type VirtualServerWriteError } from "./VirtualServers.ts"

// Audit log and MCP sessions
export * as AuditChain from "./AuditChain.ts"
export {
  auditDropped,
  type AuditDurability,
  auditLate,
  AuditLog,
  type AuditLogOptions,
  AuditLogSettings
} from "./AuditLog.ts"
export { AUDIT_MAX_PAGE, type AuditPage, AuditQuery } from "./AuditRead.ts"
export * as AuditRows from "./AuditRows.ts"
export { AuditEntry, type AuditInput, AuditKind, AuditOutcome, AuditRecord } from "./AuditRows.ts"
export type { McpSessionRecord, McpStreamEvent, McpStreamPage, McpStreamState } from "./McpSessionRepository.ts"
export { McpSessions } from "./McpSessions.ts"
export type { McpStreamWatch } from "./McpSessionWatch.ts"

// Caches, change signals, event log, health, keys
export { ChangeFeed, type Invalidator } from "./ChangeFeed.ts"
export { ConfigCache, type ConfigSnapshot } from "./ConfigCache.ts"
export * as SecretBox from "./Crypto.ts"
export * as EgressAllowList from "./EgressAllowList.ts"
export {
  type AppendEvent,
  EventLog,
  eventLogDropped,
  EventLogObserver,
  type EventLogObserverShape,
  type EventLogOptions,
  GAP_TOPIC
} from "./EventLog.ts"
export * as Instants from "./Instants.ts"
export { MasterKey } from "./MasterKey.ts"
export * as SchemaPatterns from "./SchemaPatterns.ts"
export { SecretCache } from "./SecretCache.ts"
export * as Storable from "./Storable.ts"
export { StorageHealth } from "./StorageHealth.ts"
export { TokenCache } from "./TokenCache.ts"
export * as Validation from "./Validation.ts"

// Domain types and errors
export * from "./Domain.ts"
export * from "./Errors.ts"
