/**
 * The observed gateway for these tests: since the observability recipe is
 * wired into `Gateway.ts`, this is the real composition (`layerOn`) and the
 * test Layer, re-exported under the names the tests use.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Connections, Endpoints, Secrets } from "@janus/storage"
import { Effect, Layer, Redacted } from "effect"
import { createServer } from "node:http"
import { JanusConfig } from "../../../src/config/JanusConfig.ts"
import { layerOn } from "../../../src/Gateway.ts"
import { layer } from "../../../src/testing.ts"
import * as Downstream from "../../support/Downstream.ts"

export { layer, layerOn }

/** A plain Node server (no hardening limits) on JANUS_HOST:JANUS_PORT, as the drain test's process uses. */
export const layerServer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  return NodeHttpServer.layer(createServer, {
    host: config.JANUS_HOST,
    port: config.JANUS_PORT,
    gracefulShutdownTimeout: "1 second"
  })
}))

/**
 * The `pets` connection to the test downstream and its `get_pet` tool
 * (`GET /pets/{id}`); with `secret`, the connection sends it as a bearer
 * token (stored as the secret `pets-key`).
 */
export const seedPets = (secret?: string) =>
  Effect.gen(function*() {
    const downstream = yield* Downstream.Downstream
    if (secret !== undefined) yield* (yield* Secrets).set("pets-key", Redacted.make(secret))
    const pets = yield* (yield* Connections).create({
      kind: "rest",
      name: "pets",
      baseUrl: downstream.url,
      ...(secret === undefined ? {} : { auth: { scheme: "bearer" as const, secret: "pets-key" } }),
      egressAllowList: ["127.0.0.1"]
    })
    yield* (yield* Endpoints).create({
      connectionId: pets.id,
      name: "get_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path" },
      inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] }
    })
  })
