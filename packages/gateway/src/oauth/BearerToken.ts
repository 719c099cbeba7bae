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
 *   (RFC 6750 §2.1). Another scheme (e.g. `Basic`) is treated as no token.
 * - Nothing read here is ever logged or echoed.
 *
 * @since 0.1.0
 */
import { Option, Result } from "effect"
import { Headers } from "effect/http"
import { InvalidToken, MissingToken } from "./OAuthErrors.ts"

const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

/** The bearer token of the `Authorization` header, or why there is none usable. */
export const bearerTokenFromHeaders = (
  headers: Headers.Headers
): Result.Result<string, MissingToken | InvalidToken> => {
  const value = Headers.get(headers, "authorization")
  if (Option.isNone(value)) return Result.fail(new MissingToken())
  const match = /^\s*(\S+)(?:\s+(.*))?$/.exec(value.value)
  if (match === null || match[1]!.toLowerCase() !== "bearer") return Result.fail(new MissingToken())
  const token = (match[2] ?? "").trim()
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
