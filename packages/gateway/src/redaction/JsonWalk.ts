/**
 * Walks a JSON value and rebuilds only what a redaction changed.
 *
 * **Rules**
 *
 * - Iterative, with an explicit stack: a value nested 100,000 levels deep is
 *   walked like a flat one, and the call stack never grows with the depth.
 *   A value deeper than `maxDepth` (or a cyclic one, which is never JSON)
 *   stops the walk with `TOO_DEEP`.
 * - Copy on write: a container is copied only when one of its keys or
 *   children changed, so a value with nothing to redact comes back as the
 *   very same object, without a single allocation beyond the key lists.
 * - Object keys are redacted too: a key can carry data (a map from e-mail
 *   address to account, say). Two keys redacted to the same marker would
 *   collide and one value would be lost, so a later duplicate gets `#2`,
 *   `#3`…: the object keeps as many keys as it had, in the same order.
 * - Strings, keys and numbers go to the `Leaves` given (a string that is an
 *   object member's value with its key, which can say what it holds);
 *   everything else (booleans, null) is kept.
 *
 * @since 0.1.0
 */

/** What the walk does with the leaves it meets; each returns its argument when it has nothing to change. */
export interface Leaves {
  readonly string: (s: string) => string
  /** A string that is the value of an object member: its key may say what it is (a password, say). */
  readonly member: (key: string, s: string) => string
  readonly key: (key: string) => string
  readonly number: (n: number) => unknown
}

/** Returned by `walk` when the value nests deeper than allowed. */
export const TOO_DEEP: unique symbol = Symbol.for("@janus/gateway/redaction/TooDeep")

type Container = Record<string, unknown> | Array<unknown>

export class JsonWalker {
  /** How deep the last walked value nested (0 for a leaf); the caller picks a serializer with it. */
  deepest = 0
  private readonly leaves: Leaves
  private readonly maxDepth: number
  // The stack, one slot per open container: the container, its keys (objects
  // only), the next child to visit, its changed values and its changed keys.
  private readonly nodes: Array<Container | undefined> = []
  private readonly keys: Array<ReadonlyArray<string> | undefined> = []
  private readonly index: Array<number> = []
  private readonly values: Array<Array<unknown> | undefined> = []
  private readonly newKeys: Array<Array<string> | undefined> = []

  constructor(leaves: Leaves, maxDepth: number) {
    this.leaves = leaves
    this.maxDepth = maxDepth
  }

  /** The redacted value, or `TOO_DEEP`. */
  walk(root: unknown): unknown {
    this.deepest = 0
    if (typeof root !== "object" || root === null) return this.leaf(root)
    this.open(root as Container, 0)
    let depth = 1
    let child: unknown = undefined
    let returning = false
    for (;;) {
      const top = depth - 1
      const node = this.nodes[top]!
      const keys = this.keys[top]
      let i = this.index[top]!
      if (returning) {
        returning = false
        const original = keys === undefined
          ? (node as Array<unknown>)[i - 1]
          : (node as Record<string, unknown>)[keys[i - 1]!]
        if (child !== original) this.set(top, i - 1, child)
      }
      const length = keys === undefined ? (node as Array<unknown>).length : keys.length
      let descended = false
      while (i < length) {
        const value = keys === undefined ? (node as Array<unknown>)[i] : (node as Record<string, unknown>)[keys[i]!]
        i++
        if (typeof value === "object" && value !== null) {
          if (depth >= this.maxDepth) {
            this.clear(depth)
            return TOO_DEEP
          }
          this.index[top] = i
          this.open(value as Container, depth)
          depth++
          descended = true
          break
        }
        const redacted = keys !== undefined && typeof value === "string"
          ? this.leaves.member(keys[i - 1]!, value)
          : this.leaf(value)
        if (redacted !== value) this.set(top, i - 1, redacted)
      }
      if (descended) continue
      const result = this.close(top)
      depth--
      if (depth === 0) return result
      child = result
      returning = true
    }
  }

  private leaf(value: unknown): unknown {
    switch (typeof value) {
      case "string":
        return this.leaves.string(value)
      case "number":
        return this.leaves.number(value)
      default:
        return value
    }
  }

  private open(node: Container, slot: number): void {
    this.nodes[slot] = node
    this.index[slot] = 0
    this.values[slot] = undefined
    this.newKeys[slot] = undefined
    if (slot + 1 > this.deepest) this.deepest = slot + 1
    if (Array.isArray(node)) {
      this.keys[slot] = undefined
      return
    }
    const keys = Object.keys(node)
    this.keys[slot] = keys
    let changed: Array<string> | undefined
    for (let j = 0; j < keys.length; j++) {
      const key = keys[j]!
      const redacted = this.leaves.key(key)
      if (redacted !== key) {
        changed ??= keys.slice()
        changed[j] = redacted
      }
    }
    this.newKeys[slot] = changed
  }

  private set(slot: number, i: number, value: unknown): void {
    let values = this.values[slot]
    if (values === undefined) {
      const node = this.nodes[slot]!
      const keys = this.keys[slot]
      values = keys === undefined
        ? (node as Array<unknown>).slice()
        : keys.map((key) => (node as Record<string, unknown>)[key])
      this.values[slot] = values
    }
    values[i] = value
  }

  /** Finishes the container in `slot`: the original when nothing changed, else the rebuilt one. */
  private close(slot: number): unknown {
    const node = this.nodes[slot]!
    const keys = this.keys[slot]
    const values = this.values[slot]
    const newKeys = this.newKeys[slot]
    this.nodes[slot] = undefined
    this.keys[slot] = undefined
    this.values[slot] = undefined
    this.newKeys[slot] = undefined
    if (values === undefined && newKeys === undefined) return node
    if (keys === undefined) return values
    const out: Record<string, unknown> = {}
    for (let j = 0; j < keys.length; j++) {
      const value = values === undefined ? (node as Record<string, unknown>)[keys[j]!] : values[j]
      let key = newKeys === undefined ? keys[j]! : newKeys[j]!
      if (newKeys !== undefined && Object.hasOwn(out, key)) {
        let n = 2
        while (Object.hasOwn(out, `${key}#${n}`)) n++
        key = `${key}#${n}`
      }
      if (key === "__proto__") {
        // A plain assignment would set the prototype instead of an own key.
        Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true })
      } else {
        out[key] = value
      }
    }
    return out
  }

  /** Drops the references of an abandoned walk, so that the walker does not keep the payload alive. */
  private clear(depth: number): void {
    for (let slot = 0; slot < depth; slot++) {
      this.nodes[slot] = undefined
      this.keys[slot] = undefined
      this.values[slot] = undefined
      this.newKeys[slot] = undefined
    }
  }
}
