/**
 * A fixed-capacity FIFO whose `push` into a full ring drops the oldest item:
 * the in-memory buffer of the batched writers (`AuditLog`, `EventLog`), whose
 * callers must never block and whose memory must stay bounded.
 *
 * @internal
 */
export class Ring<A> {
  readonly capacity: number
  private readonly slots: Array<A | undefined>
  private head = 0
  size = 0
  constructor(capacity: number) {
    this.capacity = capacity
    this.slots = new Array<A | undefined>(capacity)
  }
  /** Appends `item`; returns true when the oldest item was dropped to make room. */
  push(item: A): boolean {
    let droppedOne = false
    if (this.size === this.capacity) {
      this.slots[this.head] = undefined
      this.head = (this.head + 1) % this.capacity
      this.size--
      droppedOne = true
    }
    this.slots[(this.head + this.size) % this.capacity] = item
    this.size++
    return droppedOne
  }
  /** Appends `item`; returns the oldest item when it was dropped to make room. */
  pushEvicting(item: A): A | undefined {
    const oldest = this.size === this.capacity ? this.slots[this.head] : undefined
    this.push(item)
    return oldest
  }
  /** Removes and returns up to `n` of the oldest items. */
  take(n: number): Array<A> {
    const count = Math.min(n, this.size)
    const out = new Array<A>(count)
    for (let i = 0; i < count; i++) {
      out[i] = this.slots[this.head] as A
      this.slots[this.head] = undefined
      this.head = (this.head + 1) % this.capacity
    }
    this.size -= count
    return out
  }
  /** Puts `items` (older than everything held) back in front; returns how many of the oldest did not fit. */
  unshiftAll(items: ReadonlyArray<A>): number {
    const room = this.capacity - this.size
    const lost = Math.max(0, items.length - room)
    for (let i = items.length - 1; i >= lost; i--) {
      this.head = (this.head - 1 + this.capacity) % this.capacity
      this.slots[this.head] = items[i]
      this.size++
    }
    return lost
  }
}
