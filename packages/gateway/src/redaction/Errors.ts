/**
 * What can go wrong with redaction: a configuration mistake (found once, when
 * the layer is built) and a payload too deep to walk (found per call).
 *
 * **Rules**
 *
 * - A configuration error lists every mistake at once, each naming the
 *   setting, the value given, what is wrong with it and what is expected.
 *   Patterns are configuration, not secrets, so the value is shown as given.
 * - A payload deeper than the configured limit fails the call instead of
 *   passing through unscanned (fail closed).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** One mistake in the redaction configuration. */
export class RedactionConfigProblem extends Schema.Class<RedactionConfigProblem>("RedactionConfigProblem")({
  setting: Schema.String,
  value: Schema.String,
  problem: Schema.String,
  expected: Schema.String
}) {
  get line(): string {
    return `${this.setting}=${JSON.stringify(this.value)}: ${this.problem}; expected ${this.expected}`
  }
}

/** The redaction configuration has one or more mistakes; the message lists them all. */
export class InvalidRedactionConfig extends Schema.TaggedError<InvalidRedactionConfig>()("InvalidRedactionConfig", {
  problems: Schema.Array(RedactionConfigProblem)
}) {
  override get message(): string {
    const n = this.problems.length
    return `Invalid redaction configuration (${n} problem${n === 1 ? "" : "s"}):\n` +
      this.problems.map((p) => `  - ${p.line}`).join("\n")
  }
}

/** A JSON value nests deeper than the redactor walks; it is refused rather than passed on unscanned. */
export class PayloadTooDeep extends Schema.TaggedError<PayloadTooDeep>()("PayloadTooDeep", {
  maxDepth: Schema.Number
}) {
  override get message(): string {
    return `JSON value nests deeper than ${this.maxDepth} levels; it cannot be scanned for sensitive data`
  }
}
