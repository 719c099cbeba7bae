import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, PubSub, Stream } from "effect"
import { ListChanged, McpHttp, Origin, Protocol, Sessions, ToolCatalog } from "../../src/mcp/index.ts"
import { checkParamHeaders } from "../../src/mcp/ParamHeaders.ts"
import * as ToolCall from "../../src/mcp/ToolCall.ts"
import * as ToolList from "../../src/mcp/ToolList.ts"

describe("Origin", () => {
  it("allows no Origin, loopback origins and configured origins only", () => {
    const check = Origin.make({ allowedOrigins: ["https://studio.example.com"] })
    assert.isTrue(check(undefined))
    assert.isTrue(check("http://localhost:3000"))
    assert.isTrue(check("http://127.0.0.1"))
    assert.isTrue(check("http://[::1]:8080"))
    assert.isTrue(check("https://studio.example.com"))
    assert.isFalse(check("https://studio.example.com.evil.org"))
    assert.isFalse(check("http://evil.example.com"))
    assert.isFalse(check("null"))
    const strict = Origin.make({ allowLocalhost: false })
    assert.isFalse(strict("http://localhost:3000"))
    assert.throws(() => Origin.make({ allowedOrigins: ["not a url"] }), /Invalid allowed origin 'not a url'/)
  })
})

describe("Protocol", () => {
  it("matches Accept media ranges", () => {
    assert.isTrue(Protocol.accepts("application/json, text/event-stream", "text/event-stream"))
    assert.isTrue(Protocol.accepts("*/*", "application/json"))
    assert.isTrue(Protocol.accepts("text/*;q=0.5", "text/event-stream"))
    assert.isFalse(Protocol.accepts("text/event-stream;q=0", "text/event-stream"))
    assert.isFalse(Protocol.accepts(undefined, "application/json"))
    assert.strictEqual(Protocol.mediaTypeEssence("Application/JSON; charset=utf-8"), "application/json")
  })

  it("decodes header values with the Base64 sentinel", () => {
    assert.strictEqual(Protocol.decodeHeaderValue("  plain "), "plain")
    assert.strictEqual(Protocol.decodeHeaderValue("=?base64?SGVsbG8sIOS4lueVjA==?="), "Hello, 世界")
    assert.isUndefined(Protocol.decodeHeaderValue("=?base64?SGVsbG8?="))
    assert.strictEqual(Protocol.decodeHeaderValue("=?base64?SGVsbG8="), "=?base64?SGVsbG8=")
  })

  it("chooses the stateless wire from _meta or the 2026-07-28 header", () => {
    const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28" }
    assert.isTrue(McpHttp.isStatelessBody({ method: "tools/list", params: { _meta: meta } }, undefined))
    assert.isTrue(McpHttp.isStatelessBody({ method: "tools/list" }, "2026-07-28"))
    assert.isFalse(McpHttp.isStatelessBody({ method: "initialize" }, "2026-07-28"))
    assert.isFalse(McpHttp.isStatelessBody({ method: "tools/list" }, "2025-11-25"))
    assert.isFalse(McpHttp.isStatelessBody([{ method: "tools/list" }], "2026-07-28"))
  })
})

describe("x-mcp-header", () => {
  const schema = {
    type: "object",
    properties: {
      region: { type: "string", "x-mcp-header": "Region" },
      limits: { type: "object", properties: { max: { type: "integer", "x-mcp-header": "Max" } } },
      items: { type: "array", items: { type: "object", properties: { x: { "x-mcp-header": "X" } } } },
      bad: { type: "string", "x-mcp-header": "Bad Header" }
    }
  }

  it("binds only properties reachable through `properties`", () => {
    const bindings = ToolList.headerBindingsOf(schema)
    assert.deepStrictEqual(bindings.map((b) => [b.header, b.display]), [
      ["mcp-param-region", "region"],
      ["mcp-param-max", "limits.max"]
    ])
  })

  it("checks headers against arguments, integers numerically", () => {
    const bindings = ToolList.headerBindingsOf(schema)
    assert.isUndefined(checkParamHeaders({ "mcp-param-region": "eu", "mcp-param-max": "42.0" }, bindings, {
      region: "eu",
      limits: { max: 42 }
    }))
    assert.strictEqual(
      checkParamHeaders({ "mcp-param-region": "eu" }, bindings, { region: "eu", limits: { max: 1 } })?.code,
      -32020
    )
    assert.isUndefined(checkParamHeaders({}, bindings, { region: null }))
    assert.match(
      checkParamHeaders({ "mcp-param-region": "us" }, bindings, { region: "eu" })!.message,
      /Mcp-Param-Region header "us" does not match arguments.region "eu"/
    )
  })
})

