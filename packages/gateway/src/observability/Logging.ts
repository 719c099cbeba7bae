/**
 * Structured JSON logs: one JSON object per line on stdout, with the trace
 * and request they belong to, and never a secret.
 *
 * **Shape** (effect's `Logger.formatStructured`, plus correlation fields):
 *
 * ```json
 * {"timestamp":"…","level":"INFO","message":"…","annotations":{"request_id":"…"},
 *  "spans":{},"fiberId":"#12","trace_id":"4bf9…","span_id":"00f0…","request_id":"…"}
 * ```
 *
 * **Rules**
 *
 * - `trace_id` / `span_id` are the current span's (absent outside a span);
 *   `request_id` is lifted from the `request_id` annotation that
 *   `HttpObservability` sets per HTTP request.
 * - No secret is ever written: `Redacted` values print as `<redacted>`
 *   (effect's formatter); values of annotations or object keys that name a
 *   credential (`authorization`, `cookie`, `password`, `secret`, `token`,
 *   `api_key`, …) are replaced; and every string is scrubbed of what looks
 *   like a credential: `Bearer …` / `Basic …` / `Token …` values, Janus tokens
 *   (`jna_…`, `jns_…`), JWTs, URL passwords and `key=value` pairs whose key
 *   names a credential. The scrub runs on messages, annotations and causes.
 * - A value is scrubbed for what it looks like, not for the word before it:
 *   after `Bearer`, `Basic` or `Token` it is a credential when it has at
 *   least 8 characters and a digit or an upper-case letter after a
 *   lower-case one (`looksLikeCredential`), so that "OAuth access token
 *   refused" or "The token issuer is not trusted" stay readable and
 *   searchable. After `key=` every value is a credential (an assignment);
 *   after a plain word and a colon (`token:`, `secret:`, `password:`) a
 *   single ordinary word is not ("token: expired").
 * - The level comes from `LOG_LEVEL` (trace … fatal), through
 *   `References.MinimumLogLevel`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Formatter, Layer, Logger, type LogLevel, References, Tracer } from "effect"
import { JanusConfig } from "../config/JanusConfig.ts"

/** What replaces a secret. */
export const REDACTED = "<redacted>"

const sensitiveKey =
  /^(?:authorization|proxy-authorization|cookie|set-cookie|x-api-key|api[-_]?key|apikey|password|passwd|pwd|secret|client[-_]?secret|token|access[-_]?token|refresh[-_]?token|id[-_]?token|private[-_]?key|master[-_]?key|janus[-_]master[-_]key|database[-_]url|redis[-_]url|credentials?)$/i

/** The shortest value after an auth scheme that is taken for a credential: shorter ones are words. */
const MIN_CREDENTIAL_LENGTH = 8

/**
 * Whether `value`, written after `Bearer`, `Basic` or `Token`, looks like a
 * credential rather than a word: at least `MIN_CREDENTIAL_LENGTH` characters
 * (without `=` padding) with a digit, or an upper-case letter after a
 * lower-case one. "refused", "expired", "issuer" and "Authentication" are words.
 */
export const looksLikeCredential = (value: string): boolean => {
  const bare = value.replace(/=+$/, "")
  return bare.length >= MIN_CREDENTIAL_LENGTH && /[0-9]|[a-z].*[A-Z]/.test(bare)
}

/** One ordinary word, perhaps with a sentence's punctuation after it: no credential after `token:`. */
const ordinaryWord = /^[A-Za-z][a-z]*[.,!?;:]*$|^[A-Z]+[.,!?;:]*$/

// Keys of `key=value` / `key: value` pairs; the plain words among them are also written in prose.
const PLAIN_KEY = /^(?:password|secret|token|signature|sig)$/i

type Replacer = (match: string, ...groups: Array<string>) => string

