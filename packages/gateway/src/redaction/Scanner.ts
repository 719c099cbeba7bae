/**
 * The built-in detectors: one hand-written, left-to-right pass over a string
 * that finds payment cards, e-mail addresses, SSNs, IBANs, cloud and SaaS
 * credentials, JWTs and PEM private keys, with no regular expression.
 *
 * **Rules**
 *
 * - Linear time in the length of the text, whatever the text. Every detector
 *   either reads a bounded number of characters, or reads a maximal run that
 *   no other attempt of the same detector will read again: the main loop
 *   jumps over whole words, digit-group runs are processed once as a whole,
 *   an e-mail's local part and domain are bounded by the neighbouring `@`s,
 *   a failed JWT or Slack attempt raises a floor below which no attempt can
 *   succeed, and the search for a PEM footer is remembered.
 * - A match never depends on what follows a later match: a greedy run that
 *   another match starts inside (an e-mail domain, a JWT or Slack token
 *   running into `-----BEGIN`) is judged as if cut there. Together with the
 *   next rule this makes redaction idempotent, which the property tests check.
 * - Matches start only at a word boundary (the start of the scanned range,
 *   the end of the previous match, or after a character other than
 *   `[A-Za-z0-9_]`) and end at one. Because the start of a range and the end
 *   of a match count as boundaries, scanning already-redacted text (where a
 *   `]` now stands there) finds nothing new: redaction is idempotent.
 * - Cards: 13–19 digits, in one run or in groups of at least three digits
 *   joined by one kind of separator (a space or a dash), Luhn-valid and in a
 *   known IIN range at that length (`PaymentCard.ts`). When a run of groups is
 *   longer, the longest card starting at each group is taken.
 * - SSNs: `AAA-GG-SSSS` or `AAA GG SSSS` in issuable ranges (`Ssn.ts`), in
 *   the digit groups that no card took.
 * - IBANs: registry length and mod-97 (`Iban.ts`), compact or in groups of four.
 * - E-mail: local part `[A-Za-z0-9._%+-]` (no leading, trailing or double
 *   dot), a domain of at least two labels of `[A-Za-z0-9-]` (1–63 characters,
 *   no leading or trailing dash) and an alphabetic top-level label of two or
 *   more letters (or an `xn--` label). ASCII only.
 * - Credentials: AWS access key ids (`AKIA`/`ASIA` + 16 of `[A-Z0-9]`),
 *   GitHub tokens (`ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` + 36–251 alphanumerics,
 *   `github_pat_` + 30 or more of `[A-Za-z0-9_]`), Slack tokens
 *   (`xox[abprs]-` + 10 or more of `[A-Za-z0-9-]`), Stripe live keys
 *   (`sk_live_`/`rk_live_` + 20 or more alphanumerics), Google API keys
 *   (`AIza` + exactly 35 of `[A-Za-z0-9_-]`), JWTs (`eyJ…` `.` `eyJ…` `.`
 *   signature, each of the first two at least 10 characters of base64url) and
 *   PEM blocks `-----BEGIN … PRIVATE KEY-----` (or `PRIVATE KEY BLOCK`) to the
 *   next `-----END …-----`; without a footer, the header and the key body
 *   that follows it (base64 and header lines) are taken.
 * - Bearer tokens: the credential after `Bearer ` (token68, at least 8
 *   characters that look random: a digit, or an upper-case letter after a
 *   lower-case one), so that prose about bearer tokens is left alone; the
 *   scheme stays visible. Janus tokens: `jns_` / `jna_` + 20 or more of
 *   `[A-Za-z0-9_-]`. `sk-` API keys (OpenAI, Anthropic and compatible):
 *   20 or more of `[A-Za-z0-9_-]` with a digit, an upper- and a lower-case
 *   letter.
 * - Credential values: the value after a key that names a credential
 *   (`CredentialNames.ts`) and `=` or `:`, quoted (to its closing quote on
 *   the line) or up to a space or a delimiter of URLs, JSON and markup. After
 *   a plain word and `:` (`password: …`) an unquoted value must look like a
 *   secret (a digit, a symbol, or mixed case), so that "Password: required"
 *   is left alone. A value that is already a marker is stepped over, so a
 *   second redaction examines exactly what the first did. These runs, and
 *   the tokens above, stop only where a PEM block begins (`-----BEGIN `).
 *
 * One scanner belongs to one engine and keeps its scratch arrays between
 * calls; it holds no reference to the text once `finish` is called.
 *
 * @since 0.1.0
 */
