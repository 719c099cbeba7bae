/**
 * The `janus` command (loaded by `bin.ts`).
 *
 * @since 0.1.0
 */
// deep imports: the package index also loads NodeRedis (and with it the whole redis client)
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Console, Effect, Exit, Layer, Runtime } from "effect"
import { Command } from "effect/cli"
import { InvalidConfiguration, JanusConfig } from "../config/JanusConfig.ts"
import { Logging } from "../observability/index.ts"
import { audit } from "./Audit.ts"
import { apply, export_ } from "./Configuration.ts"
import { doctor } from "./Doctor.ts"
import { key } from "./MasterKey.ts"
import { migrate } from "./Migrate.ts"
import { connection } from "./resources/Connections.ts"
import { endpoint } from "./resources/Endpoints.ts"
import { openapi } from "./resources/OpenApi.ts"
import { secret } from "./resources/Secrets.ts"
import { token } from "./resources/Tokens.ts"
import { serve } from "./Serve.ts"

const janus = Command.make("janus").pipe(
  Command.withDescription("Janus, the MCP gateway"),
  Command.withSubcommands([
    serve,
    migrate,
    doctor,
    token,
    connection,
    endpoint,
    openapi,
    secret,
    key,
    export_,
    apply,
    audit
  ])
)

janus.pipe(
  Command.run({ version: "0.1.0" }),
  // JSON lines with trace and request ids; secrets and token-shaped values scrubbed
  Effect.provide(Layer.provideMerge(Logging.layerConfig, JanusConfig.layer)),
  Effect.provide(NodeServices.layer),
  // A configuration mistake is the operator's to fix: print the list, no stack.
  Effect.catchTag(
    "InvalidConfiguration",
    (error: InvalidConfiguration) =>
      Console.error(error.message).pipe(Effect.andThen(Effect.sync(() => {
        process.exitCode = 78 // EX_CONFIG
      })))
  ),
  NodeRuntime.runMain({
    // SIGTERM/SIGINT is how a server is meant to stop: a drain that finished is a success.
    teardown: (exit, onExit) =>
      Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
  })
)
