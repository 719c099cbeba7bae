/**
 * The mistakes in the `OAUTH_*` variables that only show when several are
 * read together (`oauth/Variables.ts` turns them into the OAuth module's
 * options).
 *
 * **Rules**
 *
 * - `OAUTH_ENABLED` needs `OAUTH_ISSUERS` and `OAUTH_RESOURCE`.
 * - Every issuer is an http(s) URL (a `{tenantid}`-like placeholder aside);
 *   plain http only on a loopback host, or for an issuer listed in
 *   `OAUTH_HTTP_ISSUERS`, which covers its JWKS URL too.
 * - A per-issuer entry (`<issuer>=<value>`) and an `OAUTH_HTTP_ISSUERS` entry
 *   must name an issuer of `OAUTH_ISSUERS` (up to a trailing slash): a typo
 *   would otherwise silently leave that issuer on the defaults.
 * - An issuer's signing keys have one source: `OAUTH_JWKS_URL` (or
 *   discovery), `OAUTH_JWKS` or `OAUTH_JWKS_FILE`; naming two is refused
 *   rather than one silently winning. A key-set file must be readable and
 *   hold a valid set at start (`LocalKeySet.ts`).
 * - Everything else (durations, scopes, algorithms, templates) is checked
 *   by the OAuth module when it starts, and by `janus doctor`.
 *
 * @since 0.1.0
 */
import { Option, Result } from "effect"
import type { JanusSettings } from "./JanusConfig.ts"
import { readKeySetFileSync } from "./LocalKeySet.ts"
import { PerIssuer } from "./Settings.ts"
import { isLoopbackHost, normalizeIssuer } from "./Urls.ts"

/** One mistake, in the shape of `JanusConfig`'s `InvalidVariable`. */
export interface Problem {
  readonly name: string
  readonly value: string
  readonly expected: string
}

const PER_ISSUER = [
  "OAUTH_TOOL_SCOPES",
  "OAUTH_AUDIENCES",
  "OAUTH_SCOPE_CLAIMS",
  "OAUTH_SCOPE_PREFIX",
  "OAUTH_JWKS_URL",
  "OAUTH_JWKS",
  "OAUTH_JWKS_FILE",
  "OAUTH_TENANTS",
  "OAUTH_CLOCK_TOLERANCE",
  "OAUTH_JWKS_REFRESH"
] as const

/** Parses an issuer with its placeholder replaced by a sample segment; `undefined` when it is no http(s) URL. */
const issuerUrl = (issuer: string): URL | undefined => {
  try {
    const url = new URL(issuer.replace(/\{[^}]*\}/g, "tenant"))
    return url.protocol === "https:" || url.protocol === "http:" ? url : undefined
  } catch {
    return undefined
  }
}

/** The cross-variable mistakes of `settings` (partially parsed: a variable that failed is absent). */
export const problems = (settings: Partial<Record<keyof JanusSettings, unknown>>): ReadonlyArray<Problem> => {
  const found: Array<Problem> = []
  const enabled = settings.OAUTH_ENABLED === true
  const issuers = (settings.OAUTH_ISSUERS ?? []) as ReadonlyArray<string>
  if (enabled && issuers.length === 0) {
    found.push({
      name: "OAUTH_ISSUERS",
      value: "(empty)",
      expected: "at least one issuer URL when OAUTH_ENABLED is true, e.g. https://auth.example.com"
    })
  }
  const resource = settings.OAUTH_RESOURCE as Option.Option<string> | undefined
  if (enabled && resource !== undefined && Option.isNone(resource)) {
    found.push({
      name: "OAUTH_RESOURCE",
      value: "(unset)",
      expected: "this gateway's public URL of /mcp when OAUTH_ENABLED is true (tokens' audience), " +
        "e.g. https://janus.example.com/mcp"
    })
  }
  const known = new Set(issuers.map(normalizeIssuer))
  const httpIssuers = (settings.OAUTH_HTTP_ISSUERS ?? []) as ReadonlyArray<string>
  const httpAllowed = new Set(httpIssuers.map(normalizeIssuer))
  for (const issuer of issuers) {
    const url = issuerUrl(issuer)
    if (url === undefined) {
      found.push({
        name: "OAUTH_ISSUERS",
        value: JSON.stringify(issuer),
        expected: "issuer URLs starting with https:// (comma-separated)"
      })
    } else if (url.protocol === "http:" && !isLoopbackHost(url.hostname) && !httpAllowed.has(normalizeIssuer(issuer))) {
      found.push({
        name: "OAUTH_ISSUERS",
        value: JSON.stringify(issuer),
        expected: "https (plain http only on a loopback host, or for an issuer also listed in OAUTH_HTTP_ISSUERS)"
      })
    }
  }
  const unknown = (name: string, issuer: string) =>
    found.push({
      name,
      value: JSON.stringify(issuer),
      expected: `an issuer listed in OAUTH_ISSUERS (${issuers.length === 0 ? "none is" : issuers.join(", ")})`
    })
  for (const issuer of httpIssuers) if (!known.has(normalizeIssuer(issuer))) unknown("OAUTH_HTTP_ISSUERS", issuer)
  for (const name of PER_ISSUER) {
    const value = settings[name]
    if (!(value instanceof PerIssuer)) continue
    for (const [issuer] of value.byIssuer) if (!known.has(normalizeIssuer(issuer))) unknown(name, issuer)
  }
  const sources = ["OAUTH_JWKS_URL", "OAUTH_JWKS", "OAUTH_JWKS_FILE"] as const
  for (const issuer of issuers) {
    const given = sources.filter((name) => {
      const value = settings[name]
      return value instanceof PerIssuer && value.for(issuer) !== undefined
    })
    const file = (settings.OAUTH_JWKS_FILE as PerIssuer<string> | undefined)?.for(issuer)
    const read = file === undefined ? undefined : readKeySetFileSync(file)
    if (read !== undefined && Result.isFailure(read)) {
      found.push({
        name: "OAUTH_JWKS_FILE",
        value: JSON.stringify(file),
        expected: `a readable file holding a JWK Set of public signing keys (${read.failure})`
      })
    }
    if (given.length > 1) {
      found.push({
        name: given.join(", "),
        value: JSON.stringify(issuer),
        expected: "one source of signing keys per issuer (OAUTH_JWKS_URL, OAUTH_JWKS or OAUTH_JWKS_FILE), not " +
          given.length
      })
    }
  }
  return found
}
