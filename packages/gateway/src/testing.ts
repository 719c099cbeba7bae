/**
 * `@janus/gateway/testing`: a whole gateway for tests, on in-memory PGlite and
 * a real HTTP server on an ephemeral loopback port.
 *
 * `layer()` provides an `HttpClient` whose requests go to that server (paths
 * like `/readyz` work as is), the storage services (to arrange data), and the
 * configuration. Swap any part by providing another Layer: a test of an
 * extension composes Layers rather than mocking.
 *
 * @since 0.1.0
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as StorageTesting from "@janus/storage/testing"
import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { JanusConfig, type JanusSettings } from "./config/JanusConfig.ts"
import { routes } from "./Gateway.ts"

/** The gateway's routes on a test server, over `storage` (default: in-memory PGlite). */
export const layer = (options: {
  readonly config?: Partial<JanusSettings>
  readonly storage?: Layer.Layer<Layer.Success<ReturnType<typeof StorageTesting.layerMemory>>, unknown>
} = {}) =>
  HttpRouter.serve(routes, { disableListenLog: true, disableLogger: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provideMerge(options.storage ?? StorageTesting.layerMemory()),
    Layer.provideMerge(JanusConfig.layerWith(options.config ?? {}))
  )
