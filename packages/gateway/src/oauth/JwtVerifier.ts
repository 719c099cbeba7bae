/**
 * Validation of a JWT access token presented to this resource server.
 *
 * **Rules** (RFC 9068 §4, RFC 8725, RFC 7519, MCP authorization "Token Handling")
 *
 * - Size and shape first: at most `maxTokenLength` characters, a compact JWS
 *   (three base64url parts). JWE and JSON serializations are refused.
 * - Algorithm allow-list before any key lookup (RFC 8725 §3.1): `none` and
 *   every `HS*` algorithm are refused outright, so a public key is never used
 *   as an HMAC secret; so is any algorithm outside the issuer's allow-list.
 *   `jose` also refuses a key whose type or curve does not fit the algorithm
 *   (key/alg mismatch), and `crit` headers it does not understand.
 * - `iss` must be a trusted issuer, exactly (RFC 9068 §4 step 3). An untrusted
 *   issuer is refused without any network traffic.
 * - Signature checked by `jose` against the issuer's cached JWKS. A `kid` not in
 *   the set triggers one rate-limited refresh (`JwksCache`), then a retry.
 * - `aud` must equal, or as an array contain, this resource (RFC 8707, RFC 9068
 *   §4 step 4), compared in canonical form; tokens for other resources are
 *   refused, which is what stops token passthrough into Janus.
 * - `exp` is required; `exp`, `nbf` and `iat` are checked against effect's
 *   `Clock` with `clockSkew` tolerance (RFC 7519 §4.1.4-6); `iat` may not lie
 *   in the future beyond the skew.
 * - `sub` is required (RFC 9068 §2.2). `typ` is checked when
 *   `requiredTokenType` is set (RFC 9068 §2.1, e.g. `at+jwt`).
 * - Scopes come from `scope` (space-delimited, RFC 9068 §2.2.3) and/or `scp`
 *   (array or string); a missing required scope is `InsufficientScope` (403,
 *   step-up), checked only once the token is otherwise valid.
 * - Errors say what was wrong in fixed words; the token and its claim values
 *   are never echoed.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Result } from "effect"
import type { Headers } from "effect/http"
import type { JWTPayload, JWTVerifyOptions } from "jose"
import * as BearerToken from "./BearerToken.ts"
import { jose } from "./internal/jose.ts"
import { JwksCache, type JwksSnapshot } from "./JwksCache.ts"
import { type AuthenticationError, InsufficientScope, InvalidToken, type JwksUnavailable } from "./OAuthErrors.ts"
import { canonicalResource, OAuthConfig, type OAuthSettings } from "./OAuthOptions.ts"

/** Who a valid token speaks for. */
export interface OAuthIdentity {
  /** `sub` */
  readonly subject: string
  /** `iss` */
  readonly issuer: string
  /** `client_id` (RFC 9068) or `azp` (OpenID), when present. */
  readonly clientId: string | undefined
  /** Granted scopes, from `scope` and `scp`. */
  readonly scopes: ReadonlyArray<string>
  /** `aud` as a list. */
  readonly audience: ReadonlyArray<string>
  /** `exp`, epoch seconds. */
  readonly expiresAt: number
  /** `jti`, when present. */
  readonly tokenId: string | undefined
  /** A stable key for limiters and audit: `oauth:<iss>#<sub>`. */
  readonly key: string
}

/** What an operation requires of a token. */
export interface TokenRequirement {
  /** Scopes the token must all hold. Default: `toolScopes`. Pass `[]` for none. */
  readonly scopes?: ReadonlyArray<string> | undefined
  /** Audiences of which `aud` must contain one. Default: `resource` and `additionalAudiences`. */
  readonly audience?: string | ReadonlyArray<string> | undefined
}

const invalid = (reason: InvalidToken["reason"], message: string) => new InvalidToken({ reason, message })

