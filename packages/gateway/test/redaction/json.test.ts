/**
 * Redacting JSON: values, keys, numbers, depth, copy on write, one serialization.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { PayloadTooDeep, stringifyJson } from "../../src/redaction/index.ts"
import { CREDENTIALS, engineOf } from "./fixtures.ts"

const engine = engineOf()

const json = (value: unknown) => Result.getOrThrow(engine.redactJson(value))

describe("redactJson", () => {
  it("redacts strings at any position, numbers that are card numbers, and counts them", () => {
    const result = json({
      payment: { card: "4111 1111 1111 1111", cvv: "123", amount: 12.5 },
      contacts: ["a@b.io", { note: "ssn 123-45-6789" }, 4111111111111111],
      token: `Bearer ${CREDENTIALS.jwt[0]}`,
      ok: true,
      nothing: null,
      id: 1234567812345670
    })
    assert.deepStrictEqual(result.value, {
      payment: { card: "[REDACTED:card]", cvv: "123", amount: 12.5 },
      contacts: ["[REDACTED:email]", { note: "ssn [REDACTED:ssn]" }, "[REDACTED:card]"],
      token: "Bearer [REDACTED:bearer_token]",
      ok: true,
      nothing: null,
      id: 1234567812345670
    })
    assert.deepStrictEqual(result.counts, { card: 2, email: 1, ssn: 1, bearer_token: 1 })
    assert.strictEqual(result.total, 5)
  })

  it("redacts the string value of a member named like a credential, whatever it holds", () => {
    const value = {
      user: "bob",
      password: "hunter2",
      nested: { apiKey: "abc", clientSecret: "x y z", token: "the", DB_PASSWORD: "" },
      list: [{ access_token: "t0k" }, "password"],
      password_hint: "blue",
      secret: true,
      api_key: 12345,
      "x-api-key": "[REDACTED:secret]"
    }
    const expected = {
      user: "bob",
      password: "[REDACTED:credential]",
      nested: { apiKey: "[REDACTED:credential]", clientSecret: "[REDACTED:credential]", token: "the", DB_PASSWORD: "" },
      list: [{ access_token: "[REDACTED:credential]" }, "password"],
      password_hint: "blue",
      secret: true,
      api_key: 12345,
      "x-api-key": "[REDACTED:secret]"
    }
    const result = json(value)
    assert.deepStrictEqual(result.value, expected)
    assert.deepStrictEqual(result.counts, { credential: 4 })
    const text = Result.getOrThrow(engine.redactJsonText(JSON.stringify(value)))
    assert.strictEqual(text.value, JSON.stringify(expected))
    assert.strictEqual(text.total, 4)
  })

  it("returns the very same value when there is nothing to redact, and shares unchanged parts", () => {
    const clean = { a: [1, 2, { b: "hello" }], c: { d: "world" } }
    const result = json(clean)
    assert.strictEqual(result.value, clean)
    assert.strictEqual(result.total, 0)
    assert.deepStrictEqual(result.counts, {})
    const mixed = { keep: { deep: ["x"] }, change: ["john@example.com"] }
    const redacted = json(mixed).value as typeof mixed
    assert.notStrictEqual(redacted, mixed)
    assert.strictEqual(redacted.keep, mixed.keep)
    assert.deepStrictEqual(mixed.change, ["john@example.com"]) // the input is never mutated
  })

  it("redacts object keys, keeping every key and the order of keys", () => {
    const result = json({ "alice@example.com": 1, plain: 2, "bob@example.com": 3, "[REDACTED:email]": 4 })
    assert.deepStrictEqual(Object.entries(result.value as object), [
      ["[REDACTED:email]", 1],
      ["plain", 2],
      ["[REDACTED:email]#2", 3],
      ["[REDACTED:email]#3", 4]
    ])
    assert.deepStrictEqual(result.counts, { email: 2 })
  })

  it("keeps a __proto__ key an own key", () => {
    const value = JSON.parse("{\"__proto__\": {\"polluted\": \"a@b.io\"}, \"x\": \"c@d.io\"}")
    const redacted = json(value).value as Record<string, unknown>
    assert.isTrue(Object.hasOwn(redacted, "__proto__"))
    assert.strictEqual(Object.getPrototypeOf(redacted), Object.prototype)
    assert.strictEqual(
      JSON.stringify(redacted),
      "{\"__proto__\":{\"polluted\":\"[REDACTED:email]\"},\"x\":\"[REDACTED:email]\"}"
    )
  })

  it("walks a value 10,000 and 100,000 levels deep without growing the stack", () => {
    for (const depth of [10_000, 100_000]) {
      const text = "[".repeat(depth - 1) + "{\"k\":\"john@example.com\"}" + "]".repeat(depth - 1)
      const result = Result.getOrThrow(engine.redactJsonText(text))
      assert.strictEqual(result.total, 1)
      assert.strictEqual(result.value, text.replace("john@example.com", "[REDACTED:email]"))
    }
  })

  it("refuses a value deeper than maxDepth, and a cyclic one", () => {
    const shallow = engineOf({ maxDepth: 50 })
    let deep: unknown = "x"
    for (let i = 0; i < 51; i++) deep = [deep]
    const refused = shallow.redactJson(deep)
    assert.isTrue(Result.isFailure(refused))
    if (Result.isFailure(refused)) {
      assert.instanceOf(refused.failure, PayloadTooDeep)
      assert.include(refused.failure.message, "deeper than 50 levels")
    }
    const cyclic: Array<unknown> = []
    cyclic.push(cyclic)
    assert.isTrue(Result.isFailure(shallow.redactJson(cyclic)))
  })
})

describe("redactJsonText", () => {
  it("returns the same text, unserialized, when nothing is redacted", () => {
    const text = "{ \"a\" : [1, 2.50, \"x\"] }"
    const result = Result.getOrThrow(engine.redactJsonText(text))
    assert.strictEqual(result.value, text) // formatting kept: it was never re-serialized
    assert.strictEqual(result.total, 0)
  })

  it("serializes once when something is redacted; a JSON-escaped value is still found", () => {
    const text = "{\"email\":\"j\\u006fhn@example.com\",\"n\":4111111111111111}"
    const result = Result.getOrThrow(engine.redactJsonText(text))
    assert.strictEqual(result.value, "{\"email\":\"[REDACTED:email]\",\"n\":\"[REDACTED:card]\"}")
    assert.deepStrictEqual(result.counts, { email: 1, card: 1 })
  })

  it("redacts text that is not JSON as plain text", () => {
    const result = Result.getOrThrow(engine.redactJsonText("<html>mail jane@corp.io</html>"))
    assert.strictEqual(result.value, "<html>mail [REDACTED:email]</html>")
  })
})

describe("stringifyJson", () => {
  it("writes what JSON.stringify writes", () => {
    const values: ReadonlyArray<unknown> = [
      { a: [1, "two", null, true, undefined, () => 1], b: undefined, c: { d: -0, e: Infinity, f: NaN } },
      [new Date(0), new String("s"), new Number(3), new Boolean(false), { toJSON: (key: string) => `key:${key}` }],
      "plain \"quoted\" \u2028",
      42,
      [],
      {},
      [[[[{}]]]]
    ]
    for (const value of values) assert.strictEqual(stringifyJson(value), JSON.stringify(value))
    assert.strictEqual(stringifyJson(undefined), undefined)
    assert.throws(() => stringifyJson({ n: 1n }))
  })

  it("writes values too deep for JSON.stringify", () => {
    let deep: unknown = { x: 1 }
    for (let i = 0; i < 50_000; i++) deep = [deep]
    assert.throws(() => JSON.stringify(deep))
    const text = stringifyJson(deep)!
    assert.strictEqual(text, "[".repeat(50_000) + "{\"x\":1}" + "]".repeat(50_000))
  })
})
