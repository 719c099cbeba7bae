/**
 * JSON text from a value of any depth.
 *
 * V8's `JSON.stringify` recurses and throws "Maximum call stack size
 * exceeded" at roughly 10,000 levels, while `JSON.parse` accepts far deeper
 * text. This serializer keeps an explicit stack instead.
 *
 * **Rules**
 *
 * - Same output as `JSON.stringify(value)` without indentation: `toJSON` is
 *   called, boxed primitives are unboxed, non-finite numbers become `null`,
 *   `undefined`, functions and symbols are skipped in objects and become
 *   `null` in arrays, a BigInt throws a `TypeError`.
 * - Deeper than `maxDepth` throws a `RangeError` (that is what a cycle
 *   looks like here).
 * - Shallow values go to `JSON.stringify` itself, which is faster; the
 *   explicit stack is only for values deeper than `NATIVE_DEPTH`.
 *
 * @since 0.1.0
 */

/** Values at most this deep are serialized by `JSON.stringify`. */
export const NATIVE_DEPTH = 1_000

const prepare = (value: unknown, key: string | number): unknown => {
  if (
    (typeof value === "object" && value !== null || typeof value === "bigint") &&
    typeof (value as { toJSON?: unknown }).toJSON === "function"
  ) {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(String(key))
  }
  if (value instanceof Number) return Number(value)
  if (value instanceof String) return String(value)
  if (value instanceof Boolean) return value.valueOf()
  return value
}

/** The text of a leaf, or undefined for what JSON has no text for. */
const leaf = (value: unknown): string | undefined => {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value)
    case "number":
      return Number.isFinite(value) ? String(value) : "null"
    case "boolean":
      return value ? "true" : "false"
    case "bigint":
      throw new TypeError("Do not know how to serialize a BigInt")
    case "object":
      return "null" // only null reaches here
    default:
      return undefined
  }
}

const isContainer = (value: unknown): value is Record<string, unknown> | Array<unknown> =>
  typeof value === "object" && value !== null

/** `JSON.stringify(value)` for a value of any depth up to `maxDepth`. */
export const stringifyJson = (value: unknown, depth: number = Infinity, maxDepth = 10_000_000): string | undefined => {
  if (depth <= NATIVE_DEPTH) return JSON.stringify(value)
  const root = prepare(value, "")
  if (!isContainer(root)) return leaf(root)
  // Short pieces are gathered into a chunk and chunks into a list: fewer
  // array entries and string joins than one entry per bracket and comma.
  const chunks: Array<string> = []
  let chunk = ""
  const write = (piece: string): void => {
    chunk += piece
    if (chunk.length >= 16_384) {
      chunks.push(chunk)
      chunk = ""
    }
  }
  const nodes: Array<Record<string, unknown> | Array<unknown>> = []
  const keys: Array<ReadonlyArray<string> | undefined> = []
  const index: Array<number> = []
  const written: Array<number> = []
  const open = (node: Record<string, unknown> | Array<unknown>): void => {
    if (nodes.length >= maxDepth) throw new RangeError(`JSON value nests deeper than ${maxDepth} levels`)
    const isArray = Array.isArray(node)
    write(isArray ? "[" : "{")
    nodes.push(node)
    keys.push(isArray ? undefined : Object.keys(node))
    index.push(0)
    written.push(0)
  }
  open(root)
  while (nodes.length > 0) {
    const top = nodes.length - 1
    const node = nodes[top]!
    const ks = keys[top]
    const i = index[top]!
    const length = ks === undefined ? (node as Array<unknown>).length : ks.length
    if (i >= length) {
      write(ks === undefined ? "]" : "}")
      nodes.pop()
      keys.pop()
      index.pop()
      written.pop()
      continue
    }
    index[top] = i + 1
    const key = ks === undefined ? i : ks[i]!
    const child = prepare(ks === undefined ? (node as Array<unknown>)[i] : (node as Record<string, unknown>)[key], key)
    const text = isContainer(child) ? undefined : leaf(child)
    if (ks !== undefined && !isContainer(child) && text === undefined) continue
    if (written[top]! > 0) write(",")
    written[top] = written[top]! + 1
    if (ks !== undefined) write(JSON.stringify(key as string) + ":")
    if (isContainer(child)) open(child)
    else write(text ?? "null")
  }
  chunks.push(chunk)
  return chunks.join("")
}
