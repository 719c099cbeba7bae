/**
 * The check-digit algorithms and range rules on their own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Iban, Luhn, PaymentCard, Ssn } from "../../src/redaction/index.ts"
import { CARDS, IBANS } from "./fixtures.ts"

describe("Luhn", () => {
  it("accepts valid numbers and rejects every single-digit change", () => {
    for (const [, number] of CARDS) {
      assert.isTrue(Luhn.isValid(number), number)
      const last = Number(number.at(-1))
      for (let d = 0; d <= 9; d++) {
        if (d !== last) assert.isFalse(Luhn.isValid(number.slice(0, -1) + d), `${number} with last digit ${d}`)
      }
    }
  })

  it("checks a number in place, skipping separators", () => {
    const text = "pay 4111-1111 1111-1111 now"
    assert.isTrue(Luhn.isValidRange(text, 4, 23))
    assert.isFalse(Luhn.isValidRange("x-y", 0, 3))
    assert.isFalse(Luhn.isValid("41111111a1111111"))
  })
})

describe("PaymentCard", () => {
  it("knows IIN ranges and the lengths each network issues", () => {
    assert.isTrue(PaymentCard.isKnownIin(411111, 16))
    assert.isFalse(PaymentCard.isKnownIin(411111, 15))
    assert.isTrue(PaymentCard.isKnownIin(222100, 16))
    assert.isTrue(PaymentCard.isKnownIin(272099, 16))
    assert.isFalse(PaymentCard.isKnownIin(272100, 16))
    assert.isTrue(PaymentCard.isKnownIin(378282, 15))
    assert.isFalse(PaymentCard.isKnownIin(378282, 16))
    assert.isFalse(PaymentCard.isKnownIin(123456, 16))
    assert.strictEqual(PaymentCard.brandOf("4111111111111112"), undefined)
    assert.strictEqual(PaymentCard.brandOf("41111111111"), undefined)
  })
})

describe("IBAN", () => {
  it("validates the examples of several countries, compact and grouped", () => {
    for (const iban of IBANS) {
      assert.isTrue(Iban.isValid(iban), iban)
      assert.isTrue(Iban.isValid(iban.replace(/(.{4})(?!$)/g, "$1 ")), iban)
    }
  })

  it("rejects a wrong check, length or country", () => {
    assert.isFalse(Iban.isValid("DE89370400440532013001"))
    assert.isFalse(Iban.isValid("DE8937040044053201300"))
    assert.isFalse(Iban.isValid("XX89370400440532013000"))
    assert.isFalse(Iban.isValid("DE00370400440532013000"))
    assert.isFalse(Iban.isValid("de89370400440532013000"))
    assert.strictEqual(Iban.lengthOf("N".charCodeAt(0), "O".charCodeAt(0)), 15)
    assert.strictEqual(Iban.lengthOf("R".charCodeAt(0), "U".charCodeAt(0)), 33)
    assert.strictEqual(Iban.lengthOf("U".charCodeAt(0), "S".charCodeAt(0)), 0)
  })
})

describe("SSN", () => {
  it("accepts issuable numbers only", () => {
    assert.isTrue(Ssn.isValid("123-45-6789"))
    assert.isTrue(Ssn.isValid("899 99 9999"))
    for (const bad of ["000-12-3456", "666-12-3456", "900-12-3456", "999-99-9999", "123-00-4567", "123-45-0000"]) {
      assert.isFalse(Ssn.isValid(bad), bad)
    }
    assert.isFalse(Ssn.isValid("123-45 6789"))
    assert.isFalse(Ssn.isValid("123456789"))
  })
})
