/**
 * What a caller sends downstream and what it gets back.
 *
 * **Rules**
 *
 * - `path` starts with `/` and is appended to the connection's base URL, so
 *   no argument can change the host the connection points at (`@evil`,
 *   `//evil` and `\\evil` all stay in the path).
 * - The secret is passed per call as `Redacted` (it comes from the secret
 *   cache, not the connection) and is only unwrapped into the one header
 *   undici writes to the socket.
 * - The response is plain data: status, headers, body bytes. It holds no
 *   reference to the request, so no credential can leak through it.
 *
 * @since 0.1.0
 */
import type { Redacted } from "effect"
import type { HttpMethod, UrlParams } from "effect/http"

export interface DownstreamRequest {
  readonly method: HttpMethod.HttpMethod
  /** Begins with `/`; appended to the base URL's path. */
  readonly path: string
  readonly query?: UrlParams.Input | undefined
  /** Caller headers; hop-by-hop headers, `host` and the credential header are dropped. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body?: Uint8Array | string | undefined
  readonly contentType?: string | undefined
  /** The endpoint is marked idempotent: POST/PATCH may be retried too. */
  readonly idempotent?: boolean | undefined
  /** The connection's credential, injected according to its auth scheme. */
  readonly secret?: Redacted.Redacted<string> | undefined
  /** Aborting it aborts the in-flight request and fails the call with `DownstreamCancelled`. */
  readonly signal?: AbortSignal | undefined
  /**
   * The identity whose call this is (`Caller.id`), for the circuit breakers:
   * one caller's failures open only its own circuit. Absent: the gateway's own call.
   */
  readonly caller?: string | undefined
}

export interface DownstreamResponse {
  readonly status: number
  /** Lower-case names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  /** The URL that answered, after redirects. */
  readonly url: string
  /** Attempts made, retries included. */
  readonly attempts: number
  /** Redirects followed by the attempt that answered. */
  readonly redirects: number
}
