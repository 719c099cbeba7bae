/**
 * `janus serve` with the observability recipe applied, as a process of its
 * own for the drain test: what `bin.ts` + `cli/Serve.ts` become once the
 * lead applies it (see the observability report).
 *
 * Test-only additions: with `DRAIN_TEST_DOWNSTREAM` set it seeds a
 * connection to that URL with a `slow` tool (GET /slow?ms=), creates an
 * admin token, and prints `TEST_LISTENING <url>` and `TEST_ADMIN_TOKEN
 * <token>` once it serves.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { AdminTokens, Connections, Endpoints } from "@janus/storage"
import { Cause, Console, Effect, Exit, Layer, Redacted, Runtime } from "effect"
import { HttpServer } from "effect/http"
import { JanusConfig } from "../../../src/config/JanusConfig.ts"
import { VERSION } from "../../../src/Gateway.ts"
import * as GatewayStorage from "../../../src/GatewayStorage.ts"
import { Logging, Otlp } from "../../../src/observability/index.ts"
import * as ObservedGateway from "./ObservedGateway.ts"

const seed = Effect.gen(function*() {
  const downstream = process.env.DRAIN_TEST_DOWNSTREAM
  if (downstream === undefined) return
  const connection = yield* (yield* Connections).create({
    kind: "rest",
    name: "slowpoke",
    baseUrl: downstream,
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 60_000,
    retry: { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0 }
  })
  yield* (yield* Endpoints).create({
    connectionId: connection.id,
    name: "slow",
    method: "GET",
    pathTemplate: "/slow",
    arguments: { ms: "query" },
    inputSchema: { type: "object", properties: { ms: { type: "string" } } }
  })
  const admin = yield* (yield* AdminTokens).create({ name: "drain test" })
  yield* Console.log(`TEST_ADMIN_TOKEN ${Redacted.value(admin.plaintext)}`)
})

const announce = Effect.gen(function*() {
  yield* seed
  const server = yield* HttpServer.HttpServer
  yield* Console.log(`TEST_LISTENING ${HttpServer.formatAddress(server.address)}`)
})

const Main = Layer.effectDiscard(announce).pipe(
  Layer.provideMerge(ObservedGateway.layerOn({ server: ObservedGateway.layerServer, storage: GatewayStorage.layer }))
)

Layer.launch(Main).pipe(
  Effect.provide(Otlp.layerConfig(VERSION)),
  Effect.provide(Layer.provideMerge(Logging.layerConfig, JanusConfig.layer)),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({
    teardown: (exit, onExit) =>
      Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
  })
)
