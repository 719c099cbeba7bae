/**
 * Authenticating one HTTP request with a bearer JWT, for the lead's auth
 * middleware.
 *
 * **Rules**
 *
 * - The token is read from the `Authorization` header only (`BearerToken`);
 *   `?access_token=` is ignored, so such a request is answered as having no
 *   token.
 * - A refusal is an `OAuthRejection` carrying both the reason (for audit) and
 *   the ready HTTP response (`Challenge`). It is `Respondable`, so a route that
 *   lets it fail gets the right 401/403/503 without more code.
 * - Which scopes: `toolScopes` for MCP endpoints, `adminScopes` for
 *   `/api/v1`; the resource (hence the audiences accepted) and the metadata
 *   URL in the challenge follow the request path (`Resources.ts`).
 *
 * @since 0.1.0
 */
import { Data, Effect } from "effect"
import { type HttpServerRequest, HttpServerRespondable, type HttpServerResponse } from "effect/http"
import { challenge } from "./Challenge.ts"
import { JwtVerifier, type OAuthIdentity, type TokenRequirement } from "./JwtVerifier.ts"
import type { AuthenticationError } from "./OAuthErrors.ts"
import { OAuthConfig } from "./OAuthOptions.ts"
import { resourceOf } from "./Resources.ts"

/** The request was refused; `response` is the challenge to send. */
export class OAuthRejection extends Data.TaggedError("OAuthRejection")<{
  readonly error: AuthenticationError
  readonly response: HttpServerResponse.HttpServerResponse
}> implements HttpServerRespondable.Respondable {
  override get message(): string {
    return this.error.message
  }
  [HttpServerRespondable.symbol]() {
    return Effect.succeed(this.response)
  }
}

/** Validates the request's bearer JWT for `requirement`, or fails with the challenge to send. */
export const authenticate = (
  request: HttpServerRequest.HttpServerRequest,
  requirement?: TokenRequirement
): Effect.Effect<OAuthIdentity, OAuthRejection, JwtVerifier | OAuthConfig> =>
  Effect.gen(function*() {
    const verifier = yield* JwtVerifier
    const settings = yield* OAuthConfig
    const resource = requirement?.resource ?? resourceOf(settings, request.url).resource
    return yield* verifier.verifyRequest(request.headers, { ...requirement, resource }).pipe(
      Effect.catch((error) =>
        Effect.flatMap(
          challenge(error, { requestPath: request.url, scopes: requirement?.scopes }),
          (response) => Effect.fail(new OAuthRejection({ error, response }))
        )
      )
    )
  })
