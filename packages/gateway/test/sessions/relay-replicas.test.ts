/**
 * Server-to-client requests across replicas (`src/mcp/ClientRelay.ts`): a
 * call waiting on instance A for its client's answer gets it when the
 * client's response POST is handled by instance B (two `SqlSessionStore`s,
 * separate pools, one Postgres database); the same on the in-memory store.
 * A `logging/setLevel` handled by B is the level A applies.
 *
 * Followers poll only every 30 s here, so an answer within the test's
 * timeout was routed by NOTIFY.
 */
import { assert, describe, it, layer, type Vitest } from "@effect/vitest"
import { layerPostgresOn, layerTestDatabase, requirePostgres } from "@janus/storage/testing"
import { Clock, Context, Deferred, Effect, Fiber, Layer, Option, type Scope } from "effect"
import * as ClientRelay from "../../src/mcp/ClientRelay.ts"
import { RelayRefused } from "../../src/mcp/Relay.ts"
import { type McpSession, McpSessionStore, newSessionId } from "../../src/mcp/Sessions.ts"
import { SqlSessionStore } from "../../src/sessions/index.ts"

const postgres = await requirePostgres()

const instance = Effect.map(
  Layer.build(
    SqlSessionStore.layer({ pollInterval: "30 seconds" }).pipe(Layer.provide(layerPostgresOn({ maxConnections: 4 })))
  ),
  (context) => Context.get(context, McpSessionStore)
)

const memory = Effect.map(
  Layer.build(McpSessionStore.layerMemory()),
  (context) => Context.get(context, McpSessionStore)
)

const newSession = Effect.map(Clock.currentTimeMillis, (now): McpSession => ({
  id: newSessionId(),
  ownerId: "token:alice",
  protocolVersion: "2025-11-25",
  clientInfo: undefined,
  clientCapabilities: { sampling: {} },
  createdAt: now,
  lastSeenAt: now
}))

/**
 * Sends a request from A, answers it through B with `answer(id)`; the
 * waiting call's outcome. A response to an id Janus never sent is dropped.
 */
const roundTrip = (
  a: McpSessionStore["Service"],
  b: McpSessionStore["Service"],
  answer: (id: string) => Readonly<Record<string, unknown>>
) =>
  Effect.gen(function*() {
    const session = yield* newSession
    yield* a.create(session)
    const sent = yield* Deferred.make<Readonly<Record<string, unknown>>>()
    const emit = (json: string) => Effect.asVoid(Deferred.succeed(sent, JSON.parse(json)))
    const waiting = yield* ClientRelay.requestHook(a, session.id, emit)("sampling/createMessage", { maxTokens: 5 })
      .pipe(Effect.result, Effect.forkChild)
    const request = yield* Deferred.await(sent)
    assert.strictEqual(request.method, "sampling/createMessage")
    assert.deepStrictEqual(request.params, { maxTokens: 5 })
    yield* ClientRelay.deliverReply(b, session.id, { jsonrpc: "2.0", id: "janus.unknown", result: {} })
    yield* ClientRelay.deliverReply(b, session.id, answer(String(request.id)))
    return yield* Fiber.join(waiting).pipe(Effect.timeout("10 seconds"))
  })

const checks = <E, R>(
  it: Vitest.MethodsNonLive<R>,
  stores: Effect.Effect<readonly [McpSessionStore["Service"], McpSessionStore["Service"]], E, R | Scope.Scope>
) => {
  it.effect("the client's result, POSTed to the other instance, reaches the waiting call", () =>
    Effect.gen(function*() {
      const [a, b] = yield* stores
      const outcome = yield* roundTrip(a, b, (id) => ({ jsonrpc: "2.0", id, result: { content: "sampled" } }))
      assert.deepStrictEqual(outcome._tag === "Success" ? outcome.success : outcome.failure, { content: "sampled" })
    }))

  it.effect("the client's JSON-RPC error is the refusal", () =>
    Effect.gen(function*() {
      const [a, b] = yield* stores
      const outcome = yield* roundTrip(a, b, (id) => ({ jsonrpc: "2.0", id, error: { code: -1, message: "no" } }))
      assert.strictEqual(outcome._tag, "Failure")
      assert.deepStrictEqual(
        outcome._tag === "Failure" ? outcome.failure : undefined,
        RelayRefused.make({ code: -1, message: "no" })
      )
    }))

  it.effect("logging/setLevel on one instance is the session's level on the other", () =>
    Effect.gen(function*() {
      const [a, b] = yield* stores
      const session = yield* newSession
      yield* a.create(session)
      assert.isUndefined(Option.getOrThrow(yield* a.get(session.id)).logLevel)
      assert.strictEqual(yield* ClientRelay.setLevel(b, session.id, { level: "warning" }), "{}")
      assert.strictEqual(Option.getOrThrow(yield* a.get(session.id)).logLevel, "warning")
      const refused = yield* Effect.flip(ClientRelay.setLevel(b, session.id, { level: "loud" }))
      assert.strictEqual(refused.code, -32602)
    }))
}

describe("client relay on the in-memory store", () => {
  checks(it, Effect.map(memory, (store) => [store, store] as const))
})

describe.skipIf(!postgres)("client relay across two instances (Postgres)", () => {
  layer(layerTestDatabase, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    checks(it, Effect.all([instance, instance]))
  })
})
