/**
 * The regular expressions of JSON Schemas (`pattern`, and the keys of
 * `patternProperties`), run on a linear-time engine: Ajv's `code.regExp`.
 *
 * **Engine: re2js** (a pure-JavaScript port of RE2). V8's `RegExp`
 * backtracks: `^(a+)+$` against thirty `a`s and a `!` held the event loop
 * for seconds, and such patterns arrive with OpenAPI imports and upstream
 * MCP servers. RE2 compiles a pattern to an automaton, so a match costs time
 * linear in the text, whatever the pattern.
 *
 * **Rules**
 *
 * - Every schema pattern Janus runs is compiled by re2js (`regExpEngine` or
 *   `lenientRegExpEngine`, given to Ajv), never by `RegExp`.
 * - A pattern Janus accepts is valid ECMA-262 (the dialect JSON Schema names;
 *   V8 parses it, never matches with it) AND RE2: no backreferences, no
 *   lookahead or lookbehind, at most `MAX_PATTERN_LENGTH` characters and
 *   `MAX_PROGRAM_SIZE` automaton instructions. `problem` says which rule a
 *   pattern breaks; `firstProblem` finds the first such pattern in a schema
 *   and names where it is (`inputSchema.properties.code.pattern`).
 * - Spelling: `\uXXXX`, `\u{…}`, `\cX` and `(?<name>…)` are rewritten to
 *   RE2's (`RE2JS.translateRegExp`). What still differs from JavaScript: `\s`
 *   is ASCII whitespace only, and `.` matches every character but `\n`
 *   (JavaScript also excludes `\r`, U+2028, U+2029). `\d`, `\w`, `\b`, `^`
 *   and `$` (without `m`) mean what they mean in JavaScript.
 * - `format` (`"regex"` included) is an annotation: Janus runs Ajv with
 *   `validateFormats: false`, so no format ever runs a regular expression.
 * - Matching is bounded per validation (`withBudget`): the characters
 *   matched times the pattern's program size, summed over the patterns a
 *   validation runs, stay within `MATCH_BUDGET`; past it the validation
 *   stops with `PatternBudgetExceeded`. Linear is not small: re2js's DFA
 *   reads a character in a few steps, but when its state cache overflows it
 *   falls back to a simulation that costs each character up to the program's
 *   size (a 500-instruction pattern over 100,000 characters: 0.9 s measured).
 *
 * @since 0.1.0
 */
import { Predicate, Result } from "effect"
import { RE2JS } from "re2js"

/** Longest pattern accepted, in characters (long enough for any e-mail or URI pattern seen in the wild). */
export const MAX_PATTERN_LENGTH = 4_096

/**
 * Largest compiled pattern accepted, in RE2 instructions: the per-character
 * cost of the slow path. `^.{1,1000}$` is 2,003.
 */
export const MAX_PROGRAM_SIZE = 5_000

/**
 * Characters × program size one validation may match: under 0.2 s on the
 * slowest path measured (the NFA fallback), milliseconds on the DFA. 10,000
 * characters against `^(a+)+$` (9 instructions) cost 90,000; 1 MiB of text
 * fits a pattern of up to 9 instructions, 2,000 characters the largest.
 */
export const MATCH_BUDGET = 10_000_000

/** What a schema pattern must be, for error messages. */
export const EXPECTED = "an ECMA-262 regular expression that RE2 also accepts (no backreferences, lookahead or " +
  `lookbehind; at most ${MAX_PATTERN_LENGTH} characters), such as "^[a-z0-9-]{1,64}$"`

/** A validation's patterns would match more than `MATCH_BUDGET` allows. */
export class PatternBudgetExceeded extends Error {
  constructor() {
    super(
      `the values to match against the schema's patterns are too large to check (at most ${MATCH_BUDGET} ` +
        "characters × pattern size per call)"
    )
    this.name = "PatternBudgetExceeded"
  }
}

/** Why RE2 cannot run `source` as a JSON Schema pattern, or undefined when it can. */
export const problem = (source: string): string | undefined => {
  const compiled = compile(source)
  return Result.isFailure(compiled) ? compiled.failure : undefined
}

/** `source` compiled by re2js, or what is wrong with it (in words, without the expectation). */
export const compile = (source: string): Result.Result<RE2JS, string> => {
  if (source.length > MAX_PATTERN_LENGTH) {
    return Result.fail(`is ${source.length} characters long`)
  }
  try {
    // JSON Schema patterns are ECMA-262: V8's parser judges the syntax (parsing runs no match)
    new RegExp(source, "u")
  } catch (error) {
    return Result.fail(`is not a valid regular expression (${(error as Error).message})`)
  }
  let re: RE2JS
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(source))
  } catch (error) {
    const reason = (error as Error).message.replace(/^error parsing regexp: /, "")
    return Result.fail(`cannot run on RE2, the linear-time engine Janus matches with (${reason})`)
  }
  const size = re.programSize()
  if (size > MAX_PROGRAM_SIZE) {
    return Result.fail(
      `compiles to ${size} RE2 instructions, more than ${MAX_PROGRAM_SIZE} (lower its repetition counts)`
    )
  }
  return Result.succeed(re)
}

// -----------------------------------------------------------------------------
// Matching, within a budget
// -----------------------------------------------------------------------------

