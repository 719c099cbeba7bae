/**
 * Custom patterns from configuration: named regular expressions whose matches
 * are redacted as `[REDACTED:<name>]`.
 *
 * **Engine: re2js** (a pure-JavaScript port of RE2, pinned). A pattern is
 * compiled to an automaton and every search runs in time linear in the text,
 * so nested quantifiers such as `(a+)+` are harmless; constructs that need
 * backtracking (backreferences, lookahead and lookbehind, atomic groups,
 * possessive quantifiers, recursion, conditionals) do not exist in RE2 and are
 * rejected with a reason. The alternatives were weighed: the native `re2`
 * binding builds here only with a C++ toolchain and an allowed install script
 * (a burden on every image and CI machine); static checkers (`safe-regex2`,
 * `recheck`) keep V8's backtracking engine and only estimate, with false
 * negatives for polynomial blow-ups such as `\d*\d*x`.
 *
 * **Rules** (checked once, when the configuration is loaded)
 *
 * - The name is 1–40 of `[a-z0-9_]`, starting with a letter, unique, and not
 *   the name of a built-in kind.
 * - The pattern is at most 1,000 characters, valid RE2 syntax, and compiles
 *   to at most 5,000 instructions (the per-character cost of a search grows
 *   with the program).
 * - A match has a bounded length: no `*`, `+` or `{n,}`; at most 256
 *   characters; the longest match at most 16 times the shortest; never empty.
 *   A linear-time search is not enough on its own: finding *every* match
 *   means one search per match, and a search may read past the match it
 *   returns while a longer alternative is still alive (`(?:\d+-)?\d{4}` over
 *   40 KB of digits took 16 s in a measurement). With the length bounded, the
 *   over-read of each search is at most the longest match, and the matches
 *   are at least the shortest match apart, so all searches together read the
 *   text at most 17 times. The lengths are read from the compiled program
 *   itself (the graph of its instructions), so they are the engine's own.
 *
 * At run time a pattern first runs re2js's allocation-free DFA `test`; only a
 * text that contains a match is searched for positions. Text already carrying
 * a `[REDACTED:…]` marker keeps it: a match that overlaps a marker is dropped
 * and the search resumes after the marker, so redacting twice changes nothing.
 *
 * @since 0.1.0
 */
import { RE2JS } from "re2js"
import type { Matcher } from "re2js"
import { RedactionConfigProblem } from "./Errors.ts"
import * as Kinds from "./Kinds.ts"
import type { Matches } from "./Matches.ts"

/** A custom pattern as configured. */
export interface CustomPattern {
  readonly name: string
  readonly pattern: string
}

export const MAX_PATTERN_LENGTH = 1_000
export const MAX_PROGRAM_SIZE = 5_000
export const MAX_MATCH_LENGTH = 256
export const MAX_LENGTH_RATIO = 16

const NAME = /^[a-z][a-z0-9_]{0,39}$/

/** A validated, compiled pattern. */
export interface Compiled {
  /** Its position in the configured list. */
  readonly index: number
  readonly name: string
  readonly kind: number
  readonly minLength: number
  readonly maxLength: number
  readonly re: RE2JS
  readonly matcher: Matcher
}

const EXPECTED_SYNTAX = "an RE2 regular expression (no backreferences, lookarounds, atomic groups or " +
  "possessive quantifiers)"

/**
 * Names the first construct of `pattern` that needs a backtracking engine, or
 * undefined. RE2 rejects all of them too; this only gives the reason in words.
 */
