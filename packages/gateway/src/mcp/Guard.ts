/**
 * The hook points of the tools/call hot path that belong to auth and load
 * shedding, in the order SPEC.md fixes:
 *
 * per-IP limiter -> authenticate -> per-identity limiter -> authorize the tool
 * -> concurrency permit -> resolve the tool -> ... (the catalog's `call`).
 *
 * `admit` runs once per HTTP request before the body is read (per-IP limiter,
 * authenticate, per-identity limiter) and yields the {@link Caller};
 * `admitMessage` charges the limiters for each further message of a JSON-RPC
 * batch (one request carrying N messages costs what N requests cost);
 * `guardCall` wraps every `tools/call` (and `resources/read`, `prompts/get`,
 * `completion/complete`, resource subscriptions) (authorize, concurrency permit) around
 * the catalog call, which resolves the tool and does the rest. The default
 * layer admits everyone as the anonymous caller with no limits; the auth and
 * limits work replaces it. `holdStream` caps the long-lived streams one
 * identity holds open (see `calls/CallGuard.ts`).
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer, type Scope } from "effect"
import type { Headers, HttpServerRequest } from "effect/http"
import * as Caller from "./Caller.ts"
import type { ToolCallRefused } from "./ToolCatalog.ts"

/** What `admit` sees of an HTTP request (the body is not read yet). */
export interface AdmissionRequest {
  readonly method: string
  readonly url: string
  readonly headers: Headers.Headers
  readonly remoteAddress: string | undefined
}

/** What admission sees of `request`. */
export const admissionRequest = (request: HttpServerRequest.HttpServerRequest): AdmissionRequest => ({
  method: request.method,
  url: request.url,
  headers: request.headers,
  remoteAddress: request.remoteAddress._tag === "Some" ? request.remoteAddress.value : undefined
})

/**
 * An HTTP-level refusal (400 more than one credential, 401 unauthenticated,
 * 403 forbidden, 429 rate limited, 503 shed). `message` is user-visible; `headers` carries e.g.
 * `WWW-Authenticate` or `Retry-After`.
 */
export class AdmissionRefused extends Data.TaggedError("AdmissionRefused")<{
  readonly status: 400 | 401 | 403 | 429 | 503
  readonly message: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** A rate limit's refusal: when a token is available again. */
  readonly retryAfterMs?: number | undefined
  /** A rate limit's refusal: which bucket (`ip`, `identity`, `auth_failure`), for the audit record. */
  readonly bucket?: string | undefined
  /** An authentication's refusal: why, for the audit record (`auth/RefusalReason.ts`). */
  readonly reason?: string | undefined
  /** Who was refused, when authentication had already succeeded (the per-identity limit). */
  readonly caller?: Caller.Caller | undefined
}> {}

/** @since 0.1.0 */
export class McpGuard extends Context.Service<McpGuard, {
  /** per-IP limiter -> authenticate -> per-identity limiter. */
  readonly admit: (request: AdmissionRequest) => Effect.Effect<Caller.Caller, AdmissionRefused>
  /**
   * One more message of an admitted request (each message of a JSON-RPC batch
   * after the first): one token of the per-IP and per-identity limits.
   */
  readonly admitMessage: (request: AdmissionRequest, caller: Caller.Caller) => Effect.Effect<void, AdmissionRefused>
  /**
   * `admitted` (a batch message's `admitMessage`, if any) -> authorize the
   * tool -> concurrency permit, then `call` (resolve -> ...); every refusal
   * among them is audited.
   */
  readonly guardCall: <A, E, R>(
    caller: Caller.Caller,
    toolName: string,
    call: Effect.Effect<A, E, R>,
    admitted?: Effect.Effect<void, ToolCallRefused> | undefined,
    /** The MCP method audited (default `tools/call`; also `resources/read`, `prompts/get`, ...). */
    method?: string | undefined
  ) => Effect.Effect<A, E | ToolCallRefused, R>
  /**
   * One of `caller`'s open-stream permits (`MCP_MAX_STREAMS_PER_CALLER`), taken
   * before a long-lived stream (GET stream, legacy `/sse`,
   * `subscriptions/listen`) is opened and held by the current scope (the
   * request's, which closes when the response stream ends); a 429 refusal,
   * audited, when the caller already holds its cap. Absent: no cap.
   */
  readonly holdStream?:
    | ((request: AdmissionRequest, caller: Caller.Caller) => Effect.Effect<void, AdmissionRefused, Scope.Scope>)
    | undefined
  /** How many stream permits `identity` (a `Caller.id`) holds now on this instance (diagnostics and tests). */
  readonly openStreams?: ((identity: string) => number) | undefined
}>()("@janus/gateway/mcp/McpGuard") {
  /** Everyone is the anonymous caller; no limits. */
  static readonly layerAnonymous: Layer.Layer<McpGuard> = Layer.succeed(
    McpGuard,
    McpGuard.of({
      admit: () => Effect.succeed(Caller.anonymous),
      admitMessage: () => Effect.void,
      guardCall: (_caller, _toolName, call, admitted) => admitted === undefined ? call : Effect.andThen(admitted, call)
    })
  )
}
