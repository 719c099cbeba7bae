/**
 * Seeds a JANUS_HOME for the federated benchmark, through storage: a
 * `kind: mcp` connection `up` to the benchmark upstream (streamable HTTP,
 * allow-listing 127.0.0.1, tool prefix `""` so names are the upstream's) and
 * a client token, whose plaintext is printed.
 *
 * Usage: node packages/gateway/bench/support/seed-federated.ts <janus-home> <upstream-url>
 * Prints `{"token": "..."}`.
 */
import { NodeServices } from "@effect/platform-node"
import { ClientTokens, Connections, Embedded } from "@janus/storage"
import { Effect, Layer, Redacted } from "effect"

const [home, upstream] = process.argv.slice(2)
if (home === undefined || upstream === undefined) {
  throw new Error("usage: seed-federated.ts <janus-home> <upstream-url>")
}

const seed = Effect.gen(function*() {
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "up",
    url: upstream,
    transport: "streamable-http",
    egressAllowList: ["127.0.0.1"],
    toolPrefix: ""
  })
  const token = yield* (yield* ClientTokens).create({ name: "bench client" })
  return { token: Redacted.value(token.plaintext) }
})

const result = await Effect.runPromise(
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(Embedded.layer({ janusDir: home }))
    return yield* Effect.provide(seed, context)
  })).pipe(Effect.provide(NodeServices.layer))
)
console.log(JSON.stringify(result))
