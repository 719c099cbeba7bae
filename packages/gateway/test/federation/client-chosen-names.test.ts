/**
 * What a client chooses (resource URIs, tool names) against a federated
 * upstream (the SDK v1 conformance server, connection `docs`), and where it
 * may go:
 *
 * - never into metric labels: many distinct random URIs through
 *   resources/read and resources/subscribe and many unknown tool names leave
 *   `/metrics` bounded (series and bytes) and label them `other`; a known
 *   tool, a listed resource and a template still get their own label;
 * - into audit rows and `calls` events only bounded: a 12,000-character tool
 *   name is recorded cut (with a marker), and the attempt is still audited;
 * - into error responses only bounded: a 1 MB URI is not echoed back whole.
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog, Connections, EventLog } from "@janus/storage"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { randomBytes } from "node:crypto"
import * as GatewayTesting from "../../src/testing.ts"
import { post } from "../mcp/http-client.ts"
import * as ConformanceUpstream from "./conformance-upstream.ts"
import { waitUntil } from "./support.ts"

class Upstream extends Context.Service<Upstream, ConformanceUpstream.ConformanceUpstream>()(
  "test/federation/ClientChosenNames/Upstream"
) {}

const UpstreamLive = Layer.effect(
  Upstream,
  Effect.acquireRelease(Effect.promise(() => ConformanceUpstream.start()), (u) => Effect.promise(() => u.stop()))
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const upstream = yield* Upstream
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "docs",
    url: upstream.url,
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 10_000,
    toolPrefix: ""
  }).pipe(Effect.orDie)
}))

const TestLayer = Seed.pipe(
  Layer.provideMerge(GatewayTesting.layer({
    config: {
      RATE_LIMIT_IP: 1_000_000,
      RATE_LIMIT_IP_BURST: 1_000_000,
      RATE_LIMIT_IDENTITY: 1_000_000,
      RATE_LIMIT_IDENTITY_BURST: 1_000_000
    }
  })),
  Layer.provideMerge(UpstreamLive)
)

const urlOf = (path: string) => HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base).href))

/** A 2025 session on `/mcp` (no Mcp-Name header to mirror: any URI length fits the body). */
const session = Effect.gen(function*() {
  const url = yield* urlOf("/mcp")
  const init = yield* post(url, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "names-test", version: "1" } }
  })
  assert.strictEqual(init.status, 200, init.text)
  const headers = { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-11-25" }
  let id = 1
  return (method: string, params: Record<string, unknown>) =>
    Effect.map(post(url, { jsonrpc: "2.0", id: id++, method, params }, headers), (reply) => {
      const body = reply.body ?? JSON.parse(reply.events.at(-1)?.data ?? "{}")
      return { status: reply.status, text: reply.text, result: body?.result, error: body?.error }
    })
})

const scrape = Effect.flatMap(urlOf("/metrics"), (url) => Effect.promise(() => fetch(url).then((r) => r.text())))

/** The samples (non-comment lines) of `text`. */
const samples = (text: string) => text.split("\n").filter((line) => line !== "" && !line.startsWith("#"))

