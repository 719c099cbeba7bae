/**
 * The OAuth 2.1 resource server wired together: the validated settings
 * (`OAuthConfig`), the JWKS cache (its background refresh lives as long as
 * the layer) and the verifier (`JwtVerifier`).
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import type { HttpClient } from "effect/http"
import { JwksCache } from "./JwksCache.ts"
import { JwtVerifier } from "./JwtVerifier.ts"
import { OAuthConfig, type OAuthConfigError, type OAuthOptions } from "./OAuthOptions.ts"

/**
 * Everything the resource server needs at run time: the validated settings,
 * the JWKS cache (its background refresh lives as long as the layer) and the
 * verifier. Fails at build with every configuration mistake.
 */
export const OAuthLayer = (
  options: OAuthOptions
): Layer.Layer<OAuthConfig | JwksCache | JwtVerifier, OAuthConfigError, HttpClient.HttpClient> =>
  JwtVerifier.layer.pipe(
    Layer.provideMerge(JwksCache.layer),
    Layer.provideMerge(OAuthConfig.layer(options))
  )
