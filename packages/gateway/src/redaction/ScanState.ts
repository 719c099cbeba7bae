/**
 * The state of one scan that every built-in detector shares (`Scanner.ts`),
 * and the primitives they read the text with.
 *
 * **Rules**
 *
 * - A match is emitted in order and moves `lastEnd`, the boundary the next
 *   match may start at; a pending greedy match (an e-mail address, a Slack
 *   token) is settled first, so it is judged as if cut where the new match
 *   starts (`settle`).
 * - Token runs stop before `-----` (or `-----BEGIN `), where a PEM block may
 *   begin, so a private key is never swallowed by the token before it.
 * - The floors and remembered searches below let each detector skip what an
 *   earlier attempt already showed cannot match: this is what keeps the scan
 *   linear in the length of the text.
 *
 * @since 0.1.0
 */
import type { Matches } from "./Matches.ts"
import * as ScanChars from "./ScanChars.ts"

// Bound locally: optimised code folds a module's own constants, not imported bindings
// (measured: the scan is ~4% slower with the names imported).
const { classOf, DASH } = ScanChars

/** The shared state of a scan; the detectors are layered on it, `Scanner` last. */
export abstract class ScanState {
  protected readonly enabled: number
  protected text = ""
  protected to = 0
  protected out: Matches | undefined = undefined
  protected lastEnd = 0
  // Below these positions an attempt of the detector is known to fail.
  protected jwtFloor = 0
  protected slackFloor = 0
  protected janusFloor = 0
  protected skFloor = 0
  protected credentialFloor = 0
  protected gitlabFloor = 0
  protected assignedFloor = 0
  // Where the value of a bare `token=` starts, judged once no other detector took it (-1: none pending).
  protected assignedAt = -1
  // The last run of key characters ([A-Za-z0-9_-]) looked at: a word starting inside it ends it there too.
  protected keyFrom = -1
  protected keyEnd = -1
  // The last failed search for a closing " (index 0) or ' (index 1): from where, and where it gave up.
  protected readonly quoteMissFrom = [-1, -1]
  protected readonly quoteMissEnd = [-1, -1]
  // The last search for a PEM footer: from where, and what it found (-1: none after that point).
  protected footerFrom = -1
  protected footerAt = -1
  // Greedy matches that failed only because of how their run ended, which a
  // later match starting inside the run would change: an e-mail address (its
  // start, domain start, end of the domain run) and a Slack token (its start,
  // body start, end of the run). See `settle`.
  protected emailStart = -1
  protected emailFrom = 0
  protected emailRunEnd = 0
  protected slackStart = -1
  protected slackFrom = 0
  protected slackRunEnd = 0
  // Digit groups of the current run: their start and end offsets, and how many digits each holds
  // (fewer than its length when invisible characters stand between them).
  protected groupStart = new Int32Array(32)
  protected groupEnd = new Int32Array(32)
  protected groupDigits = new Int32Array(32)
  // The separator (a space or a dash) after each group of the current run; 0 after its last.
  protected groupSeparator = new Int32Array(32)
  // The digits of the group last measured (`DigitDetectors.digitGroupEnd`).
  protected groupDigitCount = 0
  // Per group of the current run: the last group of the card starting there, or -1.
  protected cardTo = new Int32Array(32)

  constructor(enabled: number) {
    this.enabled = enabled
  }

  protected on(kind: number): boolean {
    return (this.enabled & (1 << kind)) !== 0
  }

  protected emit(start: number, end: number, kind: number): number {
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
  protected tokenEnd(from: number, bits: number, stop = "-----"): number {
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
  protected has(s: string, at: number): boolean {
    return at + s.length <= this.to && this.text.startsWith(s, at)
  }

  /** The end of the run of characters of class `bits` starting at `from`. */
  protected runEnd(from: number, bits: number): number {
    const text = this.text
    const to = this.to
    let i = from
    while (i < to && (classOf(text.charCodeAt(i)) & bits) !== 0) i++
    return i
  }

  /** True when every character of `text[from, to)` has one of `bits`. */
  protected all(from: number, to: number, bits: number): boolean {
    const text = this.text
    for (let i = from; i < to; i++) {
      if ((classOf(text.charCodeAt(i)) & bits) === 0) return false
    }
    return true
  }

  /** Judges the pending greedy matches as if their run ended at `next` (`Scanner.ts`). */
  protected abstract settle(next: number): void
}
