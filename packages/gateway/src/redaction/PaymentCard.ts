/**
 * Payment card numbers: which issuer identification number (IIN) ranges and
 * lengths are real, so that a Luhn-valid digit run is only called a card when
 * a card network could have issued it.
 *
 * **Rules**
 *
 * - A card number has 13 to 19 digits, passes Luhn (`Luhn.ts`), and starts
 *   with the IIN prefix of a known network at a length that network issues.
 * - The table covers Visa, Mastercard (51–55, 2221–2720), American Express,
 *   Discover, Diners Club, JCB, UnionPay, Maestro, Mir, RuPay, Verve and Troy.
 *   An unknown prefix is not a card: a random 16-digit id passes Luhn one time
 *   in ten, so the prefix check removes most of those false positives.
 *
 * The table is flattened into typed arrays once, at module load; a lookup
 * walks it without allocating.
 *
 * @since 0.1.0
 */
import * as Luhn from "./Luhn.ts"

/** One IIN range: prefixes `lo..hi` of `digits` digits, issued at the lengths in `lengths`. */
interface Range {
  readonly brand: string
  readonly lo: number
  readonly hi: number
  readonly digits: number
  readonly lengths: ReadonlyArray<number>
}

const span = (from: number, to: number): Array<number> => Array.from({ length: to - from + 1 }, (_, i) => from + i)

const RANGES: ReadonlyArray<Range> = [
  { brand: "visa", lo: 4, hi: 4, digits: 1, lengths: [13, 16, 19] },
  { brand: "mastercard", lo: 51, hi: 55, digits: 2, lengths: [16] },
  { brand: "mastercard", lo: 2221, hi: 2720, digits: 4, lengths: [16] },
  { brand: "amex", lo: 34, hi: 34, digits: 2, lengths: [15] },
  { brand: "amex", lo: 37, hi: 37, digits: 2, lengths: [15] },
  { brand: "discover", lo: 6011, hi: 6011, digits: 4, lengths: span(16, 19) },
  { brand: "discover", lo: 644, hi: 649, digits: 3, lengths: span(16, 19) },
  { brand: "discover", lo: 65, hi: 65, digits: 2, lengths: span(16, 19) },
  { brand: "discover", lo: 622126, hi: 622925, digits: 6, lengths: span(16, 19) },
  { brand: "diners", lo: 300, hi: 305, digits: 3, lengths: span(14, 19) },
  { brand: "diners", lo: 3095, hi: 3095, digits: 4, lengths: span(14, 19) },
  { brand: "diners", lo: 36, hi: 36, digits: 2, lengths: span(14, 19) },
  { brand: "diners", lo: 38, hi: 39, digits: 2, lengths: span(14, 19) },
  { brand: "jcb", lo: 3528, hi: 3589, digits: 4, lengths: span(16, 19) },
  { brand: "unionpay", lo: 62, hi: 62, digits: 2, lengths: span(16, 19) },
  { brand: "maestro", lo: 5018, hi: 5018, digits: 4, lengths: span(13, 19) },
  { brand: "maestro", lo: 5020, hi: 5020, digits: 4, lengths: span(13, 19) },
  { brand: "maestro", lo: 5038, hi: 5038, digits: 4, lengths: span(13, 19) },
  { brand: "maestro", lo: 5893, hi: 5893, digits: 4, lengths: span(13, 19) },
  { brand: "maestro", lo: 6304, hi: 6304, digits: 4, lengths: span(13, 19) },
  { brand: "maestro", lo: 6759, hi: 6759, digits: 4, lengths: span(13, 19) },
  { brand: "maestro", lo: 6761, hi: 6763, digits: 4, lengths: span(13, 19) },
  { brand: "mir", lo: 2200, hi: 2204, digits: 4, lengths: span(16, 19) },
  { brand: "rupay", lo: 60, hi: 60, digits: 2, lengths: [16] },
  { brand: "rupay", lo: 81, hi: 82, digits: 2, lengths: [16] },
  { brand: "rupay", lo: 508, hi: 508, digits: 3, lengths: [16] },
  { brand: "verve", lo: 506099, hi: 506198, digits: 6, lengths: [16, 18, 19] },
  { brand: "verve", lo: 650002, hi: 650027, digits: 6, lengths: [16, 18, 19] },
  { brand: "troy", lo: 9792, hi: 9792, digits: 4, lengths: [16] }
]

/** The shortest and longest card numbers looked at. */
export const MIN_LENGTH = 13
export const MAX_LENGTH = 19

// Each range as [lo, hi] scaled to six digits, and a bit mask of its lengths.
const LO = new Int32Array(RANGES.map((r) => r.lo * 10 ** (6 - r.digits)))
const HI = new Int32Array(RANGES.map((r) => (r.hi + 1) * 10 ** (6 - r.digits) - 1))
const LENGTHS = new Int32Array(RANGES.map((r) => r.lengths.reduce((mask, n) => mask | (1 << n), 0)))

/**
 * The index of the first range that `prefix6` (the first six digits as a
 * number) falls in and that issues `length`-digit numbers, or -1.
 */
const rangeOf = (prefix6: number, length: number): number => {
  const bit = 1 << length
  for (let i = 0; i < LO.length; i++) {
    if (prefix6 >= LO[i]! && prefix6 <= HI[i]! && (LENGTHS[i]! & bit) !== 0) return i
  }
  return -1
}

/** True when a number of `length` digits starting with `prefix6` is in a known IIN range. */
export const isKnownIin = (prefix6: number, length: number): boolean => rangeOf(prefix6, length) >= 0

/** The network of a card number given as digits, or undefined when it is not a valid card number. */
export const brandOf = (digits: string): string | undefined => {
  if (!/^\d{13,19}$/.test(digits) || !Luhn.isValidRange(digits, 0, digits.length)) return undefined
  const i = rangeOf(Number(digits.slice(0, 6)), digits.length)
  return i < 0 ? undefined : RANGES[i]!.brand
}

/** True when `digits` (digits only) is a Luhn-valid number in a known IIN range. */
export const isCardNumber = (digits: string): boolean => brandOf(digits) !== undefined