import * as CredentialNames from "./CredentialNames.ts"
import * as Iban from "./Iban.ts"
import * as Kinds from "./Kinds.ts"
import * as Luhn from "./Luhn.ts"
import type { Matches } from "./Matches.ts"
import * as PaymentCard from "./PaymentCard.ts"
import * as Ssn from "./Ssn.ts"

// Character classes of ASCII characters; anything at or above 128 has none.
const WORD = 1 // [A-Za-z0-9_]
const DIGIT = 2
const UPPER = 4
const LOWER = 8
const B64URL = 16 // [A-Za-z0-9_-]
const DOMAIN = 32 // [A-Za-z0-9.-]
const LOCAL = 64 // [A-Za-z0-9._%+-]
const PEM_BODY = 128 // base64, whitespace, and what header lines such as "DEK-Info: AES-128-CBC,..." contain
const LABEL = 256 // [A-Z0-9 ], the words of a PEM label
const ALNUM_DASH = 512 // [A-Za-z0-9-]
const TOKEN68 = 1024 // [A-Za-z0-9._~+/-], an HTTP auth credential (RFC 9110 token68, without its trailing "=")
const VALUE_STOP = 2048 // what ends an unquoted credential value: quotes and the delimiters of URLs, JSON, markup

const CLASS = new Uint16Array(128)
const addClass = (chars: string, bits: number): void => {
  for (let i = 0; i < chars.length; i++) CLASS[chars.charCodeAt(i)]! |= bits
}
const UPPERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
const LOWERS = "abcdefghijklmnopqrstuvwxyz"
const DIGITS = "0123456789"
const ALNUM = UPPERS + LOWERS + DIGITS
addClass(ALNUM + "_", WORD)
addClass(DIGITS, DIGIT)
addClass(UPPERS, UPPER)
addClass(LOWERS, LOWER)
addClass(ALNUM + "_-", B64URL)
addClass(ALNUM + ".-", DOMAIN)
addClass(ALNUM + "._%+-", LOCAL)
addClass(ALNUM + "+/=:,- \t\r\n", PEM_BODY)
addClass(UPPERS + DIGITS + " ", LABEL)
addClass(ALNUM + "-", ALNUM_DASH)
addClass(ALNUM + "._~+/-", TOKEN68)
addClass("\"'`&,;<>()[]{}|", VALUE_STOP)

const SPACE = 32
const PEM_BEGIN = "-----BEGIN "
const DASH = 45
const DOT = 46
const AT = 64
const EQUALS = 61
const COLON = 58
const TAB = 9
const QUOTE = 34
const APOSTROPHE = 39
const BACKSLASH = 92

const classOf = (c: number): number => (c < 128 ? CLASS[c]! : 0)
const isDigit = (c: number): boolean => c >= 48 && c <= 57

/** The set of enabled built-in kinds, as a bit mask by kind id. */
export const maskOf = (kinds: ReadonlyArray<Kinds.BuiltinKind>): number =>
  kinds.reduce((mask, kind) => mask | (1 << Kinds.BUILTIN_KINDS.indexOf(kind)), 0)

/** The shortest text any built-in detector can match (`a@b.co`). */
export const MIN_MATCH_LENGTH = 6

export class Scanner {
  private readonly enabled: number
  private text = ""
  private to = 0
  private out: Matches | undefined = undefined
  private lastEnd = 0
  // Below these positions an attempt of the detector is known to fail.
  private jwtFloor = 0
  private slackFloor = 0
  private janusFloor = 0
  private skFloor = 0
  private credentialFloor = 0
  // The last run of key characters ([A-Za-z0-9_-]) looked at: a word starting inside it ends it there too.
  private keyFrom = -1
  private keyEnd = -1
  // The last failed search for a closing " (index 0) or ' (index 1): from where, and where it gave up.
  private readonly quoteMissFrom = [-1, -1]
  private readonly quoteMissEnd = [-1, -1]
  // The last search for a PEM footer: from where, and what it found (-1: none after that point).
  private footerFrom = -1
  private footerAt = -1
  // Greedy matches that failed only because of how their run ended, which a
  // later match starting inside the run would change: an e-mail address (its
  // start, domain start, end of the domain run) and a Slack token (its start,
  // body start, end of the run). See `settle`.
  private emailStart = -1
  private emailFrom = 0
  private emailRunEnd = 0
  private slackStart = -1
  private slackFrom = 0
  private slackRunEnd = 0
  // Digit groups of the current run: their start and end offsets.
  private groupStart = new Int32Array(32)
  private groupEnd = new Int32Array(32)
  // Per group of the current run: the last group of the card starting there, or -1.
  private cardTo = new Int32Array(32)

