import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Stream } from "effect"
import { Sse } from "effect/encoding"
import * as Frame from "../src/Frame.ts"
import { FRAME_OVERHEAD_BYTES } from "../src/Limits.ts"
import * as Wire from "../src/Wire.ts"
import { ev, sig } from "./helpers.ts"

const parse = (text: string) => {
  const out: Array<Sse.AnyEvent> = []
  Sse.makeParser((event) => out.push(event)).feed(text)
  return out
}

describe("Wire", () => {
  it.effect("encodes the preamble, events, signals and control frames as SSE", () =>
    Effect.gen(function*() {
      const chunks = yield* Wire.encode(
        Stream.make(ev(1, "audit", { ok: true }), sig(2, ["connection:7"], "config"), Frame.resync, Frame.heartbeat)
      ).pipe(Stream.runCollect)
      const text = new TextDecoder().decode(Buffer.concat(chunks))
      assert.isTrue(text.startsWith("retry: 3000\n\n"))
      assert.include(text, "\n: heartbeat\n\n")
      const events = parse(text)
      assert.strictEqual(events[0]!._tag, "Retry")
      assert.deepStrictEqual(events.slice(1), [
        { _tag: "Event", id: "1", event: "event", data: "{\"topic\":\"audit\",\"data\":{\"ok\":true}}" },
        { _tag: "Event", id: "2", event: "signal", data: "{\"topic\":\"config\",\"about\":[\"connection:7\"]}" },
        // A resync carries no id, so the client's Last-Event-ID stays where it was.
        { _tag: "Event", id: "2", event: "resync", data: "{}" }
      ])
    }))

  it("a reconnect frame sets retry 0 so the client comes back at once", () => {
    const events = parse(new TextDecoder().decode(Frame.reconnect.bytes))
    assert.strictEqual(events[0]!._tag, "Retry")
    assert.strictEqual(Duration.toMillis((events[0] as Sse.Retry).duration), 0)
    assert.deepStrictEqual(events[1], { _tag: "Event", id: undefined, event: "reconnect", data: "{}" })
  })

  it("a logged row with null data is a signal, otherwise an event", () => {
    const signal = Frame.fromLogged({ id: 3, topic: "config", about: ["x"], data: null })
    const event = Frame.fromLogged({ id: 4, topic: "audit", about: [], data: { a: 1 } })
    assert.strictEqual(signal._tag, "Signal")
    assert.strictEqual(event._tag, "Event")
    assert.strictEqual(event.size, event.bytes.length + FRAME_OVERHEAD_BYTES)
  })

  it("unserialisable data is sent as null instead of failing the publisher", () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const text = new TextDecoder().decode(ev(1, "t", cyclic).bytes)
    assert.include(text, "\"data\":null")
  })

  it("the response carries the SSE content type and the headers proxies need", () => {
    const response = Wire.response(Stream.empty)
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.headers["content-type"], "text/event-stream")
    assert.strictEqual(response.headers["cache-control"], "no-cache")
    assert.strictEqual(response.headers["x-accel-buffering"], "no")
    assert.strictEqual(response.headers["connection"], "keep-alive")
  })

  it.effect("parses Last-Event-ID", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* Wire.parseLastEventId(undefined), undefined)
      assert.strictEqual(yield* Wire.parseLastEventId(""), undefined)
      assert.strictEqual(yield* Wire.parseLastEventId("42"), 42)
      assert.strictEqual(yield* Wire.parseLastEventId(" 7 "), 7)
      for (const bad of ["abc", "-1", "1.5", "12abc"]) {
        const exit = yield* Effect.exit(Wire.parseLastEventId(bad))
        assert.isTrue(Exit.isFailure(exit), bad)
      }
      const error = yield* Effect.flip(Wire.parseLastEventId("nope"))
      assert.strictEqual(error._tag, "InvalidLastEventId")
      assert.include(error.message, "non-negative integer")
    }))
})
