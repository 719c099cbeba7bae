/**
 * Which trusted authorization server a token's `iss` names.
 *
 * **Rules**
 *
 * - Issuers are compared after removing one trailing slash on both sides
 *   (`normalizeIssuer`, config/Urls.ts): Auth0 issues `https://tenant.auth0.com/` and
 *   operators write it either way; nothing else is normalised, so an issuer
 *   must otherwise match to the character (RFC 9068 §4).
 * - A multi-tenant issuer is a template whose one placeholder stands for a
 *   whole path segment, e.g. Entra's
 *   `https://login.microsoftonline.com/{tenantid}/v2.0` (v2) and
 *   `https://sts.windows.net/{tenantid}/` (v1). It matches any tenant there, or
 *   only the listed tenants (compared without case: Entra tenant ids are
 *   GUIDs). An exact issuer is preferred over a template.
 * - The authorization server advertised to clients (RFC 9728
 *   `authorization_servers`) is the issuer as configured; for a template, the
 *   first listed tenant in the placeholder's place, or `common` (Entra's
 *   multi-tenant endpoint) when no tenant is listed.
 *
 * @since 0.1.0
 */
import { normalizeIssuer } from "../config/Urls.ts"

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/** A multi-tenant issuer: its placeholder and the pattern it matches (on normalised issuers). */
export interface IssuerTemplate {
  readonly placeholder: string
  readonly pattern: RegExp
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * The template of `issuer`, `undefined` when it has no placeholder, or a
 * sentence saying what is wrong with it.
 */
export const parseTemplate = (issuer: string): IssuerTemplate | undefined | string => {
  const normalized = normalizeIssuer(issuer)
  const found = [...normalized.matchAll(PLACEHOLDER)]
  if (found.length === 0) return normalized.includes("{") || normalized.includes("}") ? "unbalanced braces" : undefined
  if (found.length > 1) return "expected at most one placeholder such as {tenantid}"
  const [match] = found
  const start = match!.index
  const end = start + match![0].length
  const before = normalized.slice(0, start)
  const after = normalized.slice(end)
  if (!before.endsWith("/") || !(after === "" || after.startsWith("/")) || !/^https?:\/\/[^/]+\//.test(before)) {
    return `the placeholder {${
      match![1]
    }} must be a whole path segment, e.g. https://login.microsoftonline.com/{tenantid}/v2.0`
  }
  return { placeholder: match![1]!, pattern: new RegExp(`^${escape(before)}([^/]+)${escape(after)}$`) }
}

/** The issuer to advertise and to discover metadata from (see the module rules). */
export const advertisedIssuer = (
  issuer: string,
  template: IssuerTemplate | undefined,
  tenants: ReadonlyArray<string>
): string => template === undefined ? issuer : issuer.replace(`{${template.placeholder}}`, tenants[0] ?? "common")

/** What `matcher` needs of a trusted issuer. */
export interface MatchableIssuer {
  /** The configured issuer, normalised. */
  readonly issuer: string
  readonly template: IssuerTemplate | undefined
  /** Allowed values of the template's placeholder; empty: any. */
  readonly tenants: ReadonlyArray<string>
}

/** A function from a token's `iss` to the trusted issuer it names, if any. */
export const matcher = <S extends MatchableIssuer>(servers: ReadonlyArray<S>) => {
  const exact = new Map(servers.filter((s) => s.template === undefined).map((s) => [s.issuer, s]))
  const templates = servers.filter((s) => s.template !== undefined)
  return (iss: string): S | undefined => {
    const normalized = normalizeIssuer(iss)
    const found = exact.get(normalized)
    if (found !== undefined) return found
    for (const server of templates) {
      const tenant = server.template!.pattern.exec(normalized)?.[1]
      if (tenant === undefined) continue
      if (server.tenants.length === 0) return server
      const lower = tenant.toLowerCase()
      if (server.tenants.some((t) => t.toLowerCase() === lower)) return server
    }
    return undefined
  }
}
