/**
 * The detectors of digit runs: payment cards and US Social Security Numbers.
 *
 * **Rules**
 *
 * - A run is digit groups joined by single spaces or dashes, processed once
 *   as a whole; a last group glued to letters is part of a word and cannot
 *   end a match.
 * - A digit is an ASCII or a full-width one (`４１１１…`), and invisible
 *   characters between two digits (`4111\u200B1111…`, `ScanChars.isInvisible`)
 *   are part of their group, as are those around a separator: a number is judged by its digits, as a reader
 *   sees it, and its match covers every character it spans. A run of
 *   full-width digits starts only at a boundary, as a word does, and digits
 *   joined by invisible characters to a word are part of that word.
 * - Cards: 13–19 digits, in one run or in groups of at least three digits
 *   joined by one kind of separator (a space or a dash), Luhn-valid and in a
 *   known IIN range at that length (`PaymentCard.ts`). When a run of groups is
 *   longer, the longest card starting at each group is taken.
 * - SSNs: `AAA-GG-SSSS` or `AAA GG SSSS` in issuable ranges (`Ssn.ts`), in
 *   the digit groups that no card took.
 * - Neither choice depends on what follows a match, so the groups left over
 *   are judged the same once the matches are markers (idempotence).
 *
 * @since 0.1.0
 */
import * as Kinds from "./Kinds.ts"
import * as Luhn from "./Luhn.ts"
import * as PaymentCard from "./PaymentCard.ts"
import * as ScanChars from "./ScanChars.ts"
import { ScanState } from "./ScanState.ts"
import * as Ssn from "./Ssn.ts"

// Bound locally: optimised code folds a module's own constants, not imported bindings
// (measured: the scan is ~4% slower with the names imported).
const { classOf, DASH, digitValue, isAnyDigit, isInvisible, isWideDigit, SPACE, WORD } = ScanChars

/** Cards and SSNs in runs of digit groups; `Scanner` is the one concrete class. */
export abstract class DigitDetectors extends ScanState {
  // ---------------------------------------------------------------- digits

  /** A run of digit groups joined by single spaces or dashes starts at `i`. */
  protected digits(i: number): number {
    const text = this.text
    const to = this.to
    let groups = 0
    let p = i
    let glued = false
    for (;;) {
      const start = p
      p = this.digitGroupEnd(p)
      this.pushGroup(groups, start, p)
      this.groupSeparator[groups++] = 0
      if (p >= to) break
      // A separator, with invisible characters on either side of it, then a digit: the run goes on.
      const at = this.invisibleEnd(p)
      const c = at < to ? text.charCodeAt(at) : 0
      if (c === SPACE || c === DASH) {
        const next = this.invisibleEnd(at + 1)
        if (next < to && isAnyDigit(text.charCodeAt(next))) {
          this.groupSeparator[groups - 1] = c
          p = next
          continue
        }
      }
      // A last group glued to letters is part of a word: it cannot end a match.
      glued = (classOf(text.charCodeAt(p)) & WORD) !== 0
      break
    }
    this.digitMatches(glued ? groups - 1 : groups)
    return glued ? this.runEnd(p, WORD) : p
  }

  /**
   * The end of the digit group starting at the digit at `p`: its digits and
   * the invisible characters between two of them. Counts its digits into `groupDigitCount`.
   */
  protected digitGroupEnd(p: number): number {
    const text = this.text
    const to = this.to
    let n = 0
    while (p < to) {
      const c = text.charCodeAt(p)
      if (c <= 57 ? c >= 48 : c >= 0xad && isAnyDigit(c)) {
        p++
        n++
        continue
      }
      if (c < 0xad || !isInvisible(c)) break
      let q = p + 1
      while (q < to && isInvisible(text.charCodeAt(q))) q++
      if (q >= to || !isAnyDigit(text.charCodeAt(q))) break
      p = q
    }
    this.groupDigitCount = n
    return p
  }

