/**
 * The in-process snapshot of the gateway's configuration: connections,
 * endpoints and virtual servers, for the hot path's tool resolution.
 *
 * **Rules**
 *
 * - One snapshot, read in one `REPEATABLE READ READ ONLY` transaction so the
 *   three tables agree with each other.
 * - Held for `CONFIG_CACHE_TTL` (default 5 s) at most; purged at once by any
 *   `connection`, `endpoint` or `virtual_server` change signal, local or
 *   remote. A snapshot that was loading when the purge came is not kept.
 * - A failed load is not cached: the next caller tries again.
 * - Built on effect's `Cache` (capacity 1, TTL from the `Exit`).
 *
 * @since 0.1.0
 */
import { Cache, Context, Duration, Effect, Exit, Layer } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { CacheObserver, CacheSettings, observedGet } from "./CacheSettings.ts"
import { ChangeFeed } from "./ChangeFeed.ts"
import { Connections } from "./Connections.ts"
import type { Connection, Endpoint, VirtualServer } from "./Domain.ts"
import { Endpoints } from "./Endpoints.ts"
import { StorageError } from "./Errors.ts"
import { VirtualServers } from "./VirtualServers.ts"

export interface ConfigSnapshot {
  readonly connections: ReadonlyArray<Connection>
  readonly endpoints: ReadonlyArray<Endpoint>
  readonly virtualServers: ReadonlyArray<VirtualServer>
  readonly connectionById: ReadonlyMap<string, Connection>
  readonly connectionByName: ReadonlyMap<string, Connection>
  readonly endpointByName: ReadonlyMap<string, Endpoint>
  readonly virtualServerByName: ReadonlyMap<string, VirtualServer>
}

const configKinds = new Set(["connection", "endpoint", "virtual_server"])

export class ConfigCache extends Context.Service<ConfigCache, {
  /** The current configuration (cached). */
  readonly snapshot: Effect.Effect<ConfigSnapshot, StorageError>
  /** Drops the cached snapshot. */
  readonly invalidate: Effect.Effect<void>
}>()("@janus/storage/ConfigCache") {
  static readonly layer: Layer.Layer<
    ConfigCache,
    never,
    SqlClient.SqlClient | ChangeFeed | Connections | Endpoints | VirtualServers
  > = Layer.effect(
    ConfigCache,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const connections = yield* Connections
      const endpoints = yield* Endpoints
      const virtualServers = yield* VirtualServers
      const feed = yield* ChangeFeed
      const ttl = (yield* CacheSettings).config

      const load = Effect.all([connections.list, endpoints.list(), virtualServers.list]).pipe(
        sql.withTransaction,
        Effect.provideService(SqlClient.BeginTransaction, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
        Effect.mapError((cause) =>
          cause._tag === "StorageError" ? cause : new StorageError({ operation: "configCache.load", cause })
        ),
        Effect.map(([connections, endpoints, virtualServers]): ConfigSnapshot => ({
          connections,
          endpoints,
          virtualServers,
          connectionById: new Map(connections.map((c) => [c.id, c])),
          connectionByName: new Map(connections.map((c) => [c.name, c])),
          endpointByName: new Map(endpoints.map((e) => [e.name, e])),
          virtualServerByName: new Map(virtualServers.map((v) => [v.name, v]))
        }))
      )

      const cache = yield* Cache.makeWith((_: "snapshot") => load, {
        capacity: 1,
        timeToLive: (exit) => Exit.isSuccess(exit) ? ttl : Duration.zero
      })
      const invalidate = Cache.invalidateAll(cache)
      yield* feed.register((change) => configKinds.has(change.kind) ? invalidate : Effect.void)

      const observe = yield* CacheObserver
      return ConfigCache.of({ snapshot: observedGet(cache, "snapshot", "config", observe), invalidate })
    })
  )
}