export const backtrackingConstruct = (pattern: string): string | undefined => {
  let inClass = false
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === "\\") {
      const next = pattern[i + 1] ?? ""
      if (!inClass && next >= "1" && next <= "9") return `backreference \\${next} at offset ${i}`
      if (!inClass && next === "k" && "<{'".includes(pattern[i + 2] ?? "x")) {
        return `named backreference \\k at offset ${i}`
      }
      i++
      continue
    }
    if (inClass) {
      if (c === "]") inClass = false
      continue
    }
    if (c === "[") {
      inClass = true
      if (pattern[i + 1] === "^") i++
      if (pattern[i + 1] === "]") i++
      continue
    }
    if (c === "(" && pattern[i + 1] === "?") {
      const rest = pattern.slice(i + 2, i + 4)
      if (rest.startsWith("=")) return `lookahead (?= at offset ${i}`
      if (rest.startsWith("!")) return `negative lookahead (?! at offset ${i}`
      if (rest === "<=") return `lookbehind (?<= at offset ${i}`
      if (rest === "<!") return `negative lookbehind (?<! at offset ${i}`
      if (rest.startsWith(">")) return `atomic group (?> at offset ${i}`
      if (rest.startsWith("(")) return `conditional (?( at offset ${i}`
      if (/^[R&+0-9]/.test(rest)) return `recursion (?${rest[0]} at offset ${i}`
      continue
    }
    if ((c === "*" || c === "+" || c === "?" || c === "}") && pattern[i + 1] === "+") {
      return `possessive quantifier ${c}+ at offset ${i}`
    }
  }
  return undefined
}

// Instruction opcodes of the re2js 2.10 program (src/Inst.js).
const Op = {
  ALT: 1,
  ALT_MATCH: 2,
  CAPTURE: 3,
  EMPTY_WIDTH: 4,
  FAIL: 5,
  MATCH: 6,
  NOP: 7,
  RUNE_FIRST: 8,
  RUNE_LAST: 11
} as const

interface Inst {
  readonly op: number
  readonly out: number
  readonly arg: number
}

/**
 * The shortest and longest match of a compiled pattern, in characters (code
 * points), from the graph of its program: `max` is Infinity when the graph has
 * a loop. Undefined when the program is not of the shape this was written for.
 */
export const matchLengths = (re: RE2JS): { readonly min: number; readonly max: number } | undefined => {
  const prog = (re.re2() as { prog?: { inst?: unknown; start?: unknown } }).prog
  if (prog === undefined || !Array.isArray(prog.inst) || typeof prog.start !== "number") return undefined
  const inst = prog.inst as ReadonlyArray<Inst>
  const successors = (pc: number): ReadonlyArray<number> | undefined => {
    const i = inst[pc]
    if (i === undefined) return undefined
    switch (i.op) {
      case Op.ALT:
      case Op.ALT_MATCH:
        return [i.out, i.arg]
      case Op.CAPTURE:
      case Op.EMPTY_WIDTH:
      case Op.NOP:
        return [i.out]
      case Op.MATCH:
      case Op.FAIL:
        return []
      default:
        return i.op >= Op.RUNE_FIRST && i.op <= Op.RUNE_LAST ? [i.out] : undefined
    }
  }
  // Iterative depth-first search: a loop means an unbounded match; post-order
  // gives every instruction after its successors.
  const state = new Uint8Array(inst.length) // 0 new, 1 on the path, 2 done
  const min = new Float64Array(inst.length)
  const max = new Float64Array(inst.length)
  const stack: Array<number> = [prog.start]
  const next: Array<number> = [0]
  state[prog.start] = 1
  while (stack.length > 0) {
    const pc = stack[stack.length - 1]!
    const out = successors(pc)
    if (out === undefined) return undefined
    const k = next[next.length - 1]!
    if (k < out.length) {
      next[next.length - 1] = k + 1
      const s = out[k]!
      if (state[s] === 1) return { min: 0, max: Infinity }
      if (state[s] === 0) {
        state[s] = 1
        stack.push(s)
        next.push(0)
      }
      continue
    }
    const op = inst[pc]!.op
    const weight = op >= Op.RUNE_FIRST && op <= Op.RUNE_LAST ? 1 : 0
    if (op === Op.MATCH) {
      min[pc] = 0
      max[pc] = 0
    } else {
      let lo = Infinity
      let hi = -Infinity
      for (const s of out) {
        lo = Math.min(lo, min[s]!)
        hi = Math.max(hi, max[s]!)
      }
      min[pc] = lo + weight
      max[pc] = hi + weight
    }
    state[pc] = 2
    stack.pop()
    next.pop()
  }
  return { min: min[prog.start]!, max: max[prog.start]! }
}

