/**
 * The OAuth checks of `janus doctor` for one trusted issuer: what a token
 * from it must carry to be accepted, and whether its metadata offers what MCP
 * clients need to get one. Each is one {@link Check}; none fetches anything
 * (the metadata is what `oauth/Diagnostics.ts` discovered).
 *
 * **Rules**
 *
 * - The token line (`oauth <issuer> token`) is read from the validated
 *   settings, the ones `serve` checks tokens with: `iss`, `aud` (the resource
 *   or the configured audiences), the tool scopes and where they are read
 *   (after the scope prefix), `typ` when `OAUTH_REQUIRED_TOKEN_TYPE` is set,
 *   the algorithms, `exp` and `sub`, the longest lifetime and length, and no
 *   `cnf`.
 * - What MCP clients need, each a line saying what the metadata holds, with
 *   its value, and what is expected:
 *   - `pkce`: `code_challenge_methods_supported` lists `S256`, else FAIL: MCP
 *     clients use PKCE with S256, and the MCP authorization spec has them
 *     refuse a provider whose metadata does not advertise it (even one that
 *     supports it unadvertised: the client cannot know).
 *   - `endpoints`: a `token_endpoint` (else FAIL: no client gets a token) and
 *     an `authorization_endpoint` (else warn: only clients with a grant of
 *     their own, such as client credentials, get one).
 *   - `registration`: a `registration_endpoint` (dynamic client
 *     registration) or `client_id_metadata_document_supported: true` lets a
 *     client register itself; otherwise warn: every client needs a client ID
 *     registered at the provider beforehand.
 *   - `resource`: no standard metadata field says whether the provider honours
 *     the `resource` parameter MCP clients send (RFC 8707); Janus reads
 *     `resource_indicators_supported`. `true` is ok; otherwise, unless
 *     audiences besides the resource are configured for the issuer, warn:
 *     the provider must be set up to issue tokens whose `aud` is the resource.
 * - Values from the provider are shown as JSON, bounded in length, so an odd
 *   or hostile document yields a readable line, never a crash.
 *
 * @since 0.1.0
 */
import { Duration } from "effect"
import type { AuthorizationServer, DiscoveredMetadata, OAuthSettings } from "../oauth/index.ts"
import { advertiseScopes } from "../oauth/index.ts"
import type { Check } from "./DoctorChecks.ts"

/** A provider's value as JSON, at most 200 characters. */
const shown = (value: unknown): string => {
  const json = JSON.stringify(value) ?? String(value)
  return json.length > 200 ? `${json.slice(0, 200)}…` : json
}

const list = (values: ReadonlyArray<string>) => values.join(", ")

/** What a token from `server` must carry for `/mcp`, as `serve` checks it. */
export const tokenRequirements = (settings: OAuthSettings, server: AuthorizationServer): Check => {
  const iss = server.template === undefined
    ? `iss ${server.issuer}`
    : `iss ${server.issuer} with ${
      server.tenants.length === 0 ? "any tenant" : `a tenant of ${list(server.tenants)}`
    } as {${server.template.placeholder}}`
  const aud = server.audiences.length === 0
    ? `aud ${settings.resource} (the resource)`
    : `aud ${settings.resource} (the resource) or one of ${list(server.audiences)}`
  const scopes = server.toolScopes.length === 0
    ? "no scope"
    : `scope${server.toolScopes.length === 1 ? "" : "s"} ${list(server.toolScopes)} in claim ${
      server.scopeClaims.join(" or ")
    }` + (server.scopePrefix === undefined
      ? ""
      : ` (prefix ${server.scopePrefix} stripped: clients request ${
        list(advertiseScopes(server.toolScopes, server.scopePrefix))
      })`)
  const parts = [
    iss,
    aud,
    scopes,
    ...(settings.requiredTokenType === undefined ? [] : [`typ header ${settings.requiredTokenType}`]),
    `signed with ${list(server.algorithms)}`,
    "exp and sub",
    `exp at most ${Duration.format(settings.maxTokenLifetime)} after iat (after now without iat)`,
    `at most ${settings.maxTokenLength} characters`,
    "no cnf claim (bearer tokens only)"
  ]
  return { check: `oauth ${server.issuer} token`, verdict: "ok", detail: `an accepted token has ${parts.join("; ")}` }
}

/** Whether `metadata` offers what MCP clients need; one check per need. */
export const clientSupport = (
  settings: OAuthSettings,
  server: AuthorizationServer,
  metadata: DiscoveredMetadata | undefined
): ReadonlyArray<Check> => {
  const name = (what: string) => `oauth ${server.issuer} ${what}`
  if (metadata === undefined) {
    return [{
      check: name("clients"),
      verdict: "skip",
      detail: "no metadata, so what MCP clients need of the provider (PKCE S256, endpoints, registration) " +
        "was not checked"
    }]
  }
  const at = metadata.metadataUrl
  return [
    pkce(name("pkce"), at, metadata.code_challenge_methods_supported),
    endpoints(name("endpoints"), at, metadata),
    registration(name("registration"), at, metadata),
    resourceParameter(name("resource"), at, settings, server, metadata.resource_indicators_supported)
  ]
}

