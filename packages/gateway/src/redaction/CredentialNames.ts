/**
 * Which keys name a credential: `password=…`, `"apiKey": "…"`,
 * `X-Api-Key: …`, `DB_PASSWORD=…`. The scanner redacts the value written
 * after such a key, and the JSON walk the string value of such a member.
 *
 * **Rules**
 *
 * - A key names a credential when it ends with one of `NAMES`, in any case
 *   and with `_` or `-` anywhere in it (`API_KEY`, `x-api-key`, `apiKey`),
 *   the name starting at the start of the key, after a separator or at a
 *   camel-case hump (`clientSecret`): `passwordless`, `paidtoken` or
 *   `topsecret` are not names of a credential.
 * - Plain words (`password`, `secret`, `passphrase`) are also written in
 *   prose ("Password: required"): the scanner wants their value to look like
 *   a secret. Compound names (`api_key`, `client_secret`, `passwd`, …) are
 *   not: any value after them is a credential.
 * - Bare `token` and `key` are not names of a credential: tokenizers, cache
 *   keys and pagination tokens use them for data.
 *
 * @since 0.1.0
 */

/** What `credentialKey` found. */
export const NOT_A_KEY = 0
/** A plain word (`password`, `secret`, `passphrase`): after `:` its value must look like a secret. */
export const PLAIN_KEY = 1
/** A name nobody writes in prose (`api_key`, `client_secret`, `passwd`, …): any value is a credential. */
export const COMPOUND_KEY = 2

// Compact (lower case, no separators); longest first within a last letter, so that `client_secret` is
// not taken for `secret`. `true`: a compound name, `false`: a plain word.
const NAMES: ReadonlyArray<readonly [name: string, compound: boolean]> = [
  ["password", false],
  ["passwd", true],
  ["passphrase", false],
  ["clientsecret", true],
  ["apisecret", true],
  ["appsecret", true],
  ["secret", false],
  ["sessiontoken", true],
  ["refreshtoken", true],
  ["accesstoken", true],
  ["bearertoken", true],
  ["authtoken", true],
  ["apitoken", true],
  ["idtoken", true],
  ["privatekey", true],
  ["secretkey", true],
  ["accesskey", true],
  ["apikey", true]
]

/** The names ending in each lower-case ASCII letter. */
const NAMES_BY_LAST: ReadonlyArray<ReadonlyArray<readonly [string, boolean]> | undefined> = Array.from(
  { length: 128 },
  (_, c) => {
    const names = NAMES.filter(([name]) => name.charCodeAt(name.length - 1) === c)
    return names.length === 0 ? undefined : names
  }
)

/** 1 for the letters a name ends with (d, e, t, n or y, either case): most words are ruled out by it. */
const NAME_END = Uint8Array.from({ length: 128 }, (_, c) => NAMES_BY_LAST[c | 32] === undefined ? 0 : 1)

/** Whether a key ending with the character `c` may name a credential. */
export const mayEndName = (c: number): boolean => c < 128 && NAME_END[c] === 1

const UNDERSCORE = 95
const DASH = 45

const isSeparator = (c: number) => c === UNDERSCORE || c === DASH

/** Whether `text[from, to)`, a run of `[A-Za-z0-9_-]`, names a credential, and how. */
export const credentialKey = (text: string, from: number, to: number): number => {
  if (to <= from) return NOT_A_KEY
  const names = NAMES_BY_LAST[(text.charCodeAt(to - 1) | 32) & 127]
  if (names === undefined) return NOT_A_KEY
  for (const [name, compound] of names) {
    if (endsWithName(text, from, to, name)) return compound ? COMPOUND_KEY : PLAIN_KEY
  }
  return NOT_A_KEY
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57

const endsWithName = (text: string, from: number, to: number, name: string): boolean => {
  let p = to
  for (let n = name.length - 1; n >= 0; n--) {
    while (p > from && isSeparator(text.charCodeAt(p - 1)) && n < name.length - 1) p--
    if (p <= from || (text.charCodeAt(p - 1) | 32) !== name.charCodeAt(n)) return false
    p--
  }
  if (p === from) return true
  const previous = text.charCodeAt(p - 1)
  const first = text.charCodeAt(p)
  return isSeparator(previous) ||
    (first >= 65 && first <= 90 && ((previous >= 97 && previous <= 122) || isDigit(previous)))
}
