/**
 * Dates and date-times read from text (API bodies and queries, configuration
 * documents, CLI flags), checked against the calendar.
 *
 * **Rules**
 *
 * - A date-time is RFC 3339 with a zone: `YYYY-MM-DDTHH:MM:SS[.fraction]`
 *   then `Z` or `±HH:MM` (`T` or a space; `parseInstant` also takes it
 *   without seconds). A date is `YYYY-MM-DD`, read as midnight UTC.
 * - Every part must exist: months 01-12, the day within its month (30
 *   February, 31 April and 29 February of a common year are refused, never
 *   rolled over into the next month as `Date` does), hours 00-23, minutes
 *   and seconds 00-59 (a leap second, :60, is refused: a `Date` cannot hold
 *   it), zone offsets up to ±23:59. Years are 0001 to 9999.
 * - A refusal names the value and what is expected (`InstantRefusal`), for
 *   the caller to put under its field.
 *
 * @since 0.1.0
 */

/** What a caller is told is expected of an RFC 3339 date-time. */
export const DATE_TIME_EXPECTED =
  "an RFC 3339 date-time with a time zone that exists on the calendar, e.g. 2030-01-01T00:00:00Z"

/** What a caller is told is expected of an instant (a date-time or a date). */
export const INSTANT_EXPECTED =
  "an RFC 3339 date-time with a time zone (e.g. 2030-01-01T00:00:00Z) or a date (2030-01-01) that exists on " +
  "the calendar, from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"

/** Why a text is not a date or date-time: which part, and what it should be. */
export interface InstantRefusal {
  readonly _tag: "InstantRefusal"
  /** A short sentence: what is wrong with the value. */
  readonly reason: string
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|([+-])(\d{2}):(\d{2}))$/

const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

/** Days in `month` (1-12) of `year`. */
export const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (isLeap(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

const refuse = (reason: string): InstantRefusal => ({ _tag: "InstantRefusal", reason })

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December"
]

const checkDate = (year: number, month: number, day: number): InstantRefusal | undefined => {
  if (year < 1) return refuse("the year 0000 is before 0001")
  if (month < 1 || month > 12) {
    return refuse(`month ${String(month).padStart(2, "0")} does not exist: months are 01 to 12`)
  }
  const days = daysInMonth(year, month)
  if (day < 1 || day > days) {
    return refuse(`${MONTHS[month - 1]} ${year} has no day ${String(day).padStart(2, "0")}: it has ${days} days`)
  }
  return undefined
}

const utc = (year: number, month: number, day: number, h = 0, m = 0, s = 0, ms = 0) => {
  // Date.UTC maps years 0-99 to 1900-1999; setUTCFullYear does not
  const date = new Date(Date.UTC(2000, month - 1, day, h, m, s, ms))
  date.setUTCFullYear(year)
  return date
}

const fromDateTime = (match: RegExpExecArray, secondsRequired: boolean): Date | InstantRefusal => {
  const [, y, mo, d, h, mi, s, fraction, zone, sign, zh, zm] = match
  if (s === undefined && secondsRequired) return refuse("the seconds are missing (HH:MM:SS)")
  const year = Number(y)
  const month = Number(mo)
  const day = Number(d)
  const bad = checkDate(year, month, day)
  if (bad !== undefined) return bad
  const hour = Number(h)
  const minute = Number(mi)
  const second = s === undefined ? 0 : Number(s)
  if (hour > 23) return refuse(`hour ${h} does not exist: hours are 00 to 23`)
  if (minute > 59) return refuse(`minute ${mi} does not exist: minutes are 00 to 59`)
  if (second > 59) return refuse(`second ${s} does not exist: seconds are 00 to 59 (a leap second cannot be held)`)
  let offset = 0
  if (zone !== "Z" && zone !== "z") {
    if (Number(zh) > 23 || Number(zm) > 59) {
      return refuse(`the zone offset ${zone} does not exist: offsets are at most ±23:59`)
    }
    offset = (sign === "-" ? -1 : 1) * (Number(zh) * 60 + Number(zm))
  }
  const ms = fraction === undefined ? 0 : Math.floor(Number(`0${fraction}`) * 1000)
  const date = new Date(utc(year, month, day, hour, minute, second, ms).getTime() - offset * 60_000)
  if (date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) {
    return refuse("it falls outside the years 0001 to 9999")
  }
  return date
}

/** An RFC 3339 date-time with a zone and seconds, checked against the calendar. */
export const parseDateTime = (text: string): Date | InstantRefusal => {
  const match = DATE_TIME.exec(text)
  if (match === null) return refuse("it is not written YYYY-MM-DDTHH:MM:SS with a zone (Z or ±HH:MM)")
  return fromDateTime(match, true)
}

/** A calendar date `YYYY-MM-DD`, as midnight UTC. */
export const parseDate = (text: string): Date | InstantRefusal => {
  const match = DATE.exec(text)
  if (match === null) return refuse("it is not written YYYY-MM-DD")
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  return checkDate(year, month, day) ?? utc(year, month, day)
}

/** An instant: an RFC 3339 date-time (seconds optional) or a date (midnight UTC). */
export const parseInstant = (text: string): Date | InstantRefusal => {
  if (DATE.test(text)) return parseDate(text)
  const match = DATE_TIME.exec(text)
  if (match === null) {
    return refuse("it is neither YYYY-MM-DD nor YYYY-MM-DDTHH:MM[:SS] with a zone (Z or ±HH:MM)")
  }
  return fromDateTime(match, false)
}

/** Whether `parsed` is a refusal. */
export const isRefusal = (parsed: Date | InstantRefusal): parsed is InstantRefusal => !(parsed instanceof Date)

/** `value` and why it was refused, for an error message: `"2030-02-30T00:00:00Z" (February 2030 has …)`. */
export const describeRefusal = (value: string, refusal: InstantRefusal): string =>
  `${JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value)} is refused: ${refusal.reason}`
