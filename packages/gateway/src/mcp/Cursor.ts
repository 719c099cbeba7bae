/**
 * The opaque cursors of the federated lists (`resources/list`,
 * `resources/templates/list`, `prompts/list`).
 *
 * **Rules**
 *
 * - The gateway holds every upstream's whole list (fetched page by page when
 *   the upstream is listed, see `federation/UpstreamPool.ts`), so a page is a
 *   slice of the merged list, ordered by served key. The cursor encodes where
 *   the previous page stopped: the list kind and the last key served, which
 *   is the position of every upstream at once (each upstream's items after
 *   that key are still to come). Pages stay consistent while items are
 *   added or removed: nothing is served twice, nothing present throughout
 *   is skipped.
 * - A cursor of another list, or one not issued by this gateway, is Invalid
 *   Params (-32602) naming the cursor.
 *
 * @since 0.1.0
 */
import * as Base64Url from "effect/encoding/Base64Url"
import * as Result from "effect/Result"

/** `kind` + the last key of the page. */
export const encode = (kind: string, lastKey: string): string => Base64Url.encode(JSON.stringify([kind, lastKey]))

/** The last key of the previous page, or `undefined` when `cursor` is not one of `kind`'s. */
export const decode = (kind: string, cursor: unknown): string | undefined => {
  if (typeof cursor !== "string") return undefined
  const decoded = Base64Url.decodeString(cursor)
  if (Result.isFailure(decoded)) return undefined
  try {
    const value: unknown = JSON.parse(decoded.success)
    return Array.isArray(value) && value.length === 2 && value[0] === kind && typeof value[1] === "string"
      ? value[1]
      : undefined
  } catch {
    return undefined
  }
}

/** Index of the first key greater than `key` in items sorted by key. */
export const after = (keys: ReadonlyArray<{ readonly key: string }>, key: string): number => {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys[mid]!.key <= key) lo = mid + 1
    else hi = mid
  }
  return lo
}
