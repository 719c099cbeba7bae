/**
 * Discovery of an authorization server's metadata, for its `jwks_uri`.
 *
 * **Rules**
 *
 * - RFC 8414 §3.1: the well-known suffix is inserted between the host and the
 *   issuer's path: `https://as/.well-known/oauth-authorization-server/tenant`.
 *   Then OpenID Connect Discovery 1.0 §4: `/.well-known/openid-configuration`
 *   inserted the same way, and last appended to the issuer's path
 *   (`https://as/tenant/.well-known/openid-configuration`). This is the order
 *   the MCP SDK's clients use. A 404 moves to the next URL.
 * - RFC 8414 §3.3 / OpenID Discovery §4.3: the document's `issuer` must be
 *   the issuer it was fetched for, up to one trailing slash (`Issuers.ts`),
 *   or it is refused (mix-up defence). A multi-tenant issuer's metadata may
 *   name the template instead (Entra's `common` metadata names
 *   `https://login.microsoftonline.com/{tenantid}/v2.0`).
 * - The document must name a `jwks_uri` (RFC 8414 §2), an https URL (http only
 *   on loopback unless `allowInsecureHttp`).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schema } from "effect"
import type { HttpClient } from "effect/http"
import { isLoopbackHost, normalizeIssuer } from "../config/Urls.ts"
import { fetchJson } from "./internal/fetchJson.ts"

/**
 * The fields of RFC 8414 / OpenID Discovery metadata the resource server reads.
 * What only `janus doctor` reports (what MCP clients need of the provider) is
 * kept unchecked here, so an odd value there never stops the gateway from
 * finding the keys; `doctor` says what it found.
 */
export const AuthorizationServerMetadata = Schema.Struct({
  issuer: Schema.String,
  jwks_uri: Schema.optionalKey(Schema.String),
  scopes_supported: Schema.optionalKey(Schema.Array(Schema.String)),
  token_endpoint: Schema.optionalKey(Schema.String),
  authorization_endpoint: Schema.optionalKey(Schema.String),
  code_challenge_methods_supported: Schema.optionalKey(Schema.Unknown),
  registration_endpoint: Schema.optionalKey(Schema.Unknown),
  client_id_metadata_document_supported: Schema.optionalKey(Schema.Unknown),
  resource_indicators_supported: Schema.optionalKey(Schema.Unknown)
})
export type AuthorizationServerMetadata = typeof AuthorizationServerMetadata.Type

/** The metadata could not be found, read or trusted. */
export class DiscoveryError extends Schema.TaggedError<DiscoveryError>()("DiscoveryError", {
  issuer: Schema.String,
  message: Schema.String
}) {}

/** One metadata location to try. */
export interface DiscoveryUrl {
  readonly url: string
  readonly kind: "oauth-authorization-server" | "openid-configuration"
}

/** Metadata that names a `jwks_uri`, and where it was found. */
export type DiscoveredMetadata = AuthorizationServerMetadata & {
  readonly jwks_uri: string
  readonly metadataUrl: string
}

/** The metadata URLs of `issuer`, in the order they are tried. */
export const discoveryUrls = (issuer: string): ReadonlyArray<DiscoveryUrl> => {
  const url = new URL(issuer)
  const path = url.pathname.replace(/\/+$/, "")
  if (path === "") {
    return [
      { url: `${url.origin}/.well-known/oauth-authorization-server`, kind: "oauth-authorization-server" },
      { url: `${url.origin}/.well-known/openid-configuration`, kind: "openid-configuration" }
    ]
  }
  return [
    { url: `${url.origin}/.well-known/oauth-authorization-server${path}`, kind: "oauth-authorization-server" },
    { url: `${url.origin}/.well-known/openid-configuration${path}`, kind: "openid-configuration" },
    { url: `${url.origin}${path}/.well-known/openid-configuration`, kind: "openid-configuration" }
  ]
}

const decode = Schema.decodeUnknownEffect(AuthorizationServerMetadata)

/**
 * Fetches and checks `issuer`'s metadata. Fails with `DiscoveryError` when no
 * location answers a document for this issuer that names a `jwks_uri`.
 */
export const discover = (
  issuer: string,
  options: {
    readonly timeout: Duration.Duration
    readonly allowInsecureHttp?: boolean | undefined
    /** Other `issuer` values the metadata may name (a multi-tenant issuer's template). */
    readonly alsoAccept?: ReadonlyArray<string> | undefined
  }
): Effect.Effect<DiscoveredMetadata, DiscoveryError, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const accepted = new Set([issuer, ...(options.alsoAccept ?? [])].map(normalizeIssuer))
    const failures: Array<string> = []
    for (const candidate of discoveryUrls(issuer)) {
      const result = yield* Effect.result(fetchJson(candidate.url, options.timeout))
      if (result._tag === "Failure") {
        failures.push(result.failure)
        continue
      }
      if (result.success._tag === "NotFound") {
        failures.push(`${candidate.url} answered HTTP ${result.success.status}`)
        continue
      }
      const metadata = yield* decode(result.success.json).pipe(
        Effect.mapError(() =>
          new DiscoveryError({ issuer, message: `${candidate.url} is not authorization server metadata` })
        )
      )
      if (!accepted.has(normalizeIssuer(metadata.issuer))) {
        return yield* new DiscoveryError({
          issuer,
          message: `${candidate.url} names a different issuer; refused (RFC 8414 §3.3)`
        })
      }
      const jwksUri = metadata.jwks_uri
      if (jwksUri === undefined) {
        return yield* new DiscoveryError({ issuer, message: `${candidate.url} names no jwks_uri` })
      }
      if (!acceptableUrl(jwksUri, options.allowInsecureHttp === true)) {
        return yield* new DiscoveryError({ issuer, message: `${candidate.url} names a jwks_uri that is not https` })
      }
      return { ...metadata, jwks_uri: jwksUri, metadataUrl: candidate.url }
    }
    return yield* new DiscoveryError({ issuer, message: `no metadata found: ${failures.join("; ")}` })
  })

const acceptableUrl = (value: string, allowInsecureHttp: boolean): boolean => {
  try {
    const url = new URL(value)
    if (url.protocol === "https:") return true
    return url.protocol === "http:" && (allowInsecureHttp || isLoopbackHost(url.hostname))
  } catch {
    return false
  }
}
