/**
 * What Postgres can store: the one place that decides, for every writer.
 *
 * Postgres refuses U+0000 in `text` (and `text[]`) and, in `jsonb`, the
 * escapes `\u0000` and unpaired surrogates (`"\ud800"`, which
 * `JSON.stringify` writes for a lone surrogate); either fails the whole
 * statement. A lone surrogate bound as `text` is not refused but silently
 * turned into U+FFFD by the driver's UTF-8 encoder.
 *
 * **Rules**
 *
 * - Values a client sends that Janus only records (tool names in audit rows
 *   and `calls` events, `clientInfo` and capabilities of a session, ...) are
 *   made storable where they enter storage, never refused: every U+0000 and
 *   every unpaired surrogate becomes U+FFFD (the Unicode replacement
 *   character), in strings and in object keys, so the record says that
 *   something unstorable was there instead of silently shortening the value
 *   (`"x\u0000"` must not be stored as the name of tool `x`). Two keys that
 *   become equal keep the later value.
 * - Configuration is never made storable: a write through the admin API or
 *   the repositories is refused with the field, its value (escaped) and what
 *   is expected (`isStorableText`), and changes nothing.
 * - `storableJsonText` is what every `jsonb` parameter is bound as. It costs
 *   one `JSON.stringify` and one scan of its text in the usual case; values
 *   that need replacing are rewritten from that text (so `toJSON` is
 *   respected). A value `JSON.stringify` cannot write (a cycle, a bigint) has
 *   no stored form: `undefined`, for the writer to refuse.
 *
 * @since 0.1.0
 */

/** What replaces each character Postgres cannot store. */
export const REPLACEMENT = "\ufffd"

const NUL = "\u0000"

/** True when Postgres can store `value` as `text` unchanged: well-formed UTF-16 without U+0000. */
export const isStorableText = (value: string): boolean => !value.includes(NUL) && value.isWellFormed()

/** `value` with each U+0000 and each unpaired surrogate replaced by U+FFFD. */
export const storableText = (value: string): string =>
  isStorableText(value) ? value : value.toWellFormed().replaceAll(NUL, REPLACEMENT)

/** A JSON value (as `JSON.parse` returns) with every string and key made storable. */
const storableValue = (value: unknown): unknown => {
  if (typeof value === "string") return storableText(value)
  if (Array.isArray(value)) return value.map(storableValue)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [storableText(key), storableValue(item)]))
  }
  return value
}

// In `JSON.stringify`'s output a surrogate escape is always unpaired (pairs are written as they are) and
// NUL is always `\u0000`. A match may also be an escaped backslash followed by "u0000": only a slower path.
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i

/**
 * The JSON text of `value` that `jsonb` accepts (see the rules), or
 * `undefined` when `value` has no JSON text (`undefined`, a function, a
 * cycle, a bigint).
 */
export const storableJsonText = (value: unknown): string | undefined => {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch {
    return undefined
  }
  if (text === undefined || !UNSTORABLE_ESCAPE.test(text)) return text
  return JSON.stringify(storableValue(JSON.parse(text)))
}
