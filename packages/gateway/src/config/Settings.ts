/**
 * Parsers for the kinds of value Janus reads from its environment.
 *
 * Each parser turns the raw text of one variable into a typed value or says,
 * in words an operator can act on, what was expected. `JanusConfig` runs every
 * variable through its parser and reports all mistakes at once; these stay
 * plain functions so the messages are ours and testable.
 *
 * @since 0.1.0
 */
import { Duration, Option, Redacted, Result } from "effect"

/** A parser from raw text to a value, failing with what was expected. */
export type Parser<A> = (raw: string) => Result.Result<A, string>

/** One environment variable (a row of `JanusConfig.VARIABLES`): its parser, default, and whether it is secret. */
export interface Variable<A> {
  readonly parse: Parser<A>
  readonly default: A
  readonly secret?: boolean
  readonly doc: string
}

/** A variable with a default. */
export const variable = <A>(parse: Parser<A>, defaultValue: A, doc: string, secret = false): Variable<A> => ({
  parse,
  default: defaultValue,
  secret,
  doc
})

/** A variable that may be unset (`Option.none()`). */
export const optional = <A>(parse: Parser<A>, doc: string, secret = false): Variable<Option.Option<A>> =>
  variable((raw) => Result.map(parse(raw), Option.some), Option.none(), doc, secret)

/** An integer in `[min, max]`. */
export const int = (min: number, max: number): Parser<number> => (raw) => {
  const n = Number(raw.trim())
  return Number.isInteger(n) && n >= min && n <= max && raw.trim() !== ""
    ? Result.succeed(n)
    : Result.fail(`an integer from ${min} to ${max}`)
}

const unitMillis: Record<string, number> = {
  ms: 1,
  s: 1_000,
  sec: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000
}

/**
 * A duration such as `5s`, `500ms`, `2m`, `1h` or `30 seconds`; `0` means off.
 * A bare number is read as seconds, as operators of the Go original wrote it.
 */
export const duration = (
  max: Duration.Duration = Duration.days(1),
  min: Duration.Duration = Duration.zero
): Parser<Duration.Duration> =>
(raw) => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw)
  const expected = `a duration such as 500ms, 5s, 2m or 1h (${
    Duration.isZero(min) ? "" : `at least ${Duration.format(min)}, `
  }at most ${Duration.format(max)})`
  if (!match) return Result.fail(expected)
  const unit = match[2]!.toLowerCase()
  const factor = unit === "" ? 1_000 : unitMillis[unit]
  if (factor === undefined) return Result.fail(expected)
  const millis = Number(match[1]) * factor
  return millis <= Duration.toMillis(max) && millis >= Duration.toMillis(min)
    ? Result.succeed(Duration.millis(millis))
    : Result.fail(expected)
}

/** `true`/`false` and the usual spellings of them. */
export const boolean: Parser<boolean> = (raw) => {
  const v = raw.trim().toLowerCase()
  if (["true", "1", "yes", "on"].includes(v)) return Result.succeed(true)
  if (["false", "0", "no", "off", ""].includes(v)) return Result.succeed(false)
  return Result.fail("true or false")
}

/** A TCP port. */
export const port: Parser<number> = (raw) => Result.mapError(int(0, 65_535)(raw), () => "a port from 0 to 65535")

/** A host name or IP address to listen on. */
export const host: Parser<string> = (raw) =>
  /^[A-Za-z0-9.:-]+$/.test(raw.trim()) ? Result.succeed(raw.trim()) : Result.fail("a host name or IP address")

const hostLabel = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/**
 * Host names the gateway answers to (`JANUS_ALLOWED_HOSTS`), comma-separated:
 * `janus.example.com` (that name), `.example.com` (it and every subdomain),
 * or `*` (any name: no DNS-rebinding protection). Lowercased; a trailing dot
 * is dropped. A port, scheme or path is refused: the check is by name.
 */
export const hostNames: Parser<ReadonlyArray<string>> = (raw) => {
  const names: Array<string> = []
  for (const entry of raw.split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "")) {
    const name = entry.endsWith(".") && entry !== "." ? entry.slice(0, -1) : entry
    const labels = (name.startsWith(".") ? name.slice(1) : name).split(".")
    if (name !== "*" && !labels.every((label) => hostLabel.test(label))) {
      return Result.fail(
        `host names separated by commas, such as janus.example.com or .example.com (that domain and its ` +
          `subdomains), or * for any; ${JSON.stringify(entry)} is not one (no scheme, port or path)`
      )
    }
    names.push(name)
  }
  return Result.succeed(names)
}

/** A URL with one of the given schemes, kept redacted since it may carry a password. */
export const url = (schemes: ReadonlyArray<string>): Parser<Redacted.Redacted<string>> => (raw) => {
  const expected = `a URL starting with ${schemes.map((s) => `${s}://`).join(" or ")}`
  try {
    const parsed = new URL(raw.trim())
    return schemes.includes(parsed.protocol.slice(0, -1))
      ? Result.succeed(Redacted.make(raw.trim()))
      : Result.fail(expected)
  } catch {
    return Result.fail(expected)
  }
}

const key32Expected = "32 random bytes in base64 (for example the output of `openssl rand -base64 32`)"
const isKey32 = (text: string): boolean =>
  /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) && Buffer.from(text, "base64").length === 32

/** 32 bytes encoded in base64 (an AES-256 key), kept as its redacted text. */
export const key32: Parser<Redacted.Redacted<string>> = (raw) =>
  isKey32(raw.trim()) ? Result.succeed(Redacted.make(raw.trim())) : Result.fail(key32Expected)

