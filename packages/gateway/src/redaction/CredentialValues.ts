/**
 * The detector of credential values: the value after a key that names a
 * credential.
 *
 * **Rules**
 *
 * - The key is a word that names a credential (`CredentialNames.ts`),
 *   followed by `=` or `:`; the value is quoted (to its closing quote on the
 *   line) or runs up to a space or a delimiter of URLs, JSON and markup.
 * - After a plain word and `:` (`password: …`) an unquoted value must look
 *   like a secret (a digit, a symbol, or mixed case), so that
 *   "Password: required" is left alone.
 * - A value that is already a marker is stepped over, so a second redaction
 *   examines exactly what the first did. A value stops only where a PEM block
 *   begins (`-----BEGIN `).
 * - A failed search for a closing quote, and a failed `token=` value, are
 *   remembered, so no quote is looked for and no value read twice over the
 *   same text (linear time).
 * - Bare `token` names no credential (`CredentialNames.ts`), but in an
 *   assignment (`token=…`, `?token=…&`, in any case, nothing between the
 *   name, the `=` and the value) a value that looks like a credential is one:
 *   at least 8 characters with a digit or an upper-case letter after a
 *   lower-case one, so `token=abc`, `token=expired` or `token=next` stay.
 *   The other detectors look at the value first: a key there is reported as
 *   what it is (`token=ghp_…` is a GitHub token).
 *
 * @since 0.1.0
 */
import * as CredentialNames from "./CredentialNames.ts"
import * as Kinds from "./Kinds.ts"
import * as ScanChars from "./ScanChars.ts"
import { TokenDetectors } from "./TokenDetectors.ts"

// Bound locally: optimised code folds a module's own constants, not imported bindings
// (measured: the scan is ~4% slower with the names imported).
const {
  APOSTROPHE,
  B64URL,
  BACKSLASH,
  classOf,
  COLON,
  DASH,
  DIGIT,
  EQUALS,
  LOWER,
  PEM_BEGIN,
  QUOTE,
  SPACE,
  TAB,
  UPPER,
  VALUE_STOP,
  WORD
} = ScanChars

/** The value after a key that names a credential. */
export abstract class CredentialValues extends TokenDetectors {
  // ------------------------------------------------------ credential values

  /**
   * A key naming a credential (`credentialKey`), `=` or `:` (spaces around
   * allowed; a JSON key's closing quote before the `:`), then its value:
   * quoted (to the closing quote on the line) or up to a space or a
   * delimiter (`VALUE_STOP`). The value is the match. After a plain word
   * (`password: …`) an unquoted value must look like a secret, so that prose
   * ("Password: required") is left alone; after `=` or a compound name
   * (`api_key`, `DB_PASSWORD`, `X-Api-Key`) any value is one.
   */
  /** Whether the word ending at `wordEnd` may end a credential's name, or go on into a longer key (`x-api-key`). */
  protected mayBeKey(wordEnd: number): boolean {
    return CredentialNames.mayEndName(this.text.charCodeAt(wordEnd - 1)) ||
      (wordEnd < this.to && this.text.charCodeAt(wordEnd) === DASH)
  }

