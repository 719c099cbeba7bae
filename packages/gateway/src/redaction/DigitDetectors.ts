/**
 * The detectors of digit runs: payment cards and US Social Security Numbers.
 *
 * **Rules**
 *
 * - A run is digit groups joined by single spaces or dashes, processed once
 *   as a whole; a last group glued to letters is part of a word and cannot
 *   end a match.
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
const { classOf, DASH, isDigit, SPACE, WORD } = ScanChars

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

  protected pushGroup(g: number, start: number, end: number): void {
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
  protected prefix6(start: number): number {
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
  protected ssn(a: number): boolean {
    const text = this.text
    const starts = this.groupStart
    const ends = this.groupEnd
    if (ends[a]! - starts[a]! !== 3 || ends[a + 1]! - starts[a + 1]! !== 2 || ends[a + 2]! - starts[a + 2]! !== 4) {
      return false
    }
    if (text.charCodeAt(ends[a]!) !== text.charCodeAt(ends[a + 1]!)) return false
    return Ssn.isValidParts(this.number(starts[a]!, 3), this.number(starts[a + 1]!, 2), this.number(starts[a + 2]!, 4))
  }

  protected number(start: number, length: number): number {
    let value = 0
    for (let p = start; p < start + length; p++) value = value * 10 + this.text.charCodeAt(p) - 48
    return value
  }
}