  constructor(enabled: number) {
    this.enabled = enabled
  }

  /** Starts work on a new text: forgets what was learnt about the previous one. */
  begin(text: string): void {
    this.text = text
    this.jwtFloor = 0
    this.slackFloor = 0
    this.janusFloor = 0
    this.skFloor = 0
    this.credentialFloor = 0
    this.keyFrom = -1
    this.keyEnd = -1
    this.quoteMissFrom[0] = this.quoteMissFrom[1] = -1
    this.quoteMissEnd[0] = this.quoteMissEnd[1] = -1
    this.footerFrom = -1
    this.footerAt = -1
  }

  /** Ends work on the text, so that the scanner does not keep it alive. */
  finish(): void {
    this.text = ""
    this.out = undefined
  }

  /**
   * Appends to `out`, in order, the built-in matches in `text[from, to)` of the
   * text given to `begin`. `from` is a boundary and `to` is the end of the
   * text as far as the detectors can see.
   */
  scan(from: number, to: number, out: Matches): void {
    const text = this.text
    this.to = to
    this.out = out
    this.lastEnd = from
    this.emailStart = -1
    this.slackStart = -1
    let i = from
    while (i < to) {
      const c = text.charCodeAt(i)
      const k = classOf(c)
      if ((k & WORD) !== 0) {
        i = this.word(i, k)
        continue
      }
      if (c === AT) {
        const end = this.email(i)
        if (end > 0) {
          i = end
          continue
        }
      } else if (c === DASH && i + 1 < to && text.charCodeAt(i + 1) === DASH) {
        const end = this.privateKey(i)
        if (end > 0) {
          i = end
          continue
        }
      }
      i++
    }
  }

  private on(kind: number): boolean {
    return (this.enabled & (1 << kind)) !== 0
  }

  private emit(start: number, end: number, kind: number): number {
    if (this.emailStart >= 0 || this.slackStart >= 0) this.settle(start)
    this.out!.push(start, end, kind)
    this.lastEnd = end
    return end
  }

  /**
   * The end of a token run of class `bits` from `from`; it stops before
   * `stop` (`-----` by default), where a PEM block may begin. The newer
   * detectors pass `-----BEGIN `, the one place a PEM block can start: they
   * stop exactly there, so a dash left before it, which joins the run once
   * the block is a marker, is counted alike by a second redaction.
   */
  private tokenEnd(from: number, bits: number, stop = "-----"): number {
    const text = this.text
    const to = this.to
    let i = from
    for (; i < to; i++) {
      const c = text.charCodeAt(i)
      if ((classOf(c) & bits) === 0 || (c === DASH && this.has(stop, i))) break
    }
    return i
  }

  /** True when `s` occurs at `at` and ends inside the scanned range. */
  private has(s: string, at: number): boolean {
    return at + s.length <= this.to && this.text.startsWith(s, at)
  }

  /** The end of the run of characters of class `bits` starting at `from`. */
  private runEnd(from: number, bits: number): number {
    const text = this.text
    const to = this.to
    let i = from
    while (i < to && (classOf(text.charCodeAt(i)) & bits) !== 0) i++
    return i
  }

  /** True when every character of `text[from, to)` has one of `bits`. */
  private all(from: number, to: number, bits: number): boolean {
    const text = this.text
    for (let i = from; i < to; i++) {
      if ((classOf(text.charCodeAt(i)) & bits) === 0) return false
    }
    return true
  }

  /** A word starts at `i`: tries the detectors that start with its first character; returns where to go on. */
  private word(i: number, k: number): number {
    if ((k & DIGIT) !== 0) {
      return this.on(Kinds.CARD) || this.on(Kinds.SSN) ? this.digits(i) : this.runEnd(i + 1, WORD)
    }
    const wordEnd = this.runEnd(i + 1, WORD)
    let end = (k & UPPER) !== 0 ? this.upper(i, wordEnd) : this.lower(i, wordEnd)
    // Most words cannot end a credential's name: ruled out here without a call.
    if (end < 0 && this.mayBeKey(wordEnd) && this.on(Kinds.CREDENTIAL)) end = this.credential(i, wordEnd)
    // Every match ends at or after the end of the word it starts in.
    return end > 0 ? end : wordEnd
  }

