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
 * - Cards and SSNs: `DigitDetectors.ts`, which also reads full-width digits
 *   and the invisible characters slipped between digits. IBANs, cloud and SaaS keys, JWTs,
 *   bearer, Janus and `sk-` tokens: `TokenDetectors.ts`. Credential values
 *   after a key that names a credential: `CredentialValues.ts`. The state
 *   they share and the primitives they read with: `ScanState.ts`.
 * - E-mail: local part `[A-Za-z0-9._%+-]` (no leading, trailing or double
 *   dot), a domain of at least two labels of `[A-Za-z0-9-]` (1–63 characters,
 *   no leading or trailing dash) and an alphabetic top-level label of two or
 *   more letters (or an `xn--` label). ASCII only.
 * - PEM blocks: `-----BEGIN … PRIVATE KEY-----` (or `PRIVATE KEY BLOCK`) to
 *   the next `-----END …-----`; without a footer, the header and the key body
 *   that follows it (base64 and header lines) are taken. The search for a
 *   footer is remembered (linear time).
 *
 * The detectors share one mutable state (`ScanState`) and call each other
 * without allocating, which is what the hot path needs; each concern is one
 * abstract class in its own module, layered `ScanState` -> `DigitDetectors`
 * -> `TokenDetectors` -> `CredentialValues` -> `Scanner`.
 *
 * One scanner belongs to one engine and keeps its scratch arrays between
 * calls; it holds no reference to the text once `finish` is called.
 *
 * @since 0.1.0
 */
import { CredentialValues } from "./CredentialValues.ts"
import * as Kinds from "./Kinds.ts"
import type { Matches } from "./Matches.ts"
import * as ScanChars from "./ScanChars.ts"

// Bound locally: optimised code folds a module's own constants, not imported bindings
// (measured: the scan is ~4% slower with the names imported).
const { AT, classOf, DASH, DIGIT, DOMAIN, DOT, isInvisible, isWideDigit, LABEL, LOCAL, LOWER, PEM_BODY, UPPER, WORD } =
  ScanChars

/** The set of enabled built-in kinds, as a bit mask by kind id. */
export const maskOf = (kinds: ReadonlyArray<Kinds.BuiltinKind>): number =>
  kinds.reduce((mask, kind) => mask | (1 << Kinds.BUILTIN_KINDS.indexOf(kind)), 0)

/** The shortest text any built-in detector can match (`a@b.co`). */
export const MIN_MATCH_LENGTH = 6

/** The built-in detectors over one text at a time (see the module doc). */
export class Scanner extends CredentialValues {
  /** Starts work on a new text: forgets what was learnt about the previous one. */
  begin(text: string): void {
    this.text = text
    this.jwtFloor = 0
    this.slackFloor = 0
    this.janusFloor = 0
    this.skFloor = 0
    this.credentialFloor = 0
    this.gitlabFloor = 0
    this.assignedFloor = 0
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
    this.assignedAt = -1
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
      } else if (c >= 0xad && (isWideDigit(c) || isInvisible(c))) {
        i = this.wideOrInvisible(i, i === from || i === this.lastEnd)
        continue
      }
      i++
    }
  }

  /**
   * A word starts at `i`: tries the detectors that start with its first
   * character; returns where to go on. The value of a bare `token=` that no
   * detector took is then judged as a whole (`CredentialValues.assigned`).
   */
  protected word(i: number, k: number): number {
    const next = this.detect(i, k)
    if (i !== this.assignedAt) return next
    this.assignedAt = -1
    if (this.lastEnd > i) return next
    const end = this.assigned(i)
    return end > 0 ? end : next
  }

  /** The detectors that start with the first character of the word at `i`; returns where to go on. */
  protected detect(i: number, k: number): number {
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

  // ----------------------------------------------------------------- e-mail

  /** An `@` at `at`: the e-mail address around it, if any. Returns its end or -1. */
  protected email(at: number): number {
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
  protected domainEnd(from: number, runEnd: number): number {
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
  protected override settle(next: number): void {
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
  protected isDomain(from: number, to: number): boolean {
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
  protected privateKey(i: number): number {
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
  protected labelEnd(from: number): number {
    const limit = Math.min(this.to, from + 64)
    let i = from
    while (i < limit && (classOf(this.text.charCodeAt(i)) & LABEL) !== 0) i++
    return i
  }

  protected endsWith(s: string, from: number, to: number): boolean {
    return to - from >= s.length && this.text.startsWith(s, to - s.length)
  }

  /** The first `-----END ` at or after `from` within the range, or -1; searches once per footer. */
  protected footer(from: number): number {
    if (this.footerFrom < 0 || from < this.footerFrom || (this.footerAt >= 0 && from > this.footerAt)) {
      this.footerFrom = from
      this.footerAt = this.text.indexOf("-----END ", from)
    }
    return this.footerAt >= 0 && this.footerAt + 9 <= this.to ? this.footerAt : -1
  }
}
