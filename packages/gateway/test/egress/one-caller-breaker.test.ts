/**
 * One caller cannot open a connection's circuit for everyone, through the
 * whole gateway: a REST tool whose arguments decide whether the downstream
 * answers 503, a circuit that opens after three failures, three client
 * tokens. The hog's failures open only its own circuit (its next call is
 * refused `breaker_open` without reaching the downstream) while the victim's
 * calls go through; failures from two callers open the connection for a third.
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog, ClientTokens } from "@janus/storage"
import { Effect, Layer, Redacted } from "effect"
import * as GatewayTesting from "../../src/testing.ts"
import { stateless } from "../mcp/http-client.ts"
import * as Downstream from "../support/Downstream.ts"
import { mcpUrl } from "../support/SdkClients.ts"

const seed = Downstream.petsTools({ breaker: { consecutiveFailures: 3, openMs: 60_000 } }, [{
  name: "route",
  method: "GET",
  pathTemplate: "/{route}",
  arguments: { route: "path" },
  inputSchema: { type: "object", properties: { route: { type: "string" } }, required: ["route"] }
}])

const TestLayer = Layer.effectDiscard(seed).pipe(
  Layer.provideMerge(GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false } })),
  Layer.provideMerge(Downstream.layer)
)

const token = (name: string) =>
  Effect.map(ClientTokens.use((t) => t.create({ name })), ({ plaintext }) => Redacted.value(plaintext))

/** `route` called as `secret`: the JSON-RPC result or error. */
const call = (secret: string, route: string) =>
  Effect.flatMap(mcpUrl, (url) =>
    Effect.map(
      stateless(url.href, "tools/call", { name: "route", arguments: { route } }, {
        authorization: `Bearer ${secret}`
      }),
      (reply) => {
        assert.strictEqual(reply.status, 200, reply.text)
        return reply.body as { result?: { isError?: boolean }; error?: { message: string; data?: any } }
      }
    ))

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("one caller and a connection's breaker", (it) => {
  it.effect("a hog's three 503s open only its own circuit; the victim goes on; two failing callers open it for all", () =>
    Effect.gen(function*() {
      const downstream = yield* Downstream.Downstream
      const hog = yield* token("hog")
      const victim = yield* token("victim")
      const third = yield* token("third")
      const failHits = () => downstream.hits.get("GET /fail") ?? 0
      const textHits = () => downstream.hits.get("GET /text") ?? 0

      for (let i = 0; i < 3; i++) assert.isTrue((yield* call(hog, "fail")).result?.isError, `hog call ${i}`)
      assert.strictEqual(failHits(), 3)
      const refused = yield* call(hog, "fail")
      assert.include(refused.error?.message, "this caller's calls to connection")
      assert.include(refused.error?.message, "check the arguments of the failing calls")
      assert.strictEqual(refused.error?.data?.reason, "breaker_open")
      assert.strictEqual(failHits(), 3, "the hog's open circuit sends nothing")

      for (let i = 0; i < 5; i++) {
        const fine = yield* call(victim, "text")
        assert.isUndefined(fine.error, JSON.stringify(fine))
        assert.notStrictEqual(fine.result?.isError, true)
      }
      assert.strictEqual(textHits(), 5, "every victim call reached the downstream")

      // a real outage: the victim fails too (a second caller), so its failures count against the connection
      for (let i = 0; i < 3; i++) assert.isTrue((yield* call(victim, "fail")).result?.isError, `victim call ${i}`)
      const everyone = yield* call(third, "text")
      assert.match(everyone.error?.message ?? "", /Circuit open for connection \S+; retry after/)
      assert.strictEqual(textHits(), 5, "an open connection circuit sends nothing")

      // every attempt is audited, the refused ones as breaker_open
      const audit = yield* AuditLog
      yield* audit.flush
      const rows = yield* audit.query({ limit: 200, tool: "route" })
      const outcomes = rows.items.map((row) => row.outcome)
      assert.strictEqual(outcomes.filter((o) => o === "breaker_open").length, 2)
      assert.strictEqual(outcomes.length, 3 + 1 + 5 + 3 + 1)
    }))
})
