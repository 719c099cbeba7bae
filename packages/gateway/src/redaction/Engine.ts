/**
 * The redaction engine: validated options, the built-in scanner and the custom
 * patterns put together, over plain text and over JSON.
 *
 * **Rules**
 *
 * - Custom patterns are searched first; the built-in scanner then runs over
 *   the stretches between their matches, each stretch starting and ending at
 *   a boundary, exactly as it will see them once the matches are markers. So
 *   where a custom and a built-in match would overlap, the custom one wins,
 *   and a second redaction finds nothing new.
 * - JSON is redacted as a value (`JsonWalk.ts`): strings, object keys, and
 *   integers that are card numbers (a card sent as a JSON number becomes the
 *   marker string). A string member whose key names a credential
 *   (`CredentialNames`: `password`, `apiKey`, `client_secret`, …) is a
 *   credential as a whole. JSON text is parsed once, walked once, and serialized at
 *   most once, only when something was redacted; text that is not JSON is
 *   redacted as plain text.
 * - Strings shorter than the shortest possible match are not scanned.
 * - An engine is synchronous and single-threaded: its scratch buffers and
 *   counters are reused by every call, so a call allocates nothing when it
 *   finds nothing (beyond `Object.keys` of the objects walked).
 * - Disabled (`REDACTION_ENABLED` off), every call returns its input and a
 *   count of zero; the configuration is still validated, so that turning it on
 *   later cannot fail at start.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import * as CredentialNames from "./CredentialNames.ts"
import * as CustomPatterns from "./CustomPatterns.ts"
import { InvalidRedactionConfig, PayloadTooDeep, RedactionConfigProblem } from "./Errors.ts"
import * as JsonText from "./JsonText.ts"
import { JsonWalker, TOO_DEEP } from "./JsonWalk.ts"
import * as Kinds from "./Kinds.ts"
import { Matches } from "./Matches.ts"
import * as PaymentCard from "./PaymentCard.ts"
import * as Scanner from "./Scanner.ts"

/** Passes over one string at most: each replaces text with markers, which no detector matches. */
const MAX_PASSES = 4

/** How the redactor is configured. */
export interface RedactorOptions {
  /** `REDACTION_ENABLED`; when false every call passes its input through untouched. */
  readonly enabled: boolean
  /** The built-in detectors to run (names from `BUILTIN_KINDS`); all of them when absent. */
  readonly detectors?: ReadonlyArray<string> | undefined
  /** Named regular expressions (RE2 syntax) whose matches are redacted as `[REDACTED:<name>]`. */
  readonly patterns?: ReadonlyArray<CustomPatterns.CustomPattern> | undefined
  /** How deeply a JSON value may nest before it is refused; 100,000 when absent. */
  readonly maxDepth?: number | undefined
}

/** The default `maxDepth`: ten times the deepest payload a client is expected to send, and still cheap to walk. */
export const DEFAULT_MAX_DEPTH = 100_000

/** How many redactions of each kind a call made; kinds with none are absent. */
export type RedactionCounts = Readonly<Record<string, number>>

/** The redacted value, with the number of redactions in all (`total`, for the audit record) and by kind. */
export interface Redaction<A> {
  readonly value: A
  readonly total: number
  readonly counts: RedactionCounts
}

/** A configured redactor, usable without Effect (the `Redactor` service wraps one). */
export interface Engine {
  readonly enabled: boolean
  /** Every kind this engine can report: the enabled built-ins, then the custom pattern names. */
  readonly kinds: ReadonlyArray<string>
  readonly redactText: (text: string) => Redaction<string>
  readonly redactJson: (value: unknown) => Result.Result<Redaction<unknown>, PayloadTooDeep>
  readonly redactJsonText: (text: string) => Result.Result<Redaction<string>, PayloadTooDeep>
}

const NO_COUNTS: RedactionCounts = Object.freeze({})

const untouched = <A>(value: A): Redaction<A> => ({ value, total: 0, counts: NO_COUNTS })

/** An engine that redacts nothing. */
export const disabledEngine: Engine = {
  enabled: false,
  kinds: [],
  redactText: untouched,
  redactJson: (value) => Result.succeed(untouched(value)),
  redactJsonText: (text) => Result.succeed(untouched(text))
}

