/**
 * Bridging between revisions across three replicas behind the round-robin
 * proxy (issue #17): each replica has its own session with each upstream, so
 * a call held for a 2026-07-28 client lives on the replica that started it,
 * and its continuation, wherever it lands, reaches it through the database;
 * a 2025 client's answers to the requests the gateway asks for a 2026-07-28
 * upstream reach the replica running the call from whichever replica
 * received them.
 *
 * The upstreams run in this process on loopback: the official SDK v1 server
 * that asks mid-call (`legacyAsking`) and the SDK v2 server of the
 * `input-required-result-*` scenarios (`startModern`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import * as Bridging from "../../test/federation/bridging-upstreams.ts"
import * as ConformanceUpstream from "../../test/federation/conformance-upstream.ts"
import * as Stateless from "../../test/support/StatelessRequests.ts"
import { api, clientToken, type Cluster, startCluster } from "./support/Cluster.ts"
import { requireClusterTools, sleep } from "./support/Infra.ts"
import { BACKEND_HEADER } from "./support/Proxy.ts"

/** One POST to an MCP endpoint as seen by the client: its JSON-RPC method (none for a response) and who answered. */
interface Sent {
  readonly method: string | undefined
  readonly backend: string | null
}

/** A `fetch` that records every POST's JSON-RPC method and the replica that answered it. */
const recording = (token: string, sent: Array<Sent>) => async (input: string | URL | Request, init?: RequestInit) => {
  const headers = new Headers(init?.headers)
  headers.set("authorization", `Bearer ${token}`)
  const response = await fetch(input, { ...init, headers })
  if (init?.method === "POST" && typeof init.body === "string") {
    const message = JSON.parse(init.body) as { method?: string }
    sent.push({ method: message.method, backend: response.headers.get(BACKEND_HEADER) })
  }
  return response
}

/** A raw 2026-07-28 tools/call to `base`; its JSON-RPC response. */
const call = async (base: string, token: string, name: string, extra: Record<string, unknown> = {}) =>
  (await Stateless.post(new URL("/mcp", base), "tools/call", { name, arguments: {}, ...extra }, { token })).body as {
    result?: any
    error?: { code: number; message: string }
  }

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text

