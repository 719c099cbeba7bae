/**
 * One upstream request from start to result, the same on every transport:
 * the transport only says how a request body travels and how its response
 * comes back.
 *
 * **Rules**
 *
 * - Ids are the session's own increasing numbers. A request that reports
 *   progress carries `_meta.progressToken = "janus-<id>"`; the caller's
 *   `_meta` is kept, and `meta` (the 2026-07-28 protocol fields) added.
 * - A JSON-RPC error answer fails with kind `rpc`; a result that is not an
 *   object is `unavailable`.
 * - `recover` may turn one failure into one retry (a 2025 session
 *   re-established after 404, a fresh OAuth token after 401).
 * - Every request is bounded by its `timeout` (default: the session's);
 *   interrupting it runs `cancel` for its id (fire and forget).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Predicate, type Scope } from "effect"
import { unavailable, UpstreamError } from "../Errors.ts"
import type { MessageRouter, PendingCall } from "./MessageRouter.ts"
import type { RequestOptions } from "./Session.ts"
import * as Wire from "./Wire.ts"

export interface RequestConfig {
  readonly connection: string
  readonly router: MessageRouter
  readonly requestTimeout: Duration.Duration
  /** The next request id; by default a counter of these requests' own, from 1. */
  readonly nextId?: (() => number) | undefined
  /** `_meta` fields every request carries (2026-07-28), if any; by default none. */
  readonly meta?: ((options: RequestOptions | undefined) => Wire.Params | undefined) | undefined
  /** Sends the encoded request and resolves to its response. */
  readonly exchange: (
    call: PendingCall,
    body: string,
    method: string,
    params: Wire.Params
  ) => Effect.Effect<Wire.Response, UpstreamError>
  /** Tells the upstream that request `id` was cancelled, if the revision does that. */
  readonly cancel?: ((id: Wire.Id) => Effect.Effect<void>) | undefined
  /** A recovery that makes one failure worth one retry, or `undefined`. */
  readonly recover?: ((error: UpstreamError) => Effect.Effect<void, UpstreamError> | undefined) | undefined
}

/** The `cancel` of revisions that announce it: `notifications/cancelled`, sent in the background. */
export const notifyCancelled = (
  notify: (method: string, params: Wire.Params) => Effect.Effect<void, UpstreamError>,
  scope: Scope.Scope
) =>
(id: Wire.Id): Effect.Effect<void> =>
  notify("notifications/cancelled", { requestId: id, reason: "the client cancelled the call" }).pipe(
    Effect.timeout("2 seconds"),
    Effect.ignore,
    Effect.forkIn(scope),
    Effect.asVoid
  )

export const make = (config: RequestConfig) => {
  let counter = 1
  const nextId = config.nextId ?? (() => counter++)
  const once = (method: string, params: Wire.Params, options: RequestOptions | undefined) =>
    Effect.suspend(() => {
      const id = nextId()
      return Effect.acquireUseRelease(
        config.router.open(id, options),
        (call) =>
          Effect.gen(function*() {
            const meta: Record<string, unknown> = { ...(Predicate.isReadonlyObject(params._meta) ? params._meta : {}) }
            const extra = config.meta?.(options)
            if (extra !== undefined) Object.assign(meta, extra)
            if (call.progressToken !== undefined) meta.progressToken = call.progressToken
            const body = Wire.encodeRequest(
              id,
              method,
              Object.keys(meta).length === 0 ? params : { ...params, _meta: meta }
            )
            const response = yield* config.exchange(call, body, method, params)
            if (response.error !== undefined) return yield* Wire.rpcError(config.connection, response.error)
            if (!Predicate.isReadonlyObject(response.result)) {
              return yield* unavailable(config.connection, `the upstream's ${method} result is not an object`)
            }
            return response.result
          }),
        (call) => config.router.close(call)
      ).pipe(Effect.onInterrupt(() => config.cancel?.(id) ?? Effect.void))
    })

  return (
    method: string,
    params: Wire.Params,
    options?: RequestOptions
  ): Effect.Effect<Wire.Params, UpstreamError> => {
    const attempt = once(method, params, options)
    const timeout = options?.timeout ?? config.requestTimeout
    return attempt.pipe(
      Effect.catch((error) => {
        const recovery = config.recover?.(error)
        return recovery === undefined ? Effect.fail(error) : Effect.andThen(recovery, attempt)
      }),
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () =>
          Effect.fail(
            new UpstreamError({
              connection: config.connection,
              kind: "timeout",
              detail: `${method} got no answer within ${Duration.format(timeout)}`
            })
          )
      })
    )
  }
}
