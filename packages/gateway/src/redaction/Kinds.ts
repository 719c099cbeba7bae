/**
 * The kinds of sensitive data the redactor knows, and the marker each one is
 * replaced with.
 *
 * **Rules**
 *
 * - A redaction is replaced by `[REDACTED:<kind>]` and nothing else: never a
 *   hash, a length or a last-4 of the value, since any of those helps an
 *   attacker confirm a guess.
 * - Built-in kinds have fixed small ids (their index in `BUILTIN_KINDS`) so the
 *   scanner counts into a typed array; custom patterns take the ids after them.
 *
 * @since 0.1.0
 */

/** Every built-in detector, by the kind it reports. */
export const BUILTIN_KINDS = [
  "card",
  "email",
  "ssn",
  "iban",
  "aws_access_key",
  "github_token",
  "slack_token",
  "stripe_key",
  "google_api_key",
  "jwt",
  "private_key",
  "bearer_token",
  "janus_token",
  "sk_api_key",
  "credential",
  "basic_auth",
  "gitlab_token"
] as const

/** The kind reported by one built-in detector. */
export type BuiltinKind = typeof BUILTIN_KINDS[number]

/** Ids of the built-in kinds, as used by the scanner (the index in `BUILTIN_KINDS`). */
export const CARD = 0
export const EMAIL = 1
export const SSN = 2
export const IBAN = 3
export const AWS_ACCESS_KEY = 4
export const GITHUB_TOKEN = 5
export const SLACK_TOKEN = 6
export const STRIPE_KEY = 7
export const GOOGLE_API_KEY = 8
export const JWT = 9
export const PRIVATE_KEY = 10
export const BEARER_TOKEN = 11
export const JANUS_TOKEN = 12
export const SK_API_KEY = 13
export const CREDENTIAL = 14
export const BASIC_AUTH = 15
export const GITLAB_TOKEN = 16

/** The text that replaces a redacted value of `kind`. */
export const marker = (kind: string): string => `[REDACTED:${kind}]`

/** What every marker starts with; text already carrying markers is left as it is. */
export const MARKER_PREFIX = "[REDACTED:"

/** True when `kind` names a built-in detector. */
export const isBuiltinKind = (kind: string): kind is BuiltinKind =>
  (BUILTIN_KINDS as ReadonlyArray<string>).includes(kind)