  protected credential(i: number, wordEnd: number): number {
    if (i < this.credentialFloor) return -1
    const text = this.text
    const to = this.to
    let keyEnd = wordEnd
    const next = wordEnd < to ? text.charCodeAt(wordEnd) : 0
    if (next === DASH) {
      // Only a dash carries a key past the word (`x-api-key`); such runs are measured once.
      if (i < this.keyFrom || i >= this.keyEnd) {
        this.keyFrom = i
        this.keyEnd = this.tokenEnd(i, B64URL, PEM_BEGIN)
      }
      keyEnd = this.keyEnd
    } else if (next !== EQUALS && next !== COLON && next !== SPACE && next !== QUOTE && next !== APOSTROPHE) {
      if (next !== TAB) return -1
    }
    if (!CredentialNames.mayEndName(text.charCodeAt(keyEnd - 1))) return -1
    let p = keyEnd
    const before = i > this.lastEnd ? text.charCodeAt(i - 1) : 0
    if ((before === QUOTE || before === APOSTROPHE) && p < to && text.charCodeAt(p) === before) p++
    while (p < to && (text.charCodeAt(p) === SPACE || text.charCodeAt(p) === TAB)) p++
    if (p >= to) return -1
    const delimiter = text.charCodeAt(p)
    if (delimiter !== EQUALS && delimiter !== COLON) return -1
    p++
    if (delimiter === EQUALS && p < to && text.charCodeAt(p) === EQUALS) return -1
    const kind = CredentialNames.credentialKey(text, i, keyEnd)
    if (kind === CredentialNames.NOT_A_KEY) {
      return delimiter === EQUALS && p === keyEnd + 1 && keyEnd - i === 5 && this.hasFold("token", i)
        ? this.tokenAssignment(p)
        : -1
    }
    while (p < to && (text.charCodeAt(p) === SPACE || text.charCodeAt(p) === TAB)) p++
    if (p >= to) return -1
    const open = text.charCodeAt(p)
    if (open === QUOTE || open === APOSTROPHE) {
      const close = this.closingQuote(p + 1, open)
      if (close > p + 1) return this.emit(p + 1, close, Kinds.CREDENTIAL)
      if (close > 0) {
        this.credentialFloor = close
        return -1
      }
      p++ // no closing quote in sight: the value runs as if unquoted
    }
    // Already redacted: skipped like a value, so that a second pass examines what the first did.
    if (text.startsWith(Kinds.MARKER_PREFIX, p)) {
      // a marker's name is at most 40 characters: a bounded look for its "]"
      const limit = Math.min(to, p + Kinds.MARKER_PREFIX.length + 41)
      for (let q = p + Kinds.MARKER_PREFIX.length; q < limit; q++) if (text.charCodeAt(q) === 93 /* ] */) return q + 1
      return -1
    }
    const start = p
    while (p < to) {
      const c = text.charCodeAt(p)
      if (c <= SPACE || c === 127 || (classOf(c) & VALUE_STOP) !== 0 || (c === DASH && this.has(PEM_BEGIN, p))) {
        break
      }
      p++
    }
    if (p > start && (delimiter === EQUALS || kind === CredentialNames.COMPOUND_KEY || this.looksSecret(start, p))) {
      return this.emit(start, p, Kinds.CREDENTIAL)
    }
    // A key inside this value would need an "=" or ":", which would have made it look like a secret.
    this.credentialFloor = p
    return -1
  }

  /**
   * The value of a bare `token=` starts at `start`. A value starting with a
   * word is left to the other detectors first (`word` judges it after them,
   * see `assigned`): returns `start`, where the scan goes on. Any other value
   * is judged here.
   */
  protected tokenAssignment(start: number): number {
    if (start >= this.to) return -1
    if ((classOf(this.text.charCodeAt(start)) & WORD) !== 0) {
      this.assignedAt = start
      return start
    }
    return this.assigned(start)
  }

  /**
   * The value of a bare `token=` from `start`, up to a space or a delimiter:
   * a credential when it has at least 8 characters with a digit, or an
   * upper-case letter after a lower-case one. Returns its end or -1.
   */
  protected assigned(start: number): number {
    if (start < this.assignedFloor) return -1
    const text = this.text
    const to = this.to
    let p = start
    while (p < to) {
      const c = text.charCodeAt(p)
      if (c <= SPACE || c === 127 || (classOf(c) & VALUE_STOP) !== 0 || (c === DASH && this.has(PEM_BEGIN, p))) {
        break
      }
      p++
    }
    if (p - start >= 8 && this.looksRandom(start, p)) return this.emit(start, p, Kinds.CREDENTIAL)
    // A value starting inside this one is a suffix of it: shorter, and lacking what this one lacked.
    this.assignedFloor = p
    return -1
  }

  /**
   * The closing `quote` from `from` on the same line (a backslash escapes one
   * character), or -1. A marker ends the search as the end of the range does:
   * where the first pass saw the range end at a custom match, a second pass
   * sees that match's marker, and both must judge the value alike.
   */
  protected closingQuote(from: number, quote: number): number {
    const text = this.text
    const q = quote === QUOTE ? 0 : 1
    // A search from inside the span a failed search covered gives up at the same place: not read twice.
    if (from >= this.quoteMissFrom[q]! && from < this.quoteMissEnd[q]!) return -1
    let p = from
    for (; p < this.to; p++) {
      const c = text.charCodeAt(p)
      if (c === quote) return p
      if (c === 10 || c === 13 || (c === 91 /* [ */ && text.startsWith(Kinds.MARKER_PREFIX, p))) break
      if (c === BACKSLASH) p++
    }
    this.quoteMissFrom[q] = from
    this.quoteMissEnd[q] = p
    return -1
  }

  /** A value after a plain word and a colon: a digit, a symbol, or an upper-case letter after a lower-case one. */
  protected looksSecret(from: number, to: number): boolean {
    const text = this.text
    let end = to
    // A sentence's punctuation is not part of the value.
    while (end > from && ".,!?;:".includes(text.charAt(end - 1))) end--
    for (let p = from; p < end; p++) {
      const k = classOf(text.charCodeAt(p))
      if ((k & (UPPER | LOWER | DIGIT)) === 0 || (k & DIGIT) !== 0) return true
    }
    return this.looksRandom(from, end)
  }
}
