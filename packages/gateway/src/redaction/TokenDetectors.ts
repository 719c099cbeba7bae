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
 * - GitLab tokens: `glpat-` (and GitLab's other prefixes: `gldt-`, `glrt-`,
 *   `glrtr-`, `glptt-`, `glcbt-`, `glft-`, `glimt-`, `gloas-`, `glagent-`,
 *   `glsoat-`, `glffct-`) + 20 or more of `[A-Za-z0-9_-]` with two of digits,
 *   upper- and lower-case letters, and the `.`-joined parts of a routable
 *   token; "glpat" in prose has no such body.
 * - HTTP authentication schemes are case-insensitive (`Bearer`, `bearer`,
 *   `BEARER`), and the scheme stays visible. Bearer tokens: the credential
 *   after `Bearer ` (token68, at least 8 characters that look random: a
 *   digit, or an upper-case letter after a lower-case one), so that prose
 *   about bearer tokens is left alone. Basic credentials: the base64 after
 *   `Basic ` (8 or more characters, padding included) that decodes to
 *   `user:password`: printable text (ASCII or well-formed UTF-8) with a
 *   colon, which "Basic authentication" or "Basic usage" never is.
 * - Janus tokens: `jns_` / `jna_` + 20 or more of `[A-Za-z0-9_-]`. `sk-` API
 *   keys (OpenAI, Anthropic and compatible): 20 or more of `[A-Za-z0-9_-]`
 *   with a digit, an upper- and a lower-case letter; after a provider's own
 *   prefix (`sk-ant-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-`) a digit is
 *   enough, whatever the case of the letters (a key written in lower case is
 *   still that key).
 * - A failed JWT, Slack, GitLab, Janus or `sk-` attempt raises a floor below which no
 *   attempt of that detector can succeed (linear time); an `sk-` run's floor
 *   stops at a provider's prefix inside it, which is judged on its own.
 *
 * @since 0.1.0
 */
import { DigitDetectors } from "./DigitDetectors.ts"
import * as Iban from "./Iban.ts"
import * as Kinds from "./Kinds.ts"
import * as ScanChars from "./ScanChars.ts"

// Bound locally: optimised code folds a module's own constants, not imported bindings
// (measured: the scan is ~4% slower with the names imported).
const {
  ALNUM_DASH,
  B64URL,
  BASE64,
  classOf,
  DASH,
  DIGIT,
  DOT,
  EQUALS,
  isDigit,
  LOWER,
  PEM_BEGIN,
  SPACE,
  TOKEN68,
  UPPER,
  WORD
} = ScanChars

/** GitLab's token prefixes, without their closing `-` (GitLab's "token prefixes" table). */
const GITLAB_PREFIXES: ReadonlyArray<string> = [
  "glpat",
  "gldt",
  "glrt",
  "glrtr",
  "glptt",
  "glcbt",
  "glft",
  "glimt",
  "gloas",
  "glagent",
  "glsoat",
  "glffct"
]

/** The prefixes after `sk-` of keys whose provider is known (Anthropic, OpenAI project, service and admin keys). */
const SK_PROVIDER_PREFIXES: ReadonlyArray<string> = ["ant-", "proj-", "svcacct-", "admin-"]

/** The value of each base64 character (`A`–`Z`, `a`–`z`, `0`–`9`, `+`, `/`); -1 for any other. */
const BASE64_VALUE = Int8Array.from({ length: 128 }, (_, c) => {
  const i = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".indexOf(String.fromCharCode(c))
  return i
})

/** The shortest Basic credentials taken (padding included): six bytes, `user:pw` less one. */
const MIN_BASIC_LENGTH = 8

/** The prefixed tokens of words starting with an upper- or lower-case letter. */
export abstract class TokenDetectors extends DigitDetectors {
  // ------------------------------------------------------- upper-case words