/** A comma-separated list of such keys (the keys before a rotation). */
export const key32List: Parser<ReadonlyArray<Redacted.Redacted<string>>> = (raw) => {
  const keys = raw.split(",").map((s) => s.trim()).filter((s) => s !== "")
  return keys.every(isKey32)
    ? Result.succeed(keys.map((k) => Redacted.make(k)))
    : Result.fail(`a comma-separated list of keys, each ${key32Expected}`)
}

/**
 * A static bearer token of `min` to `max` characters that a client can send as
 * `Authorization: Bearer <token>` (RFC 6750 `b64token`: letters, digits and
 * `-._~+/`, then `=` padding), kept redacted. The message never quotes it.
 */
export const bearerToken = (min: number, max: number): Parser<Redacted.Redacted<string>> => (raw) => {
  const token = raw.trim()
  return token.length >= min && token.length <= max && /^[A-Za-z0-9\-._~+/]+=*$/.test(token)
    ? Result.succeed(Redacted.make(token))
    : Result.fail(
      `${min} to ${max} characters of letters, digits and -._~+/ (with = padding at the end), for example the ` +
        "output of `openssl rand -hex 32`"
    )
}

/** One of a fixed set of words. */
export const oneOf = <const L extends string>(literals: ReadonlyArray<L>): Parser<L> => (raw) => {
  const v = raw.trim().toLowerCase()
  return (literals as ReadonlyArray<string>).includes(v)
    ? Result.succeed(v as L)
    : Result.fail(`one of ${literals.join(", ")}`)
}

/** Any non-empty text. */
export const text: Parser<string> = (raw) =>
  raw.trim() === "" ? Result.fail("a non-empty value") : Result.succeed(raw.trim())

/** A comma-separated list of non-empty items. */
export const list: Parser<ReadonlyArray<string>> = (raw) =>
  Result.succeed(raw.split(",").map((s) => s.trim()).filter((s) => s !== ""))

/**
 * A setting given for every issuer, per issuer, or both: `;`-separated
 * entries, each `value` (every issuer without an entry of its own) or
 * `<issuer>=value`. Issuer keys are compared up to a trailing slash.
 */
export class PerIssuer<A> {
  /** The value for every issuer without its own. */
  readonly all: A | undefined
  /** `[issuer, value]` pairs, in the order written. */
  readonly byIssuer: ReadonlyArray<readonly [string, A]>
  readonly #show: (value: A) => string

  constructor(all: A | undefined, byIssuer: ReadonlyArray<readonly [string, A]>, show: (value: A) => string) {
    this.all = all
    this.byIssuer = byIssuer
    this.#show = show
  }

  /** The value for `issuer`. */
  for(issuer: string): A | undefined {
    const key = withoutSlash(issuer)
    return this.byIssuer.find(([i]) => withoutSlash(i) === key)?.[1] ?? this.all
  }

  /** The same setting with `all` defaulting to `fallback`. */
  withDefault(fallback: A | undefined): PerIssuer<A> {
    return this.all !== undefined || fallback === undefined ? this : new PerIssuer(fallback, this.byIssuer, this.#show)
  }

  /** The setting as written (for `GET /api/v1/config`). */
  toString(): string {
    return [
      ...(this.all === undefined ? [] : [this.#show(this.all)]),
      ...this.byIssuer.map(([issuer, value]) => `${issuer}=${this.#show(value)}`)
    ].join("; ")
  }
}

const withoutSlash = (issuer: string) => issuer.endsWith("/") ? issuer.slice(0, -1) : issuer

// an issuer key: an http(s) URL up to the first `=`; never a query or fragment, as issuers have none
const ISSUER_ENTRY = /^\s*(https?:\/\/[^\s=?#]+)\s*=(.*)$/i

/** Parses a {@link PerIssuer} setting whose values `parse` reads; `show` writes a value back. */
export const perIssuer = <A>(parse: Parser<A>, show: (value: A) => string): Parser<PerIssuer<A>> => (raw) => {
  let all: A | undefined
  const byIssuer: Array<readonly [string, A]> = []
  for (const entry of raw.split(";").map((e) => e.trim()).filter((e) => e !== "")) {
    const keyed = ISSUER_ENTRY.exec(entry)
    const parsed = parse(keyed === null ? entry : keyed[2]!.trim())
    if (Result.isFailure(parsed)) {
      return Result.fail(
        `${parsed.failure}, for every issuer or as <issuer>=<value> entries separated by ";"` +
          (keyed === null ? "" : ` (the entry for ${keyed[1]})`)
      )
    }
    if (keyed === null) {
      if (all !== undefined) {
        return Result.fail(`one value for every issuer at most; per issuer, write <issuer>=<value>`)
      }
      all = parsed.success
    } else {
      byIssuer.push([keyed[1]!, parsed.success])
    }
  }
  return Result.succeed(new PerIssuer(all, byIssuer, show))
}

/** An empty {@link PerIssuer}, or one with `all`. */
export const everyIssuer = <A>(all: A | undefined, show: (value: A) => string): PerIssuer<A> =>
  new PerIssuer(all, [], show)

/** How the values of a per-issuer setting are read, written back, and named in its doc (`<issuer>=<name>`). */
export interface IssuerValue<A> {
  readonly parse: Parser<A>
  readonly show: (value: A) => string
  readonly name: string
}

/** A variable set for every issuer, per issuer (`<issuer>=<value>; ...`) or both; `all` unless set. */
export const issuerVariable = <A>(value: IssuerValue<A>, all: A | undefined, doc: string): Variable<PerIssuer<A>> =>
  variable(
    perIssuer(value.parse, value.show),
    everyIssuer(all, value.show),
    `${doc}; per issuer: <issuer>=<${value.name}>; ...`
  )
