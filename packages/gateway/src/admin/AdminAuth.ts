/**
 * Who may call the admin API.
 *
 * **Rules**
 *
 * - Credentials come from `Authorization: Bearer <token>` only (never the
 *   query string: a token in a URL ends up in logs).
 * - An admin token (`jna_…`) is checked with `AdminTokens.verify` on every
 *   request (not cached), so a revoked token is refused at once.
 * - When OAuth is configured (`OAuthConfig` and `JwtVerifier` are in the
 *   context; they are optional), a JWT access token is accepted if it carries
 *   the admin scopes (`adminScopes`, default `janus:admin`); a valid token
 *   without them is 403 `insufficient_scope`, as RFC 6750 asks for step-up.
 * - No credentials: 401 `unauthorized`; unknown, revoked or malformed
 *   credentials, or a client token (`jns_…`): 401 `invalid_token`; more than
 *   one credential (two `Authorization` headers or values): 400
 *   `invalid_request`; `Authorization: DPoP`: 401 `invalid_token` saying DPoP
 *   is not supported. Each refusal carries its reason for the audit record. Every 401
 *   carries `WWW-Authenticate: Bearer …`: with OAuth configured it names the
 *   RFC 9728 metadata and the admin scope (so clients can discover where to
 *   get a token), otherwise `realm="janus-admin"`.
 * - Neither the token nor any part of it appears in a message or a log.
 * - Browsers: a request from a page of another origin is 403
 *   `origin_not_allowed` before anything else, whatever its credentials:
 *   Studio is served by the gateway itself, so only same-origin pages and
 *   clients that send no `Origin` (curl, scripts) call this API (see
 *   `mcp/Origin.ts`, `sameOrigin`).
 * - Rate limits (`Admission.admitAuthentication`): the per-IP bucket of the
 *   MCP endpoint applies here too, then the failed-authentication bucket of
 *   the address: each unknown, revoked or malformed credential draws on it,
 *   and while it is empty every such credential from the address is 429
 *   (with `Retry-After`). A valid credential is accepted whatever the bucket
 *   holds (it is checked first), so bad tokens from an address never lock
 *   out the valid admin token there. A request without credentials (Studio
 *   before sign-in) draws nothing from it.
 *
 * @since 0.1.0
 */
import { AdminTokens } from "@janus/storage"
import { Context, Effect, Layer, Option, Redacted, Result } from "effect"
import type { HttpServerRequest } from "effect/http"
import type { AdminPrincipal } from "../auth/AdminPrincipal.ts"
import { Admission } from "../auth/Admission.ts"
import * as RefusalReason from "../auth/RefusalReason.ts"
import * as Origin from "../mcp/Origin.ts"
import {
  authenticate as authenticateJwt,
  type AuthenticationError,
  bearerTokenFromHeaders,
  JwtVerifier,
  looksLikeJwt,
  metadataUrl,
  OAuthConfig,
  type OAuthRejection,
  wwwAuthenticate
} from "../oauth/index.ts"
import * as Problem from "./Problem.ts"

/** The caller of the current admin request (provided to every admin handler). */
export class AdminIdentity extends Context.Service<AdminIdentity, AdminPrincipal>()(
  "@janus/gateway/admin/AdminIdentity"
) {}

const REALM = "janus-admin"
const ADMIN_TOKEN_PREFIX = "jna_"

type OAuthServices = readonly [OAuthConfig["Service"], JwtVerifier["Service"]]

const oauthServices: Effect.Effect<Option.Option<OAuthServices>> = Effect.map(
  Effect.all([Effect.serviceOption(OAuthConfig), Effect.serviceOption(JwtVerifier)]),
  ([config, verifier]) => Option.all([config, verifier])
)