/**
 * Validates and compiles the configured patterns; kinds are numbered from
 * `firstKind` in configuration order. Every problem is reported, not just the first.
 */
export const compile = (
  specs: ReadonlyArray<CustomPattern>,
  firstKind: number
): { readonly patterns: ReadonlyArray<Compiled>; readonly problems: ReadonlyArray<RedactionConfigProblem> } => {
  const patterns: Array<Compiled> = []
  const problems: Array<RedactionConfigProblem> = []
  const seen = new Set<string>()
  specs.forEach((spec, index) => {
    const at = `patterns[${index}]`
    const problem = (setting: string, value: string, what: string, expected: string) =>
      problems.push(new RedactionConfigProblem({ setting, value, problem: what, expected }))
    const name = String(spec.name)
    const source = String(spec.pattern)
    let ok = true
    if (!NAME.test(name)) {
      problem(`${at}.name`, name, "not a valid kind name", "1 to 40 of a-z, 0-9 and _, starting with a letter")
      ok = false
    } else if (Kinds.isBuiltinKind(name)) {
      problem(
        `${at}.name`,
        name,
        "is the name of a built-in detector",
        "a name other than " + Kinds.BUILTIN_KINDS.join(", ")
      )
      ok = false
    } else if (seen.has(name)) {
      problem(`${at}.name`, name, "is used by an earlier pattern", "a name unique among the patterns")
      ok = false
    }
    seen.add(name)
    const label = `${at} (${name})`
    if (source.length === 0 || source.length > MAX_PATTERN_LENGTH) {
      problem(label, source, `is ${source.length} characters long`, `1 to ${MAX_PATTERN_LENGTH} characters`)
      return
    }
    const construct = backtrackingConstruct(source)
    if (construct !== undefined) {
      problem(label, source, `uses a ${construct}, which needs a backtracking engine`, EXPECTED_SYNTAX)
      return
    }
    let re: RE2JS
    try {
      re = RE2JS.compile(source)
    } catch (error) {
      problem(label, source, `is not valid RE2 syntax (${(error as Error).message})`, EXPECTED_SYNTAX)
      return
    }
    const size = re.programSize()
    if (size > MAX_PROGRAM_SIZE) {
      problem(
        label,
        source,
        `compiles to ${size} instructions`,
        `at most ${MAX_PROGRAM_SIZE} (lower the repetition counts)`
      )
      return
    }
    const lengths = matchLengths(re)
    if (lengths === undefined) {
      problem(label, source, "could not be analysed by this version of re2js", "a pattern the analysis understands")
      return
    }
    if (lengths.max === Infinity) {
      problem(
        label,
        source,
        "can match text of unbounded length (*, + or {n,})",
        "an upper bound on every repetition, such as \\d{1,20} instead of \\d+"
      )
      return
    }
    if (lengths.min === 0) {
      problem(label, source, "can match the empty string", "a pattern that always matches at least one character")
      return
    }
    if (lengths.max > MAX_MATCH_LENGTH) {
      problem(label, source, `can match up to ${lengths.max} characters`, `at most ${MAX_MATCH_LENGTH}`)
      return
    }
    if (lengths.max > MAX_LENGTH_RATIO * lengths.min) {
      problem(
        label,
        source,
        `matches ${lengths.min} to ${lengths.max} characters`,
        `a longest match at most ${MAX_LENGTH_RATIO} times the shortest, so finding every match stays linear`
      )
      return
    }
    if (!ok) return
    patterns.push({
      index,
      name,
      kind: firstKind + patterns.length,
      minLength: lengths.min,
      maxLength: lengths.max,
      re,
      matcher: re.matcher("")
    })
  })
  return { patterns, problems }
}

/**
 * Finds the matches of all custom patterns in a text. One instance belongs to
 * one engine; its scratch arrays are reused from call to call.
 */
