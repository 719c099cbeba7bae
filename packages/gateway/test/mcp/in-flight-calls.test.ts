/**
 * The in-flight calls of 2025-era sessions (`src/mcp/InFlightCalls.ts`) over
 * raw HTTP: a client disconnect never stops a call, `notifications/cancelled`
 * does, and DELETE cancels every call of the session.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { mcpUrl, Probe, serverLayer } from "./fixtures.ts"
import { initialize, post, request, type SseEvent } from "./http-client.ts"

const Server = serverLayer({ maxBodyBytes: 64 * 1024 })

const session = (id: string) => ({ "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" })

const messages = (events: ReadonlyArray<SseEvent>) =>
  events.filter((event) => event.data !== "").map((event) => JSON.parse(event.data))

/** A `wait_for_cancel` call; its stream is read until `until` holds (then the client hangs up) or it ends. */
const waitForCancel = (
  url: string,
  sessionId: string,
  id: number,
  until?: (events: ReadonlyArray<SseEvent>) => boolean
) =>
  post(
    url,
    {
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "wait_for_cancel", arguments: {}, _meta: { progressToken: `p${id}` } }
    },
    session(sessionId),
    until === undefined ? { timeoutMs: 8000 } : { until, timeoutMs: 8000 }
  )

const progressed = (events: ReadonlyArray<SseEvent>) =>
  messages(events).some((message) => message.method === "notifications/progress")

/** Waits (up to 2 s) until the probe saw `count` aborted calls in all. */
const abortedReaches = (count: number) =>
  Effect.gen(function*() {
    const probe = yield* Probe
    for (let i = 0; i < 100 && (yield* Ref.get(probe.aborted)).length < count; i++) {
      yield* Effect.sleep("20 millis")
    }
    return (yield* Ref.get(probe.aborted)).length
  })

layer(Server, { excludeTestServices: true })("in-flight calls of 2025-era sessions", (it) => {
  describe("cancellation", () => {
    it.effect("a client disconnect does not stop the call; notifications/cancelled does", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const probe = yield* Probe
        const id = yield* initialize(url)
        const before = (yield* Ref.get(probe.aborted)).length
        // the client hangs up once the call is running
        const call = yield* waitForCancel(url, id, 7, progressed)
        assert.strictEqual(call.status, 200)
        assert.isTrue(progressed(call.events))
        yield* Effect.sleep("300 millis")
        assert.strictEqual((yield* Ref.get(probe.aborted)).length, before, "a disconnect stopped the call")
        const cancelled = yield* post(
          url,
          { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, reason: "test" } },
          session(id)
        )
        assert.strictEqual(cancelled.status, 202)
        assert.isAbove(yield* abortedReaches(before + 1), before)
      }))

    it.effect("notifications/cancelled names a request by id and type: another id leaves the call running", () =>
      Effect.gen(function*() {
        const url = yield* mcpUrl
        const probe = yield* Probe
        const id = yield* initialize(url)
        const before = (yield* Ref.get(probe.aborted)).length
        yield* waitForCancel(url, id, 8, progressed)
        const other = yield* post(
          url,
          { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "8" } },
          session(id)
        )
        assert.strictEqual(other.status, 202)
        yield* Effect.sleep("300 millis")
        assert.strictEqual((yield* Ref.get(probe.aborted)).length, before, "a cancellation of id \"8\" stopped id 8")
        yield* post(url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 8 } }, session(id))
        assert.isAbove(yield* abortedReaches(before + 1), before)
      }))

    it.effect(
      "DELETE cancels every in-flight call of the session, and their streams end without a response",
      () =>
        Effect.gen(function*() {
          const url = yield* mcpUrl
          const probe = yield* Probe
          const id = yield* initialize(url)
          const started = yield* Ref.get(probe.started)
          const before = (yield* Ref.get(probe.aborted)).length
          const [first, second] = yield* Effect.all([
            waitForCancel(url, id, 1),
            waitForCancel(url, id, 2),
            Effect.gen(function*() {
              for (let i = 0; i < 100 && (yield* Ref.get(probe.started)) < started + 2; i++) {
                yield* Effect.sleep("20 millis")
              }
              const deleted = yield* request(url, { method: "DELETE", headers: { "mcp-session-id": id } })
              assert.strictEqual(deleted.status, 204)
            })
          ], { concurrency: "unbounded" })
          for (const call of [first, second]) {
            assert.strictEqual(call.status, 200)
            assert.isFalse(messages(call.events).some((message) => "result" in message || "error" in message))
          }
          assert.isAtLeast(yield* abortedReaches(before + 2), before + 2)
        }),
      { timeout: 20_000 }
    )
  })
})
