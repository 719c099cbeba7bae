/**
 * Custom patterns: what is accepted, what is refused and why, and how their
 * matches combine with each other and with the built-in detectors.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { backtrackingConstruct, InvalidRedactionConfig, makeEngine } from "../../src/redaction/index.ts"
import { engineOf } from "./fixtures.ts"

const problemsOf = (patterns: ReadonlyArray<{ name: string; pattern: string }>, detectors?: ReadonlyArray<string>) => {
  const result = makeEngine({ enabled: true, patterns, detectors })
  assert.isTrue(Result.isFailure(result), "the configuration should be refused")
  const error = (result as Result.Failure<unknown, InvalidRedactionConfig>).failure
  assert.instanceOf(error, InvalidRedactionConfig)
  return error
}

describe("custom patterns: matching", () => {
  const engine = engineOf({
    patterns: [
      { name: "employee_id", pattern: "EMP-\\d{6}" },
      { name: "ticket", pattern: "(?i)tkt[-_]?[0-9a-f]{6,8}" }
    ]
  })

  it("redacts matches with the pattern's name and counts them by name", () => {
    const result = engine.redactText("EMP-123456 opened TKT-00ff12, tkt_abcdef01; EMP-12345 is too short")
    assert.strictEqual(
      result.value,
      "[REDACTED:employee_id] opened [REDACTED:ticket], [REDACTED:ticket]; EMP-12345 is too short"
    )
    assert.deepStrictEqual(result.counts, { employee_id: 1, ticket: 2 })
  })

  it("takes the match that starts first, then the longer, then the pattern configured first; none is lost", () => {
    const overlapping = engineOf({
      detectors: [],
      patterns: [
        { name: "p1", pattern: "ab" },
        { name: "p2", pattern: "bcd|d" },
        { name: "p3", pattern: "xy|xyz" },
        { name: "p4", pattern: "xyz" }
      ]
    })
    // p2's "bcd" loses to p1's "ab", and p2 goes on after it to find "d".
    assert.strictEqual(overlapping.redactText("abcd").value, "[REDACTED:p1]c[REDACTED:p2]")
    // p3 finds "xy" (leftmost-first), p4 the longer "xyz" at the same start.
    assert.strictEqual(overlapping.redactText("xyz").value, "[REDACTED:p4]")
  })

  it("wins over a built-in detector it overlaps, and the built-ins still run around it", () => {
    const mixed = engineOf({ patterns: [{ name: "order", pattern: "ORD-\\d{16}" }] })
    const result = mixed.redactText("ORD-4111111111111111 paid by 4111111111111111 for jane@corp.io")
    assert.strictEqual(result.value, "[REDACTED:order] paid by [REDACTED:card] for [REDACTED:email]")
    assert.deepStrictEqual(result.counts, { order: 1, card: 1, email: 1 })
  })

  it("leaves well-formed markers alone, but not text dressed up as one", () => {
    const upper = engineOf({ detectors: [], patterns: [{ name: "code", pattern: "[A-Z]{8}" }] })
    assert.strictEqual(upper.redactText("[REDACTED:card] ABCDEFGH").value, "[REDACTED:card] [REDACTED:code]")
    // Not a marker (no kind name), so even its "REDACTED" is fair game.
    const dressed = upper.redactText("[REDACTED: ABCDEFGH ]").value
    assert.strictEqual(dressed, "[[REDACTED:code]: [REDACTED:code] ]")
    assert.strictEqual(upper.redactText(dressed).total, 0)
    const twice = upper.redactText(upper.redactText("ABCDEFGHIJKLMNOP").value)
    assert.strictEqual(twice.value, "[REDACTED:code][REDACTED:code]")
    assert.strictEqual(twice.total, 0)
  })

  it("accepts nested bounded quantifiers: the engine is linear, so they cannot blow up", () => {
    const nested = engineOf({ detectors: [], patterns: [{ name: "nested", pattern: "(?:(?:a{1,3}){1,3}){2}b" }] })
    const start = performance.now()
    const result = nested.redactText("a".repeat(200_000) + "!")
    assert.strictEqual(result.total, 0)
    assert.isBelow(performance.now() - start, 2_000)
    assert.strictEqual(nested.redactText("aaab").value, "[REDACTED:nested]")
  })

  it("finds every match of a pattern with an optional prefix in linear time", () => {
    // With `\d+-` in place of `\d{1,8}-`, finding all matches in 40 KB of digits takes seconds (quadratic).
    const prefixed = engineOf({ detectors: [], patterns: [{ name: "acct", pattern: "(?:\\d{1,8}-)?\\d{4}" }] })
    const time = (n: number) => {
      const text = "1".repeat(n)
      const start = performance.now()
      const result = prefixed.redactText(text)
      assert.strictEqual(result.total, Math.floor(n / 4))
      return performance.now() - start
    }
    time(50_000)
    assert.isBelow(time(400_000), 3_000)
  })
})

describe("custom patterns: configuration", () => {
  it("names the construct that needs backtracking", () => {
    assert.strictEqual(backtrackingConstruct("(a)\\1"), "backreference \\1 at offset 3")
    assert.strictEqual(backtrackingConstruct("(?<n>a)\\k<n>"), "named backreference \\k at offset 7")
    assert.strictEqual(backtrackingConstruct("a(?=b)"), "lookahead (?= at offset 1")
    assert.strictEqual(backtrackingConstruct("a(?!b)"), "negative lookahead (?! at offset 1")
    assert.strictEqual(backtrackingConstruct("(?<=a)b"), "lookbehind (?<= at offset 0")
    assert.strictEqual(backtrackingConstruct("(?<!a)b"), "negative lookbehind (?<! at offset 0")
    assert.strictEqual(backtrackingConstruct("(?>a+)b"), "atomic group (?> at offset 0")
    assert.strictEqual(backtrackingConstruct("a++b"), "possessive quantifier ++ at offset 1")
    assert.strictEqual(backtrackingConstruct("(?R)"), "recursion (?R at offset 0")
    assert.strictEqual(backtrackingConstruct("[\\1(?=]\\++"), undefined)
  })

  it("refuses unsafe, unbounded and invalid patterns, naming each pattern, the problem and what is expected", () => {
    const error = problemsOf([
      { name: "backref", pattern: "(\\w)\\1" },
      { name: "lookahead", pattern: "\\d{4}(?=-)" },
      { name: "unbounded", pattern: "EMP-\\d+" },
      { name: "nested", pattern: "(a+)+$" },
      { name: "star", pattern: "x*" },
      { name: "empty", pattern: "(?:ab)?" },
      { name: "too_long", pattern: "\\d{300}" },
      { name: "spread", pattern: "(?:\\d{1,50}-)?\\d{2}" },
      { name: "syntax", pattern: "(abc" },
      {
        name: "huge",
        pattern: `(?:${
          [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"].map((c) => `${c}{90,99}`).join("|")
        })`
      }
    ])
    const lines = error.problems.map((p) => p.line)
    assert.strictEqual(lines.length, 10)
    assert.include(lines[0], "patterns[0] (backref)=\"(\\\\w)\\\\1\": uses a backreference \\1 at offset 4")
    assert.include(lines[0], "expected an RE2 regular expression")
    assert.include(lines[1], "uses a lookahead (?= at offset 5")
    assert.include(lines[2], "can match text of unbounded length")
    assert.include(lines[2], "expected an upper bound on every repetition, such as \\d{1,20} instead of \\d+")
    assert.include(lines[3], "can match text of unbounded length")
    assert.include(lines[4], "can match text of unbounded length")
    assert.include(lines[5], "can match the empty string")
    assert.include(lines[6], "can match up to 300 characters; expected at most 256")
    assert.include(lines[7], "matches 2 to 53 characters; expected a longest match at most 16 times the shortest")
    assert.include(lines[8], "is not valid RE2 syntax")
    assert.include(lines[9], "instructions; expected at most 5000")
    assert.include(error.message, "Invalid redaction configuration (10 problems)")
  })

  it("refuses bad names, duplicates, built-in names, unknown detectors and markers that look like secrets", () => {
    const error = problemsOf([
      { name: "Employee ID", pattern: "EMP-\\d{6}" },
      { name: "email", pattern: "x{3}" },
      { name: "dup", pattern: "a{3}" },
      { name: "dup", pattern: "b{3}" },
      { name: "sk_live_abcdefghijklmnopqrstuvwx", pattern: "c{3}" },
      { name: "long", pattern: "a".repeat(1001) }
    ], ["card", "credit_card"])
    const lines = error.problems.map((p) => p.line)
    assert.deepStrictEqual(lines, [
      "detectors[1]=\"credit_card\": is not a built-in detector; expected one of card, email, ssn, iban, " +
      "aws_access_key, github_token, slack_token, stripe_key, google_api_key, jwt, private_key, bearer_token, " +
      "janus_token, sk_api_key, credential, basic_auth, gitlab_token",
      "patterns[0].name=\"Employee ID\": not a valid kind name; expected 1 to 40 of a-z, 0-9 and _, starting with a letter",
      "patterns[1].name=\"email\": is the name of a built-in detector; expected a name other than card, email, ssn, " +
      "iban, aws_access_key, github_token, slack_token, stripe_key, google_api_key, jwt, private_key, bearer_token, " +
      "janus_token, sk_api_key, credential, basic_auth, gitlab_token",
      "patterns[3].name=\"dup\": is used by an earlier pattern; expected a name unique among the patterns",
      `patterns[5] (long)="${"a".repeat(1001)}": is 1001 characters long; expected 1 to 1000 characters`,
      "patterns[4].name=\"sk_live_abcdefghijklmnopqrstuvwx\": its marker [REDACTED:sk_live_abcdefghijklmnopqrstuvwx] " +
      "would itself be redacted as stripe_key; expected a name that does not look like a secret"
    ])
  })

  it("validates the configuration even when redaction is disabled", () => {
    assert.isTrue(Result.isFailure(makeEngine({ enabled: false, patterns: [{ name: "x", pattern: "\\d+" }] })))
    const off = Result.getOrThrow(makeEngine({ enabled: false, patterns: [{ name: "x", pattern: "\\d{3}" }] }))
    assert.deepStrictEqual(off.redactText("123 4111111111111111"), {
      value: "123 4111111111111111",
      total: 0,
      counts: {}
    })
  })

  it("refuses a maxDepth out of range", () => {
    const result = makeEngine({ enabled: true, maxDepth: 0 })
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) {
      assert.include(result.failure.message, "maxDepth=\"0\": is out of range; expected an integer from 1 to 10000000")
    }
  })
})