  // ---------------------------------------------------------------- digits

  /** A run of digit groups joined by single spaces or dashes starts at `i`. */
  private digits(i: number): number {
    const text = this.text
    const to = this.to
    let groups = 0
    let p = i
    let glued = false
    for (;;) {
      const start = p
      while (p < to && isDigit(text.charCodeAt(p))) p++
      this.pushGroup(groups++, start, p)
      if (p >= to) break
      const c = text.charCodeAt(p)
      if ((c === SPACE || c === DASH) && p + 1 < to && isDigit(text.charCodeAt(p + 1))) {
        p++
        continue
      }
      // A last group glued to letters is part of a word: it cannot end a match.
      glued = (classOf(c) & WORD) !== 0
      break
    }
    this.digitMatches(glued ? groups - 1 : groups)
    return glued ? this.runEnd(p, WORD) : p
  }

  private pushGroup(g: number, start: number, end: number): void {
    if (g >= this.groupStart.length) {
      const starts = new Int32Array(this.groupStart.length * 2)
      const ends = new Int32Array(this.groupStart.length * 2)
      starts.set(this.groupStart)
      ends.set(this.groupEnd)
      this.groupStart = starts
      this.groupEnd = ends
    }
    this.groupStart[g] = start
    this.groupEnd[g] = end
  }

  /**
   * Finds cards and SSNs among the first `usable` groups of a run. Cards
   * first, each the longest at the earliest group; then SSNs in the groups
   * between cards. Neither choice depends on what follows a match, so the
   * groups left over are judged the same once the matches are markers.
   */
  private digitMatches(usable: number): void {
    if (this.cardTo.length < usable) this.cardTo = new Int32Array(this.groupStart.length)
    let cards = 0
    if (this.on(Kinds.CARD)) {
      let a = 0
      while (a < usable) {
        const b = this.card(a, usable)
        this.cardTo[a] = b
        if (b >= 0) {
          cards++
          a = b + 1
        } else {
          a++
        }
      }
    }
    const ssns = this.on(Kinds.SSN)
    let a = 0
    while (a < usable) {
      if (cards > 0 && this.cardTo[a]! >= 0) {
        this.emit(this.groupStart[a]!, this.groupEnd[this.cardTo[a]!]!, Kinds.CARD)
        a = this.cardTo[a]! + 1
        continue
      }
      if (
        ssns && a + 2 < usable && this.ssn(a) && !(cards > 0 && (this.cardTo[a + 1]! >= 0 || this.cardTo[a + 2]! >= 0))
      ) {
        this.emit(this.groupStart[a]!, this.groupEnd[a + 2]!, Kinds.SSN)
        a += 3
        continue
      }
      a++
    }
  }

  /** The last group of the longest card starting at group `a`, or -1. At most 19 groups are looked at. */
  private card(a: number, usable: number): number {
    const text = this.text
    const starts = this.groupStart
    const ends = this.groupEnd
    const first = ends[a]! - starts[a]!
    if (first > PaymentCard.MAX_LENGTH) return -1
    const separator = a + 1 < usable ? text.charCodeAt(ends[a]!) : 0
    let digits = 0
    let prefix = -1
    let best = -1
    for (let b = a; b < usable; b++) {
      const length = ends[b]! - starts[b]!
      if (b > a && (first < 3 || length < 3 || text.charCodeAt(ends[b - 1]!) !== separator)) break
      digits += length
      if (digits > PaymentCard.MAX_LENGTH) break
      if (digits >= PaymentCard.MIN_LENGTH) {
        if (prefix < 0) prefix = this.prefix6(starts[a]!)
        if (PaymentCard.isKnownIin(prefix, digits) && Luhn.isValidRange(text, starts[a]!, ends[b]!)) best = b
      }
    }
    return best
  }

  /** The first six digits from `start` as a number, skipping separators (at least 13 digits follow). */
  private prefix6(start: number): number {
    const text = this.text
    let value = 0
    let n = 0
    for (let p = start; n < 6; p++) {
      const d = text.charCodeAt(p) - 48
      if (d >= 0 && d <= 9) {
        value = value * 10 + d
        n++
      }
    }
    return value
  }

