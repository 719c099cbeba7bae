/**
 * The credentials Janus put into one request, scrubbed from what comes back.
 *
 * A downstream (or upstream MCP server) that echoes request headers, or
 * quotes the credential in an error, would otherwise hand Janus's secret to
 * the client. What was injected is always scrubbed, whether or not
 * `REDACTION_ENABLED` is on: it is not data protection, it is the gateway
 * keeping its own credentials.
 *
 * **Rules**
 *
 * - Built from the credential header values sent: `Bearer <token>` gives the
 *   token; `Basic <base64>` gives the encoded value and the password inside
 *   it (the user name is not a secret); any other value (an API key header)
 *   is itself the secret.
 * - Each is found as sent and in the spellings an echo is likely to use:
 *   JSON-escaped (also with `\/` and with `\uXXXX` for non-ASCII, as PHP and
 *   others write JSON), percent-encoded and form-encoded. Every occurrence
 *   becomes `[REDACTED:secret]`, however short the credential: a secret is
 *   never given back, even where scrubbing it garbles other text.
 * - Hot path: the needles are built once per set of values (the egress side
 *   memoises it on the secret it injected), and a response is scanned once:
 *   one native `indexOf` pass for a single needle (the usual case), else one
 *   pass of a single alternation `RegExp`. Text with nothing to scrub comes
 *   back as the very same string, with no allocation.
 *
 * @since 0.1.0
 */
import { marker } from "./Kinds.ts"

/** The scrubbed text and how many values were replaced. */
export interface Scrubbed {
  readonly text: string
  readonly count: number
}

const MARKER = marker("secret")

const escapeRegExp = (s: string) => s.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&")

/** `s` with every non-ASCII character as a JSON `\uXXXX` escape. */
const asciiJson = (s: string) =>
  s.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/** What an echo of `value` may look like. */
const spellings = (value: string): ReadonlyArray<string> => {
  const json = JSON.stringify(value).slice(1, -1)
  return [
    value,
    json,
    json.replaceAll("/", "\\/"),
    asciiJson(json),
    asciiJson(json).replaceAll("/", "\\/"),
    encodeURIComponent(value),
    new URLSearchParams({ v: value }).toString().slice(2)
  ]
}

/** The secrets carried by one credential header value. */
const secretsOf = (headerValue: string): ReadonlyArray<string> => {
  const scheme = /^(Bearer|Basic)\s+(\S+)$/i.exec(headerValue)
  if (scheme === null) return [headerValue]
  const [, name, credential] = scheme as unknown as [string, string, string]
  if (name.toLowerCase() === "bearer") return [credential]
  const decoded = Buffer.from(credential, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  const password = colon === -1 ? "" : decoded.slice(colon + 1)
  return password === "" ? [credential] : [credential, password]
}

export class InjectedSecrets {
  /** Nothing was injected: `scrub` returns its input. */
  static readonly none: InjectedSecrets = new InjectedSecrets([])

  /** From the credential header values sent with a request (`Bearer …`, `Basic …`, a raw API key). */
  static fromHeaderValues(values: ReadonlyArray<string>): InjectedSecrets {
    return InjectedSecrets.build(values.flatMap(secretsOf))
  }

  private static build(secrets: ReadonlyArray<string>): InjectedSecrets {
    const needles = new Set<string>()
    for (const secret of secrets) {
      for (const spelling of spellings(secret)) if (spelling !== "") needles.add(spelling)
    }
    if (needles.size === 0) return InjectedSecrets.none
    // A needle that contains another is found through it; longest first so the alternation takes the longest.
    const sorted = [...needles].sort((a, b) => b.length - a.length)
    return new InjectedSecrets(sorted.filter((n) => !sorted.some((m) => m !== n && n.includes(m))))
  }

  /** From secret values given as they are (a stdio upstream's environment), with no header scheme to read. */
  static fromSecrets(values: ReadonlyArray<string>): InjectedSecrets {
    return InjectedSecrets.build(values)
  }

  /**
   * `previous` when `headers` hold the values it was built from, else a set
   * built from them: a per-session memo for callers that get a fresh header
   * record with every request (federation).
   */
  static track(previous: InjectedSecrets, headers: Readonly<Record<string, string>>): InjectedSecrets {
    let source = ""
    for (const name in headers) source += `${headers[name]}\n`
    if (source === previous.source) return previous
    const built = InjectedSecrets.fromHeaderValues(Object.values(headers))
    return new InjectedSecrets(built.needles, source)
  }

  private readonly needles: ReadonlyArray<string>
  private readonly pattern: RegExp | undefined
  /** The header values this set was built from (`track`). */
  private readonly source: string

  private constructor(needles: ReadonlyArray<string>, source = "") {
    this.needles = needles
    this.source = source
    this.pattern = needles.length > 1 ? new RegExp(needles.map(escapeRegExp).join("|"), "g") : undefined
  }

  get isEmpty(): boolean {
    return this.needles.length === 0
  }

  /** `text` with every injected value replaced by `[REDACTED:secret]`. */
  scrub(text: string): Scrubbed {
    if (this.needles.length === 0) return { text, count: 0 }
    if (this.pattern === undefined) {
      const needle = this.needles[0]!
      let at = text.indexOf(needle)
      if (at === -1) return { text, count: 0 }
      let out = ""
      let from = 0
      let count = 0
      while (at !== -1) {
        out += text.slice(from, at) + MARKER
        from = at + needle.length
        count++
        at = text.indexOf(needle, from)
      }
      return { text: out + text.slice(from), count }
    }
    let count = 0
    const scrubbed = text.replace(this.pattern, () => {
      count++
      return MARKER
    })
    return { text: scrubbed, count }
  }
}
