/**
 * The security services from the configuration: admission (per-IP limiter,
 * authentication by client token or OAuth JWT, per-identity limiter,
 * authorization), the OAuth resource server when `OAUTH_ENABLED`, and
 * redaction when `REDACTION_ENABLED`.
 *
 * **Rules**
 *
 * - Limits are global across instances when `REDIS_URL` is set; when Redis is
 *   down each instance falls back to its own buckets with the same limits
 *   (fail open, counted in `janus.limiter.fallback`): Redis is optional, and
 *   an outage must not take `/mcp` down.
 * - The OAuth module fetches issuers' metadata and JWKS with a plain HTTP
 *   client: those URLs come from the operator, not from callers, so they are
 *   not subject to the downstream egress guard.
 * - With OAuth on, the RFC 9728 metadata is served on every instance: it is
 *   derived from the configuration (and the virtual servers' names), so any
 *   replica answers the same document.
 *
 * @since 0.1.0
 */
import { ConfigCache } from "@janus/storage"
import { Effect, Layer, Option, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { Admission } from "./auth/index.ts"
import { JanusConfig } from "./config/JanusConfig.ts"
import { makeProtectedResourceMetadataRoutes, OAuthConfig, OAuthLayer } from "./oauth/index.ts"
import * as OAuthVariables from "./oauth/Variables.ts"
import { Redactor } from "./redaction/index.ts"

/** The OAuth services when enabled; nothing otherwise (admission and the admin API then accept tokens only). */
export const layerOAuth = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  if (!config.OAUTH_ENABLED) return Layer.empty
  // JanusConfig refuses OAUTH_ENABLED without OAUTH_RESOURCE and OAUTH_ISSUERS
  return OAuthLayer(OAuthVariables.options(config)).pipe(Layer.provide(FetchHttpClient.layer))
}))

/**
 * The RFC 9728 metadata routes when OAuth is on (the OAuth services are in
 * context), for `/mcp` and every virtual server that exists.
 */
export const layerProtectedResourceMetadata = Layer.unwrap(Effect.gen(function*() {
  const oauth = yield* Effect.serviceOption(OAuthConfig)
  if (Option.isNone(oauth)) return Layer.empty
  const config = yield* ConfigCache
  return makeProtectedResourceMetadataRoutes({
    virtualServerExists: (name) => Effect.map(config.snapshot, (snapshot) => snapshot.virtualServerByName.has(name))
  }).pipe(Layer.provide(Layer.succeed(OAuthConfig, oauth.value)))
}))

export const layerAdmission = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  return Admission.layer({
    requireAuth: !config.JANUS_ALLOW_ANONYMOUS,
    trustedProxies: config.JANUS_TRUSTED_PROXIES,
    limits: {
      ip: { rate: config.RATE_LIMIT_IP, burst: config.RATE_LIMIT_IP_BURST },
      identity: { rate: config.RATE_LIMIT_IDENTITY, burst: config.RATE_LIMIT_IDENTITY_BURST },
      authFailure: { rate: config.RATE_LIMIT_AUTH_FAILURES / 60, burst: config.RATE_LIMIT_AUTH_FAILURES_BURST },
      redis: Option.match(config.REDIS_URL, {
        onNone: () => undefined,
        onSome: (url) => ({ url: Redacted.value(url), timeout: config.REDIS_TIMEOUT })
      })
    },
    oauth: config.OAUTH_ENABLED
  })
}))

export const layerRedactor = Layer.unwrap(
  Effect.map(
    Effect.service(JanusConfig),
    (config) => config.REDACTION_ENABLED ? Redactor.layer({ enabled: true }) : Redactor.layerDisabled
  )
)
