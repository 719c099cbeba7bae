/**
 * Reading the bearer token of a request.
 *
 * **Rules**
 *
 * - RFC 6750 §2.1 only: the token comes from the `Authorization: Bearer …`
 *   header. The form-body (§2.2) and URI-query (§2.3, `access_token=`) methods
 *   are never read: the MCP authorization spec forbids tokens in the query
 *   string, and a token in a URL ends up in logs. The RFC 9728 metadata says
 *   so with `bearer_methods_supported: ["header"]`.
 * - The scheme is case-insensitive; the token must match `b64token`
 *   (RFC 6750 §2.1). Another scheme (e.g. `Basic`) is treated as no token,
 *   except `DPoP` (RFC 9449 §7.1): that is a credential, for a scheme this
 *   server does not implement, so it is refused (`unsupported_scheme`), never
 *   answered as if no credential had been sent.
 * - One credential per request: two `Authorization` headers (the HTTP server
 *   joins them with `, `, see `http/Hardening.ts`), or one with several
 *   credentials separated by a comma, is `InvalidRequest` (400
 *   `invalid_request`); the first is never silently taken.
 * - Nothing read here is ever logged or echoed.
 *
 * @since 0.1.0
 */
import { Option, Result } from "effect"
import { Headers } from "effect/http"
import { InvalidRequest, InvalidToken, MissingToken } from "./OAuthErrors.ts"

const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/
/** A comma followed by what starts another credential (`scheme SP`), as two joined headers read. */
const ANOTHER_CREDENTIAL = /,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+(?:\s|$)/

/** The sentence of a request with more than one credential. */
export const MULTIPLE_CREDENTIALS =
  "The request carries more than one credential (several Authorization headers or values); send exactly one"

/** The sentence of an `Authorization: DPoP` request. */
export const DPOP_NOT_SUPPORTED =
  "DPoP-bound tokens are not supported; request a Bearer access token without a cnf claim and send it as " +
  "Authorization: Bearer <token>"

/** The bearer token of the `Authorization` header, or why there is none usable. */
export const bearerTokenFromHeaders = (
  headers: Headers.Headers
): Result.Result<string, MissingToken | InvalidRequest | InvalidToken> => {
  const value = Headers.get(headers, "authorization")
  if (Option.isNone(value)) return Result.fail(new MissingToken())
  const match = /^\s*(\S+)(?:\s+(.*))?$/.exec(value.value)
  const scheme = match?.[1]?.toLowerCase()
  const rest = match?.[2] ?? ""
  // bearer and DPoP credentials are token68: any comma means a second credential
  if (
    ANOTHER_CREDENTIAL.test(value.value) ||
    ((scheme === "bearer" || scheme === "dpop") && rest.includes(","))
  ) {
    return Result.fail(new InvalidRequest({ message: MULTIPLE_CREDENTIALS }))
  }
  if (scheme === "dpop") {
    return Result.fail(new InvalidToken({ reason: "unsupported_scheme", message: DPOP_NOT_SUPPORTED }))
  }
  if (match === null || scheme !== "bearer") return Result.fail(new MissingToken())
  const token = rest.trim()
  if (token === "" || !B64TOKEN.test(token)) {
    return Result.fail(
      new InvalidToken({ reason: "malformed", message: "The Authorization header is not of the form Bearer <token>" })
    )
  }
  return Result.succeed(token)
}

/**
 * True when `token` has the shape of a compact JWS (three base64url parts), so
 * it goes to `JwtVerifier`; Janus's opaque client tokens never contain a dot.
 */
export const looksLikeJwt = (token: string): boolean => COMPACT_JWS.test(token)