  /** The end of the run of invisible characters from `p` (`p` itself when there is none). */
  protected invisibleEnd(p: number): number {
    const text = this.text
    while (p < this.to && isInvisible(text.charCodeAt(p))) p++
    return p
  }

  /**
   * A full-width digit or an invisible character at `i`, met by the main
   * loop: a run of digits when a full-width digit starts one at a boundary
   * (`atBoundary`); digits glued to a word or to digits before them are
   * stepped over. Returns where to go on.
   */
  protected wideOrInvisible(i: number, atBoundary: boolean): number {
    const text = this.text
    const c = text.charCodeAt(i)
    const previous = atBoundary ? 0 : text.charCodeAt(i - 1)
    if (isWideDigit(c)) {
      if ((classOf(previous) & WORD) === 0 && !isWideDigit(previous)) {
        return this.on(Kinds.CARD) || this.on(Kinds.SSN) ? this.digits(i) : this.digitGroupEnd(i)
      }
      return this.digitGroupEnd(i)
    }
    // An invisible character after a digit that ended a word: the digits it joins are that word's.
    if (isAnyDigit(previous)) {
      const end = this.digitGroupEnd(i - 1)
      if (end > i) return end
    }
    return i + 1
  }

  protected pushGroup(g: number, start: number, end: number): void {
    if (g >= this.groupStart.length) {
      const starts = new Int32Array(this.groupStart.length * 2)
      const ends = new Int32Array(this.groupStart.length * 2)
      const counts = new Int32Array(this.groupStart.length * 2)
      const separators = new Int32Array(this.groupStart.length * 2)
      starts.set(this.groupStart)
      ends.set(this.groupEnd)
      counts.set(this.groupDigits)
      separators.set(this.groupSeparator)
      this.groupStart = starts
      this.groupEnd = ends
      this.groupDigits = counts
      this.groupSeparator = separators
    }
    this.groupStart[g] = start
    this.groupEnd[g] = end
    this.groupDigits[g] = this.groupDigitCount
  }

  /**
   * Finds cards and SSNs among the first `usable` groups of a run. Cards
   * first, each the longest at the earliest group; then SSNs in the groups
   * between cards. Neither choice depends on what follows a match, so the
   * groups left over are judged the same once the matches are markers.
   */
  protected digitMatches(usable: number): void {
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
  protected card(a: number, usable: number): number {
    const text = this.text
    const starts = this.groupStart
    const ends = this.groupEnd
    const counts = this.groupDigits
    const first = counts[a]!
    if (first > PaymentCard.MAX_LENGTH) return -1
    const separators = this.groupSeparator
    const separator = separators[a]!
    let digits = 0
    let prefix = -1
    let best = -1
    for (let b = a; b < usable; b++) {
      const length = counts[b]!
      if (b > a && (first < 3 || length < 3 || separators[b - 1] !== separator)) break
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
  protected prefix6(start: number): number {
    const text = this.text
    let value = 0
    let n = 0
    for (let p = start; n < 6; p++) {
      const d = digitValue(text.charCodeAt(p))
      if (d >= 0) {
        value = value * 10 + d
        n++
      }
    }
    return value
  }

  /** True when groups `a..a+2` are an SSN: 3, 2 and 4 digits joined by one separator, in issuable ranges. */
  protected ssn(a: number): boolean {
    const starts = this.groupStart
    const counts = this.groupDigits
    if (counts[a] !== 3 || counts[a + 1] !== 2 || counts[a + 2] !== 4) return false
    if (this.groupSeparator[a] !== this.groupSeparator[a + 1]) return false
    return Ssn.isValidParts(this.number(starts[a]!, 3), this.number(starts[a + 1]!, 2), this.number(starts[a + 2]!, 4))
  }

  /** The number written by the `length` digits from `start`, skipping what is not a digit. */
  protected number(start: number, length: number): number {
    let value = 0
    for (let p = start, n = 0; n < length; p++) {
      const d = digitValue(this.text.charCodeAt(p))
      if (d >= 0) {
        value = value * 10 + d
        n++
      }
    }
    return value
  }
}
