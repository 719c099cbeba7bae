/**
 * `Instants`: dates and date-times read from text exist on the calendar, or
 * are refused with the reason (never rolled over as `Date` does).
 */
import { assert, describe, it } from "@effect/vitest"
import { Instants } from "../src/index.ts"

const iso = (parsed: Date | Instants.InstantRefusal) =>
  Instants.isRefusal(parsed) ? parsed.reason : parsed.toISOString()

describe("Instants", () => {
  it("refuses days, months, hours, minutes, seconds and offsets the calendar does not have", () => {
    for (
      const [text, reason] of [
        ["2030-02-30T00:00:00Z", "February 2030 has no day 30: it has 28 days"],
        ["2030-02-29T00:00:00Z", "February 2030 has no day 29: it has 28 days"],
        ["2100-02-29T00:00:00Z", "February 2100 has no day 29: it has 28 days"],
        ["2030-04-31T00:00:00Z", "April 2030 has no day 31: it has 30 days"],
        ["2030-01-00T00:00:00Z", "January 2030 has no day 00: it has 31 days"],
        ["2030-13-01T00:00:00Z", "month 13 does not exist: months are 01 to 12"],
        ["2030-00-01T00:00:00Z", "month 00 does not exist: months are 01 to 12"],
        ["2030-01-01T24:00:00Z", "hour 24 does not exist: hours are 00 to 23"],
        ["2030-01-01T00:60:00Z", "minute 60 does not exist: minutes are 00 to 59"],
        ["2030-01-01T23:59:60Z", "second 60 does not exist: seconds are 00 to 59 (a leap second cannot be held)"],
        ["2030-01-01T00:00:00+24:00", "the zone offset +24:00 does not exist: offsets are at most ±23:59"],
        ["0000-06-01T00:00:00Z", "the year 0000 is before 0001"],
        ["0001-01-01T00:00:00+01:00", "it falls outside the years 0001 to 9999"],
        ["2030-01-01T00:00Z", "the seconds are missing (HH:MM:SS)"],
        ["2030-01-01T00:00:00", "it is not written YYYY-MM-DDTHH:MM:SS with a zone (Z or ±HH:MM)"],
        ["tomorrow", "it is not written YYYY-MM-DDTHH:MM:SS with a zone (Z or ±HH:MM)"]
      ] as const
    ) {
      assert.strictEqual(iso(Instants.parseDateTime(text)), reason, text)
    }
  })

  it("reads every date-time that exists, in its zone", () => {
    for (
      const [text, instant] of [
        ["2030-01-01T00:00:00Z", "2030-01-01T00:00:00.000Z"],
        ["2032-02-29T23:59:59+01:00", "2032-02-29T22:59:59.000Z"],
        ["2000-02-29T12:00:00z", "2000-02-29T12:00:00.000Z"],
        ["2030-12-31 23:59:59.123456789-05:30", "2031-01-01T05:29:59.123Z"],
        ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"],
        ["0099-03-01T00:00:00Z", "0099-03-01T00:00:00.000Z"],
        ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59.000Z"]
      ] as const
    ) {
      assert.strictEqual(iso(Instants.parseDateTime(text)), instant, text)
    }
  })

  it("dates are midnight UTC and exist; instants take a date or a date-time without seconds", () => {
    assert.strictEqual(iso(Instants.parseDate("2024-02-29")), "2024-02-29T00:00:00.000Z")
    assert.strictEqual(iso(Instants.parseDate("2030-02-30")), "February 2030 has no day 30: it has 28 days")
    assert.strictEqual(iso(Instants.parseDate("2030-02-01T00:00:00Z")), "it is not written YYYY-MM-DD")
    assert.strictEqual(iso(Instants.parseInstant("2030-02-30")), "February 2030 has no day 30: it has 28 days")
    assert.strictEqual(iso(Instants.parseInstant("2026-12-01T00:00Z")), "2026-12-01T00:00:00.000Z")
    assert.strictEqual(iso(Instants.parseInstant("2026-12-01")), "2026-12-01T00:00:00.000Z")
    assert.strictEqual(
      Instants.describeRefusal("2030-02-30", Instants.parseInstant("2030-02-30") as Instants.InstantRefusal),
      `"2030-02-30" is refused: February 2030 has no day 30: it has 28 days`
    )
  })
})
