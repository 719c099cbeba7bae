/**
 * International Bank Account Numbers (ISO 13616).
 *
 * **Rules**
 *
 * - Two upper-case letters of a country in the IBAN registry, two check
 *   digits, then the BBAN of upper-case letters and digits, for exactly the
 *   registry's length for that country (15 for Norway up to 33 for Russia).
 * - The check: move the first four characters to the end, read letters as
 *   10..35, and the number must be 1 mod 97. Check digits 00, 01 and 99 can
 *   never satisfy this, so they need no rule of their own.
 * - Written either compact or in groups of four separated by single spaces
 *   (the paper form); `checksumRange` skips the spaces in place.
 *
 * The length table is a 26×26 byte array built once; a lookup is one index.
 *
 * @since 0.1.0
 */

/** Registry length of the IBAN of each country (SWIFT IBAN registry). */
export const COUNTRY_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BI: 27,
  BR: 29,
  BY: 28,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DJ: 27,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FK: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HN: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LC: 32,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  LY: 25,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MN: 20,
  MR: 27,
  MT: 31,
  MU: 30,
  NI: 28,
  NL: 18,
  NO: 15,
  OM: 23,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  RU: 33,
  SA: 24,
  SC: 31,
  SD: 18,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  SO: 23,
  ST: 25,
  SV: 28,
  TL: 23,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
  YE: 30
}

const LENGTH_BY_CODE = new Uint8Array(26 * 26)
for (const [country, length] of Object.entries(COUNTRY_LENGTHS)) {
  LENGTH_BY_CODE[(country.charCodeAt(0) - 65) * 26 + country.charCodeAt(1) - 65] = length
}

/** The IBAN length of the country whose code is the two char codes given, or 0 when it has none. */
export const lengthOf = (c0: number, c1: number): number =>
  c0 >= 65 && c0 <= 90 && c1 >= 65 && c1 <= 90 ? LENGTH_BY_CODE[(c0 - 65) * 26 + c1 - 65]! : 0

const step = (remainder: number, c: number): number =>
  c <= 57 ? (remainder * 10 + c - 48) % 97 : (remainder * 100 + c - 55) % 97

/**
 * The ISO 13616 mod-97 check over `text[start, end)`, skipping spaces. The
 * characters must already be known to be upper-case letters, digits or spaces.
 */
export const checksumRange = (text: string, start: number, end: number): boolean => {
  let remainder = 0
  let seen = 0
  let headEnd = start
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 32) continue
    if (seen < 4) {
      seen++
      headEnd = i + 1
      continue
    }
    remainder = step(remainder, c)
  }
  for (let i = start; i < headEnd; i++) {
    const c = text.charCodeAt(i)
    if (c !== 32) remainder = step(remainder, c)
  }
  return remainder === 1
}

/** True when `text` is a valid IBAN, compact or in groups of four (upper case). */
export const isValid = (text: string): boolean => {
  const grouped = /^[A-Z]{2}\d{2}(?: [A-Z0-9]{4})*(?: [A-Z0-9]{1,4})?$/.test(text)
  const compact = text.replaceAll(" ", "")
  if (!grouped && !/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(text)) return false
  return compact.length === lengthOf(compact.charCodeAt(0), compact.charCodeAt(1)) &&
    checksumRange(compact, 0, compact.length)
}
