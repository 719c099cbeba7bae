/**
 * GET /api/v1/events: Studio's live stream over a real socket: admin only,
 * change signals for writes, call events, and Last-Event-ID replay.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, Connections, EventLog } from "@janus/storage"
import { Effect, Fiber, Layer, Redacted } from "effect"
import * as GatewayTesting from "../src/testing.ts"
import { collect } from "./support/EventStream.ts"

const Setup = Layer.effect(
  AdminTokens,
  Effect.map(Effect.service(AdminTokens), (tokens) => tokens)
).pipe(Layer.provideMerge(GatewayTesting.layer()))

layer(Setup, { timeout: 60_000, excludeTestServices: true })("GET /api/v1/events", (it) => {
  it.effect("refuses a request without an admin token with 401", () =>
    Effect.gen(function*() {
      const anonymous = yield* collect("/api/v1/events", {}, () => true)
      assert.strictEqual(anonymous.status, 401)
      assert.include(anonymous.headers.get("www-authenticate") ?? "", "Bearer")
      const wrong = yield* collect("/api/v1/events", { authorization: "Bearer jna_not-a-real-token" }, () => true)
      assert.strictEqual(wrong.status, 401)
    }))

  it.effect("streams change signals for writes, then replays exactly the later events after Last-Event-ID", () =>
    Effect.gen(function*() {
      const admin = yield* (yield* AdminTokens).create({ name: "studio" })
      const auth = { authorization: `Bearer ${Redacted.value(admin.plaintext)}` }
      const log = yield* EventLog
      // a write made while the client watches
      const watching = yield* Effect.forkChild(
        collect("/api/v1/events?topics=connection", auth, (events) => events.some((e) => e.event === "signal"))
      )
      yield* Effect.sleep("300 millis")
      const created = yield* (yield* Connections).create({
        kind: "rest",
        name: "watched",
        baseUrl: "https://api.example.com"
      })
      yield* log.flush
      const live = yield* Fiber.join(watching)
      assert.strictEqual(live.status, 200)
      assert.strictEqual(live.headers.get("content-type"), "text/event-stream")
      assert.strictEqual(live.headers.get("cache-control"), "no-cache")
      assert.strictEqual(live.headers.get("x-accel-buffering"), "no")
      // a change signal: the topic and what it is about, no payload
      const signal = live.events.find((e) => e.event === "signal")!
      assert.deepStrictEqual(JSON.parse(signal.data!), { topic: "connection", about: [created.id] })

      // three more events; reconnecting after the signal's id gives exactly those
      for (const n of [1, 2, 3]) yield* log.append({ topic: "calls", data: { n } })
      yield* log.flush
      const replay = yield* collect(
        "/api/v1/events?topics=calls",
        { ...auth, "last-event-id": signal.id! },
        (events) => events.filter((e) => e.event === "event").length >= 3
      )
      const calls = replay.events.filter((e) => e.event === "event")
      assert.deepStrictEqual(
        calls.map((e) => JSON.parse(e.data!)),
        [1, 2, 3].map((n) => ({ topic: "calls", data: { n } }))
      )
      const ids = calls.map((e) => Number(e.id))
      assert.isTrue(ids.every((id, i) => id > Number(signal.id) && (i === 0 || id > ids[i - 1]!)))
    }))

  it.effect("signals `upstream` when an upstream MCP server's state changes, so Studio refetches it live", () =>
    Effect.gen(function*() {
      const admin = yield* (yield* AdminTokens).create({ name: "studio-3" })
      const auth = { authorization: `Bearer ${Redacted.value(admin.plaintext)}` }
      const watching = yield* Effect.forkChild(
        collect("/api/v1/events?topics=upstream", auth, (events) => events.some((e) => e.event === "signal"))
      )
      yield* Effect.sleep("300 millis")
      // nothing listens on port 1: the upstream goes from connecting to unhealthy on this replica
      yield* (yield* Connections).create({
        kind: "mcp",
        name: "nowhere",
        url: "http://127.0.0.1:1/mcp",
        egressAllowList: ["127.0.0.1"]
      })
      const live = yield* Fiber.join(watching)
      const signal = live.events.find((e) => e.event === "signal")
      assert.isDefined(signal, "an upstream signal within 10 s")
      assert.deepStrictEqual(JSON.parse(signal!.data!), { topic: "upstream", about: [] })
    }))

  it.effect("a malformed Last-Event-ID is a 400 that says what is expected", () =>
    Effect.gen(function*() {
      const admin = yield* (yield* AdminTokens).create({ name: "studio-2" })
      const response = yield* collect("/api/v1/events", {
        authorization: `Bearer ${Redacted.value(admin.plaintext)}`,
        "last-event-id": "yesterday"
      }, () => true)
      assert.strictEqual(response.status, 400)
      assert.include(response.body, "non-negative integer")
    }))
})
