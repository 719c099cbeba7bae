/**
 * Authentication of an MCP request: who the caller is.
 *
 * **Rules** (SPEC "authenticate (cached token lookup, or JWT checked against
 * cached JWKS)")
 *
 * - The credential is `Authorization: Bearer <token>` only (the OAuth
 *   module's reader: never the query string, never a cookie). More than one
 *   credential is 400 `invalid_request`; `Authorization: DPoP` is 401
 *   `invalid_token` saying DPoP is not supported (never "no credential").
 * - `jns_…` is a client token: `TokenCache.verify` (cached, purged on every
 *   instance when a token changes). Unknown, expired or revoked: 401
 *   `invalid_token`. A token scoped to virtual servers is expanded against
 *   the config cache; the resulting `Caller` is kept per token and
 *   configuration snapshot, so a repeat request allocates no new caller.
 * - Any other token, when OAuth is configured and it has the shape of a JWT,
 *   is checked by `JwtVerifier` against the cached JWKS, requiring the tool
 *   scopes and an audience of the resource the URL names (`/mcp` or a
 *   virtual server); the caller is `OAuthIdentity.key`. Its refusals are the OAuth
 *   module's challenges: 401 `invalid_token`, 403 `insufficient_scope`,
 *   503 while the issuer's keys are unavailable.
 * - No credential: 401 with `WWW-Authenticate` (the OAuth challenge with its
 *   `resource_metadata` when OAuth is on, `Bearer realm="janus"` otherwise),
 *   unless anonymous access was explicitly allowed (`requireAuth: false`):
 *   then the caller is `anonymous`. A credential that is presented is always
 *   checked, even then: a bad token is never downgraded to anonymous.
 * - The token store failing: 503 with `Retry-After`, never admitted.
 * - Refusal messages are fixed sentences: no token, no part of one, no claim,
 *   no internal error text and no stack. Counted in
 *   `janus.auth.refused{reason}`; each refusal carries its detailed reason
 *   (`RefusalReason`) for the audit record.
 *
 * @since 0.1.0
 */
import { type ClientToken, type ConfigCache, type ConfigSnapshot, SecretBox, type TokenCache } from "@janus/storage"
import { Effect, Metric, Option, Result } from "effect"
import type { Headers } from "effect/http"
import * as Caller from "../mcp/Caller.ts"
import { AdmissionRefused } from "../mcp/Guard.ts"
import {
  type AuthenticationError,
  bearerTokenFromHeaders,
  challengeResponse,
  type JwtVerifier,
  looksLikeJwt,
  metadataUrl,
  MissingToken,
  type OAuthIdentity,
  type OAuthSettings,
  resourceOf,
  wwwAuthenticate
} from "../oauth/index.ts"
import * as AuthHeaders from "./Headers.ts"
import * as RefusalReason from "./RefusalReason.ts"
import * as ToolScope from "./ToolScope.ts"

/** What authentication needs. */
export interface AuthenticateOptions {
  readonly requireAuth: boolean
  /** `realm` of the non-OAuth challenge. */
  readonly realm: string
  readonly tokens: TokenCache["Service"]
  readonly config: ConfigCache["Service"]
  readonly oauth: Option.Option<{ readonly verifier: JwtVerifier["Service"]; readonly settings: OAuthSettings }>
}

/** Authenticates a request from its headers; `url` chooses the OAuth metadata URL of a challenge. */
export type Authenticate = (headers: Headers.Headers, url: string) => Effect.Effect<Caller.Caller, AdmissionRefused>

export const refusals = Metric.counter("janus.auth.refused", {
  description: "Requests refused by authentication, by reason",
  incremental: true
})

type Reason = "missing_token" | "invalid_request" | "invalid_token" | "insufficient_scope" | "unavailable"

const MISSING = "Authentication required: send Authorization: Bearer <token> with a Janus client token"
const MISSING_OAUTH = "Authentication required: send Authorization: Bearer <token> with a Janus client token " +
  "or an OAuth access token for this server"
