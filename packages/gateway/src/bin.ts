#!/usr/bin/env node
/**
 * The `janus` command.
 *
 * @since 0.1.0
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Layer, Logger, References, Runtime } from "effect"
import { Command } from "effect/cli"
import { serve } from "./cli/Serve.ts"
import { InvalidConfiguration, JanusConfig } from "./config/JanusConfig.ts"

const janus = Command.make("janus").pipe(
  Command.withDescription("Janus, the MCP gateway"),
  Command.withSubcommands([serve])
)

const LoggingLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  const level = { trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", error: "Error", fatal: "Fatal" } as const
  return Layer.mergeAll(
    Logger.layer([Logger.consoleJson]),
    Layer.succeed(References.MinimumLogLevel, level[config.LOG_LEVEL])
  )
}))

janus.pipe(
  Command.run({ version: "0.1.0" }),
  Effect.provide(Layer.provideMerge(LoggingLive, JanusConfig.layer)),
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
