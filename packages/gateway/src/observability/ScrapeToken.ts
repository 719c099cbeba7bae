/**
 * The scrape token of `GET /metrics` (`JANUS_METRICS_TOKEN`): when it is
 * set, only a request that presents it is answered with the metrics.
 *
 * **Rules**
 *
 * - The token comes from `Authorization: Bearer <token>` only (the scheme in
 *   any case), never from the query string: a token in a URL ends up in logs.
 * - It is compared in constant time: the SHA-256 digests of the presented and
 *   the configured token are compared with `timingSafeEqual`, so neither the
 *   time taken nor the digest length tells how much of a guess was right.
 * - Every refusal is the same 401: no header, another scheme, a wrong token, a
 *   malformed or oversized value, two `Authorization` headers (the server
 *   joins them with `, `, which no token contains). The same body, the same
 *   `WWW-Authenticate: Bearer realm="metrics"`, nothing read from the request
 *   in either: a caller learns only that this is not the token.
 * - Only the dedicated token is accepted. Admin tokens and OAuth access tokens
 *   are not: a Prometheus scraper holds one static bearer token, and one that
 *   could also change the gateway's configuration would be a far better prize
 *   in the scraper's configuration than one that reads counters.
 * - The token is held redacted and never logged, echoed or counted by value;
 *   a refusal adds nothing to the metrics but the request's own
 *   `http.server.request.duration` sample (route `/metrics`, status 401), so
 *   refused scrapes cannot create series.
 *
 * @since 0.1.0
 */
import { Redacted } from "effect"
import { HttpServerResponse } from "effect/http"
import { createHash, timingSafeEqual } from "node:crypto"

/** The realm of the challenge. */
export const REALM = "metrics"

/** The sentence of every refusal. */
export const REFUSED =
  "GET /metrics needs the scrape token: send Authorization: Bearer <the value of JANUS_METRICS_TOKEN>"

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/** The bearer credential of an `Authorization` value, or `undefined` when it is not `Bearer <something>`. */
const presented = (authorization: string): string | undefined => {
  const match = /^\s*bearer +(.*)$/is.exec(authorization)
  const token = match?.[1]?.trim()
  return token === undefined || token === "" ? undefined : token
}

/**
 * A check of `Authorization` values against `token`: true only for
 * `Bearer <token>`. The configured token's digest is taken once.
 */
export const verifier = (token: Redacted.Redacted<string>): (authorization: string | undefined) => boolean => {
  const expected = digest(Redacted.value(token))
  return (authorization) => {
    const given = authorization === undefined ? undefined : presented(authorization)
    // a missing credential is digested too, so every refusal takes the same path
    const actual = digest(given ?? "")
    return timingSafeEqual(actual, expected) && given !== undefined
  }
}

/** The answer to a scrape without the token. */
export const refusal = (): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(
    { error: "unauthorized", message: REFUSED },
    {
      status: 401,
      headers: { "www-authenticate": `Bearer realm="${REALM}"`, "cache-control": "no-store" }
    }
  )