const BAD_CLIENT_TOKEN = "The client token is not valid: it is unknown, expired or revoked"
const UNKNOWN_KIND = "The bearer token is not a Janus client token (jns_...)"
const UNKNOWN_KIND_OAUTH = "The bearer token is neither a Janus client token (jns_...) nor a signed JWT"
const STORE_DOWN = "Credentials cannot be checked right now; retry shortly"

interface TokenEntry {
  readonly caller: Caller.Caller
  readonly snapshot: ConfigSnapshot | undefined
}

export const make = (options: AuthenticateOptions): Authenticate => {
  const { config, oauth, tokens } = options
  const counters = {
    missing_token: Metric.withAttributes(refusals, { reason: "missing_token" }),
    invalid_request: Metric.withAttributes(refusals, { reason: "invalid_request" }),
    invalid_token: Metric.withAttributes(refusals, { reason: "invalid_token" }),
    insufficient_scope: Metric.withAttributes(refusals, { reason: "insufficient_scope" }),
    unavailable: Metric.withAttributes(refusals, { reason: "unavailable" })
  } satisfies Record<Reason, unknown>

  const refuse = (reason: Reason, refusal: AdmissionRefused, detail: RefusalReason.RefusalReason) =>
    Effect.andThen(
      Metric.update(counters[reason], 1),
      Effect.fail(
        new AdmissionRefused({
          status: refusal.status,
          message: refusal.message,
          headers: refusal.headers,
          reason: detail
        })
      )
    )

  const storeDown = new AdmissionRefused({ status: 503, message: STORE_DOWN, headers: AuthHeaders.unavailable })

  // Without OAuth every 401 is the same; precompute them.
  const plainMissing = new AdmissionRefused({
    status: 401,
    message: MISSING,
    headers: { "www-authenticate": AuthHeaders.bearerChallenge(options.realm) }
  })
  const plainInvalid = (message: string) =>
    new AdmissionRefused({
      status: 401,
      message,
      headers: { "www-authenticate": AuthHeaders.bearerChallenge(options.realm, message) }
    })
  const plainBadClientToken = plainInvalid(BAD_CLIENT_TOKEN)
  const plainUnknownKind = plainInvalid(UNKNOWN_KIND)

  /** The OAuth module's challenge for `error`, as an admission refusal. */
  const oauthRefusal = (settings: OAuthSettings, error: AuthenticationError, url: string): AdmissionRefused => {
    const response = challengeResponse(error, {
      resourceMetadataUrl: metadataUrl(settings, url),
      scopes: settings.advertisedToolScopes,
      retryAfter: settings.jwksMinRefreshInterval
    })
    const headers: Record<string, string> = {}
    const challenge = response.headers["www-authenticate"]
    if (challenge !== undefined) headers["www-authenticate"] = challenge
    const retryAfter = response.headers["retry-after"]
    if (retryAfter !== undefined) headers["retry-after"] = retryAfter
    const message = error._tag === "MissingToken"
      ? MISSING_OAUTH
      : error._tag === "JwksUnavailable"
      ? "The access token cannot be checked right now (the issuer's keys are unavailable); retry shortly"
      : error.message
    return new AdmissionRefused({ status: response.status as 400 | 401 | 403 | 503, message, headers })
  }

  /** 401 `invalid_token` with `message`, in the challenge of the current mode. */
  const invalid = (message: string, plain: AdmissionRefused, url: string, detail: RefusalReason.RefusalReason) =>
    refuse(
      "invalid_token",
      Option.isNone(oauth) ? plain : new AdmissionRefused({
        status: 401,
        message,
        headers: {
          "www-authenticate": wwwAuthenticate({
            resourceMetadataUrl: metadataUrl(oauth.value.settings, url),
            scopes: oauth.value.settings.advertisedToolScopes,
            error: "invalid_token",
            errorDescription: message
          })
        }
      }),
      detail
    )

  const missing = (url: string) =>
    refuse(
      "missing_token",
      Option.isNone(oauth) ? plainMissing : oauthRefusal(oauth.value.settings, new MissingToken(), url),
      "missing_token"
    )

  // Callers per token instance (the token cache hands out the same instance while cached).
  const callers = new WeakMap<ClientToken, TokenEntry>()

  const callerOf = (token: ClientToken): Effect.Effect<Caller.Caller, AdmissionRefused> => {
    const cached = callers.get(token)
    if (!ToolScope.needsSnapshot(token)) {
      if (cached !== undefined) return Effect.succeed(cached.caller)
      const caller = ToolScope.callerOfToken(token, undefined)
      callers.set(token, { caller, snapshot: undefined })
      return Effect.succeed(caller)
    }
    return config.snapshot.pipe(
      Effect.map((snapshot) => {
        if (cached !== undefined && cached.snapshot === snapshot) return cached.caller
        const caller = ToolScope.callerOfToken(token, snapshot)
        callers.set(token, { caller, snapshot })
        return caller
      }),
      Effect.catch((error) =>
        Effect.andThen(
          Effect.logWarning("Admission: the configuration could not be read", error.message),
          refuse("unavailable", storeDown, "store_unavailable")
        )
      )
    )
  }

  const viaClientToken = (token: string, url: string) =>
    tokens.verify(token).pipe(
      Effect.catch((error) =>
        Effect.andThen(
          Effect.logWarning("Admission: client tokens could not be checked", error.operation),
          refuse("unavailable", storeDown, "store_unavailable")
        )
      ),
      Effect.flatMap((found) =>
        Option.isSome(found)
          ? callerOf(found.value)
          : invalid(BAD_CLIENT_TOKEN, plainBadClientToken, url, "unknown_token")
      )
    )

  const oauthCaller = (identity: OAuthIdentity): Caller.Caller => ({
    id: identity.key,
    scopes: identity.scopes,
    kind: "oauth",
    name: identity.subject,
    ...(identity.clientId === undefined ? {} : { clientId: identity.clientId }),
    tools: null,
    virtualServers: null,
    // accepted until `exp` plus the skew: a stream ending sooner would be reopened and end again at once
    expiresAt: identity.acceptedUntil
  })

  return (headers, url) => {
    const read = bearerTokenFromHeaders(headers)
    if (Result.isFailure(read)) {
      if (read.failure._tag === "MissingToken") {
        return options.requireAuth ? missing(url) : Effect.succeed(Caller.anonymous)
      }
      if (read.failure._tag === "InvalidRequest") {
        const message = read.failure.message
        return refuse(
          "invalid_request",
          Option.isNone(oauth)
            ? new AdmissionRefused({
              status: 400,
              message,
              headers: { "www-authenticate": AuthHeaders.bearerChallenge(options.realm, message, "invalid_request") }
            })
            : oauthRefusal(oauth.value.settings, read.failure, url),
          "multiple_credentials"
        )
      }
      return invalid(
        read.failure.message,
        plainInvalid(read.failure.message),
        url,
        RefusalReason.ofAuthenticationError(read.failure)
      )
    }
    const token = read.success
    if (token.startsWith(SecretBox.CLIENT_TOKEN_PREFIX)) return viaClientToken(token, url)
    if (Option.isSome(oauth) && looksLikeJwt(token)) {
      const { settings, verifier } = oauth.value
      return verifier.verify(token, { resource: resourceOf(settings, url).resource }).pipe(
        Effect.map(oauthCaller),
        Effect.catch((error) =>
          refuse(
            error._tag === "InsufficientScope"
              ? "insufficient_scope"
              : error._tag === "JwksUnavailable"
              ? "unavailable"
              : "invalid_token",
            oauthRefusal(settings, error, url),
            RefusalReason.ofAuthenticationError(error)
          )
        )
      )
    }
    return Option.isNone(oauth)
      ? refuse("invalid_token", plainUnknownKind, "wrong_token_kind")
      : invalid(UNKNOWN_KIND_OAUTH, plainUnknownKind, url, "wrong_token_kind")
  }
}
