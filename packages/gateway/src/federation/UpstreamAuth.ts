/**
 * Janus's credential for an upstream MCP server.
 *
 * **Rules**
 *
 * - Schemes: `none`; `bearer` / `header` / `basic` with the value from a
 *   secret (through the secret cache, so a rotation applies within its TTL or
 *   at once on the change signal); `oauth-client-credentials`: an access
 *   token from the upstream's authorization server (RFC 6749 §4.4, client
 *   authenticated with HTTP Basic, `resource` = the upstream URL per RFC 8707
 *   as MCP authorization requires, optional `scope`/`audience`).
 * - Tokens are cached per connection and configuration until `expires_in`
 *   minus 30 s (5 minutes when the server gives no lifetime); a 401 from the
 *   upstream drops the cached token (`invalidate`) and the call is retried
 *   once with a fresh one.
 * - The token endpoint is reached through the same egress guard and
 *   allow-list as the upstream itself.
 * - The caller's own credential is never forwarded: the upstream client
 *   builds its headers only from this service.
 * - A secret holding CR/LF/NUL, or a token response without `access_token`,
 *   is refused without echoing the value.
 *
 * @since 0.1.0
 */
import { SecretCache } from "@janus/storage"
import { Cache, Context, Duration, Effect, Exit, Layer, Redacted } from "effect"
import { HttpClientRequest } from "effect/http"
import { credentialValue } from "../egress/EgressConnection.ts"
import type { AllowList } from "../egress/EgressPolicy.ts"
import { UpstreamError } from "./Errors.ts"
import { UpstreamHttp } from "./UpstreamHttp.ts"

/** OAuth 2.0 client credentials against the upstream's authorization server. */
export interface OAuthClientCredentials {
  readonly scheme: "oauth-client-credentials"
  readonly tokenUrl: string
  readonly clientId: string
  /** Name of the secret holding the client secret. */
  readonly secret: string
  readonly scope?: string | undefined
  readonly audience?: string | undefined
}

/** How Janus authenticates to an upstream (storage's `McpConnectionAuth`, or an override). */
export type UpstreamAuthConfig =
  | { readonly scheme: "none" }
  | { readonly scheme: "bearer"; readonly secret: string }
  | { readonly scheme: "header"; readonly header: string; readonly secret: string }
  | { readonly scheme: "basic"; readonly username: string; readonly secret: string }
  | OAuthClientCredentials

/** Who is asking: the connection's name (errors), id (cache key), upstream URL and allow-list. */
export interface AuthTarget {
  readonly id: string
  readonly name: string
  readonly url: string
  readonly allow: AllowList
}

const MAX_TOKEN_RESPONSE = 64 * 1024
const SKEW = Duration.seconds(30)
const DEFAULT_LIFETIME = Duration.minutes(5)

interface Token {
  readonly value: Redacted.Redacted<string>
  readonly lifetime: Duration.Duration
}

