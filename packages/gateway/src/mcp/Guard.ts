/**
 * The hook points of the tools/call hot path that belong to auth and load
 * shedding, in the order SPEC.md fixes:
 *
 * per-IP limiter -> authenticate -> per-identity limiter -> authorize the tool
 * -> concurrency permit -> resolve the tool -> ... (the catalog's `call`).
 *
 * `admit` runs once per HTTP request before the body is read (per-IP limiter,
 * authenticate, per-identity limiter) and yields the {@link Caller};
 * `guardCall` wraps every `tools/call` (authorize, concurrency permit) around
 * the catalog call, which resolves the tool and does the rest. The default
 * layer admits everyone as the anonymous caller with no limits; the auth and
 * limits work replaces it.
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer } from "effect"
import type { Headers } from "effect/http"
import * as Caller from "./Caller.ts"
import type { ToolCallRefused } from "./ToolCatalog.ts"

/** What `admit` sees of an HTTP request (the body is not read yet). */
export interface AdmissionRequest {
  readonly method: string
  readonly url: string
  readonly headers: Headers.Headers
  readonly remoteAddress: string | undefined
}

/**
 * An HTTP-level refusal (401 unauthenticated, 403 forbidden, 429 rate limited,
 * 503 shed). `message` is user-visible; `headers` carries e.g.
 * `WWW-Authenticate` or `Retry-After`.
 */
export class AdmissionRefused extends Data.TaggedError("AdmissionRefused")<{
  readonly status: 401 | 403 | 429 | 503
  readonly message: string
  readonly headers?: Readonly<Record<string, string>> | undefined
}> {}

/** @since 0.1.0 */
export class McpGuard extends Context.Service<McpGuard, {
  /** per-IP limiter -> authenticate -> per-identity limiter. */
  readonly admit: (request: AdmissionRequest) => Effect.Effect<Caller.Caller, AdmissionRefused>
  /** authorize the tool -> concurrency permit, then `call` (resolve -> ...). */
  readonly guardCall: <A, E, R>(
    caller: Caller.Caller,
    toolName: string,
    call: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | ToolCallRefused, R>
}>()("@janus/gateway/mcp/McpGuard") {
  /** Everyone is the anonymous caller; no limits. */
  static readonly layerAnonymous: Layer.Layer<McpGuard> = Layer.succeed(
    McpGuard,
    McpGuard.of({
      admit: () => Effect.succeed(Caller.anonymous),
      guardCall: (_caller, _toolName, call) => call
    })
  )
}
