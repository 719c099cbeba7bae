/**
 * The Luhn (mod 10) check digit, as used by payment card numbers (ISO/IEC 7812).
 *
 * **Rules**
 *
 * - Digits are read right to left; every second digit is doubled and 9 is
 *   subtracted when the double exceeds 9; the sum must be a multiple of 10.
 * - `isValidRange` skips anything that is not a decimal digit, so a number
 *   written with spaces or dashes is checked in place, without copying it;
 *   full-width digits (U+FF10–U+FF19) count as the digits they are.
 *
 * @since 0.1.0
 */

/** Luhn over the decimal digits of `text[start, end)`, ignoring separators. False when there is no digit. */
export const isValidRange = (text: string, start: number, end: number): boolean => {
  let sum = 0
  let double = false
  let digits = 0
  for (let i = end - 1; i >= start; i--) {
    const c = text.charCodeAt(i)
    const d = c <= 57 ? c - 48 : c - 0xff10
    if (d < 0 || d > 9) continue
    digits++
    if (double) {
      const x = d * 2
      sum += x > 9 ? x - 9 : x
    } else {
      sum += d
    }
    double = !double
  }
  return digits > 0 && sum % 10 === 0
}

/** Luhn over a string of decimal digits only. */
export const isValid = (digits: string): boolean => /^\d+$/.test(digits) && isValidRange(digits, 0, digits.length)
