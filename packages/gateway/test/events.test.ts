/**
 * GET /api/v1/events: Studio's live stream over a real socket: admin only,
 * change signals for writes, call events, and Last-Event-ID replay.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, Connections, EventLog } from "@janus/storage"
import { Effect, Fiber, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../src/testing.ts"

interface SseEvent {
  readonly id?: string
  readonly event?: string
  readonly data?: string
}

const baseUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(base))

/** Reads SSE events from `path` until `until` says stop (or 10 s pass). */
const collect = (path: string, headers: Record<string, string>, until: (events: ReadonlyArray<SseEvent>) => boolean) =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(async () => {
      const controller = new AbortController()
      const timer = setTimeout(() => controller.abort(), 10_000)
      const response = await fetch(new URL(path, base), { headers, signal: controller.signal })
      const events: Array<SseEvent> = []
      if (response.status !== 200) {
        clearTimeout(timer)
        return { status: response.status, headers: response.headers, body: await response.text(), events }
      }
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      try {
        while (!until(events)) {
          const { done, value } = await reader.read()
          if (done) break
          buffer += value
          let end: number
          while ((end = buffer.indexOf("\n\n")) !== -1) {
            const block = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            const event: Record<string, string> = {}
            for (const line of block.split("\n")) {
              const colon = line.indexOf(":")
              if (colon <= 0) continue
              event[line.slice(0, colon)] = line.slice(colon + 1).trimStart()
            }
            if (Object.keys(event).length > 0) events.push(event)
          }
        }
      } catch {
        // aborted by the timer: return what arrived
      } finally {
        clearTimeout(timer)
        controller.abort()
      }
      return { status: response.status, headers: response.headers, body: "", events }
    }))

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