  protected upper(i: number, wordEnd: number): number {
    const text = this.text
    if (i + 4 > this.to) return -1
    const c0 = text.charCodeAt(i)
    const c1 = text.charCodeAt(i + 1)
    if (c0 === 66 /* B */) {
      const end = this.scheme(i, wordEnd)
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
        if (this.has("gl", i)) return this.on(Kinds.GITLAB_TOKEN) ? this.gitlab(i, wordEnd) : -1
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
        return this.scheme(i, wordEnd)
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

  /**
   * `glpat-` (or another of GitLab's prefixes) + 20 or more of [A-Za-z0-9_-] with two of digits, upper- and
   * lower-case letters, then any `.`-joined parts (a routable token).
   */
  protected gitlab(i: number, wordEnd: number): number {
    const text = this.text
    if (
      i < this.gitlabFloor || wordEnd >= this.to || text.charCodeAt(wordEnd) !== DASH || !this.gitlabPrefix(i, wordEnd)
    ) return -1
    const from = wordEnd + 1
    const body = this.tokenEnd(from, B64URL, PEM_BEGIN)
    let seen = 0
    for (let p = from; p < body; p++) seen |= classOf(text.charCodeAt(p))
    const classes = ((seen & DIGIT) !== 0 ? 1 : 0) + ((seen & UPPER) !== 0 ? 1 : 0) + ((seen & LOWER) !== 0 ? 1 : 0)
    if (body - from < 20 || classes < 2) {
      // A start inside this run sees a suffix of its body: shorter, and with no more kinds of character.
      this.gitlabFloor = body
      return -1
    }
    let end = body
    while (
      end + 1 < this.to && text.charCodeAt(end) === DOT && (classOf(text.charCodeAt(end + 1)) & B64URL) !== 0 &&
      !this.has(PEM_BEGIN, end + 1)
    ) {
      end = this.tokenEnd(end + 1, B64URL, PEM_BEGIN)
    }
    return this.emit(i, end, Kinds.GITLAB_TOKEN)
  }

  /** True when `text[i, wordEnd)` is one of GitLab's token prefixes. */
  protected gitlabPrefix(i: number, wordEnd: number): boolean {
    for (const prefix of GITLAB_PREFIXES) {
      if (prefix.length === wordEnd - i && this.text.startsWith(prefix, i)) return true
    }
    return false
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

  // ------------------------------------------- bearer, Basic, Janus and sk- tokens

  /** A word starting with `B` or `b`: the credentials after the `Bearer` or `Basic` scheme (in any case), if any. */
  protected scheme(i: number, wordEnd: number): number {
    if (wordEnd - i === 6 && this.on(Kinds.BEARER_TOKEN) && this.hasFold("earer", i + 1)) return this.bearer(wordEnd)
    if (wordEnd - i === 5 && this.on(Kinds.BASIC_AUTH) && this.hasFold("asic", i + 1)) return this.basic(wordEnd)
    return -1
  }

  /** True when `lower` (lower-case ASCII letters) occurs at `at` in any case. */
  protected hasFold(lower: string, at: number): boolean {
    if (at + lower.length > this.to) return false
    const text = this.text
    for (let k = 0; k < lower.length; k++) {
      if ((text.charCodeAt(at + k) | 32) !== lower.charCodeAt(k)) return false
    }
    return true
  }

  /**
   * The token after `Bearer` (ending at `wordEnd`) and spaces: token68, of at
   * least 8 characters that look random (a digit, or an upper-case letter
   * after a lower-case one), so that prose about bearer tokens is left alone.
   */
  protected bearer(wordEnd: number): number {
    const text = this.text
    const to = this.to
    if (wordEnd >= to) return -1
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

  /**
   * The credentials after `Basic` (ending at `wordEnd`) and spaces: base64
   * of at least `MIN_BASIC_LENGTH` characters with its padding, ending at a
   * word boundary, that decodes to `user:password` (`basicCredentials`).
   */
  protected basic(wordEnd: number): number {
    const text = this.text
    const to = this.to
    let start = wordEnd
    while (start < to && text.charCodeAt(start) === SPACE) start++
    if (start === wordEnd || start >= to) return -1
    const end = this.runEnd(start, BASE64)
    let padded = end
    while (padded < to && padded - end < 2 && text.charCodeAt(padded) === EQUALS) padded++
    const n = end - start
    if (padded - start < MIN_BASIC_LENGTH || n % 4 === 1 || (padded > end && (padded - start) % 4 !== 0)) return -1
    // Glued to more of a word (`YTpi=x`, `…==a`), it is something else.
    if (padded < to && (classOf(text.charCodeAt(padded)) & (WORD | BASE64)) !== 0) return -1
    if (padded < to && text.charCodeAt(padded) === EQUALS) return -1
    return this.basicCredentials(start, end) ? this.emit(start, padded, Kinds.BASIC_AUTH) : -1
  }

  /**
   * True when the base64 in `text[from, to)` decodes to credentials: text
   * (printable ASCII, or well-formed UTF-8 for what is not ASCII) holding a
   * colon. Decoded on the fly, without allocating.
   */
  protected basicCredentials(from: number, to: number): boolean {
    const text = this.text
    let bits = 0
    let count = 0
    let colon = false
    let continuation = 0 // continuation bytes a UTF-8 sequence still needs
    for (let p = from; p < to; p++) {
      bits = ((bits << 6) | BASE64_VALUE[text.charCodeAt(p)]!) & 0xffffff
      count += 6
      if (count < 8) continue
      count -= 8
      const byte = (bits >> count) & 0xff
      if (continuation > 0) {
        if ((byte & 0xc0) !== 0x80) return false
        continuation--
      } else if (byte >= 0x20 && byte < 0x7f) {
        if (byte === 58 /* : */) colon = true
      } else if (byte >= 0xc2 && byte <= 0xdf) {
        continuation = 1
      } else if (byte >= 0xe0 && byte <= 0xef) {
        continuation = 2
      } else if (byte >= 0xf0 && byte <= 0xf4) {
        continuation = 3
      } else {
        return false
      }
    }
    return colon && continuation === 0
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

  /**
   * `sk-` + 20 or more of [A-Za-z0-9_-] with a digit, an upper- and a
   * lower-case letter (OpenAI, Anthropic, …); after a provider's prefix
   * (`sk-ant-`, `sk-proj-`, …) a digit is enough, in any case.
   */
  protected skKey(i: number): number {
    if (i < this.skFloor) return -1
    const text = this.text
    const end = this.tokenEnd(i + 3, B64URL, PEM_BEGIN)
    const provider = this.skProvider(i + 3)
    let seen = 0
    // The first `sk-` with a provider's prefix inside this run, which the floor must not pass.
    let inner = -1
    for (let p = i + 3; p < end; p++) {
      const c = text.charCodeAt(p)
      seen |= classOf(c)
      if (inner < 0 && c === DASH && p + 3 < end && this.has("sk-", p + 1) && this.skProvider(p + 4)) inner = p + 1
    }
    const long = end - i - 3 >= 20
    if (long && (seen & DIGIT) !== 0 && (provider || ((seen & UPPER) !== 0 && (seen & LOWER) !== 0))) {
      return this.emit(i, end, Kinds.SK_API_KEY)
    }
    // A start inside this run sees a suffix of it: shorter, and lacking what this one lacked; one with a
    // provider's prefix asks for less, and is tried when it is reached.
    this.skFloor = inner > 0 && long && (seen & DIGIT) !== 0 ? inner : end
    return -1
  }

  /** True when one of the providers' prefixes after `sk-` (`ant-`, `proj-`, …) starts at `at`. */
  protected skProvider(at: number): boolean {
    for (const prefix of SK_PROVIDER_PREFIXES) if (this.has(prefix, at)) return true
    return false
  }
}