describe("input_required capabilities", () => {
  it("names the capabilities the client did not declare", () => {
    const requests = {
      a: { method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } },
      b: { method: "elicitation/create", params: { mode: "url", message: "m", url: "https://x" } },
      c: { method: "roots/list" }
    }
    assert.deepStrictEqual(ToolCall.missingCapabilities(requests, {}), {
      sampling: {},
      elicitation: { url: {} },
      roots: {}
    })
    assert.deepStrictEqual(
      ToolCall.missingCapabilities(requests, { sampling: {}, elicitation: { url: {} }, roots: {} }),
      {}
    )
  })
})

describe("McpSessionStore (memory)", () => {
  const session = (id: string): Sessions.McpSession => ({
    id,
    ownerId: "anonymous",
    protocolVersion: "2025-11-25",
    clientInfo: undefined,
    clientCapabilities: {},
    createdAt: 0,
    lastSeenAt: 0
  })

  it.effect("replays exactly the events after the last event id, then live ones until closed", () =>
    Effect.gen(function*() {
      const store = yield* Sessions.McpSessionStore
      yield* store.create(session("s1"))
      yield* store.openStream("s1", "a")
      yield* store.openStream("s1", "b")
      for (const data of ["a1", "a2", "a3"]) yield* store.append("s1", "a", data)
      yield* store.append("s1", "b", "b1")
      const replay = yield* store.replay("s1", "a", 1)
      const fiber = yield* Stream.runCollect(replay).pipe(Effect.forkChild)
      yield* Effect.yieldNow
      yield* store.append("s1", "a", "a4")
      yield* store.closeStream("s1", "a")
      const events = yield* Fiber.join(fiber)
      assert.deepStrictEqual(events.map((e) => [e.seq, e.data]), [[2, "a2"], [3, "a3"], [4, "a4"]])
      const unknown = yield* Effect.flip(store.replay("s1", "nope", 0))
      assert.strictEqual(unknown._tag, "UnknownStream")
      yield* store.delete("s1")
      assert.isTrue(Option.isNone(yield* store.get("s1")))
    }).pipe(Effect.provide(Sessions.McpSessionStore.layerMemory())))

  it("formats and parses event ids", () => {
    const id = Sessions.eventId(Sessions.newStreamId(), 7)
    assert.strictEqual(Sessions.parseEventId(id)?.seq, 7)
    assert.isUndefined(Sessions.parseEventId("garbage"))
    assert.match(Sessions.newSessionId(), /^[A-Za-z0-9_-]{43}$/)
  })
})

describe("ListChangedSignals", () => {
  it.live("coalesces: a slow subscriber gets one signal for many changes", () =>
    Effect.gen(function*() {
      const changes = yield* PubSub.unbounded<void>()
      const catalog = Layer.succeed(
        ToolCatalog.ToolCatalog,
        ToolCatalog.ToolCatalog.of({
          list: () => Effect.succeed([]),
          call: (_, request) => Effect.fail(new ToolCatalog.ToolNotFound({ name: request.name })),
          changes: Stream.fromPubSub(changes)
        })
      )
      yield* Effect.gen(function*() {
        const signals = yield* ListChanged.ListChangedSignals
        const stream = yield* signals.subscribe
        for (let i = 0; i < 10; i++) yield* PubSub.publish(changes, undefined)
        yield* Effect.sleep("50 millis")
        const first = yield* stream.pipe(Stream.take(1), Stream.runCollect)
        assert.strictEqual(first.length, 1)
        const more = yield* stream.pipe(Stream.take(1), Stream.runCollect, Effect.timeoutOption("50 millis"))
        assert.isTrue(Option.isNone(more), "no backlog after the coalesced signal")
      }).pipe(Effect.provide(ListChanged.ListChangedSignals.layerFromCatalog.pipe(Layer.provide(catalog))))
    }).pipe(Effect.scoped), { timeout: 5000 })
})
