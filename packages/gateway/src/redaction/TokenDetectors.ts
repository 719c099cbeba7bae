/**
 * The detectors that start at a letter and recognise a token by its prefix:
 * IBANs, cloud and SaaS keys, JWTs, bearer, Janus and `sk-` tokens.
 *
 * **Rules**
 *
 * - IBANs: registry length and mod-97 (`Iban.ts`), compact or in groups of four.
 * - AWS access key ids (`AKIA`/`ASIA` + 16 of `[A-Z0-9]`), GitHub tokens
 *   (`ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` + 36–251 alphanumerics,
 *   `github_pat_` + 30 or more of `[A-Za-z0-9_]`), Slack tokens
 *   (`xox[abprs]-` + 10 or more of `[A-Za-z0-9-]`), Stripe live keys
 *   (`sk_live_`/`rk_live_` + 20 or more alphanumerics), Google API keys
 *   (`AIza` + exactly 35 of `[A-Za-z0-9_-]`), JWTs (`eyJ…` `.` `eyJ…` `.`
 *   signature, each of the first two at least 10 characters of base64url).
 * - Bearer tokens: the credential after `Bearer ` (token68, at least 8
 *   characters that look random: a digit, or an upper-case letter after a
 *   lower-case one), so that prose about bearer tokens is left alone; the
 *   scheme stays visible. Janus tokens: `jns_` / `jna_` + 20 or more of
 *   `[A-Za-z0-9_-]`. `sk-` API keys (OpenAI, Anthropic and compatible):
 *   20 or more of `[A-Za-z0-9_-]` with a digit, an upper- and a lower-case
 *   letter.
 * - A failed JWT, Slack, Janus or `sk-` attempt raises a floor below which no
 *   attempt of that detector can succeed (linear time).
 *
 * @since 0.1.0
 */
import { DigitDetectors } from "./DigitDetectors.ts"
import * as Iban from "./Iban.ts"
import * as Kinds from "./Kinds.ts"
import * as ScanChars from "./ScanChars.ts"

// Bound locally: optimised code folds a module's own constants, not imported bindings
// (measured: the scan is ~4% slower with the names imported).
const { ALNUM_DASH, B64URL, classOf, DIGIT, DOT, EQUALS, isDigit, LOWER, PEM_BEGIN, SPACE, TOKEN68, UPPER, WORD } =
  ScanChars

/** The prefixed tokens of words starting with an upper- or lower-case letter. */
export abstract class TokenDetectors extends DigitDetectors {
  // ------------------------------------------------------- upper-case words

  protected upper(i: number, wordEnd: number): number {
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
  protected iban(i: number, wordEnd: number, length: number): number {
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

  protected lower(i: number, wordEnd: number): number {
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
  protected stripe(i: number, wordEnd: number): number {
    if (!this.on(Kinds.STRIPE_KEY) || !this.has("k_live_", i + 1)) return -1
    const n = wordEnd - i - 8
    return n >= 20 && n <= 247 && this.all(i + 8, wordEnd, UPPER | LOWER | DIGIT)
      ? this.emit(i, wordEnd, Kinds.STRIPE_KEY)
      : -1
  }

  /** xox[abprs]- + 10 or more of [A-Za-z0-9-], ending at a word boundary. */
  protected slack(i: number): number {
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
  protected jwt(i: number): number {
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
  protected bearer(i: number, wordEnd: number): number {
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
  protected looksRandom(from: number, to: number): boolean {
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
  protected janus(i: number): number {
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
  protected skKey(i: number): number {
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
}
