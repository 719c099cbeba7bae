/**
 * The whole gateway as Layers: routes, the HTTP server, and the storage they
 * run on. `bin.ts` launches `layer`; tests compose `routes` with a test server
 * and an in-memory storage (see `testing.ts`).
 *
 * @since 0.1.0
 */
import { NodeHttpServer } from "@effect/platform-node"
import type { Storage } from "@janus/storage"
import { Duration, Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { JanusConfig } from "./config/JanusConfig.ts"
import { HealthRoutes } from "./http/Health.ts"
import { StorageLive } from "./StorageLive.ts"

/** Every route of the gateway. Requires the storage services. */
export const routes = Layer.mergeAll(HealthRoutes)

/** The Node HTTP server on JANUS_HOST:JANUS_PORT. */
export const ServerLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  return NodeHttpServer.layer(createServer, {
    host: config.JANUS_HOST,
    port: config.JANUS_PORT,
    gracefulShutdownTimeout: Duration.toMillis(config.JANUS_SHUTDOWN_TIMEOUT)
  })
}))

/** What starting the gateway can fail with before it serves a request. */
export type StartError = Storage.StorageStartError | Layer.Error<typeof ServerLive> | Layer.Error<typeof StorageLive>

/** The gateway serving HTTP, given its configuration. */
export const layer: Layer.Layer<
  Layer.Success<typeof ServerLive> | Layer.Success<typeof StorageLive>,
  StartError,
  JanusConfig
> = HttpRouter.serve(routes, { disableListenLog: true, disableLogger: true }).pipe(
  Layer.provideMerge(ServerLive),
  Layer.provideMerge(StorageLive)
)
