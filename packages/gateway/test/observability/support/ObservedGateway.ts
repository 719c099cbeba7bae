/**
 * The observed gateway for these tests: since the observability recipe is
 * wired into `Gateway.ts`, this is the real composition (`layerOn`) and the
 * test Layer, re-exported under the names the tests use.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { JanusConfig } from "../../../src/config/JanusConfig.ts"
import { layerOn } from "../../../src/Gateway.ts"
import { layer } from "../../../src/testing.ts"

export { layer, layerOn }

/** A plain Node server (no hardening limits) on JANUS_HOST:JANUS_PORT, as the drain test's process uses. */
export const ServerLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  return NodeHttpServer.layer(createServer, {
    host: config.JANUS_HOST,
    port: config.JANUS_PORT,
    gracefulShutdownTimeout: "1 second"
  })
}))
