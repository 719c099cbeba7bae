/**
 * Bridging between revisions through a whole gateway (issue #17), with the
 * official SDK clients and upstreams:
 *
 * - a 2025 client (SDK v1) calling tools of a 2026-07-28 upstream (SDK v2,
 *   `input_required`) is asked over its session and sees ordinary results;
 * - a 2026-07-28 client (SDK v2) calling tools of a 2025 upstream (SDK v1)
 *   that elicits, samples and asks for roots mid-call gets `input_required`
 *   and the call continues with its `inputResponses`;
 * - the `requestState` Janus issues is refused when altered, another
 *   caller's, another tool's or not Janus's, and malformed responses are
 *   refused, each without harming the held call;
 * - a `roots/list` an upstream sends outside any call gets no roots.
 *
 * Expiry and the bounds are `held-calls.test.ts` (TestClock); the same flows
 * across three replicas are `e2e/cluster/bridging.test.ts`.
 */
import { assert, layer } from "@effect/vitest"
import { ClientTokens, Connections } from "@janus/storage"
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"
import * as Stateless from "../support/StatelessRequests.ts"
import * as Bridging from "./bridging-upstreams.ts"
import * as ConformanceUpstream from "./conformance-upstream.ts"
import { waitUntil } from "./support.ts"

interface Upstreams {
  readonly modern: ConformanceUpstream.ConformanceUpstream
  readonly legacy: Bridging.TestUpstream
  readonly odd: Awaited<ReturnType<typeof Bridging.oddModern>>
}

class TestUpstreams extends Context.Service<TestUpstreams, Upstreams>()("test/federation/BridgingUpstreams") {}

const UpstreamsLive = Layer.effect(
  TestUpstreams,
  Effect.acquireRelease(
    Effect.promise(async () => ({
      modern: await ConformanceUpstream.startModern(),
      legacy: await Bridging.legacyAsking(),
      odd: await Bridging.oddModern()
    })),
    (u) => Effect.promise(() => Promise.all([u.modern.stop(), u.legacy.stop(), u.odd.stop()]))
  )
)

/** The callers: two client tokens (a state is bound to its caller). */
class Tokens extends Context.Service<Tokens, { readonly a: string; readonly b: string }>()("test/federation/Tokens") {}

const Seed = Layer.effect(
  Tokens,
  Effect.gen(function*() {
    const upstreams = yield* TestUpstreams
    const connections = yield* Connections
    for (
      const [name, url] of [["m", upstreams.modern.url], ["l", upstreams.legacy.url], ["o", upstreams.odd.url]] as const
    ) {
      yield* connections.create({
        kind: "mcp",
        name,
        url,
        transport: "streamable-http",
        egressAllowList: ["127.0.0.1"],
        timeoutMs: 10_000
      })
    }
    const tokens = yield* ClientTokens
    const a = yield* tokens.create({ name: "bridging-a" })
    const b = yield* tokens.create({ name: "bridging-b" })
    return { a: Redacted.value(a.plaintext), b: Redacted.value(b.plaintext) }
  })
)

const TestLayer = Seed.pipe(
  Layer.provideMerge(GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false } })),
  Layer.provideMerge(UpstreamsLive)
)

const urlOf = (path: string) => HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base)))
const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })

/** What the SDK clients' handlers answer, and what they were asked. */
interface Asked {
  readonly methods: Array<string>
}

const ROOTS = [{ uri: "file:///work", name: "work" }]

/** An SDK v1 client (2025-11-25 session, or HTTP+SSE) that declares `capabilities` and answers with them. */
const v1 = (
  token: string,
  options: {
    readonly transport?: "2025" | "sse"
    readonly capabilities?: Record<string, object>
    readonly refuse?: boolean
  } = {}
) =>
  Effect.acquireRelease(
    Effect.flatMap(urlOf(options.transport === "sse" ? "/sse" : "/mcp"), (url) =>
      Effect.promise(async () => {
        const capabilities = options.capabilities ?? { elicitation: {}, sampling: {}, roots: {} }
        const client = new ClientV1({ name: "bridging-v1", version: "1" }, { capabilities })
        const asked: Asked = { methods: [] }
        if ("elicitation" in capabilities) {
          client.setRequestHandler(ElicitRequestSchema, (request) => {
            asked.methods.push(request.method)
            if (options.refuse === true) throw new Error("the user closed the dialog")
            return {
              action: "accept",
              content: /colour/i.test(request.params.message) ?
                { colour: "blue" } :
                /confirm|sure|once more/i.test(request.params.message) ?
                { ok: true, confirm: true } :
                { name: "Ada" }
            }
          })
        }
        if ("sampling" in capabilities) {
          client.setRequestHandler(CreateMessageRequestSchema, (request) => {
            asked.methods.push(request.method)
            return { role: "assistant", content: { type: "text", text: "Paris" }, model: "test-model" }
          })
        }
        if ("roots" in capabilities) {
          client.setRequestHandler(ListRootsRequestSchema, (request) => {
            asked.methods.push(request.method)
            return { roots: ROOTS }
          })
        }
        await client.connect(
          options.transport === "sse" ?
            new SSEClientTransport(url, { requestInit: auth(token), eventSourceInit: { fetch: authFetch(token) } }) :
            new TransportV1(url, { requestInit: auth(token) })
        )
        return { client, asked }
      })),
    ({ client }) => Effect.promise(() => client.close())
  )