export class AdminAuth extends Context.Service<AdminAuth, {
  /** The caller, or the 401/403/503 to answer. */
  readonly authenticate: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<AdminPrincipal, Problem.ApiProblem>
}>()("@janus/gateway/admin/AdminAuth") {
  static readonly layer: Layer.Layer<AdminAuth, never, AdminTokens | Admission> = Layer.effect(
    AdminAuth,
    Effect.gen(function*() {
      const tokens = yield* AdminTokens
      const admission = yield* Admission
      // OAuth is optional: present when the lead provides OAuthLayer to the app (looked up again per request).
      const oauthAtBuild = yield* oauthServices

      const refuse = (
        oauth: Option.Option<OAuthServices>,
        request: HttpServerRequest.HttpServerRequest,
        error: "missing" | "invalid" | "invalid_request",
        message: string,
        reason: RefusalReason.RefusalReason
      ) => {
        const header = Option.match(oauth, {
          onNone: () =>
            error === "missing"
              ? `Bearer realm="${REALM}"`
              : `Bearer realm="${REALM}", error="${
                error === "invalid" ? "invalid_token" : "invalid_request"
              }", error_description="${message}"`,
          onSome: ([settings]) =>
            wwwAuthenticate({
              resourceMetadataUrl: metadataUrl(settings, request.url),
              scopes: settings.advertisedAdminScopes,
              ...(error === "invalid" ? { error: "invalid_token" as const, errorDescription: message } : {}),
              ...(error === "invalid_request" ? { error: "invalid_request" as const, errorDescription: message } : {})
            })
        })
        if (error === "invalid_request") {
          return Problem.make(400, "invalid_request", message, { headers: { "www-authenticate": header }, reason })
        }
        return Problem.make(401, error === "missing" ? "unauthorized" : "invalid_token", message, {
          headers: { "www-authenticate": header },
          reason
        })
      }

      const credentials = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
        const oauth = Option.isSome(oauthAtBuild) ? oauthAtBuild : yield* oauthServices
        const bearer = bearerTokenFromHeaders(request.headers)
        if (Result.isFailure(bearer)) {
          const failure = bearer.failure
          return yield* failure._tag === "MissingToken"
            ? refuse(
              oauth,
              request,
              "missing",
              "An admin token or an OAuth access token with the admin scope is required",
              "missing_token"
            )
            : failure._tag === "InvalidRequest"
            ? refuse(oauth, request, "invalid_request", failure.message, "multiple_credentials")
            : refuse(oauth, request, "invalid", failure.message, RefusalReason.ofAuthenticationError(failure))
        }
        const token = bearer.success
        if (token.startsWith(ADMIN_TOKEN_PREFIX)) {
          const found = yield* tokens.verify(Redacted.make(token)).pipe(Effect.mapError(Problem.internal))
          if (Option.isSome(found)) {
            return { kind: "admin_token", tokenId: found.value.id, name: found.value.name } satisfies AdminPrincipal
          }
          return yield* refuse(
            oauth,
            request,
            "invalid",
            "The admin token is not valid (unknown or revoked)",
            "unknown_token"
          )
        }
        if (Option.isSome(oauth) && looksLikeJwt(token)) {
          const [settings, verifier] = oauth.value
          const identity = yield* authenticateJwt(request, { scopes: settings.adminScopes }).pipe(
            Effect.provideService(OAuthConfig, settings),
            Effect.provideService(JwtVerifier, verifier),
            Effect.mapError(fromRejection)
          )
          return {
            kind: "oauth",
            subject: identity.subject,
            issuer: identity.issuer,
            clientId: identity.clientId,
            expiresAt: identity.acceptedUntil
          } satisfies AdminPrincipal
        }
        return yield* refuse(
          oauth,
          request,
          "invalid",
          Option.isSome(oauth)
            ? "Expected an admin token or an OAuth access token with the admin scope"
            : "Expected an admin token",
          "wrong_token_kind"
        )
      })

      const authenticate = (request: HttpServerRequest.HttpServerRequest) => {
        const origin = request.headers.origin
        if (!Origin.sameOrigin(origin, request.headers.host, request.headers["sec-fetch-site"])) {
          return Effect.fail(Problem.make(403, "origin_not_allowed", Origin.crossSiteMessage(origin!)))
        }
        return admission.admitAuthentication(
          {
            method: request.method,
            url: request.url,
            headers: request.headers,
            remoteAddress: Option.getOrUndefined(request.remoteAddress)
          },
          credentials(request),
          (problem) => problem.status === 401 && problem.code === "invalid_token"
        ).pipe(
          // the per-IP and failed-authentication buckets: always a 429 with Retry-After
          Effect.catchTag(
            "AdmissionRefused",
            (refused) =>
              Effect.fail(Problem.make(refused.status, "rate_limited", refused.message, { headers: refused.headers }))
          )
        )
      }

      return AdminAuth.of({ authenticate })
    })
  )
}

const codes: Record<AuthenticationError["_tag"], string> = {
  MissingToken: "unauthorized",
  InvalidRequest: "invalid_request",
  InvalidToken: "invalid_token",
  InsufficientScope: "insufficient_scope",
  JwksUnavailable: "temporarily_unavailable"
}

/** The OAuth module's challenge (status and headers) with this API's error body. */
const fromRejection = (rejection: OAuthRejection): Problem.ApiProblem => {
  const headers: Record<string, string> = {}
  for (const name of ["www-authenticate", "retry-after"]) {
    const value = rejection.response.headers[name]
    if (value !== undefined) headers[name] = value
  }
  return Problem.make(rejection.response.status, codes[rejection.error._tag], rejection.error.message, {
    headers,
    reason: RefusalReason.ofAuthenticationError(rejection.error)
  })
}
