/**
 * The scopes a token grants, read the way each identity provider writes them.
 *
 * **Rules**
 *
 * - Scopes are read from the issuer's scope claims, `scope` and `scp` by
 *   default (RFC 9068 §2.2.3, RFC 8693 §4.2); providers put what an
 *   operator grants elsewhere too: Entra app roles in `roles`, Auth0 RBAC in
 *   `permissions`, Keycloak realm roles in `realm_access.roles`. A claim
 *   name is first looked up as is (Auth0's namespaced claims are URLs with
 *   dots), then as a dotted path into nested objects.
 * - A claim's value is a space-delimited string or an array of strings;
 *   anything else grants nothing.
 * - A scope prefix is stripped from every granted scope that carries it:
 *   Entra clients request `api://janus/mcp.tools`, and the token says
 *   `mcp.tools` (or, for some setups, the full form). Janus's scopes are
 *   written without the prefix; clients are told to request them with it
 *   (`advertise`), in challenges and metadata.
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"

/** Where scopes are read from unless an issuer says otherwise. */
export const DEFAULT_SCOPE_CLAIMS: ReadonlyArray<string> = ["scope", "scp"]

/** The value of claim `name` in `payload`: the top-level claim of that name, else the dotted path. */
export const claimValue = (payload: Readonly<Record<string, unknown>>, name: string): unknown => {
  if (name in payload) return payload[name]
  if (!name.includes(".")) return undefined
  let value: unknown = payload
  for (const part of name.split(".")) {
    if (!Predicate.isReadonlyObject(value) || !(part in value)) return undefined
    value = value[part]
  }
  return value
}

/** The granted scopes, without duplicates, in the order the claims give them. */
export const scopesOf = (
  payload: Readonly<Record<string, unknown>>,
  claims: ReadonlyArray<string> = DEFAULT_SCOPE_CLAIMS,
  prefix?: string | undefined
): ReadonlyArray<string> => {
  const scopes = new Set<string>()
  const add = (scope: string) => {
    if (scope === "") return
    scopes.add(prefix !== undefined && prefix !== "" && scope.startsWith(prefix) ? scope.slice(prefix.length) : scope)
  }
  for (const claim of claims) {
    const value = claimValue(payload, claim)
    if (typeof value === "string") { for (const s of value.split(" ")) add(s) }
    else if (Array.isArray(value)) { for (const s of value) if (typeof s === "string") add(s) }
  }
  return [...scopes]
}

/** `scopes` as a client must request them from an issuer with `prefix`. */
export const advertiseScopes = (scopes: ReadonlyArray<string>, prefix: string | undefined): ReadonlyArray<string> =>
  prefix === undefined || prefix === "" ? scopes : scopes.map((scope) => `${prefix}${scope}`)