// What the current validation may still match; Infinity outside `withBudget`.
// Validation is synchronous, so one counter serves every caller.
let remaining = Number.POSITIVE_INFINITY

/**
 * Runs `validate` (a compiled schema) with `MATCH_BUDGET` for its pattern
 * matches; throws `PatternBudgetExceeded` when they would exceed it.
 */
export const withBudget = <A>(validate: () => A): A => {
  const outer = remaining
  remaining = MATCH_BUDGET
  try {
    return validate()
  } finally {
    remaining = outer
  }
}

/** What Ajv's `code.regExp` asks for: an object with `test`. */
interface RegExpLike {
  readonly test: (text: string) => boolean
}

const matcher = (source: string, re: RE2JS): RegExpLike => {
  const size = re.programSize()
  const key = `re2js:${JSON.stringify(source)}`
  return {
    test: (text) => {
      const cost = (text.length + 1) * size
      if (cost > remaining) throw new PatternBudgetExceeded()
      remaining -= cost
      return re.test(text)
    },
    // Ajv keys the compiled pattern by it: one per source
    toString: () => key
  } as RegExpLike
}

const engine = (lenient: boolean) => {
  const make = (source: string, _flags: string): RegExpLike => {
    const compiled = compile(source)
    if (Result.isSuccess(compiled)) return matcher(source, compiled.success)
    if (lenient) return { test: () => true, toString: () => `unchecked:${JSON.stringify(source)}` } as RegExpLike
    throw new Error(`the pattern ${JSON.stringify(source)} ${compiled.failure}; expected ${EXPECTED}`)
  }
  // only read when Ajv writes standalone code, which Janus never does
  return Object.assign(make, { code: "re2js" })
}

/**
 * For Ajv's `code: { regExp }`: every pattern on re2js; a pattern it cannot
 * run makes the schema fail to compile, with the reason.
 */
export const regExpEngine = engine(false)

/**
 * For schemas Janus does not own (an upstream MCP server's): a pattern re2js
 * cannot run is not checked (it always matches); the rest of the schema is.
 * `firstProblem` tells which pattern was left unchecked.
 */
export const lenientRegExpEngine = engine(true)

// -----------------------------------------------------------------------------
// Finding the patterns of a schema
// -----------------------------------------------------------------------------

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const segmentText = (segment: string | number) =>
  typeof segment === "number"
    ? `[${segment}]`
    : identifier.test(segment)
    ? `.${segment}`
    : `[${JSON.stringify(segment)}]`

/** Keywords whose value is one subschema. */
const single = [
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "additionalProperties",
  "additionalItems",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema",
  "items"
]
/** Keywords whose value is an array of subschemas. */
const arrays = ["allOf", "anyOf", "oneOf", "prefixItems", "items"]
/** Keywords whose value maps names to subschemas. */
const maps = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"]

/** Subschemas deeper than this are not searched (Ajv's own recursion limit is far above any real schema). */
const MAX_DEPTH = 128

/**
 * The first pattern of `schema` (under `root`, e.g. `inputSchema`) that RE2
 * cannot run, as a sentence naming where it is, the pattern, what is wrong
 * and what is expected; undefined when every pattern can run. Only schema
 * positions are searched: a `"pattern"` inside `const`, `enum`, `default` or
 * `examples` is data, not a pattern.
 */
export const firstProblem = (root: string, schema: unknown): string | undefined => {
  const visit = (node: unknown, at: string, depth: number): string | undefined => {
    if (!Predicate.isReadonlyObject(node) || Array.isArray(node) || depth > MAX_DEPTH) return undefined
    if (typeof node.pattern === "string") {
      const wrong = problem(node.pattern)
      if (wrong !== undefined) return describe(`${at}.pattern`, node.pattern, wrong)
    }
    if (Predicate.isReadonlyObject(node.patternProperties) && !Array.isArray(node.patternProperties)) {
      for (const source of Object.keys(node.patternProperties)) {
        const wrong = problem(source)
        if (wrong !== undefined) return describe(`${at}.patternProperties${segmentText(source)}`, source, wrong)
      }
    }
    for (const keyword of single) {
      const found = visit(node[keyword], `${at}.${keyword}`, depth + 1)
      if (found !== undefined) return found
    }
    for (const keyword of arrays) {
      const list = node[keyword]
      if (!Array.isArray(list)) continue
      for (let i = 0; i < list.length; i++) {
        const found = visit(list[i], `${at}.${keyword}[${i}]`, depth + 1)
        if (found !== undefined) return found
      }
    }
    for (const keyword of maps) {
      const map = node[keyword]
      if (!Predicate.isReadonlyObject(map) || Array.isArray(map)) continue
      for (const [name, sub] of Object.entries(map)) {
        const found = visit(sub, `${at}.${keyword}${segmentText(name)}`, depth + 1)
        if (found !== undefined) return found
      }
    }
    return undefined
  }
  return visit(schema, root, 0)
}

const describe = (at: string, source: string, wrong: string) => {
  const shown = source.length > 200 ? `${JSON.stringify(source.slice(0, 200))}…` : JSON.stringify(source)
  return `the pattern at ${at} (${shown}) ${wrong}; expected ${EXPECTED}`
}
