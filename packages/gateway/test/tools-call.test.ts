/**
 * tools/call end to end: the official SDK clients (v1 for the 2025 revisions,
 * v2 for 2026-07-28) call REST endpoints through the whole gateway (storage,
 * catalog, guard, egress) against a real HTTP downstream on loopback.
 */
import { assert, layer } from "@effect/vitest"
import { Connections, Endpoints, Secrets } from "@janus/storage"
import { Effect, Layer, Redacted } from "effect"
import * as GatewayTesting from "../src/testing.ts"
import * as Downstream from "./support/Downstream.ts"
import { v1 as connectV1, v2 as connectV2 } from "./support/SdkClients.ts"

const seed = Effect.gen(function*() {
  const downstream = yield* Downstream.Downstream
  const connections = yield* Connections
  const endpoints = yield* Endpoints
  yield* (yield* Secrets).set("pets-key", Redacted.make("s3cr3t-value-123"))
  const pets = yield* connections.create({
    kind: "rest",
    name: "pets",
    baseUrl: downstream.url,
    auth: { scheme: "bearer", secret: "pets-key" },
    // the operator trusts this internal service, as an allow-list entry does
    egressAllowList: ["127.0.0.1"]
  })
  const object = (properties: Record<string, unknown>, required: Array<string> = []) => ({
    type: "object",
    properties,
    required
  })
  yield* endpoints.create({
    connectionId: pets.id,
    name: "get_pet",
    description: "Fetch a pet by id",
    method: "GET",
    pathTemplate: "/pets/{id}",
    arguments: { id: "path", tag: "query" },
    inputSchema: object({ id: { type: "string" }, tag: { type: "string" } }, ["id"])
  })
  yield* endpoints.create({
    connectionId: pets.id,
    name: "create_pet",
    method: "POST",
    pathTemplate: "/pets",
    arguments: { name: "body" },
    inputSchema: object({ name: { type: "string" } })
  })
  yield* endpoints.create({
    connectionId: pets.id,
    name: "broken",
    method: "GET",
    pathTemplate: "/fail",
    inputSchema: object({})
  })
})

const TestLayer = Layer.effectDiscard(seed).pipe(
  Layer.provideMerge(GatewayTesting.layer()),
  Layer.provideMerge(Downstream.layer)
)

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("tools/call through the gateway", (it) => {
  it.effect("SDK v1 (2025 revisions) lists the endpoints as tools and calls one", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connectV1
      const listed = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(listed.tools.map((t) => t.name), ["broken", "create_pet", "get_pet"])
      const getPet = listed.tools.find((t) => t.name === "get_pet")!
      assert.strictEqual(getPet.description, "Fetch a pet by id")
      assert.isTrue(getPet.annotations?.readOnlyHint)
      assert.isTrue(getPet.annotations?.idempotentHint)
      const result = yield* Effect.promise(() =>
        client.callTool({ name: "get_pet", arguments: { id: "7", tag: "good" } })
      )
      assert.deepStrictEqual(result.structuredContent, { id: "7", name: "Rex", tag: "good" })
      assert.isUndefined(result.isError)
      const downstream = yield* Downstream.Downstream
      // the secret reached the downstream, injected by the gateway
      assert.strictEqual(downstream.lastHeaders["authorization"], "Bearer s3cr3t-value-123")
    })))

  it.effect("SDK v2 (2026-07-28) calls a POST endpoint with a JSON body", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connectV2
      const listed = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(listed.tools.map((t) => t.name), ["broken", "create_pet", "get_pet"])
      const result = yield* Effect.promise(() => client.callTool({ name: "create_pet", arguments: { name: "Tom" } }))
      assert.deepStrictEqual(result.structuredContent, { created: { name: "Tom" } })
    })))

  it.effect("a downstream 5xx is a tool error with the status, and the secret never reaches the client", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connectV1
      const result = yield* Effect.promise(() => client.callTool({ name: "broken", arguments: {} }))
      assert.isTrue(result.isError)
      const text = (result.content as Array<{ text: string }>)[0]!.text
      assert.include(text, "HTTP 503")
      assert.include(text, "down for maintenance")
      assert.notInclude(JSON.stringify(result), "s3cr3t")
    })))

  it.effect("an unknown tool is invalid params; a missing argument is a tool error naming it", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connectV1
      const unknown = yield* Effect.promise(() =>
        client.callTool({ name: "nope", arguments: {} }).then(() => "resolved", (e: Error) => e.message)
      )
      assert.include(unknown, "Unknown tool 'nope'")
      // an input validation error is a tool execution error (MCP 2025-11-25): the model reads it and corrects
      const missing = yield* Effect.promise(() => client.callTool({ name: "get_pet", arguments: {} }))
      assert.isTrue(missing.isError)
      assert.include((missing.content as Array<{ text: string }>)[0]!.text, "arguments.id is required")
    })))
})
