/**
 * The checks `OAuthOptions.resolve` runs on each kind of value, each adding
 * one line per problem to `problems` (every mistake is reported at once), and
 * the URL rules they share with the rest of the module.
 *
 * @since 0.1.0
 */
import { Duration } from "effect"
import { isLoopbackHost } from "../../config/Urls.ts"

/** Every JWS algorithm the resource server can accept; all asymmetric. */
export const SUPPORTED_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519"
] as const

/** One asymmetric JWS algorithm (RFC 7518 §3.1, RFC 8037, RFC 9864). */
export type SigningAlgorithm = typeof SUPPORTED_ALGORITHMS[number]

/** The default allow-list: all of `SUPPORTED_ALGORITHMS`. */
export const DEFAULT_ALGORITHMS: ReadonlyArray<SigningAlgorithm> = SUPPORTED_ALGORITHMS

/** A scope token (RFC 6749 §3.3): printable ASCII without space, quote or backslash. */
export const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

/**
 * The canonical form of a resource identifier or audience (RFC 8707 §2, RFC
 * 3986 §6): lowercase scheme and host, default port dropped, no fragment, no
 * trailing slash. Values that are not http(s) URLs are returned unchanged, so
 * they compare exactly.
 */
export const canonicalResource = (value: string): string => {
  if (!/^https?:\/\//i.test(value)) return value
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return value
  }
  const path = url.pathname.endsWith("/") ? url.pathname.slice(0, -1) : url.pathname
  return `${url.origin}${path}${url.search}`
}

/** Two resource identifiers name the same resource once both are canonical. */
export const sameResource = (a: string, b: string): boolean => canonicalResource(a) === canonicalResource(b)

export const checkUrl = (
  label: string,
  value: string,
  problems: Array<string>,
  allowInsecureHttp: boolean,
  options: { readonly query: boolean }
): URL | undefined => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    problems.push(`${label} ${JSON.stringify(value)}: expected an absolute URL`)
    return undefined
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    problems.push(`${label} ${JSON.stringify(value)}: expected an https URL`)
    return undefined
  }
  if (url.protocol === "http:" && !allowInsecureHttp && !isLoopbackHost(url.hostname)) {
    problems.push(`${label} ${JSON.stringify(value)}: expected https (http only on a loopback host)`)
  }
  if (url.hash !== "" || value.includes("#")) {
    problems.push(`${label} ${JSON.stringify(value)}: must not have a fragment`)
  }
  if (!options.query && url.search !== "") problems.push(`${label} ${JSON.stringify(value)}: must not have a query`)
  if (url.username !== "" || url.password !== "") {
    problems.push(`${label}: must not carry credentials`)
  }
  return url
}

export const checkScopes = (
  label: string,
  scopes: ReadonlyArray<string>,
  problems: Array<string>
): ReadonlyArray<string> => {
  for (const scope of scopes) {
    if (!SCOPE_TOKEN.test(scope)) {
      problems.push(
        `${label} ${
          JSON.stringify(scope)
        }: expected a scope token (RFC 6749 §3.3: printable ASCII, no space, quote or backslash)`
      )
    }
  }
  return [...new Set(scopes)]
}

export const checkAlgorithms = (label: string, algorithms: ReadonlyArray<string>, problems: Array<string>) => {
  const result: Array<SigningAlgorithm> = []
  for (const alg of algorithms) {
    if ((SUPPORTED_ALGORITHMS as ReadonlyArray<string>).includes(alg)) {
      if (!result.includes(alg as SigningAlgorithm)) result.push(alg as SigningAlgorithm)
    } else if (alg.toLowerCase() === "none") {
      problems.push(`${label} "none": unsigned tokens are never accepted`)
    } else if (/^HS/i.test(alg)) {
      problems.push(`${label} ${JSON.stringify(alg)}: HMAC algorithms are never accepted by a resource server`)
    } else {
      problems.push(`${label} ${JSON.stringify(alg)}: expected one of ${SUPPORTED_ALGORITHMS.join(", ")}`)
    }
  }
  if (algorithms.length === 0) problems.push(`${label}: at least one algorithm is required`)
  return result
}

export const checkDuration = (
  label: string,
  input: Duration.Input | undefined,
  fallback: Duration.Duration,
  problems: Array<string>,
  options: { readonly zero?: boolean } = {}
): Duration.Duration => {
  if (input === undefined) return fallback
  let duration: Duration.Duration
  try {
    duration = Duration.fromInputUnsafe(input)
  } catch {
    problems.push(`${label}: expected a duration`)
    return fallback
  }
  const millis = Duration.toMillis(duration)
  if (!Number.isFinite(millis)) problems.push(`${label}: expected a finite duration`)
  else if (options.zero === true ? millis < 0 : millis <= 0) {
    problems.push(`${label}: expected a ${options.zero === true ? "non-negative" : "positive"} duration`)
  }
  return duration
}
