import { assert, describe, it } from "@effect/vitest"
import * as Frame from "../src/Frame.ts"
import { FRAME_OVERHEAD_BYTES } from "../src/Limits.ts"
import { SubscriberQueue } from "../src/SubscriberQueue.ts"
import { ADR_MAX_BYTES, ADR_MAX_FRAMES, describe as d, ev, sig } from "./helpers.ts"

const drain = (queue: SubscriberQueue) => (queue.take(Infinity, Infinity) ?? []).map(d)

/** An event whose size is exactly `size`. */
const sized = (id: number, size: number) => {
  const base = ev(id, "t", "").size
  return ev(id, "t", "x".repeat(size - base))
}

describe("SubscriberQueue", () => {
  it("a newer signal for the same topic and resources replaces the queued one in place", () => {
    const queue = new SubscriberQueue()
    assert.strictEqual(queue.offer(sig(1, ["a", "b"])), "queued")
    assert.strictEqual(queue.offer(ev(2)), "queued")
    assert.strictEqual(queue.offer(sig(3, ["c"])), "queued")
    // Same topic, same set (order and duplicates ignored): replaced where it stands.
    assert.strictEqual(queue.offer(sig(4, ["b", "a", "a"])), "coalesced")
    // Other resources, or another topic: kept.
    assert.strictEqual(queue.offer(sig(5, ["a"])), "queued")
    assert.strictEqual(queue.offer(sig(6, ["a", "b"], "other")), "queued")
    assert.strictEqual(queue.frames, 5)
    assert.deepStrictEqual(drain(queue), ["s4[b,a,a]", "e2", "s3[c]", "s5[a]", "s6[a,b]"])
  })

  it("a signal taken by the writer is no longer coalesced into", () => {
    const queue = new SubscriberQueue()
    queue.offer(sig(1, ["a"]))
    assert.deepStrictEqual(drain(queue), ["s1[a]"])
    assert.strictEqual(queue.offer(sig(2, ["a"])), "queued")
  })

  it("holds 1,000 frames; the 1,001st does not fit", () => {
    const queue = new SubscriberQueue()
    for (let i = 1; i <= ADR_MAX_FRAMES; i++) assert.strictEqual(queue.offer(ev(i)), "queued")
    assert.strictEqual(queue.offer(ev(ADR_MAX_FRAMES + 1)), "full")
    assert.strictEqual(queue.frames, ADR_MAX_FRAMES)
  })

  it("holds exactly 1 MiB; one byte more does not fit", () => {
    const quarter = ADR_MAX_BYTES / 4
    const full = new SubscriberQueue()
    for (let i = 1; i <= 4; i++) assert.strictEqual(full.offer(sized(i, quarter)), "queued")
    assert.strictEqual(full.bytes, ADR_MAX_BYTES)

    const over = new SubscriberQueue()
    for (let i = 1; i <= 3; i++) over.offer(sized(i, quarter))
    assert.strictEqual(over.offer(sized(4, quarter + 1)), "full")
    assert.strictEqual(over.bytes, 3 * quarter)
  })

  it("counts the batch in flight until its write completes", () => {
    const queue = new SubscriberQueue()
    for (let i = 1; i <= ADR_MAX_FRAMES; i++) queue.offer(ev(i))
    const batch = queue.take(10, Infinity)!
    assert.strictEqual(batch.length, 10)
    assert.strictEqual(queue.inflightFrames, 10)
    assert.strictEqual(queue.offer(ev(2000)), "full")
    queue.completeWrite()
    assert.strictEqual(queue.offer(ev(2000)), "queued")
  })

  it("frame size is the SSE text length plus the fixed overhead", () => {
    const frame = ev(7, "audit", { a: "é" })
    const text = "id: 7\nevent: event\ndata: {\"topic\":\"audit\",\"data\":{\"a\":\"é\"}}\n\n"
    assert.strictEqual(new TextDecoder().decode(frame.bytes), text)
    assert.strictEqual(frame.size, Buffer.byteLength(text) + FRAME_OVERHEAD_BYTES)
  })

  it("retainAfter drops delivered data frames and keeps control frames", () => {
    const queue = new SubscriberQueue()
    queue.push(Frame.resync)
    queue.offer(ev(5))
    queue.offer(sig(6, ["a"]))
    queue.offer(ev(7))
    assert.strictEqual(queue.retainAfter(6), 2)
    assert.deepStrictEqual(drain(queue), ["resync", "e7"])
  })
})