const authFetch = (token: string) => (input: string | URL | Request, init?: RequestInit) =>
  fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), ...auth(token).headers } })

/** An SDK v2 client pinned to 2026-07-28 that answers elicitation, sampling and roots. */
const v2 = (token: string) =>
  Effect.acquireRelease(
    Effect.flatMap(urlOf("/mcp"), (url) =>
      Effect.promise(async () => {
        const client = new ClientV2({ name: "bridging-v2", version: "2" }, {
          versionNegotiation: { mode: { pin: "2026-07-28" } },
          capabilities: { elicitation: {}, sampling: {}, roots: {} }
        })
        const asked: Asked = { methods: [] }
        client.setRequestHandler("elicitation/create", async (request) => {
          asked.methods.push("elicitation/create")
          const message = (request.params as { message?: string }).message ?? ""
          return { action: "accept", content: /colour/i.test(message) ? { colour: "blue" } : { name: "Ada" } }
        })
        client.setRequestHandler("sampling/createMessage", async () => {
          asked.methods.push("sampling/createMessage")
          return { role: "assistant", content: { type: "text", text: "Hello Ada" }, model: "test-model" }
        })
        client.setRequestHandler("roots/list", async () => {
          asked.methods.push("roots/list")
          return { roots: ROOTS }
        })
        await client.connect(new TransportV2(url, { requestInit: auth(token) }))
        return { client, asked }
      })),
    ({ client }) => Effect.promise(() => client.close())
  )

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text

/** A raw 2026-07-28 `tools/call` (with `extra` params) as `token`. */
const raw = (token: string, name: string, extra: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) =>
  Effect.flatMap(
    urlOf("/mcp"),
    (url) => Effect.promise(() => Stateless.post(url, "tools/call", { name, arguments: {}, ...extra }, { token, meta }))
  )

