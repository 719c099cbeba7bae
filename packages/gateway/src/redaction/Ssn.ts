/**
 * United States Social Security Numbers.
 *
 * **Rules**
 *
 * - Written `AAA-GG-SSSS` or `AAA GG SSSS` (one separator, used twice); nine
 *   bare digits are not taken, since too many other numbers look like that.
 * - The Social Security Administration never issues area 000, 666 or
 *   900–999 (the last are ITINs), group 00 or serial 0000; such numbers are
 *   not SSNs and are left alone.
 *
 * @since 0.1.0
 */

/** True when the three parts of an SSN are in issuable ranges. */
export const isValidParts = (area: number, group: number, serial: number): boolean =>
  area >= 1 && area <= 899 && area !== 666 && group >= 1 && group <= 99 && serial >= 1 && serial <= 9999

/** True when `text` is an SSN in one of the accepted written forms. */
export const isValid = (text: string): boolean => {
  const match = /^(\d{3})([- ])(\d{2})\2(\d{4})$/.exec(text)
  return match !== null && isValidParts(Number(match[1]), Number(match[3]), Number(match[4]))
}
