import { assert, describe, layer } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { MANY, mcpUrl, PAGE_SIZE, Probe, serverLayer } from "./fixtures.ts"
import {
  initialize,
  meta,
  post,
  readSse,
  request,
  type SseEvent,
  stateful,
  STATELESS,
  stateless
} from "./http-client.ts"

const Server = serverLayer({
  maxBodyBytes: 64 * 1024,
  pollAfter: "150 millis",
  allowedOrigins: ["https://studio.example.com"]
})

const messages = (events: ReadonlyArray<SseEvent>) =>
  events.filter((event) => event.data !== "").map((event) => JSON.parse(event.data))

layer(Server, { excludeTestServices: true })("MCP over HTTP", (it) => {
  describe("Origin", () => {
    it.effect("a foreign Origin is 403 on POST, GET and DELETE", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const origin = { origin: "http://evil.example.com" }
        const posted = yield* stateless(url, "tools/list", {}, origin)
        assert.strictEqual(posted.status, 403)
        assert.include(posted.body.error.message, "Origin 'http://evil.example.com' is not allowed")
        const got = yield* request(url, { method: "GET", headers: { ...origin, accept: "text/event-stream" } })
        assert.strictEqual(got.status, 403)
        const deleted = yield* request(url, { method: "DELETE", headers: origin })
        assert.strictEqual(deleted.status, 403)
      }))

    it.effect("no Origin, a loopback Origin and a configured Origin are allowed", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        assert.strictEqual((yield* stateless(url, "tools/list")).status, 200)
        assert.strictEqual((yield* stateless(url, "tools/list", {}, { origin: "http://localhost:5173" })).status, 200)
        assert.strictEqual(
          (yield* stateless(url, "tools/list", {}, { origin: "https://studio.example.com" })).status,
          200
        )
      }))
  })

  describe("request framing", () => {
    it.effect("a body over the limit is 413 before it is read", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const reply = yield* stateless(url, "tools/call", { name: "echo", arguments: { text: "x".repeat(70 * 1024) } })
        assert.strictEqual(reply.status, 413)
        assert.include(reply.body.error.message, "exceeds the 65536-byte limit")
      }))

    it.effect("wrong Content-Type is 415, missing Accept is 406, bad JSON is 400 Parse error", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const text = yield* post(url, "{}", { "content-type": "text/plain" })
        assert.strictEqual(text.status, 415)
        const accept = yield* post(url, { jsonrpc: "2.0", id: 1, method: "ping" }, { accept: "application/json" })
        assert.strictEqual(accept.status, 406)
        const parse = yield* post(url, "{not json")
        assert.strictEqual(parse.status, 400)
        assert.strictEqual(parse.body.error.code, -32700)
        const put = yield* request(url, { method: "PUT" })
        assert.strictEqual(put.status, 405)
        assert.strictEqual(put.headers.get("allow"), "GET, POST, DELETE")
      }))
  })

  describe("error messages say what was wrong, with which value", () => {
    const statelessHeaders = { "mcp-protocol-version": STATELESS, "mcp-method": "tools/list" }

    it.effect("a batch, a scalar or null with 2026-07-28 headers is refused for what it is, not for a session", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const batch = yield* post(url, [{ jsonrpc: "2.0", id: 1, method: "tools/list" }], statelessHeaders)
        assert.strictEqual(batch.status, 400)
        assert.strictEqual(batch.body.error.code, -32600)
        assert.notInclude(batch.body.error.message, "Mcp-Session-Id")
        assert.include(batch.body.error.message, "batch")
        assert.include(batch.body.error.message, STATELESS)
        for (const [body, shown] of [["null", "null"], ["5", "the number 5"], ["\"hi\"", "the string \"hi\""]]) {
          const reply = yield* post(url, body, statelessHeaders)
          assert.strictEqual(reply.status, 400, body)
          assert.strictEqual(reply.body.error.code, -32600, body)
          assert.notInclude(reply.body.error.message, "Mcp-Session-Id", body)
          assert.include(reply.body.error.message, `got ${shown}`, body)
          assert.include(reply.body.error.message, "expected one JSON-RPC message (a JSON object)", body)
        }
        // without a version header too: what is wrong is the body, not the missing session
        const bare = yield* post(url, "null")
        assert.strictEqual(bare.status, 400)
        assert.include(bare.body.error.message, "got null")
      }))

    it.effect("an id out of the range of numbers (1e400) is named as such, not as null", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const reply = yield* post(
          url,
          `{"jsonrpc":"2.0","id":1e400,"method":"tools/list","params":{"_meta":${JSON.stringify(meta())}}}`,
          statelessHeaders
        )
        assert.strictEqual(reply.status, 400)
        assert.strictEqual(reply.body.error.code, -32600)
        assert.notInclude(reply.body.error.message, "got null")
        assert.include(reply.body.error.message, "too large")
        assert.include(reply.body.error.message, "expected a string or a finite number")
      }))

    it.effect("arguments: null is named null, not object", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const reply = yield* stateless(url, "tools/call", { name: "echo", arguments: null })
        assert.strictEqual(reply.body.error.code, -32602)
        assert.include(reply.body.error.message, "params.arguments is null; expected an object")
      }))
  })

  describe("2026-07-28 header rules", () => {
    it.effect("a missing MCP-Protocol-Version header is 400 HeaderMismatch", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const reply = yield* post(url, {
          jsonrpc: "2.0",
          id: 7,
          method: "tools/list",
          params: {
            _meta: {
              "io.modelcontextprotocol/protocolVersion": STATELESS,
              "io.modelcontextprotocol/clientCapabilities": {}
            }
          }
        }, { "mcp-method": "tools/list" })
        assert.strictEqual(reply.status, 400)
        assert.strictEqual(reply.body.error.code, -32020)
        assert.strictEqual(reply.body.id, 7)
      }))

    it.effect("a header that differs from _meta is 400 HeaderMismatch; an unsupported version is 400 -32022", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const mismatch = yield* stateless(url, "tools/list", {}, { "mcp-protocol-version": "2025-11-25" })
        assert.strictEqual(mismatch.status, 400)
        assert.strictEqual(mismatch.body.error.code, -32020)
        const unsupported = yield* stateless(
          url,
          "tools/list",
          { _meta: { "io.modelcontextprotocol/protocolVersion": "1999-01-01" } },
          { "mcp-protocol-version": "1999-01-01" }
        )
        assert.strictEqual(unsupported.status, 400)
        assert.strictEqual(unsupported.body.error.code, -32022)
        assert.strictEqual(unsupported.body.error.data.requested, "1999-01-01")
        assert.include(unsupported.body.error.data.supported, STATELESS)
      }))

    it.effect("missing _meta fields are 400 Invalid Params", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const reply = yield* post(url, { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} }, {
          "mcp-protocol-version": STATELESS,
          "mcp-method": "tools/list"
        })
        assert.strictEqual(reply.status, 400)
        assert.strictEqual(reply.body.error.code, -32602)
      }))

    it.effect("Mcp-Method and Mcp-Name must match the body", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const method = yield* stateless(url, "tools/list", {}, { "mcp-method": "prompts/list" })
        assert.strictEqual(method.status, 400)
        assert.strictEqual(method.body.error.code, -32020)
        assert.include(method.body.error.message, "Mcp-Method header 'prompts/list' does not match")
        const caseSensitive = yield* stateless(url, "tools/list", {}, { "mcp-method": "TOOLS/LIST" })
        assert.strictEqual(caseSensitive.status, 400)
        const name = yield* stateless(url, "tools/call", { name: "echo", arguments: {} }, { "mcp-name": "other" })
        assert.strictEqual(name.status, 400)
        assert.strictEqual(name.body.error.code, -32020)
        const encoded = yield* stateless(url, "tools/call", { name: "echo", arguments: { text: "b64" } }, {
          "mcp-name": `=?base64?${Buffer.from("echo").toString("base64")}?=`
        })
        assert.strictEqual(encoded.status, 200)
        assert.deepStrictEqual(encoded.body.result.content, [{ type: "text", text: "b64" }])
      }))

    it.effect("Mcp-Param headers of x-mcp-header arguments are checked", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const call = (headers: Record<string, string>, args: Record<string, unknown> = { region: "eu-west1" }) =>
          stateless(url, "tools/call", { name: "region_echo", arguments: args }, headers)
        assert.strictEqual((yield* call({ "mcp-param-region": "eu-west1" })).status, 200)
        const missing = yield* call({})
        assert.strictEqual(missing.status, 400)
        assert.include(missing.body.error.message, "Mcp-Param-Region header is missing")
        assert.strictEqual((yield* call({ "mcp-param-region": "us-east1" })).status, 400)
        assert.strictEqual((yield* call({ "mcp-param-region": "=?base64?SGVsbG8?=" }, { region: "Hello" })).status, 400)
        assert.strictEqual(
          (yield* call({ "mcp-param-region": "=?base64?SGVsbG8=?=" }, { region: "Hello" })).status,
          200
        )
        // A null / absent value needs no header.
        assert.strictEqual((yield* call({}, { region: null })).status, 200)
      }))

    it.effect("an unknown method is 404 Method not found", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const reply = yield* stateless(url, "ping")
        assert.strictEqual(reply.status, 404)
        assert.strictEqual(reply.body.error.code, -32601)
      }))
  })

  describe("tools/list", () => {
    it.effect("pages are deterministic and the cursor is opaque", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const names: Array<string> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const reply = yield* stateless(url, "tools/list", cursor === undefined ? {} : { cursor })
          assert.isAtMost(reply.body.result.tools.length, PAGE_SIZE)
          assert.strictEqual(reply.body.result.cacheScope, "private")
          assert.strictEqual(reply.body.result.resultType, "complete")
          names.push(...reply.body.result.tools.map((tool: { name: string }) => tool.name))
          cursor = reply.body.result.nextCursor
          pages++
        } while (cursor !== undefined)
        assert.deepStrictEqual(names, [...names].sort())
        assert.strictEqual(new Set(names).size, names.length)
        assert.strictEqual(names.filter((name) => name.startsWith("many_")).length, MANY)
        assert.isAbove(pages, 2)
        const bad = yield* stateless(url, "tools/list", { cursor: "not-a-cursor" })
        assert.strictEqual(bad.body.error.code, -32602)
      }))
  })

  describe("2025-era sessions", () => {
    it.effect("an unknown session is 404; a missing one is 400", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const unknown = yield* stateful(url, "no-such-session", "tools/list")
        assert.strictEqual(unknown.status, 404)
        const missing = yield* post(url, { jsonrpc: "2.0", id: 1, method: "tools/list" })
        assert.strictEqual(missing.status, 400)
        assert.include(missing.body.error.message, "Mcp-Session-Id header is missing")
      }))

    it.effect("the MCP-Protocol-Version header may be absent but not unknown", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const session = yield* initialize(url)
        assert.match(session, /^[\x21-\x7E]{32,}$/)
        const absent = yield* post(url, { jsonrpc: "2.0", id: 1, method: "tools/list" }, { "mcp-session-id": session })
        assert.strictEqual(absent.status, 200)
        const unknown = yield* stateful(url, session, "tools/list", {}, { "mcp-protocol-version": "2099-01-01" })
        assert.strictEqual(unknown.status, 400)
        assert.strictEqual(unknown.body.error.code, -32022)
      }))

    it.effect("DELETE ends the session", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const session = yield* initialize(url)
        assert.strictEqual((yield* stateful(url, session, "ping")).status, 200)
        const deleted = yield* request(url, { method: "DELETE", headers: { "mcp-session-id": session } })
        assert.strictEqual(deleted.status, 204)
        assert.strictEqual((yield* stateful(url, session, "ping")).status, 404)
        const get = yield* request(url, {
          method: "GET",
          headers: { "mcp-session-id": session, accept: "text/event-stream" }
        })
        assert.strictEqual(get.status, 404)
        assert.strictEqual(
          (yield* request(url, { method: "DELETE", headers: { "mcp-session-id": session } })).status,
          404
        )
      }))

    it.effect("Last-Event-ID resumption replays exactly the missed messages", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const session = yield* initialize(url)
        // 6 progress steps, 60 ms apart: the POST stream is closed after 150 ms (polling).
        const first = yield* stateful(url, session, "tools/call", {
          name: "slow_progress",
          arguments: { steps: 6, delayMs: 60 },
          _meta: { progressToken: "resume" }
        })
        assert.strictEqual(first.events[0]!.data, "")
        assert.strictEqual(first.events[0]!.retry, 100)
        const seen = first.events.filter((event) => event.data !== "")
        assert.isBelow(seen.length, 6, "the POST stream closed before the call finished")
        const last = first.events[first.events.length - 1]!.id!
        const resumed = yield* request(url, {
          method: "GET",
          headers: { "mcp-session-id": session, accept: "text/event-stream", "last-event-id": last },
          sse: { timeoutMs: 5000 }
        })
        assert.strictEqual(resumed.status, 200)
        const all = [...seen, ...resumed.events.filter((event) => event.data !== "")]
        const seqs = all.map((event) => Number(event.id!.split(".")[1]))
        assert.deepStrictEqual(seqs, [1, 2, 3, 4, 5, 6, 7], "every message once, in order")
        const received = messages(all)
        assert.deepStrictEqual(received.slice(0, 6).map((m) => m.params.progress), [1, 2, 3, 4, 5, 6])
        assert.deepStrictEqual(received[6].result.content, [{ type: "text", text: "done after 6 steps" }])
        // Resuming from the priming id replays the whole stream, and nothing from other streams.
        const again = yield* request(url, {
          method: "GET",
          headers: { "mcp-session-id": session, accept: "text/event-stream", "last-event-id": first.events[0]!.id! },
          sse: { timeoutMs: 5000 }
        })
        assert.deepStrictEqual(again.events.map((event) => event.id), all.map((event) => event.id))
        const unknown = yield* request(url, {
          method: "GET",
          headers: { "mcp-session-id": session, accept: "text/event-stream", "last-event-id": "nosuchstream.3" }
        })
        assert.strictEqual(unknown.status, 404)
      }))

    it.effect("a quick tools/call is answered with JSON, a slow one with a primed SSE stream", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const session = yield* initialize(url)
        const quick = yield* stateful(url, session, "tools/call", { name: "echo", arguments: { text: "fast" } })
        assert.strictEqual(quick.headers.get("content-type"), "application/json")
        assert.deepStrictEqual(quick.body.result.content, [{ type: "text", text: "fast" }])
        // test_reconnection runs 400 ms: past streamAfter (250 ms) it streams; pollAfter (150 ms) then closes it.
        const slow = yield* stateful(url, session, "tools/call", { name: "test_reconnection", arguments: {} })
        assert.strictEqual(slow.events[0]!.data, "")
        assert.match(slow.events[0]!.id!, /\.0$/)
        const rest = yield* request(url, {
          method: "GET",
          headers: { "mcp-session-id": session, accept: "text/event-stream", "last-event-id": slow.events[0]!.id! }
        })
        assert.deepStrictEqual(messages(rest.events)[0].result.content, [{ type: "text", text: "reconnected" }])
      }))

    it.effect("JSON-RPC batches only on 2025-03-26 sessions", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const old = yield* initialize(url, "2025-03-26")
        const batch = [
          { jsonrpc: "2.0", id: 1, method: "ping" },
          { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { text: "b" } } },
          { jsonrpc: "2.0", method: "notifications/initialized" }
        ]
        const reply = yield* post(url, batch, { "mcp-session-id": old })
        assert.strictEqual(reply.status, 200)
        assert.deepStrictEqual(reply.body.map((r: { id: number }) => r.id).sort(), [1, 2])
        const current = yield* initialize(url)
        const refused = yield* post(url, batch, { "mcp-session-id": current })
        assert.strictEqual(refused.status, 400)
      }))

    it.effect("a GET stream answers at once on every revision, also with nothing to send", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        for (const version of ["2025-03-26", "2025-06-18", "2025-11-25"]) {
          const session = yield* initialize(url, version)
          // no event is due (nothing to replay, no list change): the first frame is no keep-alive
          const first = yield* Effect.promise(async () => {
            const response = await fetch(url, {
              headers: { "mcp-session-id": session, accept: "text/event-stream", "mcp-protocol-version": version },
              signal: AbortSignal.timeout(10_000)
            })
            const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
            const { value } = await reader.read()
            await reader.cancel()
            return { status: response.status, value }
          })
          assert.strictEqual(first.status, 200, version)
          assert.notInclude(first.value, "keepalive", version)
          if (version === "2025-11-25") assert.match(first.value!, /^id: .+\nretry: 100\ndata: \n\n/)
          else assert.strictEqual(first.value, ": open\n\n", version)
        }
      }))

    it.effect("one GET stream per session, carrying list_changed", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const session = yield* initialize(url)
        const open = yield* Effect.promise(() =>
          fetch(url, { headers: { "mcp-session-id": session, accept: "text/event-stream" } })
        )
        assert.strictEqual(open.status, 200)
        const second = yield* request(url, {
          method: "GET",
          headers: { "mcp-session-id": session, accept: "text/event-stream" }
        })
        assert.strictEqual(second.status, 409)
        const events = Effect.promise(() =>
          readSse(open, { until: (events) => events.some((event) => event.data.includes("list_changed")) })
        )
        const [received] = yield* Effect.all([
          events,
          stateful(url, session, "tools/call", { name: "test_trigger_tool_change", arguments: {} })
        ], {
          concurrency: "unbounded"
        })
        assert.include(received.map((event) => event.data).join(), "notifications/tools/list_changed")
        assert.isDefined(received.find((event) => event.data !== "")?.id)
      }))
  })

  describe("2026-07-28 streams", () => {
    it.effect("subscriptions/listen acknowledges first and honors the filter", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const listen = (notifications: Record<string, unknown>) =>
          stateless(url, "subscriptions/listen", { notifications }, {}, {
            until: (events) => events.length >= 2,
            timeoutMs: 1500
          })
        const trigger = stateless(url, "tools/call", { name: "test_trigger_tool_change", arguments: {} })
        const [tools] = yield* Effect.all([listen({ toolsListChanged: true }), Effect.delay(trigger, "200 millis")], {
          concurrency: "unbounded"
        })
        const frames = messages(tools.events)
        assert.strictEqual(frames[0].method, "notifications/subscriptions/acknowledged")
        assert.deepStrictEqual(frames[0].params.notifications, { toolsListChanged: true })
        assert.strictEqual(frames[1].method, "notifications/tools/list_changed")
        const id = frames[0].params._meta["io.modelcontextprotocol/subscriptionId"]
        assert.strictEqual(frames[1].params._meta["io.modelcontextprotocol/subscriptionId"], id)
        const [prompts] = yield* Effect.all(
          [listen({ promptsListChanged: true }), Effect.delay(trigger, "200 millis")],
          {
            concurrency: "unbounded"
          }
        )
        const only = messages(prompts.events)
        assert.deepStrictEqual(only.map((frame) => frame.method), ["notifications/subscriptions/acknowledged"])
        assert.deepStrictEqual(only[0].params.notifications, {})
      }))

    it.effect("closing the response stream cancels the call", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const probe = yield* Probe
        const before = (yield* Ref.get(probe.aborted)).length
        const controller = new AbortController()
        const pending = Effect.promise(() =>
          fetch(url, {
            method: "POST",
            signal: controller.signal,
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "mcp-protocol-version": STATELESS,
              "mcp-method": "tools/call",
              "mcp-name": "wait_for_cancel"
            },
            body: JSON.stringify({
              jsonrpc: "2.0",
              id: 99,
              method: "tools/call",
              params: {
                name: "wait_for_cancel",
                arguments: {},
                _meta: {
                  "io.modelcontextprotocol/protocolVersion": STATELESS,
                  "io.modelcontextprotocol/clientCapabilities": {}
                }
              }
            })
          }).then(() => "responded", () => "aborted")
        )
        const outcome = yield* Effect.all([
          pending,
          Effect.gen(function*() {
            yield* Effect.sleep("200 millis")
            controller.abort()
          })
        ], { concurrency: "unbounded" })
        assert.strictEqual(outcome[0], "aborted")
        for (let i = 0; i < 50 && (yield* Ref.get(probe.aborted)).length === before; i++) {
          yield* Effect.sleep("20 millis")
        }
        assert.isAbove((yield* Ref.get(probe.aborted)).length, before)
      }))
  })
})
