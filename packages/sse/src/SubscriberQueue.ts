/**
 * One subscriber's outbound queue: bounded by frames and bytes, with in-place
 * coalescing of change signals.
 *
 * **Details**
 *
 * ADR-0197 rules enforced here (the policy around them is in `Subscriber`):
 *
 * - "at most 1,000 frames and 1 MiB": {@link SubscriberQueue.offer} answers
 *   `"full"` when a frame does not fit. The count includes the batch the writer
 *   is writing (in flight), so what a subscriber holds is bounded, not just
 *   what waits.
 * - "A queued change signal is replaced in place by a newer one for the same
 *   topic and the same resources": an index from `coalesceKey` to the queue
 *   node lets the newer signal take the older one's node, so its position is
 *   kept and signals about other resources are untouched.
 *
 * Why not effect's `Queue`: it can neither replace an element in place (the
 * position must be kept, and a remove-then-offer would move it to the back)
 * nor account bytes (its capacity is a count). Both need a hand-written list.
 * It is a singly linked list with an index, every operation O(1) except
 * `clear` and `retainAfter` (linear, and rare).
 *
 * **Gotchas**
 *
 * - Not thread-safe and needs not be: JavaScript runs one fiber step at a
 *   time, and every method is synchronous, so publish never blocks on it.
 * - Control frames are pushed with {@link SubscriberQueue.push}, unchecked:
 *   the policy decides when they are admitted.
 *
 * @since 0.1.0
 */
import type * as Frame from "./Frame.ts"
import { MAX_QUEUED_BYTES, MAX_QUEUED_FRAMES } from "./Limits.ts"

interface Node {
  frame: Frame.Frame
  next: Node | undefined
}

/** The outcome of {@link SubscriberQueue.offer}. */
export type OfferResult = "queued" | "coalesced" | "full"

/** A bounded frame queue with in-place signal coalescing and byte accounting. */
export class SubscriberQueue {
  #head: Node | undefined = undefined
  #tail: Node | undefined = undefined
  #frames = 0
  #bytes = 0
  #inflightFrames = 0
  #inflightBytes = 0
  readonly #signals = new Map<string, Node>()

  /** Frames waiting to be written. */
  get frames(): number {
    return this.#frames
  }
  /** Bytes (sizes) of the frames waiting to be written. */
  get bytes(): number {
    return this.#bytes
  }
  /** Frames of the batch being written. */
  get inflightFrames(): number {
    return this.#inflightFrames
  }
  /** Bytes of the batch being written. */
  get inflightBytes(): number {
    return this.#inflightBytes
  }
  get isEmpty(): boolean {
    return this.#head === undefined
  }
  /** The first queued frame, if any. */
  get first(): Frame.Frame | undefined {
    return this.#head?.frame
  }
  /** The last queued frame, if any. */
  get last(): Frame.Frame | undefined {
    return this.#tail?.frame
  }

  /**
   * Queues a data frame if it fits, or replaces a queued signal of the same
   * topic and resources in place. `"full"` leaves the queue unchanged.
   */
  offer(frame: Frame.Data): OfferResult {
    if (frame._tag === "Signal") {
      const node = this.#signals.get(frame.coalesceKey)
      if (node !== undefined) {
        const delta = frame.size - node.frame.size
        if (this.#bytes + this.#inflightBytes + delta > MAX_QUEUED_BYTES) return "full"
        node.frame = frame
        this.#bytes += delta
        return "coalesced"
      }
    }
    if (
      this.#frames + this.#inflightFrames + 1 > MAX_QUEUED_FRAMES ||
      this.#bytes + this.#inflightBytes + frame.size > MAX_QUEUED_BYTES
    ) {
      return "full"
    }
    this.push(frame)
    return "queued"
  }

  /** Appends a frame without checking the bounds (control frames). */
  push(frame: Frame.Frame): void {
    const node: Node = { frame, next: undefined }
    if (this.#tail === undefined) {
      this.#head = node
    } else {
      this.#tail.next = node
    }
    this.#tail = node
    this.#frames++
    this.#bytes += frame.size
    if (frame._tag === "Signal") this.#signals.set(frame.coalesceKey, node)
  }

  /** Puts a frame first, without checking the bounds (a resync due at replay release). */
  prepend(frame: Frame.Frame): void {
    const node: Node = { frame, next: this.#head }
    this.#head = node
    if (this.#tail === undefined) this.#tail = node
    this.#frames++
    this.#bytes += frame.size
  }

  /** Empties the queue (not the batch in flight) and returns how many data frames it held. */
  clear(): number {
    let data = 0
    for (let node = this.#head; node !== undefined; node = node.next) {
      if (node.frame._tag === "Event" || node.frame._tag === "Signal") data++
    }
    this.#head = this.#tail = undefined
    this.#frames = this.#bytes = 0
    this.#signals.clear()
    return data
  }

  /**
   * Drops the queued data frames whose id is at most `id` (already delivered
   * by a replay); control frames stay. Returns how many were removed.
   */
  retainAfter(id: number): number {
    let removed = 0
    let previous: Node | undefined = undefined
    for (let node = this.#head; node !== undefined; node = node.next) {
      const frame = node.frame
      if ((frame._tag === "Event" || frame._tag === "Signal") && frame.id <= id) {
        removed++
        this.#frames--
        this.#bytes -= frame.size
        if (frame._tag === "Signal" && this.#signals.get(frame.coalesceKey) === node) {
          this.#signals.delete(frame.coalesceKey)
        }
        if (previous === undefined) this.#head = node.next
        else previous.next = node.next
        if (this.#tail === node) this.#tail = previous
      } else {
        previous = node
      }
    }
    return removed
  }

  /**
   * Takes the next batch (at least one frame, then up to `maxFrames` and
   * `maxBytes`) and accounts it as in flight until {@link completeWrite}.
   * Stops after an `End` marker.
   */
  take(maxFrames: number, maxBytes: number): Array<Frame.Frame> | undefined {
    if (this.#head === undefined) return undefined
    const batch: Array<Frame.Frame> = []
    let bytes = 0
    while (this.#head !== undefined && batch.length < maxFrames) {
      const node: Node = this.#head
      const size = node.frame.size
      if (batch.length > 0 && bytes + size > maxBytes) break
      this.#head = node.next
      if (this.#head === undefined) this.#tail = undefined
      if (node.frame._tag === "Signal" && this.#signals.get(node.frame.coalesceKey) === node) {
        this.#signals.delete(node.frame.coalesceKey)
      }
      this.#frames--
      this.#bytes -= size
      bytes += size
      batch.push(node.frame)
      if (node.frame._tag === "End") break
    }
    this.#inflightFrames += batch.length
    this.#inflightBytes += bytes
    return batch
  }

  /** Accounts frames that did not come from the queue (a replay batch) as in flight. */
  reserve(frames: ReadonlyArray<Frame.Frame>): void {
    for (const frame of frames) {
      this.#inflightFrames++
      this.#inflightBytes += frame.size
    }
  }

  /** The batch in flight was written: its frames no longer count. */
  completeWrite(): void {
    this.#inflightFrames = 0
    this.#inflightBytes = 0
  }
}