export class UpstreamAuth extends Context.Service<UpstreamAuth, {
  /** The request headers that carry Janus's credential (lower-case names). */
  readonly headers: (
    target: AuthTarget,
    auth: UpstreamAuthConfig
  ) => Effect.Effect<Readonly<Record<string, string>>, UpstreamError>
  /** Drops the cached OAuth token of a connection (after a 401). */
  readonly invalidate: (target: AuthTarget, auth: UpstreamAuthConfig) => Effect.Effect<void>
}>()("@janus/gateway/federation/UpstreamAuth") {
  static readonly layer: Layer.Layer<UpstreamAuth, never, SecretCache | UpstreamHttp> = Layer.effect(
    UpstreamAuth,
    Effect.gen(function*() {
      const secrets = yield* SecretCache
      const http = yield* UpstreamHttp

      const reveal = (target: AuthTarget, name: string) =>
        secrets.reveal(name).pipe(
          Effect.mapError((error) =>
            new UpstreamError({
              connection: target.name,
              kind: "refused",
              detail: error._tag === "SecretNotFound"
                ? `the secret "${name}" that authenticates Janus to this upstream does not exist`
                : `the secret "${name}" could not be read (${error._tag})`
            })
          )
        )

      const unsafe = (target: AuthTarget, name: string) =>
        new UpstreamError({
          connection: target.name,
          kind: "refused",
          detail: `the secret "${name}" cannot be sent in a header (it contains a line break or NUL)`
        })

      interface TokenKey {
        readonly target: AuthTarget
        readonly auth: OAuthClientCredentials
      }
      const keyOf = (target: AuthTarget, auth: OAuthClientCredentials) =>
        JSON.stringify([target.id, target.url, auth.tokenUrl, auth.clientId, auth.secret, auth.scope, auth.audience])
      const pending = new Map<string, TokenKey>()

      const fetchToken = (key: string): Effect.Effect<Token, UpstreamError> =>
        Effect.gen(function*() {
          const { auth, target } = pending.get(key)!
          const fail = (detail: string) =>
            new UpstreamError({ connection: target.name, kind: "refused", detail: `OAuth token request: ${detail}` })
          const clientSecret = yield* reveal(target, auth.secret)
          const basic = Buffer.from(
            `${encodeURIComponent(auth.clientId)}:${encodeURIComponent(Redacted.value(clientSecret))}`
          ).toString("base64")
          const form: Record<string, string> = { grant_type: "client_credentials", resource: target.url }
          if (auth.scope !== undefined) form.scope = auth.scope
          if (auth.audience !== undefined) form.audience = auth.audience
          const request = HttpClientRequest.post(auth.tokenUrl).pipe(
            HttpClientRequest.setHeaders({ authorization: `Basic ${basic}`, accept: "application/json" }),
            HttpClientRequest.bodyUrlParams(form)
          )
          const body = yield* Effect.scoped(Effect.gen(function*() {
            const response = yield* http.execute(target.name, target.allow, request)
            const text = yield* response.text.pipe(
              Effect.mapError(() => fail("the authorization server's answer could not be read"))
            )
            if (text.length > MAX_TOKEN_RESPONSE) return yield* fail("the answer is too large")
            if (response.status !== 200) {
              let error = ""
              try {
                const parsed = JSON.parse(text) as { error?: unknown }
                if (typeof parsed.error === "string") error = ` (${parsed.error.slice(0, 100)})`
              } catch {
                // not JSON: the status says enough
              }
              return yield* fail(`the authorization server answered HTTP ${response.status}${error}`)
            }
            return text
          })).pipe(Effect.timeout("10 seconds"), Effect.catchTag("TimeoutError", () => Effect.fail(fail("timed out"))))
          let parsed: { access_token?: unknown; token_type?: unknown; expires_in?: unknown }
          try {
            parsed = JSON.parse(body)
          } catch {
            return yield* fail("the answer is not JSON")
          }
          if (typeof parsed.access_token !== "string" || parsed.access_token === "") {
            return yield* fail("the answer has no access_token")
          }
          if (typeof parsed.token_type === "string" && parsed.token_type.toLowerCase() !== "bearer") {
            return yield* fail(`token_type "${parsed.token_type.slice(0, 40)}" is not Bearer`)
          }
          const expiresIn = typeof parsed.expires_in === "number" && parsed.expires_in > 0
            ? Duration.seconds(parsed.expires_in)
            : DEFAULT_LIFETIME
          const lifetime = Duration.isGreaterThan(expiresIn, SKEW) ? Duration.subtract(expiresIn, SKEW) : Duration.zero
          return { value: Redacted.make(parsed.access_token), lifetime }
        })

      const tokens = yield* Cache.makeWith(fetchToken, {
        capacity: 10_000,
        timeToLive: (exit) => Exit.isSuccess(exit) ? exit.value.lifetime : Duration.zero
      })

      const headers = (target: AuthTarget, auth: UpstreamAuthConfig) =>
        Effect.gen(function*(): Effect.fn.Return<Readonly<Record<string, string>>, UpstreamError> {
          switch (auth.scheme) {
            case "none":
              return {}
            case "bearer": {
              const value = credentialValue({ _tag: "Bearer" }, yield* reveal(target, auth.secret))
              if (value === undefined) return yield* unsafe(target, auth.secret)
              return { authorization: value }
            }
            case "header": {
              const value = credentialValue({ _tag: "Header", name: auth.header }, yield* reveal(target, auth.secret))
              if (value === undefined) return yield* unsafe(target, auth.secret)
              return { [auth.header.toLowerCase()]: value }
            }
            case "basic": {
              const value = credentialValue(
                { _tag: "Basic", username: auth.username },
                yield* reveal(target, auth.secret)
              )
              if (value === undefined) return yield* unsafe(target, auth.secret)
              return { authorization: value }
            }
            case "oauth-client-credentials": {
              const key = keyOf(target, auth)
              pending.set(key, { target, auth })
              const token = yield* Cache.get(tokens, key)
              const value = credentialValue({ _tag: "Bearer" }, token.value)
              if (value === undefined) return yield* unsafe(target, auth.secret)
              return { authorization: value }
            }
          }
        })

      return UpstreamAuth.of({
        headers,
        invalidate: (target, auth) =>
          auth.scheme === "oauth-client-credentials" ? Cache.invalidate(tokens, keyOf(target, auth)) : Effect.void
      })
    })
  )
}