const randomUri = () => `test://random/${randomBytes(96).toString("hex")}`

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })("client-chosen names", (it) => {
  it.effect("random URIs and unknown tool names are labelled other: /metrics stays bounded", () =>
    Effect.gen(function*() {
      const rpc = yield* session
      yield* waitUntil(
        Effect.map(rpc("resources/list", {}), (r) => JSON.stringify(r.result ?? {}).includes("test://static-text")),
        "the upstream's resources"
      )
      const before = samples(yield* scrape).length
      const reads = Array.from({ length: 600 }, () => rpc("resources/read", { uri: randomUri() }))
      const subscribes = Array.from({ length: 100 }, () => rpc("resources/subscribe", { uri: randomUri() }))
      const tools = Array.from(
        { length: 300 },
        () => rpc("tools/call", { name: `no_such_${randomBytes(64).toString("hex")}`, arguments: {} })
      )
      const answers = yield* Effect.all([...reads, ...subscribes, ...tools], { concurrency: 8 })
      for (const answer of answers) assert.isBelow(answer.status, 500)

      // known names keep their own labels
      assert.isDefined((yield* rpc("tools/call", { name: "test_simple_text", arguments: {} })).result)
      assert.isDefined((yield* rpc("resources/read", { uri: "test://static-text" })).result)
      assert.isDefined((yield* rpc("resources/read", { uri: "test://template/123/data" })).result)

      const text = yield* scrape
      const lines = samples(text)
      // 1,000 client-chosen names made a handful of `other` series, not 19 lines each
      assert.isBelow(lines.length - before, 300, `series added: ${lines.length - before}`)
      assert.isBelow(text.length, 200_000, `/metrics is ${text.length} bytes`)
      assert.notInclude(text, "test://random/")
      assert.notInclude(text, "no_such_")
      const durations = lines.filter((l) => l.startsWith("mcp_server_operation_duration_seconds_count"))
      const has = (labels: string) => durations.some((l) => l.includes(labels))
      assert.isTrue(has(`mcp_method_name="resources/read",gen_ai_tool_name="other"`), durations.join("\n"))
      assert.isTrue(has(`mcp_method_name="resources/subscribe",gen_ai_tool_name="other"`), durations.join("\n"))
      assert.isTrue(has(`mcp_method_name="tools/call",gen_ai_tool_name="other"`), durations.join("\n"))
      assert.isTrue(has(`gen_ai_tool_name="test_simple_text"`), durations.join("\n"))
      assert.isTrue(has(`gen_ai_tool_name="docs/test://static-text"`), durations.join("\n"))
      assert.isTrue(has(`gen_ai_tool_name="docs/test://template/{id}/data"`), durations.join("\n"))
      const calls = lines.filter((l) => l.startsWith("janus_calls_total"))
      assert.isTrue(calls.some((l) => /tool="other"/.test(l) && /connection="docs"/.test(l)), calls.join("\n"))
    }))

  it.effect("a 12,000-character tool name is audited, cut to 512 characters, in the row and the calls event", () =>
    Effect.gen(function*() {
      const rpc = yield* session
      const events = yield* EventLog
      const audit = yield* AuditLog
      const since = yield* events.latestId
      const name = `huge_${"x".repeat(11_995)}`
      const answer = yield* rpc("tools/call", { name, arguments: {} })
      assert.strictEqual(answer.error?.code, -32602)
      // the error says which name, without sending it back whole
      assert.isBelow(answer.text.length, 1_000)
      assert.include(answer.error.message, "huge_xxx")

      yield* audit.flush
      yield* events.flush
      const rows = (yield* audit.query({ limit: 100, outcome: "invalid" })).items.filter((r) =>
        r.tool.startsWith("huge_")
      )
      assert.strictEqual(rows.length, 1)
      const tool = rows[0]!.tool
      assert.isAtMost(tool.length, 512)
      assert.isTrue(tool.startsWith("huge_xxxx"))
      assert.include(tool, "12000 characters")
      const event = (yield* events.after(since, 1_000)).find((e) =>
        e.topic === "calls" && String((e.data as any).tool).startsWith("huge_")
      )
      assert.isDefined(event)
      assert.strictEqual((event!.data as any).tool, tool)
      assert.deepStrictEqual(event!.about, [tool])
      assert.isBelow(JSON.stringify(event!.data).length, 2_048)
    }))

  it.effect("a URI or name of 900,000 characters is not echoed back whole in the error", () =>
    Effect.gen(function*() {
      const rpc = yield* session
      const long = "u".repeat(900_000)
      const answers = {
        read: yield* rpc("resources/read", { uri: `test://long/${long}` }),
        prompt: yield* rpc("prompts/get", { name: `prompt_${long}` }),
        tool: yield* rpc("tools/call", { name: `tool_${long}`, arguments: {} }),
        method: yield* rpc(`method_${long}`, {})
      }
      for (const [what, answer] of Object.entries(answers)) {
        assert.strictEqual(answer.status, 200, what)
        assert.isDefined(answer.error, what)
        assert.isBelow(answer.text.length, 2_000, `${what}: the answer is ${answer.text.length} bytes`)
      }
    }))
})