  /** True when groups `a..a+2` are an SSN: 3, 2 and 4 digits joined by one separator, in issuable ranges. */
  private ssn(a: number): boolean {
    const text = this.text
    const starts = this.groupStart
    const ends = this.groupEnd
    if (ends[a]! - starts[a]! !== 3 || ends[a + 1]! - starts[a + 1]! !== 2 || ends[a + 2]! - starts[a + 2]! !== 4) {
      return false
    }
    if (text.charCodeAt(ends[a]!) !== text.charCodeAt(ends[a + 1]!)) return false
    return Ssn.isValidParts(this.number(starts[a]!, 3), this.number(starts[a + 1]!, 2), this.number(starts[a + 2]!, 4))
  }

  private number(start: number, length: number): number {
    let value = 0
    for (let p = start; p < start + length; p++) value = value * 10 + this.text.charCodeAt(p) - 48
    return value
  }

  // ------------------------------------------------------- upper-case words

  private upper(i: number, wordEnd: number): number {
    const text = this.text
    if (i + 4 > this.to) return -1
    const c0 = text.charCodeAt(i)
    const c1 = text.charCodeAt(i + 1)
    if (c0 === 66 /* B */ && this.on(Kinds.BEARER_TOKEN)) {
      const end = this.bearer(i, wordEnd)
      if (end > 0) return end
    }
    if (c0 === 65 /* A */) {
      // AKIA / ASIA + 16 of [A-Z0-9], and nothing more in the word.
      if (
        (c1 === 75 /* K */ || c1 === 83 /* S */) && text.charCodeAt(i + 2) === 73 /* I */ &&
        text.charCodeAt(i + 3) === 65 /* A */ && wordEnd - i === 20 && this.on(Kinds.AWS_ACCESS_KEY) &&
        this.all(i + 4, i + 20, UPPER | DIGIT)
      ) {
        return this.emit(i, i + 20, Kinds.AWS_ACCESS_KEY)
      }
      // AIza + exactly 35 of [A-Za-z0-9_-].
      if (c1 === 73 /* I */ && this.has("za", i + 2) && this.on(Kinds.GOOGLE_API_KEY)) {
        const end = i + 39
        if (
          end <= this.to && this.all(i + 4, end, B64URL) &&
          (end === this.to || (classOf(text.charCodeAt(end)) & B64URL) === 0 || this.has("-----", end))
        ) {
          return this.emit(i, end, Kinds.GOOGLE_API_KEY)
        }
      }
    }
    const length = Iban.lengthOf(c0, c1)
    if (length > 0 && isDigit(text.charCodeAt(i + 2)) && isDigit(text.charCodeAt(i + 3)) && this.on(Kinds.IBAN)) {
      const end = this.iban(i, wordEnd, length)
      if (end > 0) return this.emit(i, end, Kinds.IBAN)
    }
    return -1
  }

  /** The end of an IBAN of `length` characters starting at `i`, compact or in groups of four; or -1. */
  private iban(i: number, wordEnd: number, length: number): number {
    const text = this.text
    const to = this.to
    if (wordEnd - i === length) {
      return this.all(i + 4, wordEnd, UPPER | DIGIT) && Iban.checksumRange(text, i, wordEnd) ? wordEnd : -1
    }
    if (wordEnd - i !== 4) return -1
    let p = i + 4
    let count = 4
    while (count < length) {
      if (p >= to || text.charCodeAt(p) !== SPACE) return -1
      p++
      const n = Math.min(4, length - count)
      if (p + n > to || !this.all(p, p + n, UPPER | DIGIT)) return -1
      p += n
      count += n
    }
    if (p < to && (classOf(text.charCodeAt(p)) & WORD) !== 0) return -1
    return Iban.checksumRange(text, i, p) ? p : -1
  }

  // ------------------------------------------------------- lower-case words