class RedactionEngine implements Engine {
  readonly enabled = true
  readonly kinds: ReadonlyArray<string>
  private readonly names: ReadonlyArray<string>
  private readonly markers: ReadonlyArray<string>
  private readonly scanner: Scanner.Scanner
  private readonly custom: CustomPatterns.CustomMatcher | undefined
  private readonly cards: boolean
  private readonly credentials: boolean
  private readonly minLength: number
  private readonly maxDepth: number
  private readonly matches = new Matches()
  private readonly customMatches = new Matches()
  private readonly counts: Uint32Array
  private total = 0
  private readonly walker: JsonWalker

  constructor(
    builtins: ReadonlyArray<Kinds.BuiltinKind>,
    patterns: ReadonlyArray<CustomPatterns.Compiled>,
    maxDepth: number
  ) {
    // Kind ids: built-ins keep their fixed ids, custom patterns follow them.
    const names: Array<string> = [...Kinds.BUILTIN_KINDS, ...patterns.map((p) => p.name)]
    this.names = names
    this.markers = names.map(Kinds.marker)
    this.kinds = [...builtins, ...patterns.map((p) => p.name)]
    this.counts = new Uint32Array(names.length)
    this.scanner = new Scanner.Scanner(Scanner.maskOf(builtins))
    this.custom = patterns.length > 0 ? new CustomPatterns.CustomMatcher(patterns) : undefined
    this.cards = builtins.includes("card")
    this.minLength = Math.min(
      builtins.length > 0 ? Scanner.MIN_MATCH_LENGTH : Infinity,
      ...patterns.map((p) => p.minLength)
    )
    this.maxDepth = maxDepth
    this.credentials = builtins.includes("credential")
    this.walker = new JsonWalker({
      string: (s) => this.redactString(s),
      member: (key, s) => this.redactMember(key, s),
      key: (key) => this.redactString(key),
      number: (n) => this.redactNumber(n)
    }, maxDepth)
  }

  readonly redactText = (text: string): Redaction<string> => {
    this.begin()
    return this.result(this.redactString(text))
  }

  readonly redactJson = (value: unknown): Result.Result<Redaction<unknown>, PayloadTooDeep> => {
    this.begin()
    const redacted = this.walker.walk(value)
    return redacted === TOO_DEEP
      ? Result.fail(new PayloadTooDeep({ maxDepth: this.maxDepth }))
      : Result.succeed(this.result(redacted))
  }