const pkce = (check: string, at: string, methods: unknown): Check => {
  const expected = "expected a list including S256: MCP clients use PKCE with S256 and refuse a provider " +
    "that does not advertise it"
  if (methods === undefined) {
    return {
      check,
      verdict: "FAIL",
      detail: `${at} has no code_challenge_methods_supported; ${expected} (the MCP authorization spec reads its ` +
        "absence as no PKCE; some clients, such as the TypeScript SDK's, still proceed)"
    }
  }
  if (!Array.isArray(methods) || methods.includes("S256") === false) {
    return {
      check,
      verdict: "FAIL",
      detail: `${at} has code_challenge_methods_supported ${shown(methods)}; ${expected}`
    }
  }
  return {
    check,
    verdict: "ok",
    detail: `code_challenge_methods_supported ${shown(methods)} includes S256, the PKCE method MCP clients use`
  }
}

const isUrl = (value: unknown): value is string => {
  if (typeof value !== "string") return false
  try {
    const url = new URL(value)
    return url.protocol === "https:" || url.protocol === "http:"
  } catch {
    return false
  }
}

const endpoints = (check: string, at: string, metadata: DiscoveredMetadata): Check => {
  const token = metadata.token_endpoint
  const authorization = metadata.authorization_endpoint
  if (!isUrl(token)) {
    return {
      check,
      verdict: "FAIL",
      detail: `${at} has ${token === undefined ? "no token_endpoint" : `token_endpoint ${shown(token)}`}; ` +
        "expected the URL clients get tokens from"
    }
  }
  if (!isUrl(authorization)) {
    return {
      check,
      verdict: "warn",
      detail:
        `token_endpoint ${token}, but ${at} has ${
          authorization === undefined ? "no authorization_endpoint" : `authorization_endpoint ${shown(authorization)}`
        }; expected the URL MCP clients send users to sign in (authorization code): without it only clients ` +
        "with a grant of their own, such as client credentials, get a token"
    }
  }
  return { check, verdict: "ok", detail: `authorization_endpoint ${authorization}, token_endpoint ${token}` }
}

const registration = (check: string, at: string, metadata: DiscoveredMetadata): Check => {
  const endpoint = metadata.registration_endpoint
  if (isUrl(endpoint)) {
    return {
      check,
      verdict: "ok",
      detail: `registration_endpoint ${endpoint}: MCP clients can register themselves (dynamic client registration)`
    }
  }
  if (metadata.client_id_metadata_document_supported === true) {
    return {
      check,
      verdict: "ok",
      detail: "client_id_metadata_document_supported true: MCP clients can use the URL of their metadata " +
        "document as client ID"
    }
  }
  return {
    check,
    verdict: "warn",
    detail:
      `${at} has ${endpoint === undefined ? "no registration_endpoint" : `registration_endpoint ${shown(endpoint)}`}` +
      ` and ${
        metadata.client_id_metadata_document_supported === undefined
          ? "no client_id_metadata_document_supported"
          : `client_id_metadata_document_supported ${shown(metadata.client_id_metadata_document_supported)}`
      }; expected one for MCP clients to register themselves: otherwise every client needs a client ID ` +
      "registered at the provider beforehand (pre-registration)"
  }
}

const resourceParameter = (
  check: string,
  at: string,
  settings: OAuthSettings,
  server: AuthorizationServer,
  advertised: unknown
): Check => {
  if (advertised === true) {
    return {
      check,
      verdict: "ok",
      detail: `resource_indicators_supported true: the resource=${settings.resource} MCP clients send (RFC 8707) ` +
        "gives tokens that audience"
    }
  }
  const found = advertised === undefined
    ? `${at} says nothing about the resource parameter MCP clients send (RFC 8707; no resource_indicators_supported)`
    : `${at} has resource_indicators_supported ${shown(advertised)}`
  if (server.audiences.length > 0) {
    return {
      check,
      verdict: "ok",
      detail: `${found}; tokens are accepted with aud ${list(server.audiences)} (configured audiences), which ` +
        "the provider must be set up to issue"
    }
  }
  return {
    check,
    verdict: "warn",
    detail: `${found}; the provider may ignore resource=${settings.resource}, so set it up to issue tokens with ` +
      `aud ${settings.resource}, or set OAUTH_AUDIENCES for this issuer to the audience it issues`
  }
}
