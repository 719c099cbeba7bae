/**
 * `janus token create --expires`: durations from now, or a date or
 * date-time that exists on the calendar (never rolled over into the next
 * month).
 */
import { assert, describe, it } from "@effect/vitest"
import { parseExpires } from "../../src/cli/resources/Tokens.ts"

describe("--expires", () => {
  const now = new Date("2026-12-07T12:00:00Z")

  it("a day the calendar does not have is refused", () => {
    for (const raw of ["2027-02-30", "2027-02-29T00:00:00Z", "2027-04-31", "2027-13-01", "2027-01-01T24:00:00Z"]) {
      assert.isUndefined(parseExpires(raw, now), raw)
    }
  })

  it("durations, dates (midnight UTC) and date-times that exist are read", () => {
    assert.strictEqual(parseExpires("30d", now)?.toISOString(), "2027-01-06T12:00:00.000Z")
    assert.strictEqual(parseExpires("2028-02-29", now)?.toISOString(), "2028-02-29T00:00:00.000Z")
    assert.strictEqual(parseExpires("2027-01-31T12:00:00+02:00", now)?.toISOString(), "2027-01-31T10:00:00.000Z")
  })
})