const patterns: ReadonlyArray<readonly [RegExp, string | Replacer]> = [
  // Authorization header values: a credential is token68 (a parameter such as
  // `Bearer realm="janus"` is not one), and looks like one (not "token refused").
  [
    /\b(Bearer|Basic|Token)\s+([A-Za-z0-9._~+/-]+=*)(?![="\w])/gi,
    (match, scheme, value) => looksLikeCredential(value!) ? `${scheme} ${REDACTED}` : match
  ],
  // Janus admin and client tokens.
  [/\bjn[a-z]_[A-Za-z0-9_-]{8,}/g, REDACTED],
  // JWTs (three base64url parts, the first a JSON header).
  [/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, REDACTED],
  // Passwords in URLs.
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi, `$1${REDACTED}@`],
  // key=value / key: value pairs whose key names a credential.
  [
    /\b(access[_-]?token|refresh[_-]?token|id[_-]?token|api[_-]?key|apikey|client[_-]?secret|password|passwd|secret|token|signature|sig)(\s*([=:])\s*"?)([^\s"&,;]+)/gi,
    (match, key, between, delimiter, value) =>
      delimiter === ":" && PLAIN_KEY.test(key!) && ordinaryWord.test(value!)
        ? match
        : `${key}${between}${REDACTED}`
  ]
]

/** `text` with everything that looks like a credential replaced. */
export const scrub = (text: string): string => {
  let out = text
  for (const [pattern, replacement] of patterns) {
    out = typeof replacement === "string" ? out.replace(pattern, replacement) : out.replace(pattern, replacement)
  }
  return out
}

/** A deep copy of a log value with credentials scrubbed (strings) and credential-named keys replaced. */
export const scrubValue = (value: unknown, depth = 0): unknown => {
  if (typeof value === "string") return scrub(value)
  if (typeof value !== "object" || value === null || depth > 8) return value
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) {
    out[key] = sensitiveKey.test(key) && item !== null && item !== undefined ? REDACTED : scrubValue(item, depth + 1)
  }
  return out
}

/** One log line as an object (before JSON encoding). */
export interface LogRecord {
  readonly timestamp: string
  readonly level: string
  readonly message: unknown
  readonly cause?: string | undefined
  readonly annotations: Record<string, unknown>
  readonly spans: Record<string, number>
  readonly fiberId: string
  readonly trace_id?: string | undefined
  readonly span_id?: string | undefined
  readonly request_id?: string | undefined
}

const structured = Logger.formatStructured

/** The JSON logger, writing each line with `write` (default: `process.stdout`). */
export const jsonLogger = (
  write: (line: string) => void = (line) => void process.stdout.write(line + "\n")
): Logger.Logger<unknown, void> =>
  Logger.make((options) => {
    const base = structured.log(options)
    // Redacted values become "<redacted>" here; `scrubValue` then works on plain data.
    const plain = JSON.parse(Formatter.formatJson(base)) as Record<string, unknown>
    const record = scrubValue(plain) as Record<string, unknown>
    const span = Context.getOrUndefined(options.fiber.context, Tracer.ParentSpan)
    if (span !== undefined) {
      record.trace_id = span.traceId
      record.span_id = span.spanId
    }
    const annotations = record.annotations as Record<string, unknown> | undefined
    if (annotations !== undefined && typeof annotations.request_id === "string") {
      record.request_id = annotations.request_id
    }
    write(JSON.stringify(record))
  })

const levels = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error",
  fatal: "Fatal"
} as const satisfies Record<string, LogLevel.LogLevel>

/** `LOG_LEVEL` values. */
export type Level = keyof typeof levels

/**
 * The process's loggers: only the JSON logger (replacing effect's default
 * one), at `level`. It replaces the current loggers, so it must be built
 * before the OTLP layer, which adds its logger to them: provide it outside
 * (`program.pipe(Effect.provide(Otlp.layerConfig(v)), Effect.provide(Logging.layerConfig))`).
 */
export const layer = (options: {
  readonly level: Level
  readonly write?: ((line: string) => void) | undefined
}): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.layer([jsonLogger(options.write)]),
    Layer.succeed(References.MinimumLogLevel, levels[options.level])
  )

/** {@link layer} at `LOG_LEVEL`, writing to stdout. */
export const layerConfig: Layer.Layer<never, never, JanusConfig> = Layer.unwrap(
  Effect.map(Effect.service(JanusConfig), (config) => layer({ level: config.LOG_LEVEL }))
)
