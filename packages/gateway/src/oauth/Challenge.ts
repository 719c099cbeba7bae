/**
 * The HTTP answer to a request the OAuth resource server did not authenticate.
 *
 * **Rules**
 *
 * - RFC 6750 §3 with RFC 9728 §5.1 and the MCP authorization spec: every 401
 *   carries `WWW-Authenticate: Bearer resource_metadata="<RFC 9728 URL>",
 *   scope="<required scopes>"`, so a client can discover the authorization
 *   server and ask for just the scopes it needs.
 * - No token: 401 without an error code (RFC 6750 §3.1). More than one
 *   credential: 400 with `error="invalid_request"`. A token given but
 *   rejected: 401 with `error="invalid_token"` and a short
 *   `error_description` (a DPoP or `cnf`-bound token says so: this server
 *   takes bearer tokens only). Valid token, missing scope: 403 with
 *   `error="insufficient_scope"` and the `scope` needed for step-up (MCP
 *   "Scope Challenge Handling"). Keys unavailable: 503 with `Retry-After`;
 *   the client's token may well be fine, so it is not told to re-authorize.
 * - Quoted-string values are restricted to the RFC 6750 §3 character set
 *   (no `"` or `\`), and never contain the token or its claims.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { AuthenticationError } from "./OAuthErrors.ts"
import { OAuthConfig } from "./OAuthOptions.ts"
import { metadataUrl } from "./Resources.ts"
import { advertiseScopes } from "./Scopes.ts"

/** The parameters of a `Bearer` challenge. */
export interface ChallengeParams {
  /** RFC 9728 metadata URL (`resource_metadata`). */
  readonly resourceMetadataUrl: string
  /** Scopes the operation requires (`scope`); omitted when empty. */
  readonly scopes: ReadonlyArray<string>
  readonly error?: "invalid_request" | "invalid_token" | "insufficient_scope" | undefined
  readonly errorDescription?: string | undefined
}

/** Keeps only the characters RFC 6750 §3 allows in a quoted value. */
const quoted = (value: string): string => `"${value.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, "")}"`

/** The `WWW-Authenticate` header value for `params`. */
export const wwwAuthenticate = (params: ChallengeParams): string => {
  const parts = [`resource_metadata=${quoted(params.resourceMetadataUrl)}`]
  if (params.scopes.length > 0) parts.push(`scope=${quoted(params.scopes.join(" "))}`)
  if (params.error !== undefined) parts.push(`error=${quoted(params.error)}`)
  if (params.errorDescription !== undefined) parts.push(`error_description=${quoted(params.errorDescription)}`)
  return `Bearer ${parts.join(", ")}`
}

/** Where the challenge points and which scopes it asks for. */
export interface ChallengeContext {
  readonly resourceMetadataUrl: string
  /** The scopes the refused operation requires. */
  readonly scopes: ReadonlyArray<string>
  /** `Retry-After` of a 503 (keys unavailable) when the error does not say. Default 30 seconds. */
  readonly retryAfter?: Duration.Duration | undefined
}

/** The HTTP response for `error`. */
export const challengeResponse = (
  error: AuthenticationError,
  context: ChallengeContext
): HttpServerResponse.HttpServerResponse => {
  const json = (status: number, body: object, header?: ChallengeParams) =>
    HttpServerResponse.jsonUnsafe(body, {
      status,
      headers: {
        "cache-control": "no-store",
        ...(header === undefined ? {} : { "www-authenticate": wwwAuthenticate(header) })
      }
    })
  switch (error._tag) {
    case "MissingToken":
      return json(401, { error: "unauthorized", error_description: error.message }, {
        resourceMetadataUrl: context.resourceMetadataUrl,
        scopes: context.scopes
      })
    case "InvalidRequest":
      return json(400, { error: "invalid_request", error_description: error.message }, {
        resourceMetadataUrl: context.resourceMetadataUrl,
        scopes: context.scopes,
        error: "invalid_request",
        errorDescription: error.message
      })
    case "InvalidToken":
      return json(401, { error: "invalid_token", error_description: error.message }, {
        resourceMetadataUrl: context.resourceMetadataUrl,
        scopes: context.scopes,
        error: "invalid_token",
        errorDescription: error.message
      })
    case "InsufficientScope":
      return json(403, { error: "insufficient_scope", error_description: error.message }, {
        resourceMetadataUrl: context.resourceMetadataUrl,
        scopes: error.required,
        error: "insufficient_scope",
        errorDescription: error.message
      })
    case "JwksUnavailable":
      return HttpServerResponse.jsonUnsafe(
        { error: "temporarily_unavailable", error_description: "The token cannot be checked right now" },
        {
          status: 503,
          headers: {
            "cache-control": "no-store",
            "retry-after": String(Math.max(
              1,
              Math.ceil(
                error.retryAfterMs === undefined
                  ? Duration.toSeconds(context.retryAfter ?? Duration.seconds(30))
                  : error.retryAfterMs / 1000
              )
            ))
          }
        }
      )
  }
}

/**
 * The response for `error` on a request to `requestPath`, with the metadata
 * URL and scopes taken from the configuration: `scopes` (as checked; the
 * challenge names them as clients request them) defaults to the tool scopes.
 */
export const challenge = (
  error: AuthenticationError,
  options?: { readonly requestPath?: string | undefined; readonly scopes?: ReadonlyArray<string> | undefined }
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, OAuthConfig> =>
  Effect.gen(function*() {
    const settings = yield* OAuthConfig
    return challengeResponse(error, {
      resourceMetadataUrl: metadataUrl(settings, options?.requestPath),
      scopes: options?.scopes === undefined
        ? settings.advertisedToolScopes
        : advertiseScopes(options.scopes, settings.advertisedScopePrefix),
      retryAfter: settings.jwksMinRefreshInterval
    })
  })
