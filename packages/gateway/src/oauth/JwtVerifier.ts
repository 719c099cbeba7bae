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
 * - `iss` must name a trusted issuer (`Issuers.ts`: up to a trailing slash, or
 *   a multi-tenant template). An untrusted issuer is refused without any
 *   network traffic.
 * - Signature checked by `jose` against the issuer's cached JWKS. A `kid` not in
 *   the set, or a signature the key of its `kid` does not verify (new key
 *   material under the same `kid`), triggers one rate-limited refetch
 *   (`JwksCache`), then a retry with the new set. When the set is known
 *   current the token is refused (401); only when the authorization server
 *   cannot be reached is it `JwksUnavailable` (503), not a refusal.
 * - `aud` must equal, or as an array contain, an audience accepted for the
 *   resource the request is for (`Resources.ts`: the resource itself, the
 *   issuer's additional audiences, and for a virtual server its own URL),
 *   compared exactly as strings (RFC 7519 §4.1.3, StringOrURI): no case
 *   folding, no trailing slash, fragment or dot segment removed, so
 *   `…/mcp/`, `HTTP://…` or `…/servers/x/mcp/../../../mcp` are other
 *   audiences. Tokens for other resources are refused, which is what stops
 *   token passthrough into Janus.
 * - A token with a `cnf` claim is bound to a key (DPoP, RFC 9449 `jkt`) or a
 *   client certificate (RFC 8705 `x5t#S256`): its holder must prove
 *   possession, which a bearer request cannot, so it is refused as
 *   `sender_constrained` (RFC 9449 §7.2, RFC 8705 §3) rather than used as a
 *   bearer token by whoever copied it.
 * - `exp` may lie at most `maxTokenLifetime` (24 hours) after `iat`, or after
 *   now when there is no `iat` (plus the clock tolerance): a longer-lived
 *   token is `lifetime_too_long`.
 * - `exp` is required; `exp`, `nbf` and `iat` are checked against effect's
 *   `Clock` with the issuer's clock tolerance (RFC 7519 §4.1.4-6); `iat` may
 *   not lie in the future beyond it.
 * - `sub` is required (RFC 9068 §2.2). `typ` is checked when
 *   `requiredTokenType` is set (RFC 9068 §2.1, e.g. `at+jwt`).
 * - Scopes come from the issuer's scope claims, with its prefix stripped
 *   (`Scopes.ts`); by default the issuer's tool scopes are required. A
 *   missing required scope is `InsufficientScope` (403,
 *   step-up, naming the scopes as the client must request them), checked only
 *   once the token is otherwise valid.
 * - Every refusal of a presented token is logged (Info) with the reason and
 *   what the token carried and what was expected: issuer, audience, scopes,
 *   the names of its claims, `kid` and `alg`; never the token or its
 *   signature, and each value bounded in length.
 * - Errors say what was wrong in fixed words; the token and its claim values
 *   are never echoed.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Result } from "effect"
import type { Headers } from "effect/http"
import type { JWTHeaderParameters, JWTPayload, JWTVerifyOptions } from "jose"
import { normalizeIssuer } from "../config/Urls.ts"
import * as BearerToken from "./BearerToken.ts"
import { jose } from "./internal/jose.ts"
import { JwksCache, type JwksSnapshot } from "./JwksCache.ts"
import { type AuthenticationError, InsufficientScope, InvalidToken, type JwksUnavailable } from "./OAuthErrors.ts"
import { type AuthorizationServer, OAuthConfig, type OAuthSettings } from "./OAuthOptions.ts"
import { acceptedAudiences } from "./Resources.ts"
import { advertiseScopes, scopesOf } from "./Scopes.ts"

/** Who a valid token speaks for. */
export interface OAuthIdentity {
  /** `sub` */
  readonly subject: string
  /** `iss`, without a trailing slash */
  readonly issuer: string
  /** `client_id` (RFC 9068), `azp` (OpenID), `cid` (Okta) or `appid` (Entra v1), when present. */
  readonly clientId: string | undefined
  /** Granted scopes, from the issuer's scope claims, without its prefix. */
  readonly scopes: ReadonlyArray<string>
  /** `aud` as a list. */
  readonly audience: ReadonlyArray<string>
  /** `exp`, epoch seconds. */
  readonly expiresAt: number
  /** When the token stops being accepted: `exp` plus its issuer's clock skew, epoch ms (open streams end then). */
  readonly acceptedUntil: number
  /** `jti`, when present. */
  readonly tokenId: string | undefined
  /** A stable key for limiters and audit: `oauth:<iss>#<sub>`. */
  readonly key: string
}

