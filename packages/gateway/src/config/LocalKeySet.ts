/**
 * A JWK Set the operator gives instead of a JWKS URI: inline (`OAUTH_JWKS`)
 * or in a file (`OAUTH_JWKS_FILE`), for an identity provider Janus cannot
 * reach, or for tests.
 *
 * **Rules**
 *
 * - Checked strictly, at start and at every re-read: JSON, an object with a
 *   non-empty `keys` array, every key a public asymmetric signing key
 *   (`kty` RSA, EC or OKP, `use` absent or `sig`). Unlike a fetched set, whose
 *   unusable entries are dropped, a bad entry here is refused, naming the key
 *   (position and `kid`) and what is wrong: it is the operator's own mistake.
 * - A key with private members (`d`, `p`, `q`, `dp`, `dq`, `qi`, `oth`, `k`,
 *   `priv`) is refused, naming the members, never their values: a private key
 *   does not belong in a gateway's configuration.
 * - Messages never quote the document (it may hold a private key by mistake):
 *   a JSON syntax error is named by position only.
 * - A file is re-read on every refresh of its issuer's keys; a file that
 *   became unreadable or invalid is a failed fetch (the held keys stay).
 *
 * @since 0.1.0
 */
import { Effect, Result } from "effect"
import * as Fs from "node:fs"

/** One checked public signing key, as written. */
export type PublicJwk = Readonly<Record<string, unknown>>

/** Members of a JWK that only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
export const PRIVATE_MEMBERS: ReadonlyArray<string> = ["d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"]

/**
 * Largest key-set file read, in bytes: the same bound as a fetched JWKS
 * (a set of a few keys is a few KiB).
 */
export const MAX_FILE_BYTES = 1024 * 1024

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Where a JSON syntax error is, without quoting the text. */
const syntaxPosition = (error: unknown): string => {
  const message = error instanceof Error ? error.message : ""
  if (/end of JSON input/.test(message)) return " (it ends in the middle)"
  const position = /line \d+ column \d+|position \d+/.exec(message)?.[0]
  return position === undefined ? "" : ` (syntax error at ${position})`
}

/** The checked keys of `document` (JSON text or parsed); the failure names `source` and the first bad key. */
export const checkKeySet = (document: unknown, source: string): Result.Result<ReadonlyArray<PublicJwk>, string> => {
  let parsed = document
  if (typeof document === "string") {
    try {
      parsed = JSON.parse(document)
    } catch (error) {
      return Result.fail(`${source} is not JSON${syntaxPosition(error)}; expected a JWK Set {"keys": [...]}`)
    }
  }
  if (!isRecord(parsed) || !Array.isArray(parsed.keys)) {
    return Result.fail(`${source} is not a JWK Set; expected a JSON object {"keys": [...]}`)
  }
  if (parsed.keys.length === 0) return Result.fail(`${source} holds no keys; expected at least one public signing key`)
  const keys: Array<PublicJwk> = []
  for (const [index, jwk] of parsed.keys.entries()) {
    const name = isRecord(jwk) && typeof jwk.kid === "string"
      ? `key ${index + 1} (kid ${JSON.stringify(jwk.kid.slice(0, 100))})`
      : `key ${index + 1}`
    const refuse = (why: string) => Result.fail(`${source}: ${name} ${why}`)
    if (!isRecord(jwk)) return refuse("is not a JSON object")
    const secret = PRIVATE_MEMBERS.filter((member) => member in jwk)
    if (secret.length > 0) {
      return refuse(
        `holds private key material (${secret.join(", ")}); give only the public key ` +
          `(a symmetric key can never verify tokens here)`
      )
    }
    if (jwk.kty !== "RSA" && jwk.kty !== "EC" && jwk.kty !== "OKP") {
      return refuse(`has kty ${JSON.stringify(jwk.kty)}; expected RSA, EC or OKP`)
    }
    if (jwk.use !== undefined && jwk.use !== "sig") {
      return refuse(`has use ${JSON.stringify(jwk.use)}; expected sig (or no use)`)
    }
    keys.push(jwk)
  }
  return Result.succeed(keys)
}

/** Reads `path` synchronously (start-up checks); the failure says why, in words. */
export const readKeySetFileSync = (path: string): Result.Result<ReadonlyArray<PublicJwk>, string> => {
  const source = `file ${path}`
  try {
    const size = Fs.statSync(path).size
    if (size > MAX_FILE_BYTES) return Result.fail(`${source} is ${size} bytes; expected at most ${MAX_FILE_BYTES}`)
    return checkKeySet(Fs.readFileSync(path, "utf8"), source)
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "unreadable"
    return Result.fail(`${source} cannot be read (${code})`)
  }
}

/**
 * Checks an issuer's sources of signing keys (at most one of a JWKS URI, an
 * inline set, a file), pushing each problem, labelled by `label`, to
 * `problems`; the checked inline keys, when given.
 */
export const checkKeySources = (
  sources: { readonly jwksUri?: string | undefined; readonly jwks?: unknown; readonly jwksFile?: string | undefined },
  label: (what: string) => string,
  problems: Array<string>
): ReadonlyArray<PublicJwk> | undefined => {
  const given = (["jwksUri", "jwks", "jwksFile"] as const).filter((name) => sources[name] !== undefined)
  if (given.length > 1) {
    problems.push(`${label(given.join(", "))}: give one source of signing keys, not ${given.length}`)
  }
  if (sources.jwksFile !== undefined) {
    const read = readKeySetFileSync(sources.jwksFile)
    if (Result.isFailure(read)) problems.push(`${label("jwksFile")}: ${read.failure}`)
  }
  if (sources.jwks === undefined) return undefined
  const checked = checkKeySet(sources.jwks, label("jwks"))
  if (Result.isSuccess(checked)) return checked.success
  problems.push(checked.failure)
  return undefined
}

/** Reads `path` (a refresh); fails with the reason in words. */
export const readKeySetFile = (path: string): Effect.Effect<ReadonlyArray<PublicJwk>, string> =>
  Effect.flatMap(Effect.sync(() => readKeySetFileSync(path)), Effect.fromResult)
