/**
 * `janus serve`: runs the gateway until SIGINT/SIGTERM.
 *
 * On start it prints where to reach it, where the data lives and, when no
 * active admin token exists (the first start), a new admin token. That token
 * is printed once, to stdout only, and stored only as a hash.
 *
 * @since 0.1.0
 */
import { AdminTokens, type InvalidInput } from "@janus/storage"
import { type Config, Console, Effect, Layer, Option, Redacted } from "effect"
import { Command } from "effect/cli"
import { HttpServer } from "effect/http"
import { JanusConfig } from "../config/JanusConfig.ts"
import * as Demo from "../demo/Demo.ts"
import * as Gateway from "../Gateway.ts"
import { describeStorage } from "../GatewayStorage.ts"
import { Otlp } from "../observability/index.ts"

const announce = Effect.gen(function*() {
  const config = yield* JanusConfig
  const server = yield* HttpServer.HttpServer
  const admins = yield* AdminTokens
  const url = HttpServer.formatAddress(server.address)
  yield* Console.log(`Janus is listening on ${url}`)
  yield* Console.log(`  data: ${describeStorage(config)}`)
  yield* Console.log(`  health: ${url}/healthz, readiness: ${url}/readyz`)
  if (config.JANUS_DEMO) yield* Layer.build(Demo.layer)
  yield* Console.log(`  MCP endpoint: ${url}/mcp`)
  yield* Console.log(`  Studio (admin UI): ${url}/`)
  // atomic across replicas starting at once on an empty database: only one creates and prints a token
  const initial = yield* admins.createInitial("initial admin")
  if (Option.isSome(initial)) {
    const created = initial.value
    yield* Console.log("")
    yield* Console.log("  Admin token (shown once; store it now, it cannot be shown again):")
    yield* Console.log(`    ${Redacted.value(created.plaintext)}`)
  }
})

/** A start failure in words: its message, else its cause's (e.g. the server's `listen EADDRINUSE`), else its tag. */
const describeStartError = (error: { readonly message: string; readonly cause?: unknown }): string => {
  if (error.message.trim() !== "") return error.message
  const cause = error.cause as { readonly message?: unknown; readonly cause?: unknown } | undefined
  if (typeof cause?.message === "string" && cause.message !== "") return cause.message
  const tag = (error as { readonly _tag?: unknown })._tag
  return typeof tag === "string" ? tag : String(error)
}

export const serve: Command.Command<
  "serve",
  {},
  {},
  Gateway.StartError | InvalidInput | Layer.Error<typeof Demo.layer> | Config.ConfigError,
  JanusConfig
> = Command.make(
  "serve",
  {},
  () =>
    Layer.launch(Layer.effectDiscard(announce).pipe(Layer.provideMerge(Gateway.layer))).pipe(
      // OTLP traces, metrics and logs as the OTEL_* variables ask (none without an endpoint)
      Effect.provide(Otlp.layerConfig(Gateway.VERSION)),
      // A start that fails (the database in use or unreachable, the port taken, a bad key) is said in one
      // line with what to check, not as a stack; the cause goes to the log at debug level.
      Effect.tapCause((cause) => Effect.logDebug("janus serve could not start", cause)),
      Effect.catch((error) =>
        Console.error(`Error: janus serve could not start: ${describeStartError(error)}`).pipe(
          Effect.andThen(Console.error("  Fix: see the message above; `janus doctor` checks the configuration")),
          Effect.andThen(Effect.sync(() => {
            process.exitCode = 1
          }))
        )
      )
    )
).pipe(Command.withDescription("Run the gateway until SIGINT or SIGTERM"))
