/**
 * What an admin change changed: the fields of a resource before and after,
 * as `{ "<field>": { "old": ..., "new": ... } }`.
 *
 * **Rules**
 *
 * - Only top-level fields are compared (as JSON), a field absent on one
 *   side as null (a create lists the fields it set, not those left null);
 *   bookkeeping fields (`version`, `createdAt`, `updatedAt`) are left out:
 *   the versions are recorded on their own.
 * - Credentials never appear: a field whose name says it holds one (secret
 *   values, token values, hashes, prefixes, passwords, keys, client secrets,
 *   at any depth) is compared but written as `"changed"` when it changed,
 *   never with its old or new value. A whole field that holds such a member
 *   deeper down is written with those members masked (`"***"`); when only
 *   masked members changed, the field is `"changed"`.
 *
 * @since 0.1.0
 */

/** One changed field: its old and new values, or `"changed"` when they are credentials. */
export type FieldChange = { readonly old: unknown; readonly new: unknown } | "changed"

export type Changes = Readonly<Record<string, FieldChange>>

const BOOKKEEPING = new Set(["version", "createdAt", "updatedAt"])

/** Field names that hold a credential or something derived from one. */
const SENSITIVE =
  /(^|_)(value|values|plaintext|token|hash|prefix|password|passwd|secret_?value|client_?secret|private_?key|api_?key|key_?material|ciphertext)$|^(value|token|hash|prefix)$/i

export const isSensitive = (field: string): boolean => SENSITIVE.test(field.replace(/([a-z])([A-Z])/g, "$1_$2"))

/** `value` as plain JSON (class instances and dates included). */
export const plain = (value: unknown): unknown => value === undefined ? undefined : JSON.parse(JSON.stringify(value))

/** `value` with every sensitive member masked. */
const masked = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(masked)
  if (value === null || typeof value !== "object") return value
  return Object.fromEntries(
    Object.entries(value).map(([key, member]) => [key, isSensitive(key) ? "***" : masked(member)])
  )
}

/** The changed fields from `before` to `after` (either may be absent: a create or a delete). */
export const diff = (before: unknown, after: unknown): Changes => {
  const a = (plain(before) ?? {}) as Record<string, unknown>
  const b = (plain(after) ?? {}) as Record<string, unknown>
  const out: Record<string, FieldChange> = {}
  for (const field of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (BOOKKEEPING.has(field)) continue
    // absent on one side (a create or a delete) and null on the other is no change
    const old = a[field] ?? null
    const next = b[field] ?? null
    if (JSON.stringify(old) === JSON.stringify(next)) continue
    if (isSensitive(field)) {
      out[field] = "changed"
      continue
    }
    const oldShown = masked(old)
    const newShown = masked(next)
    out[field] = JSON.stringify(oldShown) === JSON.stringify(newShown)
      ? "changed"
      : { old: oldShown ?? null, new: newShown ?? null }
  }
  return out
}