/** What an operation requires of a token. */
export interface TokenRequirement {
  /** Scopes the token must all hold. Default: the tool scopes of the token's issuer. Pass `[]` for none. */
  readonly scopes?: ReadonlyArray<string> | undefined
  /**
   * The resource the request is for, canonical (`Resources.resourceOf`),
   * which decides the accepted audiences. Default: the configured resource
   * (`/mcp`).
   */
  readonly resource?: string | undefined
}

const invalid = (reason: InvalidToken["reason"], message: string) => new InvalidToken({ reason, message })

/** A token's header and claims before its signature is checked, and the trusted issuer it names. */
interface Decoded {
  readonly header: JWTHeaderParameters
  readonly payload: JWTPayload
  readonly alg: string
  readonly issuer: string
  readonly server: AuthorizationServer | undefined
}

const decodeUnverified = (token: string, settings: OAuthSettings): Result.Result<Decoded, InvalidToken> => {
  if (token.length > settings.maxTokenLength) {
    return Result.fail(invalid("too_large", "The token is longer than this server accepts"))
  }
  if (!BearerToken.looksLikeJwt(token)) return Result.fail(invalid("malformed", "The token is not a signed JWT"))
  const { decodeJwt, decodeProtectedHeader } = jose()
  let header: JWTHeaderParameters
  let payload: JWTPayload
  try {
    header = decodeProtectedHeader(token) as JWTHeaderParameters
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
  return Result.succeed({ header, payload, alg, issuer: payload.iss, server: settings.issuerOf(payload.iss) })
}

type Refusal = readonly [InvalidToken["reason"], string]

/** What a jose error code means for the client (a claim validation failure is read by claim instead). */
const BY_CODE: Readonly<Record<string, Refusal>> = {
  ERR_JWT_EXPIRED: ["expired", "The token has expired"],
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: ["bad_signature", "The token signature is invalid"],
  ERR_JOSE_ALG_NOT_ALLOWED: ["algorithm_not_allowed", "The token algorithm is not allowed"],
  ERR_JWKS_NO_MATCHING_KEY: ["unknown_key", "The token was signed with an unknown key"],
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: ["bad_signature", "The token signature is invalid"],
  ERR_JOSE_NOT_SUPPORTED: ["algorithm_not_allowed", "The token uses an unsupported algorithm or header"],
  ERR_JWKS_INVALID: ["key_mismatch", "The token does not fit the signing key"],
  ERR_JWK_INVALID: ["key_mismatch", "The token does not fit the signing key"],
  ERR_JWS_INVALID: ["malformed", "The token is not a well-formed JWT"],
  ERR_JWT_INVALID: ["malformed", "The token is not a well-formed JWT"]
}

/** What a failed claim validation (`ERR_JWT_CLAIM_VALIDATION_FAILED`) means, by claim. */
const BY_CLAIM: Readonly<Record<string, Refusal>> = {
  nbf: ["not_yet_valid", "The token is not yet valid"],
  iss: ["untrusted_issuer", "The token issuer is not trusted"],
  typ: ["wrong_type", "The token type is not an access token"],
  exp: ["invalid_claim", "The token exp claim is not a number"],
  iat: ["invalid_claim", "The token iat claim is not a number"]
}

/** `table[key]` when `key` is its own entry (never an inherited one such as `constructor`), else `fallback`. */
const entry = (table: Readonly<Record<string, Refusal>>, key: string, fallback: Refusal): Refusal =>
  Object.hasOwn(table, key) ? table[key]! : fallback

const mapJoseError = (error: unknown): InvalidToken => {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : ""
  const claim = typeof error === "object" && error !== null && "claim" in error ? String(error.claim) : ""
  if (code !== "ERR_JWT_CLAIM_VALIDATION_FAILED") {
    const [reason, message] = entry(BY_CODE, code, ["bad_signature", "The token could not be verified"])
    return invalid(reason, message)
  }
  const missing = typeof error === "object" && error !== null && "reason" in error && error.reason === "missing"
  if (missing) return invalid("missing_claim", `The token has no ${claim} claim`)
  const [reason, message] = entry(BY_CLAIM, claim, ["invalid_claim", "The token has an invalid claim"])
  return invalid(reason, message)
}

const hasCode = (error: unknown, code: string) =>
  typeof error === "object" && error !== null && "code" in error && error.code === code

const isNoMatchingKey = (error: unknown) => hasCode(error, "ERR_JWKS_NO_MATCHING_KEY")

const isBadSignature = (error: unknown) => hasCode(error, "ERR_JWS_SIGNATURE_VERIFICATION_FAILED")

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

      const verifyWith = (token: string, snapshot: JwksSnapshot, options: JWTVerifyOptions) =>
        Effect.tryPromise({ try: () => jose().jwtVerify(token, snapshot.keySet, options), catch: (error) => error })

      const check = Effect.fnUntraced(function*(token: string, decoded: Decoded, requirement?: TokenRequirement) {
        const { alg, header, issuer, server } = decoded
        if (server === undefined) return yield* invalid("untrusted_issuer", "The token issuer is not trusted")
        if (!(server.algorithms as ReadonlyArray<string>).includes(alg)) {
          return yield* invalid("algorithm_not_allowed", "The token algorithm is not allowed for its issuer")
        }

        const skewSeconds = Math.floor(Duration.toSeconds(server.clockSkew))
        const now = yield* Clock.currentTimeMillis
        const options: JWTVerifyOptions = {
          algorithms: [...server.algorithms],
          issuer,
          clockTolerance: skewSeconds,
          currentDate: new Date(now),
          requiredClaims: ["exp", "sub"],
          ...(settings.requiredTokenType === undefined ? {} : { typ: settings.requiredTokenType })
        }

        const snapshot = yield* jwks.current(server.issuer)
        let attempt = yield* Effect.result(verifyWith(token, snapshot, options))
        const knownKid = typeof header.kid === "string" && snapshot.kids.has(header.kid)
        if (Result.isFailure(attempt) && isNoMatchingKey(attempt.failure) && knownKid) {
          return yield* invalid("key_mismatch", "The key named by kid does not fit the token algorithm")
        }
        // a kid the set lacks, or new material under a known kid: a newer key set (rate-limited), the same one
        // when it is known current (the token is then refused), or JwksUnavailable (503) when the
        // authorization server cannot be reached
        if (Result.isFailure(attempt) && (isNoMatchingKey(attempt.failure) || isBadSignature(attempt.failure))) {
          const refreshed = yield* jwks.refreshForUnknownKey(server.issuer, snapshot)
          if (refreshed.generation !== snapshot.generation) {
            attempt = yield* Effect.result(verifyWith(token, refreshed, options))
          }
        }
        if (Result.isFailure(attempt)) return yield* mapJoseError(attempt.failure)
        const payload = attempt.success.payload

        if (typeof payload.iat === "number" && payload.iat > now / 1000 + skewSeconds) {
          return yield* invalid("issued_in_future", "The token was issued in the future")
        }
        if (payload.cnf !== undefined) {
          return yield* invalid(
            "sender_constrained",
            "The token is bound to a key or certificate (cnf claim: DPoP or mTLS) and cannot be used as a " +
              "Bearer token; this server accepts only Bearer tokens without cnf"
          )
        }
        const maxLifetime = Math.floor(Duration.toSeconds(settings.maxTokenLifetime))
        const lifetime = typeof payload.iat === "number" ? payload.exp! - payload.iat : payload.exp! - now / 1000
        if (lifetime > maxLifetime + (typeof payload.iat === "number" ? 0 : skewSeconds)) {
          return yield* invalid(
            "lifetime_too_long",
            `The token lives longer than this server accepts: exp may be at most ${
              Duration.format(settings.maxTokenLifetime)
            } after iat (or after now without iat)`
          )
        }
        const audience = audienceOf(payload)
        if (audience.length === 0) return yield* invalid("missing_claim", "The token has no aud claim")
        const expected = acceptedAudiences(settings, server, requirement?.resource)
        if (!audience.some((a) => expected.includes(a))) {
          return yield* invalid("wrong_audience", "The token was not issued for this resource")
        }
        if (typeof payload.sub !== "string" || payload.sub === "") {
          return yield* invalid("missing_claim", "The token has no sub claim")
        }
        const scopes = scopesOf(payload, server.scopeClaims, server.scopePrefix)
        const required = requirement?.scopes ?? server.toolScopes
        const missing = required.filter((scope) => !scopes.includes(scope))
        if (missing.length > 0) {
          return yield* new InsufficientScope({
            required: [...advertiseScopes(required, server.scopePrefix)],
            missing: [...advertiseScopes(missing, server.scopePrefix)]
          })
        }

        // one identity per issuer and subject however the issuer is written (a tenant is part of it)
        const normalized = normalizeIssuer(issuer)
        return {
          subject: payload.sub,
          issuer: normalized,
          clientId: clientIdOf(payload),
          scopes,
          audience,
          expiresAt: payload.exp!,
          acceptedUntil: (payload.exp! + skewSeconds) * 1_000,
          tokenId: typeof payload.jti === "string" ? payload.jti : undefined,
          key: `oauth:${normalized}#${payload.sub}`
        } satisfies OAuthIdentity
      })

      const verify = (token: string, requirement?: TokenRequirement) => {
        const decoded = decodeUnverified(token, settings)
        if (Result.isFailure(decoded)) {
          return Effect.andThen(
            logRefusal(settings, decoded.failure, undefined, requirement),
            Effect.fail(decoded.failure)
          )
        }
        return check(token, decoded.success, requirement).pipe(
          Effect.tapError((error) => logRefusal(settings, error, decoded.success, requirement))
        )
      }

      const verifyRequest = (headers: Headers.Headers, requirement?: TokenRequirement) => {
        const token = BearerToken.bearerTokenFromHeaders(headers)
        return Result.isFailure(token) ? Effect.fail(token.failure) : verify(token.success, requirement)
      }

      return JwtVerifier.of({ verify, verifyRequest })
    })
  )
}

