/**
 * Properties of redaction, checked with fast-check over text and JSON built
 * from secrets, near misses, separators and noise.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import { CARDS, CREDENTIALS, engineOf, IBANS } from "./fixtures.ts"

const builtins = engineOf()
const withCustom = engineOf({
  patterns: [
    { name: "employee_id", pattern: "EMP-\\d{6}" },
    { name: "ticket", pattern: "(?i)tkt[-_]?[0-9a-f]{6,8}" },
    { name: "short", pattern: "ab|bcd|d{2,3}" }
  ]
})

const FRAGMENTS: ReadonlyArray<string> = [
  ...CARDS.map(([, n]) => n),
  "4111 1111 1111 1111",
  "5555-5555-5555-4444",
  "4111111111111112",
  "1234567812345670",
  "john.doe@example.com",
  "a@b",
  "a@a@a",
  "user@example.c",
  "x@y.io",
  "123-45-6789",
  "123 45 6789",
  "666-45-6789",
  ...IBANS,
  "DE89 3704 0044 0532 0130 00",
  ...Object.values(CREDENTIALS).flat(),
  "-----BEGIN " + "PRIVATE KEY-----",
  "-----END PRIVATE KEY-----",
  "-----BEGIN ",
  "eyJ",
  "eyJhbGciOiJIUzI1NiJ9",
  "xoxb-",
  "AKIA",
  "ghp_",
  "sk_live_",
  "AIza",
  "Bearer ",
  "bearer x9y8z7w6v5u4",
  "Bearer abc/DEF+ghi~jkl==",
  "jn" + "s_",
  "sk-",
  "sk-proj-",
  "password=",
  "password: ",
  "api_key: \"",
  "DB_PASSWORD=",
  "\"apiKey\":\"",
  "X-Api-Key: ",
  "secret",
  "'",
  "\"",
  "=",
  ":",
  "&",
  "xoxb-1234567890-",
  "------BEGIN ",
  "jn" + "s_q8Z4tX0bN3mLr7Vw2Yk9P",
  "sk-Ab1Cd2Ef3Gh4Ij5Kl6Mn",
  "Bearer abcdef1",
  "BEARER ",
  "Basic ",
  "basic dXNlcjpwYXNz",
  "dXNlcjpwYXNz",
  "==",
  "token=",
  "token=abcDEF123",
  "gl" + "pat-",
  "gl" + "pat-" + "xK3vR9tQ2mN7pL4",
  "sk-ant-",
  "４１１１１１１１",
  "４１１１１１１１１１１１１１１１",
  "4111\u200B1111\u200B1111\u200B1111",
  "\u200B",
  "\u00AD",
  "\uFEFF",
  "\\",
  "[REDACTED:card]",
  "[REDACTED:",
  "]",
  "EMP-123456",
  "TKT-abc123",
  "abcd",
  "dd"
]

const SEPARATORS = ["", " ", "-", ".", "@", "_", "\n", ",", "é", "1", "a", "A", "[", "\u200B", "５"]

const text = fc.array(
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...FRAGMENTS) },
    { weight: 4, arbitrary: fc.constantFrom(...SEPARATORS) },
    { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
    { weight: 1, arbitrary: fc.string({ maxLength: 4, unit: "binary" }) }
  ),
  { maxLength: 24 }
).map((parts) => parts.join(""))

const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    fc.constantFrom(4111111111111111, 5555555555554444, 1234567812345670, 0, -1.5, 42),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    tie("array"),
    tie("object")
  ),
  array: fc.array(tie("value"), { maxLength: 5 }),
  object: fc.array(fc.tuple(fc.oneof(text, fc.string({ maxLength: 5 })), tie("value")), { maxLength: 5 })
    .map((entries) => {
      const object: Record<string, unknown> = {}
      for (const [key, value] of entries) {
        Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
      }
      return object
    })
})).value

/** Same containers, array lengths and key counts; leaves keep their type, except a card number may become its marker. */
const sameShape = (before: unknown, after: unknown): boolean => {
  if (Array.isArray(before)) {
    return Array.isArray(after) && before.length === after.length && before.every((v, i) => sameShape(v, after[i]))
  }
  if (typeof before === "object" && before !== null) {
    if (typeof after !== "object" || after === null || Array.isArray(after)) return false
    const a = Object.values(before)
    const b = Object.values(after)
    return a.length === b.length && a.every((v, i) => sameShape(v, b[i]))
  }
  if (typeof before === "number") return after === before || after === "[REDACTED:card]"
  if (typeof before === "string") return typeof after === "string"
  return after === before
}

describe("redaction properties", () => {
  it("is idempotent where a marker gives a detector its boundary (fast-check's counterexample, seed 1166295694)", () => {
    // `AIza` + 35 key characters run on into a card number: a Google key only once the card is a marker
    const input = "AIza41111111111111114111111111111111sk-4111111111111111"
    for (const engine of [builtins, withCustom]) {
      const once = engine.redactText(input)
      assert.strictEqual(once.value, "[REDACTED:google_api_key][REDACTED:card]")
      assert.deepStrictEqual(once.counts, { card: 1, google_api_key: 1 })
      const twice = engine.redactText(once.value)
      assert.strictEqual(twice.value, once.value)
      assert.strictEqual(twice.total, 0)
    }
  })

  it("is idempotent on text", () => {
    for (const engine of [builtins, withCustom]) {
      fc.assert(
        fc.property(text, (input) => {
          const once = engine.redactText(input)
          const twice = engine.redactText(once.value)
          assert.strictEqual(twice.value, once.value)
          assert.strictEqual(twice.total, 0)
        }),
        { numRuns: 3000 }
      )
    }
  })

  it("gives back text with no detector hit unchanged, and counts every marker it writes", () => {
    for (const engine of [builtins, withCustom]) {
      fc.assert(
        fc.property(fc.oneof(text, fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" })), (input) => {
          const result = engine.redactText(input)
          if (result.total === 0) assert.strictEqual(result.value, input)
          else assert.notStrictEqual(result.value, input)
          // A match may swallow a marker the input already had; without one, every marker is counted.
          if (!input.includes("[REDACTED:")) {
            assert.strictEqual(result.value.split("[REDACTED:").length - 1, result.total)
          }
        }),
        { numRuns: 3000 }
      )
    }
  })

  it("keeps the shape of a random JSON value, and is idempotent on it", () => {
    for (const engine of [builtins, withCustom]) {
      fc.assert(
        fc.property(json, (value) => {
          const once = Result.getOrThrow(engine.redactJson(value))
          assert.isTrue(sameShape(value, once.value), "shape")
          const twice = Result.getOrThrow(engine.redactJson(once.value))
          assert.strictEqual(twice.total, 0)
          assert.strictEqual(twice.value, once.value)
          if (once.total === 0) assert.strictEqual(once.value, value)
        }),
        { numRuns: 1000 }
      )
    }
  })

  it("redacts JSON text to the same value as the parsed JSON", () => {
    fc.assert(
      fc.property(json, (value) => {
        const source = JSON.stringify(value)
        const fromText = Result.getOrThrow(withCustom.redactJsonText(source))
        const fromValue = Result.getOrThrow(withCustom.redactJson(JSON.parse(source)))
        assert.strictEqual(fromText.value, fromValue.total === 0 ? source : JSON.stringify(fromValue.value))
        assert.deepStrictEqual(fromText.counts, fromValue.counts)
      }),
      { numRuns: 500 }
    )
  })
})
