/**
 * HTTP to upstream MCP servers, through the same egress guard as REST calls.
 *
 * **Rules**
 *
 * - Sockets come from the egress layer's `SafeDispatcher` (one pool per
 *   allow-list): every host name is resolved by the `Resolver` and each
 *   answer checked by `EgressPolicy.checkResolved` at connect time, so the
 *   address checked is the address dialled.
 * - Every request URL is checked by `EgressPolicy.checkUrl` first (scheme,
 *   user info, localhost names, IP literals, which Node never resolves). This
 *   includes the message endpoint an HTTP+SSE server names in its `endpoint`
 *   event, and every later request of a session.
 * - Redirects are not followed: an MCP endpoint that redirects is a
 *   misconfiguration (and a redirect is a way around the URL check).
 * - Undici's own header/body timeouts are off for this pool: upstream streams
 *   (`subscriptions/listen`, the 2025 GET stream, HTTP+SSE) stay open and
 *   idle for long stretches. Every exchange is bounded by `Effect.timeout`
 *   in the client instead, and every message by a size limit.
 * - A response lives as long as the `Scope` of the exchange: closing it (the
 *   exchange finished, failed or was interrupted) aborts the request.
 * - Transport failures become `UpstreamError`s without the request (which
 *   holds the credential): an `EgressRefused` becomes kind `refused`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result, type Scope } from "effect"
import { HttpClient, type HttpClientError, type HttpClientRequest, type HttpClientResponse } from "effect/http"
import { AllowList, EgressPolicy } from "../egress/EgressPolicy.ts"
import { Resolver } from "../egress/Resolver.ts"
import { SafeDispatcher } from "../egress/SafeDispatcher.ts"
import { facts } from "../egress/TransportFacts.ts"
import { UpstreamError } from "./Errors.ts"

/** Undici's "no limit" for `maxResponseSize`; the client bounds each message itself. */
const UNLIMITED = -1

export class UpstreamHttp extends Context.Service<UpstreamHttp, {
  /** The compiled allow-list of a connection (`null`: the global policy only). */
  readonly allowList: (
    connection: string,
    entries: ReadonlyArray<string> | null
  ) => Effect.Effect<AllowList, UpstreamError>
  /**
   * Sends `request` (its URL checked first); the response is aborted when the
   * enclosing scope closes. Any status is a success: the caller judges it.
   */
  readonly execute: (
    connection: string,
    allow: AllowList,
    request: HttpClientRequest.HttpClientRequest
  ) => Effect.Effect<HttpClientResponse.HttpClientResponse, UpstreamError, Scope.Scope>
}>()("@janus/gateway/federation/UpstreamHttp") {
  /** Over a resolver (the system's in production, a table in tests). */
  static readonly layer: Layer.Layer<UpstreamHttp, never, EgressPolicy | Resolver> = Layer.effect(
    UpstreamHttp,
    Effect.gen(function*() {
      const policy = yield* EgressPolicy
      const dispatcher = yield* SafeDispatcher
      const allowList = (connection: string, entries: ReadonlyArray<string> | null) => {
        const compiled = AllowList.make(entries ?? [])
        return Result.isSuccess(compiled)
          ? Effect.succeed(compiled.success)
          : Effect.fail(new UpstreamError({ connection, kind: "refused", detail: compiled.failure }))
      }
      const execute = (connection: string, allow: AllowList, request: HttpClientRequest.HttpClientRequest) =>
        Effect.suspend(() => {
          let url: URL
          try {
            url = new URL(request.url)
          } catch {
            return Effect.fail(
              new UpstreamError({ connection, kind: "refused", detail: "the upstream URL is not a valid URL" })
            )
          }
          const refused = policy.checkUrl(url, allow, "url")
          if (refused !== undefined) {
            return Effect.fail(new UpstreamError({ connection, kind: "refused", detail: refused.message }))
          }
          const client = HttpClient.withScope(dispatcher.clientFor(allow, UNLIMITED))
          return client.execute(request).pipe(
            Effect.mapError((error) => fromHttpClientError(connection, url.origin, error))
          )
        })
      return UpstreamHttp.of({ allowList, execute })
    })
  ).pipe(Layer.provide(SafeDispatcher.layer({ headersTimeout: 0, bodyTimeout: 0, connectionsPerHost: 32 })))

  /** Over the operating system's resolver. */
  static readonly layerSystem: Layer.Layer<UpstreamHttp, never, EgressPolicy> = UpstreamHttp.layer.pipe(
    Layer.provide(Resolver.layerSystem)
  )
}

const fromHttpClientError = (
  connection: string,
  origin: string,
  error: HttpClientError.HttpClientError
): UpstreamError => {
  const found = facts(error.reason.cause)
  if (found.refused !== undefined) {
    return new UpstreamError({ connection, kind: "refused", detail: found.refused.message })
  }
  if (found.code === "UND_ERR_CONNECT_TIMEOUT") {
    return new UpstreamError({ connection, kind: "timeout", detail: `${origin} did not accept a connection in time` })
  }
  const detail = found.message === undefined ? found.code ?? error.reason._tag : found.message.slice(0, 200)
  const reason = found.code === undefined || detail.includes(found.code) ? detail : `${found.code}: ${detail}`
  return new UpstreamError({ connection, kind: "unavailable", detail: `${origin} is unreachable (${reason})` })
}