  private lower(i: number, wordEnd: number): number {
    const text = this.text
    switch (text.charCodeAt(i)) {
      case 103 /* g */: {
        if (!this.on(Kinds.GITHUB_TOKEN)) return -1
        // ghp_ gho_ ghu_ ghs_ ghr_ + 36..251 alphanumerics
        if (this.has("gh", i) && this.has("_", i + 3) && "pousr".includes(text.charAt(i + 2))) {
          const n = wordEnd - i - 4
          return n >= 36 && n <= 251 && this.all(i + 4, wordEnd, UPPER | LOWER | DIGIT)
            ? this.emit(i, wordEnd, Kinds.GITHUB_TOKEN)
            : -1
        }
        if (this.has("github_pat_", i)) {
          const n = wordEnd - i - 11
          return n >= 30 && n <= 244 ? this.emit(i, wordEnd, Kinds.GITHUB_TOKEN) : -1
        }
        return -1
      }
      case 120 /* x */:
        return this.on(Kinds.SLACK_TOKEN) ? this.slack(i) : -1
      case 98 /* b */:
        return this.on(Kinds.BEARER_TOKEN) ? this.bearer(i, wordEnd) : -1
      case 106 /* j */:
        return this.on(Kinds.JANUS_TOKEN) ? this.janus(i) : -1
      case 115 /* s */:
        if (this.has("k-", i + 1)) return this.on(Kinds.SK_API_KEY) ? this.skKey(i) : -1
        return this.stripe(i, wordEnd)
      case 114 /* r */:
        return this.stripe(i, wordEnd)
      case 101 /* e */:
        return this.on(Kinds.JWT) ? this.jwt(i) : -1
      default:
        return -1
    }
  }

  /** sk_live_ / rk_live_ + 20..247 alphanumerics. */
  private stripe(i: number, wordEnd: number): number {
    if (!this.on(Kinds.STRIPE_KEY) || !this.has("k_live_", i + 1)) return -1
    const n = wordEnd - i - 8
    return n >= 20 && n <= 247 && this.all(i + 8, wordEnd, UPPER | LOWER | DIGIT)
      ? this.emit(i, wordEnd, Kinds.STRIPE_KEY)
      : -1
  }

  /** xox[abprs]- + 10 or more of [A-Za-z0-9-], ending at a word boundary. */
  private slack(i: number): number {
    if (i < this.slackFloor || !this.has("xox", i) || !this.has("-", i + 4)) return -1
    if (!"abprs".includes(this.text.charAt(i + 3))) return -1
    const end = this.tokenEnd(i + 5, ALNUM_DASH)
    const long = end - i - 5 >= 10
    if (long && (end === this.to || (classOf(this.text.charCodeAt(end)) & WORD) === 0)) {
      return this.emit(i, end, Kinds.SLACK_TOKEN)
    }
    // Glued to a word, the token may still end where a later match starts (see `settle`).
    if (long) {
      this.slackStart = i
      this.slackFrom = i + 5
      this.slackRunEnd = end
    }
    // Any later start inside this run reaches the same end and fails the same way.
    this.slackFloor = end
    return -1
  }

  /** header.payload.signature, header and payload base64url JSON objects (`eyJ`). */
  private jwt(i: number): number {
    if (i < this.jwtFloor || !this.has("eyJ", i)) return -1
    const header = this.tokenEnd(i + 3, B64URL)
    if (header - i >= 10 && this.has(".eyJ", header)) {
      const payload = this.tokenEnd(header + 4, B64URL)
      if (payload - header - 1 >= 10 && this.has(".", payload)) {
        return this.emit(i, this.tokenEnd(payload + 1, B64URL), Kinds.JWT)
      }
    }
    // A start inside the header run ends the header at the same place and fails the same way.
    this.jwtFloor = header
    return -1
  }

  // -------------------------------------------------- bearer, Janus and sk- tokens

  /**
   * `Bearer <token68>` (either case of the first letter): the token, of at
   * least 8 characters that look random (a digit, or an upper-case letter
   * after a lower-case one), so that prose about bearer tokens is left alone.
   */
  private bearer(i: number, wordEnd: number): number {
    const text = this.text
    const to = this.to
    if (wordEnd - i !== 6 || !text.startsWith("earer", i + 1) || wordEnd >= to) return -1
    let start = wordEnd
    while (start < to && text.charCodeAt(start) === SPACE) start++
    if (start === wordEnd) return -1
    let end = this.tokenEnd(start, TOKEN68, PEM_BEGIN)
    let padded = end
    while (padded < to && text.charCodeAt(padded) === EQUALS) padded++
    // A sentence's full stop after an unpadded token is not part of it.
    if (padded === end) { while (end > start && text.charCodeAt(end - 1) === DOT) end-- }
    if (end - start < 8 || !this.looksRandom(start, end)) return -1
    return this.emit(start, padded === end ? end : padded, Kinds.BEARER_TOKEN)
  }

