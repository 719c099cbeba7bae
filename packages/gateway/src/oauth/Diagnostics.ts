/**
 * What `janus doctor` finds at each trusted authorization server: its
 * metadata and its signing keys, fetched as the gateway would fetch them.
 *
 * **Rules**
 *
 * - Each issuer's metadata is discovered from the issuer MCP clients are sent
 *   to (RFC 8414, then OpenID Discovery, as `AuthorizationServerMetadata`
 *   does); then its JWKS (the configured URL, or the metadata's `jwks_uri`)
 *   is fetched, or the operator's own set (inline or file) read, and its
 *   public signing keys counted.
 * - Missing metadata fails the issuer when Janus needs it to find the keys
 *   (no JWKS URL or own set configured); otherwise it is a warning: Janus can
 *   check tokens, but MCP clients cannot discover where to get one.
 * - Keys that cannot be fetched, or a set without a public signing key, fail
 *   the issuer: `serve` would answer 503 to every token it issued.
 * - Only reads; each fetch bounded by the OAuth HTTP timeout.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { HttpClient } from "effect/http"
import { discover, type DiscoveredMetadata } from "./AuthorizationServerMetadata.ts"
import { fetchKeySet, localKeySet } from "./JwksCache.ts"
import type { AuthorizationServer, OAuthSettings } from "./OAuthOptions.ts"

/** The verdict on one issuer. */
export interface IssuerDiagnosis {
  readonly issuer: string
  readonly verdict: "ok" | "warn" | "FAIL"
  /** What was found, or what failed, in one line. */
  readonly detail: string
  /** The metadata found, for the checks of what MCP clients need of the provider. */
  readonly metadata?: DiscoveredMetadata | undefined
}

const diagnoseOne = (server: AuthorizationServer, settings: OAuthSettings) =>
  Effect.gen(function*() {
    const notes: Array<string> = []
    // keys the operator gave (inline or a file) are read, not fetched
    const local = localKeySet(server)
    const metadata = yield* Effect.result(discover(server.advertised, {
      timeout: settings.httpTimeout,
      allowInsecureHttp: server.allowInsecureHttp,
      alsoAccept: server.template === undefined ? [] : [server.issuer]
    }))
    if (metadata._tag === "Success") {
      notes.push(`metadata at ${metadata.success.metadataUrl}`)
    } else if (server.jwksUri === undefined && local === undefined) {
      return {
        issuer: server.issuer,
        verdict: "FAIL",
        detail:
          `no usable metadata, so no signing keys: ${metadata.failure.message}; set its JWKS URL or fix the issuer`
      } satisfies IssuerDiagnosis
    } else {
      notes.push(`no usable metadata, so MCP clients cannot discover it (${metadata.failure.message})`)
    }
    const uri = server.jwksUri ?? (metadata._tag === "Success" ? metadata.success.jwks_uri : "")
    const keys = yield* Effect.result(local ?? fetchKeySet(uri, settings.httpTimeout))
    if (keys._tag === "Failure") {
      return {
        issuer: server.issuer,
        verdict: "FAIL",
        detail: `${notes.join("; ")}; signing keys not fetched: ${keys.failure}`,
        metadata: metadata._tag === "Success" ? metadata.success : undefined
      } satisfies IssuerDiagnosis
    }
    const kids = [...keys.success.kids]
    notes.push(
      `${keys.success.keyCount} signing key(s) at ${keys.success.uri}` +
        (kids.length === 0 ? "" : ` (kid ${kids.join(", ")})`)
    )
    return {
      issuer: server.issuer,
      verdict: metadata._tag === "Success" ? "ok" : "warn",
      detail: notes.join("; "),
      metadata: metadata._tag === "Success" ? metadata.success : undefined
    } satisfies IssuerDiagnosis
  })

/** Every trusted issuer's diagnosis, in configuration order, fetched concurrently. */
export const diagnose = (
  settings: OAuthSettings
): Effect.Effect<ReadonlyArray<IssuerDiagnosis>, never, HttpClient.HttpClient> =>
  Effect.forEach([...settings.authorizationServers.values()], (server) => diagnoseOne(server, settings), {
    concurrency: "unbounded"
  })
