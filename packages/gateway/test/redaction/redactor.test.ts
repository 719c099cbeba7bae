/**
 * The Redactor service and its layers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { InvalidRedactionConfig, PayloadTooDeep, Redactor } from "../../src/redaction/index.ts"

describe("Redactor", () => {
  it.effect("redacts arguments and responses, with counts for the audit record", () =>
    Effect.gen(function*() {
      const redactor = yield* Redactor
      assert.isTrue(redactor.enabled)
      assert.deepStrictEqual(redactor.kinds.at(-1), "employee_id")
      const args = yield* redactor.redactJson({ to: "jane@corp.io", note: "EMP-123456", amount: 5 })
      assert.deepStrictEqual(args.value, { to: "[REDACTED:email]", note: "[REDACTED:employee_id]", amount: 5 })
      assert.strictEqual(args.total, 2)
      const response = yield* redactor.redactJsonText("{\"card\":\"4111 1111 1111 1111\"}")
      assert.strictEqual(response.value, "{\"card\":\"[REDACTED:card]\"}")
      assert.deepStrictEqual(response.counts, { card: 1 })
      const text = yield* redactor.redactText("ssn 123-45-6789")
      assert.strictEqual(text.value, "ssn [REDACTED:ssn]")
    }).pipe(
      Effect.provide(Redactor.layer({ enabled: true, patterns: [{ name: "employee_id", pattern: "EMP-\\d{6}" }] }))
    ))

  it.effect("fails a payload nested deeper than maxDepth with PayloadTooDeep", () =>
    Effect.gen(function*() {
      const redactor = yield* Redactor
      const error = yield* Effect.flip(redactor.redactJson([[[["a@b.io"]]]]))
      assert.instanceOf(error, PayloadTooDeep)
      assert.strictEqual(error.maxDepth, 3)
    }).pipe(Effect.provide(Redactor.layer({ enabled: true, maxDepth: 3 }))))

  it.effect("passes everything through when disabled", () =>
    Effect.gen(function*() {
      const redactor = yield* Redactor
      assert.isFalse(redactor.enabled)
      const value = { card: "4111111111111111" }
      const result = yield* redactor.redactJson(value)
      assert.strictEqual(result.value, value)
      assert.strictEqual(result.total, 0)
    }).pipe(Effect.provide(Redactor.layer({ enabled: false }))))

  it.effect("layerDisabled redacts nothing", () =>
    Effect.gen(function*() {
      const redactor = yield* Redactor
      const result = yield* redactor.redactText("jane@corp.io")
      assert.deepStrictEqual(result, { value: "jane@corp.io", total: 0, counts: {} })
    }).pipe(Effect.provide(Redactor.layerDisabled)))

  it.effect("fails to build with InvalidRedactionConfig when a pattern is unsafe", () =>
    Effect.gen(function*() {
      const layer = Redactor.layer({ enabled: true, patterns: [{ name: "x", pattern: "(a)\\1" }] })
      const exit = yield* Effect.exit(Effect.provide(Redactor.useSync((r) => r.enabled), layer))
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(Effect.provide(Redactor.useSync((r) => r.enabled), layer))
      assert.instanceOf(error, InvalidRedactionConfig)
      assert.include(error.message, "patterns[0] (x)=\"(a)\\\\1\": uses a backreference \\1")
    }))
})