describe.skipIf(!requireClusterTools())("cluster: bridging between revisions across replicas", () => {
  let cluster: Cluster
  let legacy: Bridging.TestUpstream
  let modern: ConformanceUpstream.ConformanceUpstream
  let alice: string
  let bob: string

  beforeAll(async () => {
    legacy = await Bridging.legacyAsking()
    modern = await ConformanceUpstream.startModern()
    cluster = await startCluster()
    for (const [name, url] of [["l", legacy.url], ["m", modern.url]] as const) {
      const created = await api(cluster.proxy.url, "POST", "/api/v1/connections", cluster.adminToken, {
        kind: "mcp",
        name,
        url,
        transport: "streamable-http",
        egressAllowList: ["127.0.0.1"],
        timeoutMs: 10_000
      })
      if (created.status !== 201) throw new Error(`creating connection ${name}: ${JSON.stringify(created.body)}`)
    }
    alice = (await clientToken(cluster)).token
    bob = (await clientToken(cluster)).token
    // every replica has its own sessions with the upstreams
    const deadline = Date.now() + 60_000
    for (const replica of cluster.replicas) {
      while (true) {
        const names = await Stateless.toolNames(new URL("/mcp", replica.url), alice)
        if (names.includes("l/interview") && names.includes("m/test_input_required_result_multi_round")) break
        if (Date.now() > deadline) throw new Error(`replica ${replica.name} never listed the upstreams' tools`)
        await sleep(200)
      }
    }
  })
  afterAll(async () => {
    await cluster?.stop()
    await legacy?.stop()
    await modern?.stop()
  })

  it("2026-07-28 client (SDK v2) through the proxy, 2025 upstream: every continuation lands on another replica", async () => {
    const sent: Array<Sent> = []
    const client = new ClientV2({ name: "cluster-bridging-v2", version: "2" }, {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      capabilities: { elicitation: {}, sampling: {}, roots: {} }
    })
    client.setRequestHandler("elicitation/create", async (request) => ({
      action: "accept",
      content: /colour/i.test((request.params as { message: string }).message) ? { colour: "blue" } : { name: "Ada" }
    }))
    client.setRequestHandler("sampling/createMessage", async () => ({
      role: "assistant",
      content: { type: "text", text: "Hello Ada" },
      model: "test-model"
    }))
    client.setRequestHandler("roots/list", async () => ({ roots: [{ uri: "file:///work" }] }))
    await client.connect(new TransportV2(new URL("/mcp", cluster.proxy.url), { fetch: recording(alice, sent) }))
    try {
      sent.length = 0
      assert.strictEqual(textOf(await client.callTool({ name: "l/ask", arguments: {} })), "colour blue")
      assert.strictEqual(
        textOf(await client.callTool({ name: "l/interview", arguments: {} })),
        "Ada: Hello Ada (file:///work)"
      )
      const calls = sent.filter((s) => s.method === "tools/call")
      // l/ask: the call and its continuation; l/interview: the call and three continuations
      assert.strictEqual(calls.length, 6, JSON.stringify(sent))
      for (const [from, to] of [[0, 1], [2, 3], [3, 4], [4, 5]] as const) {
        assert.notStrictEqual(calls[from]!.backend, calls[to]!.backend, JSON.stringify(calls))
      }
      assert.strictEqual(new Set(calls.slice(2).map((c) => c.backend)).size, 3, JSON.stringify(calls))
    } finally {
      await client.close()
    }
  })

  it("a call held on r1 continues on r2, r3 and r1 again; on every replica a tampered or another caller's state is refused", async () => {
    const [r1, r2, r3] = cluster.replicas.map((r) => r.url) as [string, string, string]
    const first = await call(r1, alice, "l/interview")
    assert.deepStrictEqual(Object.keys(first.result.inputRequests), ["elicitation-1"])
    const state: string = first.result.requestState
    for (const base of [r2, r3, r1]) {
      const tampered = await call(base, alice, "l/interview", {
        requestState: `${state.slice(0, -2)}${state.endsWith("AA") ? "BB" : "AA"}`,
        inputResponses: { "elicitation-1": { action: "accept", content: { name: "Eve" } } }
      })
      assert.strictEqual(tampered.error?.code, -32602, JSON.stringify(tampered))
      const foreign = await call(base, bob, "l/interview", {
        requestState: state,
        inputResponses: { "elicitation-1": { action: "accept", content: { name: "Eve" } } }
      })
      assert.strictEqual(foreign.error?.code, -32602, JSON.stringify(foreign))
      assert.include(foreign.error?.message, "another caller")
    }
    const second = await call(r2, alice, "l/interview", {
      requestState: state,
      inputResponses: { "elicitation-1": { action: "accept", content: { name: "Bo" } } }
    })
    assert.deepStrictEqual(Object.keys(second.result.inputRequests), ["sampling-2"], JSON.stringify(second))
    const third = await call(r3, alice, "l/interview", {
      requestState: second.result.requestState,
      inputResponses: { "sampling-2": { role: "assistant", content: { type: "text", text: "Hi Bo" }, model: "m" } }
    })
    assert.deepStrictEqual(third.result.inputRequests, { "roots-3": { method: "roots/list" } })
    const done = await call(r1, alice, "l/interview", {
      requestState: third.result.requestState,
      inputResponses: { "roots-3": { roots: [{ uri: "file:///bo" }] } }
    })
    assert.strictEqual(done.result.resultType, "complete")
    assert.strictEqual(textOf(done.result), "Bo: Hi Bo (file:///bo)")
  })

  it("2025 client (SDK v1) through the proxy, 2026-07-28 upstream: its answers reach the replica running the call", async () => {
    const sent: Array<Sent> = []
    const client = new ClientV1({ name: "cluster-bridging-v1", version: "1" }, {
      capabilities: { elicitation: {}, sampling: {}, roots: {} }
    })
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: "accept", content: { name: "Ada", ok: true } }))
    client.setRequestHandler(CreateMessageRequestSchema, () => ({
      role: "assistant",
      content: { type: "text", text: "Paris" },
      model: "test-model"
    }))
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: "file:///work" }] }))
    await client.connect(new TransportV1(new URL("/mcp", cluster.proxy.url), { fetch: recording(alice, sent) }))
    try {
      sent.length = 0
      const all = await client.callTool({ name: "m/test_input_required_result_multiple_inputs", arguments: {} })
      assert.strictEqual(textOf(all), "all inputs received")
      const rounds = await client.callTool({ name: "m/test_input_required_result_multi_round", arguments: {} })
      assert.strictEqual(textOf(rounds), "multi-round complete")
      // each call, then the client's answers to it: three to the first (one round), two to the second (two rounds)
      const starts = sent.flatMap((s, i) => s.method === "tools/call" ? [i] : [])
      assert.strictEqual(starts.length, 2, JSON.stringify(sent))
      const answersTo = (n: number) =>
        sent.slice(starts[n]! + 1, starts[n + 1] ?? sent.length).filter((s) => s.method === undefined)
      assert.strictEqual(answersTo(0).length, 3, JSON.stringify(sent))
      assert.strictEqual(answersTo(1).length, 2, JSON.stringify(sent))
      for (const n of [0, 1]) {
        const where = sent[starts[n]!]!.backend
        assert.isTrue(answersTo(n).some((a) => a.backend !== where), JSON.stringify(sent))
      }
    } finally {
      await client.close()
    }
  })
})
