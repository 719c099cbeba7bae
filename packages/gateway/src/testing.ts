/**
 * `@janus/gateway/testing`: a whole gateway for tests, on in-memory PGlite and
 * a real HTTP server on an ephemeral loopback port.
 *
 * `layer()` provides an `HttpClient` whose requests go to that server (paths
 * like `/readyz` work as is), the storage services (to arrange data), the
 * gateway's services and the configuration. Swap any part by providing
 * another Layer: a test of an extension composes Layers rather than mocking.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as StorageTesting from "@janus/storage/testing"
import { Layer } from "effect"
import { FetchHttpClient, type HttpClient, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { JanusConfig, type JanusSettings } from "./config/JanusConfig.ts"
import { layerOn, type services } from "./Gateway.ts"
import type { StorageServices } from "./GatewayStorage.ts"
import * as Hardening from "./http/Hardening.ts"
import type { McpHttp } from "./mcp/index.ts"
import type { Drain } from "./observability/index.ts"

/**
 * `NodeHttpServer.layerTest`, but bound to 127.0.0.1: tests send traffic to
 * loopback only, and clients that insist on a loopback URL (the conformance
 * suite's DNS-rebinding checks) get one.
 */
const TestServer = HttpServer.layerTestClient.pipe(
  Layer.provide(
    Layer.fresh(FetchHttpClient.layer).pipe(
      Layer.provide(Layer.succeed(FetchHttpClient.RequestInit)({ keepalive: false }))
    )
  ),
  Layer.provideMerge(
    NodeHttpServer.layer(() => Hardening.keepDuplicateCredentials(createServer()), { port: 0, host: "127.0.0.1" })
  )
)

/** Everything `layer` provides. */
export type TestGateway =
  | HttpClient.HttpClient
  | HttpServer.HttpServer
  | StorageServices
  | Layer.Success<typeof services>
  | Drain.Drain
  | JanusConfig

/** The gateway on a test server, over `storage` (default: in-memory PGlite). */
export const layer = (options: {
  readonly config?: Partial<JanusSettings>
  readonly storage?: Layer.Layer<StorageServices, unknown>
  readonly mcp?: Partial<McpHttp.McpHttpOptions>
  /** Extra services under the gateway's, e.g. an OAuth layer trusting a test issuer. */
  readonly extra?: Layer.Layer<any, unknown, never>
} = {}): Layer.Layer<TestGateway, unknown> =>
  layerOn({
    server: TestServer,
    storage: options.storage ?? StorageTesting.layerMemory(),
    mcp: options.mcp,
    extra: options.extra as Layer.Layer<never, never, never> | undefined
  }).pipe(
    // tests opt in to authentication: most exercise other things as the anonymous caller
    Layer.provideMerge(JanusConfig.layerWith({ JANUS_ALLOW_ANONYMOUS: true, ...options.config }))
  ) as Layer.Layer<TestGateway, unknown>
