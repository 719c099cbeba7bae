/**
 * A frame's size is the UTF-8 length of its SSE text plus the fixed overhead,
 * whether it was measured before it was encoded (a queued frame holds text)
 * or after (a written one holds bytes).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Frame from "../src/Frame.ts"
import { FRAME_OVERHEAD_BYTES } from "../src/Limits.ts"

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe("Frame", () => {
  it("size counts UTF-8 bytes of the text, before and after encoding", () => {
    const data = { note: "naïve café ✓ 🚀", n: 1 }
    const sizedFirst = Frame.event({ id: 7, topic: "calls", data })
    const size = sizedFirst.size
    const encodedFirst = Frame.event({ id: 7, topic: "calls", data })
    const bytes = encodedFirst.bytes
    assert.strictEqual(size, bytes.length + FRAME_OVERHEAD_BYTES)
    assert.strictEqual(encodedFirst.size, size)
    // sized first, then encoded: the same bytes, and the size does not change
    assert.deepStrictEqual(decode(sizedFirst.bytes), decode(bytes))
    assert.strictEqual(sizedFirst.size, size)
    assert.strictEqual(
      decode(bytes),
      `id: 7\nevent: event\ndata: {"topic":"calls","data":${JSON.stringify(data)}}\n\n`
    )
  })

  it("control frames keep their wire text", () => {
    assert.strictEqual(decode(Frame.heartbeat.bytes), ": heartbeat\n\n")
    assert.strictEqual(decode(Frame.resync.bytes), "event: resync\ndata: {}\n\n")
    assert.match(decode(Frame.reconnect.bytes), /^retry: 0\n/)
    assert.strictEqual(Frame.end.bytes.length, 0)
    assert.strictEqual(
      Frame.signal({ id: 1, topic: "config", about: ["a"] }).size,
      new TextEncoder().encode(`id: 1\nevent: signal\ndata: {"topic":"config","about":["a"]}\n\n`).length +
        FRAME_OVERHEAD_BYTES
    )
  })
})
