/**
 * Seeds a JANUS_HOME for a benchmark, through storage, before `janus serve`
 * opens it (one process owns an embedded database at a time):
 *
 * - a `bench` REST connection to the benchmark downstream, allow-listing
 *   127.0.0.1 (the egress guard refuses loopback otherwise);
 * - the endpoint `get_pet` (`GET /pets/{id}`, `tag` in the query): the tool
 *   every tools/call benchmark calls;
 * - `extraTools` more endpoints (`tool_0000` ...) with realistic descriptions
 *   and input schemas, for the tools/list benchmark;
 * - a client token (all tools), whose plaintext is printed: the harness sends
 *   it as `Authorization: Bearer` on every MCP request, so it works unchanged
 *   once authentication is on.
 *
 * Usage: node packages/gateway/bench/support/seed.ts <janus-home> <downstream-url> [extraTools]
 * Prints `{"token": "...", "tools": N, "ms": M}`. With `DATABASE_URL` and
 * `JANUS_MASTER_KEY` set it seeds that Postgres database instead (migrating
 * it first), and `<janus-home>` is not used.
 */
import { NodeServices } from "@effect/platform-node"
import { ClientTokens, Connections, Embedded, Endpoints, Postgres } from "@janus/storage"
import { Effect, Layer, Redacted } from "effect"

const [home, downstream, extra] = process.argv.slice(2)
if (home === undefined || downstream === undefined) {
  throw new Error("usage: seed.ts <janus-home> <downstream-url> [extraTools]")
}
const extraTools = Number(extra ?? 0)

const object = (properties: Record<string, unknown>, required: Array<string> = []) => ({
  type: "object",
  properties,
  required
})

const seed = Effect.gen(function*() {
  const started = performance.now()
  const connections = yield* Connections
  const endpoints = yield* Endpoints
  const connection = yield* connections.create({
    kind: "rest",
    name: "bench",
    description: "The benchmark downstream",
    baseUrl: downstream,
    egressAllowList: ["127.0.0.1"]
  })
  yield* endpoints.create({
    connectionId: connection.id,
    name: "get_pet",
    description: "Fetch a pet by id",
    method: "GET",
    pathTemplate: "/pets/{id}",
    arguments: { id: "path", tag: "query" },
    inputSchema: object({ id: { type: "string" }, tag: { type: "string" } }, ["id"])
  })
  for (let i = 0; i < extraTools; i++) {
    const n = String(i).padStart(4, "0")
    yield* endpoints.create({
      connectionId: connection.id,
      name: `tool_${n}`,
      description: `Operation ${n} of the benchmark API: reads one resource of kind ${n} by id, ` +
        "with optional filters, and returns it as JSON.",
      method: "GET",
      pathTemplate: `/pets/{id}`,
      arguments: { id: "path", fields: "query", limit: "query" },
      inputSchema: object({
        id: { type: "string", description: "The resource id" },
        fields: { type: "string", description: "Comma-separated fields to return" },
        limit: { type: "integer", minimum: 1, maximum: 100, description: "Page size" }
      }, ["id"])
    })
  }
  const token = yield* (yield* ClientTokens).create({ name: "bench client" })
  return {
    token: Redacted.value(token.plaintext),
    tools: 1 + extraTools,
    ms: Math.round(performance.now() - started)
  }
})

const result = await Effect.runPromise(
  Effect.scoped(Effect.gen(function*() {
    const url = process.env.DATABASE_URL
    const context = yield* Layer.build(
      url !== undefined && url !== ""
        ? Postgres.layer({ url: Redacted.make(url), masterKey: Redacted.make(process.env.JANUS_MASTER_KEY ?? "") })
        : Embedded.layer({ janusDir: home })
    )
    return yield* Effect.provide(seed, context)
  })).pipe(Effect.provide(NodeServices.layer))
)
console.log(JSON.stringify(result))
