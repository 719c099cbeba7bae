/**
 * HTTP exchanges with one upstream, shared by the HTTP transports
 * (Streamable HTTP in both eras, HTTP+SSE): every request through
 * `UpstreamHttp` (the egress guard), with the connection's credentials and
 * the session's own headers.
 *
 * **Rules**
 *
 * - Credentials come from `UpstreamAuth` on every request (rotations need no
 *   reconnection); a 401 with OAuth client credentials drops the cached
 *   token once (`invalidate`) so the next request fetches a new one.
 * - What they inject (`injected`) is scrubbed from every message the
 *   upstream sends back, before it is parsed: an upstream that echoes
 *   headers cannot hand Janus's credential to a client.
 * - A response lives in the scope of its exchange: closing the scope aborts
 *   the request.
 * - A posted notification or response expects 2xx (202 usually); 4xx/5xx
 *   fail with the status.
 *
 * @since 0.1.0
 */
import { Effect, type Scope } from "effect"
import { HttpClientRequest, type HttpClientResponse } from "effect/http"
import { InjectedSecrets } from "../../redaction/InjectedSecrets.ts"
import { unavailable, type UpstreamError } from "../Errors.ts"
import { UpstreamAuth } from "../UpstreamAuth.ts"
import { UpstreamHttp } from "../UpstreamHttp.ts"
import type { UpstreamTarget } from "./Session.ts"

export interface HttpExchange {
  /** One HTTP exchange; the response lives in the caller's scope. */
  readonly send: (
    method: "GET" | "POST" | "DELETE",
    url: string,
    headers: Readonly<Record<string, string>>,
    body?: string
  ) => Effect.Effect<HttpClientResponse.HttpClientResponse, UpstreamError, Scope.Scope>
  /** Credentials, the session's headers, then `extra`. */
  readonly headers: (extra?: Readonly<Record<string, string>>) => Effect.Effect<Record<string, string>, UpstreamError>
  /** POSTs a JSON-RPC notification or response (2xx expected). */
  readonly post: (url: string, json: string) => Effect.Effect<void, UpstreamError>
  /** Drops a cached OAuth token (after a 401). */
  readonly invalidate: Effect.Effect<void>
  /** Whether a 401 is worth one retry with a fresh credential. */
  readonly refreshable: boolean
  /** The credential last sent, to scrub from what the upstream sends back (`Wire.parseMessages`). */
  readonly injected: () => InjectedSecrets
}

export const JSON_AND_SSE = "application/json, text/event-stream"

/** `sessionHeaders` is read on every request (a 2025 session's id and revision). */
export const make = (
  target: UpstreamTarget,
  sessionHeaders: () => Readonly<Record<string, string>>
): Effect.Effect<HttpExchange, never, UpstreamHttp | UpstreamAuth> =>
  Effect.gen(function*() {
    const http = yield* UpstreamHttp
    const auth = yield* UpstreamAuth
    const authTarget = { id: target.id, name: target.name, url: target.url, allow: target.allow }

    let injected = InjectedSecrets.none
    const headers = (extra?: Readonly<Record<string, string>>) =>
      Effect.map(auth.headers(authTarget, target.auth), (credential) => {
        injected = InjectedSecrets.track(injected, credential)
        return { ...extra, ...credential, ...sessionHeaders() }
      })

    const send: HttpExchange["send"] = (method, url, headers, body) => {
      let request = HttpClientRequest.make(method)(url).pipe(HttpClientRequest.setHeaders(headers))
      if (body !== undefined) request = HttpClientRequest.bodyText(request, body, "application/json")
      return http.execute(target.name, target.allow, request)
    }

    const post = (url: string, json: string) =>
      Effect.scoped(Effect.gen(function*() {
        const response = yield* send(
          "POST",
          url,
          yield* headers({ "content-type": "application/json", accept: JSON_AND_SSE }),
          json
        )
        if (response.status >= 400) {
          return yield* unavailable(
            target.name,
            `the upstream refused a message (HTTP ${response.status})`,
            response.status
          )
        }
      }))

    return {
      send,
      headers,
      post,
      invalidate: auth.invalidate(authTarget, target.auth),
      refreshable: target.auth.scheme === "oauth-client-credentials",
      injected: () => injected
    }
  })