const audienceOf = (payload: JWTPayload): ReadonlyArray<string> => {
  const aud = payload.aud
  return typeof aud === "string" ? [aud] : Array.isArray(aud) ? aud.filter((a) => typeof a === "string") : []
}

/** `client_id` (RFC 9068), `azp` (OpenID), `cid` (Okta) or `appid` (Entra v1), when present. */
const clientIdOf = (payload: JWTPayload): string | undefined => {
  for (const claim of ["client_id", "azp", "cid", "appid"]) {
    const value = payload[claim]
    if (typeof value === "string" && value !== "") return value
  }
  return undefined
}

/** A claim value fit for a log line: bounded, never an object. */
const shown = (value: unknown): string | ReadonlyArray<string> | undefined => {
  const bound = (s: string) => s.length > 200 ? `${s.slice(0, 200)}…` : s
  if (typeof value === "string") return bound(value)
  if (Array.isArray(value)) {
    const items = value.filter((v) => typeof v === "string").slice(0, 20).map(bound)
    return value.length > 20 ? [...items, `… (${value.length} in all)`] : items
  }
  return undefined
}

/** The Info line of a refused token: the reason, what the token carried, what was expected. */
const logRefusal = (
  settings: OAuthSettings,
  error: InvalidToken | InsufficientScope | JwksUnavailable,
  decoded: Decoded | undefined,
  requirement: TokenRequirement | undefined
) => {
  const reason = error._tag === "InvalidToken"
    ? error.reason
    : error._tag === "InsufficientScope"
    ? "insufficient_scope"
    : "keys_unavailable"
  const annotations: Record<string, unknown> = { reason, detail: error.message }
  if (decoded !== undefined) {
    const { header, payload, server } = decoded
    const resource = requirement?.resource ?? settings.resource
    annotations.issuer = shown(payload.iss)
    annotations.audience = shown(payload.aud)
    annotations.scopes = shown(scopesOf(payload, server?.scopeClaims, server?.scopePrefix))
    annotations.claims = Object.keys(payload).slice(0, 40).sort()
    annotations.kid = shown(header.kid)
    annotations.alg = shown(header.alg)
    annotations.resource = resource
    if (server === undefined) annotations.trusted_issuers = settings.issuers
    else {
      annotations.expected_audience = acceptedAudiences(settings, server, requirement?.resource)
      annotations.required_scopes = requirement?.scopes ?? server.toolScopes
      annotations.scope_claims = server.scopeClaims
    }
  }
  return Effect.logInfo("OAuth access token refused").pipe(Effect.annotateLogs(annotations))
}