  readonly redactJsonText = (text: string): Result.Result<Redaction<string>, PayloadTooDeep> => {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return Result.succeed(this.redactText(text))
    }
    this.begin()
    const redacted = this.walker.walk(parsed)
    if (redacted === TOO_DEEP) return Result.fail(new PayloadTooDeep({ maxDepth: this.maxDepth }))
    if (this.total === 0) return Result.succeed(this.result(text))
    return Result.succeed(this.result(JsonText.stringifyJson(redacted, this.walker.deepest) ?? text))
  }

  private begin(): void {
    this.counts.fill(0)
    this.total = 0
  }

  private result<A>(value: A): Redaction<A> {
    if (this.total === 0) return untouched(value)
    const counts: Record<string, number> = {}
    for (let kind = 0; kind < this.counts.length; kind++) {
      const n = this.counts[kind]!
      if (n > 0) counts[this.names[kind]!] = n
    }
    return { value, total: this.total, counts }
  }

  /**
   * One string: the original when nothing is found (no allocation), else the text with markers, scanned
   * again until a pass finds nothing new. A marker ends a word, so it can give a detector the boundary it
   * needs: `AIza` and 35 key characters run on into a card number are no Google key, until the card is a
   * marker. Only a string with a match pays a second scan; `MAX_PASSES` bounds the rest.
   */
  redactString(text: string): string {
    let out = this.redactOnce(text)
    for (let pass = 1; out !== text && pass < MAX_PASSES; pass++) {
      text = out
      out = this.redactOnce(text)
    }
    return out
  }

  private redactOnce(text: string): string {
    if (text.length < this.minLength) return text
    const matches = this.matches
    const scanner = this.scanner
    matches.reset()
    scanner.begin(text)
    if (this.custom === undefined) {
      scanner.scan(0, text.length, matches)
    } else {
      const custom = this.customMatches
      custom.reset()
      this.custom.find(text, custom)
      let from = 0
      for (let i = 0; i < custom.length; i++) {
        scanner.scan(from, custom.start(i), matches)
        matches.push(custom.start(i), custom.end(i), custom.kind(i))
        from = custom.end(i)
      }
      scanner.scan(from, text.length, matches)
    }
    scanner.finish()
    if (matches.length === 0) return text
    let out = ""
    let from = 0
    for (let i = 0; i < matches.length; i++) {
      const kind = matches.kind(i)
      out += text.slice(from, matches.start(i)) + this.markers[kind]!
      from = matches.end(i)
      this.counts[kind]!++
    }
    this.total += matches.length
    return out + text.slice(from)
  }

  /**
   * An object member's string value: all of it is a credential when the key
   * names one (`"password": "…"`, `"apiKey": "…"`), else it is redacted as a string.
   */
  private redactMember(key: string, value: string): string {
    if (
      !this.credentials || value === "" || value.startsWith(Kinds.MARKER_PREFIX) ||
      CredentialNames.credentialKey(key, 0, key.length) === CredentialNames.NOT_A_KEY
    ) {
      return this.redactString(value)
    }
    this.counts[Kinds.CREDENTIAL]!++
    this.total++
    return this.markers[Kinds.CREDENTIAL]!
  }

  /** An integer that is a card number (13–16 digits fit a double exactly) becomes the card marker. */
  private redactNumber(n: number): unknown {
    if (!this.cards || n < 1e12 || !Number.isSafeInteger(n) || !PaymentCard.isCardNumber(String(n))) return n
    this.counts[Kinds.CARD]!++
    this.total++
    return this.markers[Kinds.CARD]
  }
}

/** Validates `options` and builds an engine, or lists every configuration mistake. */
export const makeEngine = (options: RedactorOptions): Result.Result<Engine, InvalidRedactionConfig> => {
  const problems: Array<RedactionConfigProblem> = []
  const builtins: Array<Kinds.BuiltinKind> = []
  for (const [index, name] of (options.detectors ?? Kinds.BUILTIN_KINDS).entries()) {
    if (Kinds.isBuiltinKind(name)) {
      if (!builtins.includes(name)) builtins.push(name)
    } else {
      problems.push(
        new RedactionConfigProblem({
          setting: `detectors[${index}]`,
          value: String(name),
          problem: "is not a built-in detector",
          expected: `one of ${Kinds.BUILTIN_KINDS.join(", ")}`
        })
      )
    }
  }
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH
  if (!Number.isInteger(maxDepth) || maxDepth < 1 || maxDepth > 10_000_000) {
    problems.push(
      new RedactionConfigProblem({
        setting: "maxDepth",
        value: String(maxDepth),
        problem: "is out of range",
        expected: "an integer from 1 to 10000000"
      })
    )
  }
  const compiled = CustomPatterns.compile(options.patterns ?? [], Kinds.BUILTIN_KINDS.length)
  problems.push(...compiled.problems)
  // A marker must not itself look like a secret, or redacting twice would redact the marker.
  const probe = new Scanner.Scanner(Scanner.maskOf(Kinds.BUILTIN_KINDS))
  const found = new Matches()
  for (const pattern of compiled.patterns) {
    const marker = Kinds.marker(pattern.name)
    found.reset()
    probe.begin(marker)
    probe.scan(0, marker.length, found)
    probe.finish()
    if (found.length > 0) {
      problems.push(
        new RedactionConfigProblem({
          setting: `patterns[${pattern.index}].name`,
          value: pattern.name,
          problem: `its marker ${marker} would itself be redacted as ${Kinds.BUILTIN_KINDS[found.kind(0)]}`,
          expected: "a name that does not look like a secret"
        })
      )
    }
  }
  if (problems.length > 0) return Result.fail(new InvalidRedactionConfig({ problems }))
  if (!options.enabled) return Result.succeed(disabledEngine)
  return Result.succeed(new RedactionEngine(builtins, compiled.patterns, maxDepth))
}