const federated = Effect.gen(function*() {
  const { a } = yield* Tokens
  yield* waitUntil(
    Effect.map(
      Effect.flatMap(urlOf("/mcp"), (url) => Effect.promise(() => Stateless.toolNames(url, a))),
      (names) =>
        ["l/ask", "m/test_input_required_result_elicitation", "o/endless"].every((name) => names.includes(name))
    ),
    "the three upstreams' tools"
  )
})

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })("bridging between revisions", (it) => {
  it.effect("2025 client, 2026-07-28 upstream (SDK v2): elicitation, sampling, roots and several rounds are asked over the session", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* federated
      const { a } = yield* Tokens
      const { asked, client } = yield* v1(a)
      const call = (name: string) => Effect.promise(() => client.callTool({ name: `m/${name}`, arguments: {} }))

      const elicited = yield* call("test_input_required_result_elicitation")
      assert.strictEqual(textOf(elicited), "Hello, Ada!")
      assert.notOk(elicited.isError)
      assert.deepStrictEqual(asked.methods, ["elicitation/create"])
      assert.strictEqual(textOf(yield* call("test_input_required_result_sampling")), "Sampling said: Paris")
      assert.strictEqual(textOf(yield* call("test_input_required_result_list_roots")), "Roots: file:///work")
      // three requests in one round, and the upstream's sealed requestState echoed byte for byte
      asked.methods.length = 0
      assert.strictEqual(textOf(yield* call("test_input_required_result_multiple_inputs")), "all inputs received")
      assert.sameMembers(asked.methods, ["elicitation/create", "sampling/createMessage", "roots/list"])
      assert.strictEqual(textOf(yield* call("test_input_required_result_request_state")), "state-ok: confirmed")
      // two rounds, each with a new requestState
      asked.methods.length = 0
      assert.strictEqual(textOf(yield* call("test_input_required_result_multi_round")), "multi-round complete")
      assert.deepStrictEqual(asked.methods, ["elicitation/create", "elicitation/create"])
    })))

  it.effect("2025 client over HTTP+SSE: the same, on the session's stream", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* federated
      const { a } = yield* Tokens
      const { client } = yield* v1(a, { transport: "sse" })
      const result = yield* Effect.promise(() =>
        client.callTool({ name: "m/test_input_required_result_multi_round", arguments: {} })
      )
      assert.strictEqual(textOf(result), "multi-round complete")
    })))

  it.effect("2025 client: input it did not declare is answered for it or ends the call; refusals, endless asking and invalid results end it", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* federated
      const { a } = yield* Tokens
      const { odd } = yield* TestUpstreams
      const bare = yield* v1(a, { capabilities: {} })
      const call = (client: ClientV1, name: string) =>
        Effect.promise(() => client.callTool({ name: `o/${name}`, arguments: {} }))
      // not declared: elicitation declined, no roots (as for a 2025 upstream), sampling cannot be made up
      assert.strictEqual(textOf(yield* call(bare.client, "elicit_anyway")), "elicitation decline")
      assert.strictEqual(textOf(yield* call(bare.client, "roots_anyway")), "0 roots")
      const sampled = yield* call(bare.client, "sample_anyway")
      assert.isTrue(sampled.isError)
      assert.include(textOf(sampled), "did not declare the sampling capability")

      // the client answers with a JSON-RPC error: the call ends with a tool error saying so
      const refusing = yield* v1(a, { capabilities: { elicitation: {} }, refuse: true })
      const refused = yield* call(refusing.client, "elicit_anyway")
      assert.isTrue(refused.isError)
      assert.include(textOf(refused), "the client refused elicitation/create")

      // an upstream that never stops asking: 10 rounds, then a tool error
      const patient = yield* v1(a, { capabilities: { elicitation: {} } })
      const before = odd.odd.calls.get("endless") ?? 0
      const endless = yield* call(patient.client, "endless")
      assert.isTrue(endless.isError)
      assert.include(textOf(endless), "still asked for input after 10 rounds")
      assert.strictEqual(patient.asked.methods.length, 10)
      assert.strictEqual((odd.odd.calls.get("endless") ?? 0) - before, 11)

      // input_required with neither inputRequests nor requestState is no result at all
      const neither = yield* Effect.promise(() =>
        patient.client.callTool({ name: "o/neither", arguments: {} }).then(
          () => undefined,
          (error: { code?: number; message: string }) => error
        )
      )
      assert.strictEqual(neither?.code, -32000)
      assert.include(neither?.message, "carries neither inputRequests nor requestState")
    })))

  it.effect("2026-07-28 client (SDK v2), 2025 upstream (SDK v1): elicitation, sampling and a three-round interview", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* federated
      const { a } = yield* Tokens
      const { asked, client } = yield* v2(a)
      const call = (name: string, args: Record<string, unknown> = {}) =>
        Effect.promise(() => client.callTool({ name: `l/${name}`, arguments: args }))
      assert.strictEqual(textOf(yield* call("ask")), "colour blue")
      assert.strictEqual(
        textOf(yield* call("sample", { prompt: "Capital of France?" })),
        "model test-model said: Hello Ada"
      )
      asked.methods.length = 0
      assert.strictEqual(textOf(yield* call("interview")), "Ada: Hello Ada (file:///work)")
      assert.deepStrictEqual(asked.methods, ["elicitation/create", "sampling/createMessage", "roots/list"])
    })))

  it.effect("2026-07-28 client, raw: input_required, then the requestState continues the call; bad states and responses change nothing", () =>
    Effect.gen(function*() {
      yield* federated
      const { a, b } = yield* Tokens
      const first = yield* raw(a, "l/ask")
      const held = first.body.result
      assert.strictEqual(held.resultType, "input_required")
      assert.deepStrictEqual(Object.keys(held.inputRequests), ["elicitation-1"])
      assert.strictEqual(held.inputRequests["elicitation-1"].method, "elicitation/create")
      assert.strictEqual(held.inputRequests["elicitation-1"].params.message, "Favourite colour?")
      assert.match(held.requestState, /^janus1\./)
      assert.strictEqual(held._meta["io.modelcontextprotocol/serverInfo"].name, "janus")
      const state: string = held.requestState
      const accept = (colour: string) => ({ "elicitation-1": { action: "accept", content: { colour } } })
      const invalid = (answer: Stateless.Answer, includes: string) => {
        assert.strictEqual(answer.body.error?.code, -32602, JSON.stringify(answer.body))
        assert.include(answer.body.error.message, includes)
      }

      invalid(yield* raw(a, "l/ask", { requestState: `${state}-TAMPERED`, inputResponses: accept("red") }), "altered")
      const [prefix, payload, tag] = state.split(".")
      const flipped = payload!.slice(0, 5) + (payload![5] === "A" ? "B" : "A") + payload!.slice(6)
      invalid(
        yield* raw(a, "l/ask", { requestState: `${prefix}.${flipped}.${tag}`, inputResponses: accept("red") }),
        "altered"
      )
      invalid(yield* raw(b, "l/ask", { requestState: state, inputResponses: accept("red") }), "another caller")
      invalid(
        yield* raw(a, "l/sample", { requestState: state, inputResponses: accept("red") }),
        "continues a call of tool 'l/ask'"
      )
      invalid(yield* raw(a, "l/ask", { requestState: "opaque", inputResponses: accept("red") }), "not issued")
      invalid(
        yield* raw(a, "l/ask", { requestState: state, inputResponses: { "elicitation-1": { action: "maybe" } } }),
        "inputResponses[\"elicitation-1\"] is not a elicitation/create result"
      )
      const nulled = yield* raw(a, "l/ask", { requestState: state, inputResponses: null })
      assert.strictEqual(nulled.body.error?.code, -32602)

      // no answer for the round's request: it is asked again, under a new state
      const again =
        (yield* raw(a, "l/ask", { requestState: state, inputResponses: { unrelated: { action: "cancel" } } }))
          .body.result
      assert.strictEqual(again.resultType, "input_required")
      assert.deepStrictEqual(Object.keys(again.inputRequests), ["elicitation-1"])
      assert.notStrictEqual(again.requestState, state)
      // the spent state gives what followed it again (a retried continuation)
      const replayed = (yield* raw(a, "l/ask", { requestState: state, inputResponses: accept("red") })).body.result
      assert.deepStrictEqual(replayed, again)

      const done = (yield* raw(a, "l/ask", { requestState: again.requestState, inputResponses: accept("green") })).body
      assert.strictEqual(done.result.resultType, "complete")
      assert.strictEqual(textOf(done.result), "colour green")
      assert.strictEqual(done.result._meta["io.modelcontextprotocol/serverInfo"].name, "janus")
    }))

  it.effect("2026-07-28 client: progress of a held call reaches the continuation that waits for it", () =>
    Effect.gen(function*() {
      yield* federated
      const { a } = yield* Tokens
      const progressOf = (answer: Stateless.Answer) =>
        answer.messages.filter((m) => m.method === "notifications/progress").map((m) => [
          m.params.progressToken,
          m.params.progress,
          m.params.message
        ])
      const first = yield* raw(a, "l/interview", {}, { progressToken: "t1" })
      assert.deepStrictEqual(progressOf(first), [["t1", 1, "asking the name"]])
      assert.deepStrictEqual(Object.keys(first.body.result.inputRequests), ["elicitation-1"])
      const second = yield* raw(a, "l/interview", {
        requestState: first.body.result.requestState,
        inputResponses: { "elicitation-1": { action: "accept", content: { name: "Bo" } } }
      }, { progressToken: "t2" })
      assert.deepStrictEqual(progressOf(second), [["t2", 2, "asking the model"]])
      assert.deepStrictEqual(Object.keys(second.body.result.inputRequests), ["sampling-2"])
      assert.include(JSON.stringify(second.body.result.inputRequests["sampling-2"].params.messages), "Greet Bo")
      const third = yield* raw(a, "l/interview", {
        requestState: second.body.result.requestState,
        inputResponses: {
          "sampling-2": { role: "assistant", content: { type: "text", text: "Hi Bo" }, model: "m" }
        }
      }, { progressToken: "t3" })
      assert.deepStrictEqual(progressOf(third), [["t3", 3, "asking the roots"]])
      assert.deepStrictEqual(third.body.result.inputRequests, { "roots-3": { method: "roots/list" } })
      const last = yield* raw(a, "l/interview", {
        requestState: third.body.result.requestState,
        inputResponses: { "roots-3": { roots: [] } }
      })
      assert.strictEqual(textOf(last.body.result), "Bo: Hi Bo ()")
    }))

  it.effect("a roots/list an upstream sends outside any call gets no roots", () =>
    Effect.gen(function*() {
      yield* federated
      const { a } = yield* Tokens
      const { legacy } = yield* TestUpstreams
      const answered = legacy.observed.roots.length
      assert.strictEqual(textOf((yield* raw(a, "l/roots_later")).body.result), "asking later")
      yield* waitUntil(Effect.sync(() => legacy.observed.roots.length > answered), "the upstream's roots/list")
      assert.deepStrictEqual(legacy.observed.roots[answered], { roots: [] })
    }))
})