  /** True when `text[from, to)` has a digit, or an upper-case letter after a lower-case one. */
  private looksRandom(from: number, to: number): boolean {
    const text = this.text
    let lower = false
    for (let p = from; p < to; p++) {
      const k = classOf(text.charCodeAt(p))
      if ((k & DIGIT) !== 0 || ((k & UPPER) !== 0 && lower)) return true
      if ((k & LOWER) !== 0) lower = true
    }
    return false
  }

  /** `jns_` / `jna_` + 20 or more of [A-Za-z0-9_-]: a Janus client or admin token. */
  private janus(i: number): number {
    if (i < this.janusFloor || !this.has("jn", i) || !this.has("_", i + 3)) return -1
    const c2 = this.text.charCodeAt(i + 2)
    if (c2 !== 97 /* a */ && c2 !== 115 /* s */) return -1
    const end = this.tokenEnd(i + 4, B64URL, PEM_BEGIN)
    if (end - i - 4 >= 20) return this.emit(i, end, Kinds.JANUS_TOKEN)
    // A start inside this run reaches the same end with fewer characters: it fails too.
    this.janusFloor = end
    return -1
  }

  /** `sk-` + 20 or more of [A-Za-z0-9_-] with a digit, an upper- and a lower-case letter (OpenAI, Anthropic, …). */
  private skKey(i: number): number {
    if (i < this.skFloor) return -1
    const text = this.text
    const end = this.tokenEnd(i + 3, B64URL, PEM_BEGIN)
    let seen = 0
    for (let p = i + 3; p < end; p++) seen |= classOf(text.charCodeAt(p))
    if (end - i - 3 >= 20 && (seen & DIGIT) !== 0 && (seen & UPPER) !== 0 && (seen & LOWER) !== 0) {
      return this.emit(i, end, Kinds.SK_API_KEY)
    }
    // A start inside this run sees a suffix of it: shorter, and lacking what this one lacked.
    this.skFloor = end
    return -1
  }

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
  private mayBeKey(wordEnd: number): boolean {
    return CredentialNames.mayEndName(this.text.charCodeAt(wordEnd - 1)) ||
      (wordEnd < this.to && this.text.charCodeAt(wordEnd) === DASH)
  }