const decodeUnverified = (token: string, settings: OAuthSettings) => {
  if (token.length > settings.maxTokenLength) {
    return Result.fail(invalid("too_large", "The token is longer than this server accepts"))
  }
  if (!BearerToken.looksLikeJwt(token)) return Result.fail(invalid("malformed", "The token is not a signed JWT"))
  const { decodeJwt, decodeProtectedHeader } = jose()
  let header: ReturnType<typeof decodeProtectedHeader>
  let payload: JWTPayload
  try {
    header = decodeProtectedHeader(token)
    payload = decodeJwt(token)
  } catch {
    return Result.fail(invalid("malformed", "The token is not a well-formed JWT"))
  }
  const alg = header.alg
  if (typeof alg !== "string") return Result.fail(invalid("malformed", "The token header names no algorithm"))
  if (alg.toLowerCase() === "none") {
    return Result.fail(invalid("algorithm_not_allowed", "Unsigned tokens are not accepted"))
  }
  if (/^hs/i.test(alg)) {
    return Result.fail(invalid("algorithm_not_allowed", "Symmetric (HMAC) algorithms are not accepted"))
  }
  if (!(settings.algorithms as ReadonlyArray<string>).includes(alg)) {
    return Result.fail(invalid("algorithm_not_allowed", "The token algorithm is not allowed"))
  }
  if (token.endsWith(".")) return Result.fail(invalid("malformed", "The token has no signature"))
  if (typeof payload.iss !== "string") return Result.fail(invalid("missing_claim", "The token has no iss claim"))
  return Result.succeed({ header, payload, alg, issuer: payload.iss })
}

const mapJoseError = (error: unknown): InvalidToken => {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : ""
  const claim = typeof error === "object" && error !== null && "claim" in error ? String(error.claim) : ""
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return invalid("expired", "The token has expired")
    case "ERR_JWT_CLAIM_VALIDATION_FAILED": {
      const missing = typeof error === "object" && error !== null && "reason" in error && error.reason === "missing"
      if (missing) return invalid("missing_claim", `The token has no ${claim} claim`)
      switch (claim) {
        case "nbf":
          return invalid("not_yet_valid", "The token is not yet valid")
        case "iss":
          return invalid("untrusted_issuer", "The token issuer is not trusted")
        case "typ":
          return invalid("wrong_type", "The token type is not an access token")
        case "exp":
        case "iat":
          return invalid("invalid_claim", `The token ${claim} claim is not a number`)
        default:
          return invalid("invalid_claim", "The token has an invalid claim")
      }
    }
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return invalid("bad_signature", "The token signature is invalid")
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return invalid("algorithm_not_allowed", "The token algorithm is not allowed")
    case "ERR_JWKS_NO_MATCHING_KEY":
      return invalid("unknown_key", "The token was signed with an unknown key")
    case "ERR_JWKS_MULTIPLE_MATCHING_KEYS":
      return invalid("bad_signature", "The token signature is invalid")
    case "ERR_JOSE_NOT_SUPPORTED":
      return invalid("algorithm_not_allowed", "The token uses an unsupported algorithm or header")
    case "ERR_JWKS_INVALID":
    case "ERR_JWK_INVALID":
      return invalid("key_mismatch", "The token does not fit the signing key")
    case "ERR_JWS_INVALID":
    case "ERR_JWT_INVALID":
      return invalid("malformed", "The token is not a well-formed JWT")
    default:
      return invalid("bad_signature", "The token could not be verified")
  }
}

const isNoMatchingKey = (error: unknown) =>
  typeof error === "object" && error !== null && "code" in error && error.code === "ERR_JWKS_NO_MATCHING_KEY"

/** Granted scopes from `scope` (space-delimited) and `scp` (array or string), without duplicates. */
export const scopesOf = (payload: JWTPayload): ReadonlyArray<string> => {
  const scopes = new Set<string>()
  const add = (value: unknown) => {
    if (typeof value === "string") { for (const s of value.split(" ")) if (s !== "") scopes.add(s) }
    if (Array.isArray(value)) { for (const s of value) if (typeof s === "string" && s !== "") scopes.add(s) }
  }
  add(payload.scope)
  add(payload.scp)
  return [...scopes]
}