export class CustomMatcher {
  private readonly patterns: ReadonlyArray<Compiled>
  // Per pattern: its next match at or after the current position (start -1: none).
  private readonly nextStart: Int32Array
  private readonly nextEnd: Int32Array
  // Per pattern: the first marker that may still overlap its next match.
  private readonly nextMarker: Int32Array
  // Per pattern: 1 when its matcher holds the current text.
  private readonly searching: Uint8Array
  private readonly markerStart: Array<number> = []
  private readonly markerEnd: Array<number> = []
  private markerCount = 0

  constructor(patterns: ReadonlyArray<Compiled>) {
    this.patterns = patterns
    this.nextStart = new Int32Array(patterns.length)
    this.nextEnd = new Int32Array(patterns.length)
    this.nextMarker = new Int32Array(patterns.length)
    this.searching = new Uint8Array(patterns.length)
  }

  /**
   * Appends to `out`, in order and without overlap, the matches of the
   * patterns in `text`, as one leftmost-first search over all of them: the
   * match that starts first wins, then the longer one, then the pattern
   * configured first; every pattern then searches on from the end of the
   * winner, so no match is lost to an overlap that was dropped.
   */
  find(text: string, out: Matches): void {
    const patterns = this.patterns
    this.markerCount = this.markers(text)
    let live = 0
    for (let k = 0; k < patterns.length; k++) {
      const pattern = patterns[k]!
      this.nextStart[k] = -1
      this.nextMarker[k] = 0
      // The DFA test allocates nothing; only a text that matches is searched for positions.
      if (text.length < pattern.minLength || !pattern.re.test(text)) continue
      pattern.matcher.resetMatcherInput(text)
      this.searching[k] = 1
      this.search(k, text, 0)
      live++
    }
    if (live === 0) return
    for (;;) {
      let best = -1
      for (let k = 0; k < patterns.length; k++) {
        const start = this.nextStart[k]!
        if (start < 0) continue
        if (
          best < 0 || start < this.nextStart[best]! ||
          (start === this.nextStart[best]! && this.nextEnd[k]! > this.nextEnd[best]!)
        ) best = k
      }
      if (best < 0) break
      const end = this.nextEnd[best]!
      out.push(this.nextStart[best]!, end, patterns[best]!.kind)
      for (let k = 0; k < patterns.length; k++) {
        const start = this.nextStart[k]!
        if (start >= 0 && start < end) this.search(k, text, end)
      }
    }
    // Do not keep the text alive through the matchers.
    for (let k = 0; k < patterns.length; k++) {
      if (this.searching[k] === 1) patterns[k]!.matcher.resetMatcherInput("")
      this.searching[k] = 0
    }
  }

  /** Sets the next match of pattern `k` at or after `from` that overlaps no marker, or none. */
  private search(k: number, text: string, from: number): void {
    const matcher = this.patterns[k]!.matcher
    let pos = from
    let m = this.nextMarker[k]!
    while (pos < text.length && matcher.find(pos)) {
      const start = matcher.start()
      const end = matcher.end()
      while (m < this.markerCount && this.markerEnd[m]! <= start) m++
      if (m < this.markerCount && this.markerStart[m]! < end) {
        pos = this.markerEnd[m]!
        continue
      }
      if (end > start) {
        this.nextStart[k] = start
        this.nextEnd[k] = end
        this.nextMarker[k] = m
        return
      }
      pos = start + 1
    }
    this.nextStart[k] = -1
  }

  /**
   * Records the markers already in `text` and returns how many there are. Only
   * a well-formed marker counts (`[REDACTED:` + a kind name + `]`), so text
   * cannot shield a secret by wrapping it in `[REDACTED:` … `]`.
   */
  private markers(text: string): number {
    let count = 0
    let from = text.indexOf(Kinds.MARKER_PREFIX)
    while (from >= 0) {
      const nameStart = from + Kinds.MARKER_PREFIX.length
      let i = nameStart
      while (i < text.length && i - nameStart <= 40 && isNameChar(text.charCodeAt(i))) i++
      if (i > nameStart && i - nameStart <= 40 && text.charCodeAt(i) === 93 /* ] */) {
        this.markerStart[count] = from
        this.markerEnd[count] = i + 1
        count++
      }
      from = text.indexOf(Kinds.MARKER_PREFIX, i)
    }
    return count
  }
}

const isNameChar = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95