  private credential(i: number, wordEnd: number): number {
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
    if (kind === CredentialNames.NOT_A_KEY) return -1
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
   * The closing `quote` from `from` on the same line (a backslash escapes one
   * character), or -1. A marker ends the search as the end of the range does:
   * where the first pass saw the range end at a custom match, a second pass
   * sees that match's marker, and both must judge the value alike.
   */
  private closingQuote(from: number, quote: number): number {
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
  private looksSecret(from: number, to: number): boolean {
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

  // ----------------------------------------------------------------- e-mail

  /** An `@` at `at`: the e-mail address around it, if any. Returns its end or -1. */
  private email(at: number): number {
    if (!this.on(Kinds.EMAIL)) return -1
    const text = this.text
    // The local part runs back to the end of the previous match at most, so
    // that matches stay in order and each character is read a bounded number of times.
    let j = at
    while (j > this.lastEnd && (classOf(text.charCodeAt(j - 1)) & LOCAL) !== 0) j--
    if (j === at || text.charCodeAt(at - 1) === DOT) return -1
    let start = j
    for (let k = j; k < at; k++) {
      if (text.charCodeAt(k) === DOT && (k === start || text.charCodeAt(k - 1) === DOT)) start = k + 1
    }
    if (start >= at) return -1
    const domain = at + 1
    const runEnd = this.runEnd(domain, DOMAIN)
    const end = this.domainEnd(domain, runEnd)
    // A domain glued to `_` is part of a longer word, not an address.
    if (end > 0 && (runEnd === this.to || text.charCodeAt(runEnd) !== 95 /* _ */)) {
      return this.emit(start, end, Kinds.EMAIL)
    }
    // Another match may start inside the domain run (`x@y.io-----BEGIN …`,
    // `x@y.io.AKIA…`); once redacted, it would end the domain there, so the
    // address is judged again with the run cut at that match (see `settle`).
    this.emailStart = start
    this.emailFrom = domain
    this.emailRunEnd = runEnd
    return -1
  }

  /** The end of a valid domain in `text[from, runEnd)` once trailing dots and dashes are cut, or -1. */
  private domainEnd(from: number, runEnd: number): number {
    const text = this.text
    let end = runEnd
    // A sentence's full stop or a trailing dash is not part of the address.
    while (end > from && (text.charCodeAt(end - 1) === DOT || text.charCodeAt(end - 1) === DASH)) end--
    return this.isDomain(from, end) ? end : -1
  }

  /**
   * A match starts at `next`. Once it is a marker, a pending run that it cuts
   * ends there; so the pending Slack token and e-mail address are judged
   * again with their runs cut (the Slack token first: it lies inside the
   * address's domain when both are pending, and cuts it in turn).
   */
  private settle(next: number): void {
    let cut = next
    let slackEnd = -1
    if (this.slackStart >= 0 && cut <= this.slackRunEnd && cut - this.slackFrom >= 10) {
      slackEnd = cut
      cut = this.slackStart
    }
    let emailEnd = -1
    if (this.emailStart >= 0 && cut <= this.emailRunEnd && cut > this.emailFrom) {
      emailEnd = this.domainEnd(this.emailFrom, cut)
    }
    if (emailEnd > 0) this.out!.push(this.emailStart, emailEnd, Kinds.EMAIL)
    if (slackEnd > 0) this.out!.push(this.slackStart, slackEnd, Kinds.SLACK_TOKEN)
    this.emailStart = -1
    this.slackStart = -1
  }

  /** At least two labels of 1–63 `[A-Za-z0-9-]` without outer dashes, and an alphabetic (or `xn--`) last label. */
  private isDomain(from: number, to: number): boolean {
    const text = this.text
    let labels = 0
    let labelStart = from
    let last = from
    for (let k = from; k <= to; k++) {
      if (k === to || text.charCodeAt(k) === DOT) {
        const length = k - labelStart
        if (length < 1 || length > 63) return false
        if (text.charCodeAt(labelStart) === DASH || text.charCodeAt(k - 1) === DASH) return false
        labels++
        last = labelStart
        labelStart = k + 1
      }
    }
    if (labels < 2) return false
    if (to - last >= 5 && this.has("xn--", last)) return true
    return to - last >= 2 && this.all(last, to, UPPER | LOWER)
  }

  // ------------------------------------------------------------ private keys

  /** `-----BEGIN … PRIVATE KEY-----` at `i`: the block up to its footer. Returns its end or -1. */
  private privateKey(i: number): number {
    if (!this.on(Kinds.PRIVATE_KEY) || !this.has("-----BEGIN ", i)) return -1
    const text = this.text
    const to = this.to
    const labelStart = i + 11
    const labelEnd = this.labelEnd(labelStart)
    if (!this.has("-----", labelEnd)) return -1
    if (
      !this.endsWith("PRIVATE KEY", labelStart, labelEnd) && !this.endsWith("PRIVATE KEY BLOCK", labelStart, labelEnd)
    ) {
      return -1
    }
    const headerEnd = labelEnd + 5
    const footer = this.footer(headerEnd)
    if (footer >= 0) {
      const footerLabelEnd = this.labelEnd(footer + 9)
      return this.emit(i, this.has("-----", footerLabelEnd) ? footerLabelEnd + 5 : footerLabelEnd, Kinds.PRIVATE_KEY)
    }
    // No footer (a truncated key): take the body that follows the header.
    let end = headerEnd
    while (end < to) {
      const c = text.charCodeAt(end)
      if ((classOf(c) & PEM_BODY) === 0 || (c === DASH && this.has("-----", end))) break
      end++
    }
    return this.emit(i, end, Kinds.PRIVATE_KEY)
  }

  /** The end of a PEM label (`[A-Z0-9 ]`, at most 64 characters) starting at `from`. */
  private labelEnd(from: number): number {
    const limit = Math.min(this.to, from + 64)
    let i = from
    while (i < limit && (classOf(this.text.charCodeAt(i)) & LABEL) !== 0) i++
    return i
  }

  private endsWith(s: string, from: number, to: number): boolean {
    return to - from >= s.length && this.text.startsWith(s, to - s.length)
  }

  /** The first `-----END ` at or after `from` within the range, or -1; searches once per footer. */
  private footer(from: number): number {
    if (this.footerFrom < 0 || from < this.footerFrom || (this.footerAt >= 0 && from > this.footerAt)) {
      this.footerFrom = from
      this.footerAt = this.text.indexOf("-----END ", from)
    }
    return this.footerAt >= 0 && this.footerAt + 9 <= this.to ? this.footerAt : -1
  }
}