/** Validates bearer JWTs against the trusted issuers' cached keys. */
export class JwtVerifier extends Context.Service<JwtVerifier, {
  /** Validates `token` for `requirement` (default: tool scopes, this resource). */
  readonly verify: (
    token: string,
    requirement?: TokenRequirement
  ) => Effect.Effect<OAuthIdentity, InvalidToken | InsufficientScope | JwksUnavailable>
  /** Reads the bearer token from `Authorization` only (never the query) and validates it. */
  readonly verifyRequest: (
    headers: Headers.Headers,
    requirement?: TokenRequirement
  ) => Effect.Effect<OAuthIdentity, AuthenticationError>
}>()("@janus/gateway/oauth/JwtVerifier") {
  static readonly layer: Layer.Layer<JwtVerifier, never, OAuthConfig | JwksCache> = Layer.effect(
    JwtVerifier,
    Effect.gen(function*() {
      const settings = yield* OAuthConfig
      const jwks = yield* JwksCache
      const skewSeconds = Math.floor(Duration.toSeconds(settings.clockSkew))

      const verifyWith = (token: string, snapshot: JwksSnapshot, options: JWTVerifyOptions) =>
        Effect.tryPromise({ try: () => jose().jwtVerify(token, snapshot.keySet, options), catch: (error) => error })

      const verify = Effect.fnUntraced(function*(token: string, requirement?: TokenRequirement) {
        const decoded = decodeUnverified(token, settings)
        if (Result.isFailure(decoded)) return yield* decoded.failure
        const { alg, header, issuer } = decoded.success
        const server = settings.authorizationServers.get(issuer)
        if (server === undefined) return yield* invalid("untrusted_issuer", "The token issuer is not trusted")
        if (!(server.algorithms as ReadonlyArray<string>).includes(alg)) {
          return yield* invalid("algorithm_not_allowed", "The token algorithm is not allowed for its issuer")
        }

        const now = yield* Clock.currentTimeMillis
        const options: JWTVerifyOptions = {
          algorithms: [...server.algorithms],
          issuer: server.issuer,
          clockTolerance: skewSeconds,
          currentDate: new Date(now),
          requiredClaims: ["exp", "sub"],
          ...(settings.requiredTokenType === undefined ? {} : { typ: settings.requiredTokenType })
        }

        const snapshot = yield* jwks.current(issuer)
        let attempt = yield* Effect.result(verifyWith(token, snapshot, options))
        if (Result.isFailure(attempt) && isNoMatchingKey(attempt.failure)) {
          if (typeof header.kid === "string" && snapshot.kids.has(header.kid)) {
            return yield* invalid("key_mismatch", "The key named by kid does not fit the token algorithm")
          }
          const refreshed = yield* jwks.refreshForUnknownKey(issuer, snapshot)
          if (refreshed.generation === snapshot.generation) {
            return yield* invalid("unknown_key", "The token was signed with an unknown key")
          }
          attempt = yield* Effect.result(verifyWith(token, refreshed, options))
        }
        if (Result.isFailure(attempt)) return yield* mapJoseError(attempt.failure)
        const payload = attempt.success.payload

        if (typeof payload.iat === "number" && payload.iat > now / 1000 + skewSeconds) {
          return yield* invalid("issued_in_future", "The token was issued in the future")
        }
        const aud = payload.aud
        const audience = typeof aud === "string" ? [aud] : Array.isArray(aud) ? aud : []
        if (audience.length === 0) return yield* invalid("missing_claim", "The token has no aud claim")
        const expected = requirement?.audience === undefined
          ? settings.audiences
          : (typeof requirement.audience === "string" ? [requirement.audience] : requirement.audience).map(
            canonicalResource
          )
        if (!audience.some((a) => typeof a === "string" && expected.includes(canonicalResource(a)))) {
          return yield* invalid("wrong_audience", "The token was not issued for this resource")
        }
        if (typeof payload.sub !== "string" || payload.sub === "") {
          return yield* invalid("missing_claim", "The token has no sub claim")
        }
        const scopes = scopesOf(payload)
        const required = requirement?.scopes ?? settings.toolScopes
        const missing = required.filter((scope) => !scopes.includes(scope))
        if (missing.length > 0) return yield* new InsufficientScope({ required: [...required], missing })

        const clientId = typeof payload.client_id === "string"
          ? payload.client_id
          : typeof payload.azp === "string"
          ? payload.azp
          : undefined
        return {
          subject: payload.sub,
          issuer,
          clientId,
          scopes,
          audience,
          expiresAt: payload.exp!,
          tokenId: typeof payload.jti === "string" ? payload.jti : undefined,
          key: `oauth:${issuer}#${payload.sub}`
        } satisfies OAuthIdentity
      })

      const verifyRequest = (headers: Headers.Headers, requirement?: TokenRequirement) => {
        const token = BearerToken.fromHeaders(headers)
        return Result.isFailure(token) ? Effect.fail(token.failure) : verify(token.success, requirement)
      }

      return JwtVerifier.of({ verify, verifyRequest })
    })
  )
}
