/**
 * The egress-checked, pooled HTTP call of `tools/call`.
 *
 * **Rules**
 *
 * - Address checks at two points: the base URL (and every redirect target)
 *   before anything is sent, where IP literals are judged because Node never
 *   resolves them; and every new socket at connect time, where the resolved
 *   address is judged and dialled as is (`SafeDispatcher`).
 * - Redirects are followed by hand, at most `maxRedirects` (default 5), each
 *   target re-checked like a base URL; credentials are dropped once a
 *   redirect leaves the connection's origin; 303 (and 301/302 after POST)
 *   become GET without a body, as browsers do. Following them (rather than
 *   returning the 3xx) keeps http->https and moved-API redirects working,
 *   and doing it here rather than in undici lets every hop be checked.
 * - Order of the guards, outermost first: cancellation (the caller's
 *   `AbortSignal`), circuit breaker, total timeout, retries, redirects, one
 *   exchange. The breaker therefore sees one outcome per call and the total
 *   timeout bounds retries and backoff too.
 * - Statuses are data: a 4xx/5xx answer is a `DownstreamResponse`, only the
 *   failures in `Errors.ts` are errors.
 * - Response bodies are read up to `maxResponseBytes` (default 10 MiB); past
 *   that undici drops the response and the call fails with `ResponseTooLarge`.
 * - Caller headers cannot set `host`, hop-by-hop headers or the credential
 *   header; the request path must begin with `/` and hold no `.`/`..`
 *   segment, so it stays under the base URL's path.
 * - Hot path: everything that depends only on the connection (parsed base,
 *   allow-list, pooled client, breaker, retry schedule, header names) is
 *   computed once by `prepare` and memoised per connection object; a call
 *   on a warm pooled socket does no DNS lookup and no URL check (the path is
 *   appended to a checked base and cannot change its host).
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Option, Result } from "effect"
import { Headers, HttpBody, HttpClient, HttpClientError, HttpClientRequest, UrlParams } from "effect/http"
import { type Breaker, Breakers } from "./Breakers.ts"
import {
  authProblem,
  type AuthScheme,
  credentialHeader,
  credentialValue,
  defaultTimeout,
  type EgressConnection
} from "./EgressConnection.ts"
import { AllowList, EgressPolicy } from "./EgressPolicy.ts"
import {
  DownstreamCancelled,
  type DownstreamError,
  DownstreamTimeout,
  DownstreamUnavailable,
  InvalidEgressConfig,
  ResponseTooLarge,
  UnsendableRequest
} from "./Errors.ts"
import type { DownstreamRequest, DownstreamResponse } from "./Exchange.ts"
import { isRetryable, mayRetry, RetryableStatus, retryOptions } from "./RetryPolicy.ts"
import { SafeDispatcher, type Timeouts } from "./SafeDispatcher.ts"
import { facts } from "./TransportFacts.ts"

/** Client-wide settings. */
export interface DownstreamClientOptions {
  /** Redirects followed per attempt; 0 returns 3xx answers as data. Default 5. */
  readonly maxRedirects?: number | undefined
  /** Default response body limit, overridable per connection. Default 10 MiB. */
  readonly maxResponseBytes?: number | undefined
}

/** A connection with everything a call needs computed once. */
export interface PreparedConnection {
  readonly id: string
  readonly origin: string
  /** Base URL without a trailing slash; a call's path is appended to it. */
  readonly base: string
  readonly allow: AllowList
  readonly auth: AuthScheme
  readonly credentialHeader: string | undefined
  readonly timeout: Duration.Duration
  readonly timeoutMillis: number
  readonly retry: ReturnType<typeof retryOptions>
  readonly breaker: Breaker
  readonly maxResponseBytes: number
  readonly client: HttpClient.HttpClient
}

export class DownstreamClient extends Context.Service<DownstreamClient, {
  /**
   * Validates a connection's egress settings and computes what every call
   * needs. Fails when the base URL is refused or a setting is unusable.
   */
  readonly prepare: (connection: EgressConnection) => Effect.Effect<PreparedConnection, DownstreamError>
  /** Calls through a prepared connection. */
  readonly execute: (
    connection: PreparedConnection,
    request: DownstreamRequest
  ) => Effect.Effect<DownstreamResponse, DownstreamError>
  /**
   * Calls through a connection, preparing it on first use; the prepared form
   * is memoised per connection object (the config cache hands out the same
   * object until the connection changes).
   */
  readonly call: (
    connection: EgressConnection,
    request: DownstreamRequest
  ) => Effect.Effect<DownstreamResponse, DownstreamError>
}>()("@janus/gateway/egress/DownstreamClient") {
  static layer(
    options: DownstreamClientOptions = {}
  ): Layer.Layer<DownstreamClient, never, SafeDispatcher | EgressPolicy | Breakers> {
    return Layer.effect(DownstreamClient, make(options))
  }
}

// Headers a caller may not set: the connection decides the host, undici owns
// framing and connection management.
const droppedHeaders: ReadonlySet<string> = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "content-length",
  "te",
  "trailer",
  "upgrade",
  "expect"
])

// "." and ".." segments (also percent-encoded, also after a backslash, which
// the URL parser reads as "/") would walk out of the base URL's path.
const dotSegment = /[/\\](?:\.|%2e){1,2}(?:[/\\?#]|$)/i

const redirectStatuses: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])

const none: AuthScheme = { _tag: "None" }

const make = Effect.fnUntraced(function*(options: DownstreamClientOptions) {
  const policy = yield* EgressPolicy
  const dispatcher = yield* SafeDispatcher
  const breakers = yield* Breakers
  const maxRedirects = Math.max(0, Math.floor(options.maxRedirects ?? 5))
  const defaultMaxBytes = options.maxResponseBytes ?? 10 * 1024 * 1024
  const timeouts = dispatcher.timeouts

  const prepare = Effect.fnUntraced(function*(connection: EgressConnection) {
    const invalid = (message: string) => new InvalidEgressConfig({ connection: connection.id, message })
    const allow = AllowList.make(connection.allow ?? [])
    if (Result.isFailure(allow)) return yield* invalid(allow.failure)
    const problem = authProblem(connection.auth)
    if (problem !== undefined) return yield* invalid(problem)
    let url: URL
    try {
      url = new URL(connection.baseUrl)
    } catch {
      return yield* invalid("the base URL is not a valid URL")
    }
    if (url.search !== "" || url.hash !== "") return yield* invalid("the base URL cannot have a query or fragment")
    const refused = policy.checkUrl(url, allow.success, "url")
    if (refused !== undefined) return yield* refused
    const maxResponseBytes = connection.maxResponseBytes ?? defaultMaxBytes
    if (!Number.isInteger(maxResponseBytes) || maxResponseBytes < 0) {
      return yield* invalid("maxResponseBytes must be a non-negative integer")
    }
    const timeout = connection.timeout === undefined ? defaultTimeout : Duration.fromInputUnsafe(connection.timeout)
    const href = url.href
    return {
      id: connection.id,
      origin: url.origin,
      base: href.endsWith("/") ? href.slice(0, -1) : href,
      allow: allow.success,
      auth: connection.auth ?? none,
      credentialHeader: credentialHeader(connection.auth),
      timeout,
      timeoutMillis: Duration.toMillis(timeout),
      retry: retryOptions(connection.retry),
      breaker: yield* breakers.forConnection(connection.id, connection.breaker),
      maxResponseBytes,
      client: dispatcher.clientFor(allow.success, maxResponseBytes)
    } satisfies PreparedConnection
  })

  const execute = (
    prepared: PreparedConnection,
    request: DownstreamRequest
  ): Effect.Effect<DownstreamResponse, DownstreamError> => Effect.suspend(() => build(prepared, request))

  const build = (
    prepared: PreparedConnection,
    request: DownstreamRequest
  ): Effect.Effect<DownstreamResponse, DownstreamError> => {
    const invalid = (message: string) => Effect.fail(new InvalidEgressConfig({ connection: prepared.id, message }))
    if (request.signal?.aborted === true) return Effect.fail(new DownstreamCancelled({ connection: prepared.id }))
    if (!request.path.startsWith("/")) return invalid("the request path must begin with /")
    if (dotSegment.test(request.path)) return invalid("the request path cannot contain . or .. segments")
    const headers: Record<string, string> = {}
    if (request.headers !== undefined) {
      for (const name in request.headers) {
        const lower = name.toLowerCase()
        if (!droppedHeaders.has(lower) && lower !== prepared.credentialHeader) headers[lower] = request.headers[name]!
      }
    }
    if (prepared.credentialHeader !== undefined) {
      if (request.secret === undefined) return invalid("the connection's auth scheme needs a secret")
      const value = credentialValue(prepared.auth, request.secret)
      if (value === undefined) return invalid("the secret cannot be sent in a header (it holds a line break)")
      headers[prepared.credentialHeader] = value
    }
    const body = request.body === undefined
      ? HttpBody.empty
      : typeof request.body === "string"
      ? HttpBody.text(request.body, request.contentType)
      : HttpBody.uint8Array(request.body, request.contentType)
    const first = HttpClientRequest.makeWith(
      request.method,
      prepared.base + request.path,
      request.query === undefined ? UrlParams.empty : UrlParams.fromInput(request.query),
      noHash,
      Headers.fromRecordUnsafe(headers),
      body
    )

    const state = { attempts: 0 }
    const attempt = Effect.suspend(() => {
      state.attempts++
      return exchange(prepared, first, state.attempts)
    })
    let run: Effect.Effect<DownstreamResponse, DownstreamError>
    if (prepared.retry.times > 0 && mayRetry(request.method, request.idempotent === true)) {
      const checked = attempt.pipe(
        Effect.flatMap((response) =>
          response.status >= 500 ? Effect.fail(new RetryableStatus(response)) : Effect.succeed(response)
        )
      )
      const logged = (error: DownstreamError | RetryableStatus) =>
        isRetryable(error)
          ? Effect.logDebug("downstream attempt failed").pipe(
            Effect.annotateLogs({
              connection: prepared.id,
              attempt: state.attempts,
              failure: error._tag === "RetryableStatus" ? `status ${error.response.status}` : error._tag
            })
          )
          : Effect.void
      // The schedule only once an attempt failed: `Effect.retry` on a first attempt that succeeds cost ~22
      // effect steps per call (#19). Its first run replays that failure instead of sending again, so the
      // retries, their delays and the `while` test are exactly those of `Effect.retry(checked, ...)`.
      const retried = (failure: DownstreamError | RetryableStatus) => {
        let replay: DownstreamError | RetryableStatus | undefined = failure
        const again = Effect.suspend(() => {
          if (replay === undefined) return Effect.tapError(checked, logged)
          const error = replay
          replay = undefined
          return Effect.fail(error)
        })
        return Effect.andThen(logged(failure), Effect.retry(again, prepared.retry))
      }
      run = checked.pipe(
        Effect.catch((failure) => isRetryable(failure) ? retried(failure) : Effect.fail(failure)),
        Effect.catchTag("RetryableStatus", (error) => Effect.succeed(error.response))
      )
    } else {
      run = attempt
    }
    const guarded = prepared.breaker.run(
      Effect.timeoutOrElse(run, {
        duration: prepared.timeout,
        orElse: () =>
          Effect.fail(
            new DownstreamTimeout({
              connection: prepared.id,
              target: prepared.origin,
              phase: "total",
              timeoutMillis: prepared.timeoutMillis
            })
          )
      }),
      request.caller
    )
    return request.signal === undefined ? guarded : Effect.raceFirst(guarded, cancelled(prepared.id, request.signal))
  }

  // One attempt: the request and the redirects it leads to.
  const exchange = Effect.fnUntraced(function*(
    prepared: PreparedConnection,
    first: HttpClientRequest.HttpClientRequest,
    attempt: number
  ): Effect.fn.Return<DownstreamResponse, DownstreamError> {
    let request = first
    let origin = prepared.origin
    for (let redirects = 0;; redirects++) {
      const hop = yield* send(prepared, request, origin, attempt, redirects)
      if (hop._tag === "Response") return hop.response
      if (redirects >= maxRedirects) {
        return yield* new DownstreamUnavailable({
          connection: prepared.id,
          target: origin,
          reason: `more than ${maxRedirects} redirects`,
          transient: false
        })
      }
      let target: URL
      try {
        target = new URL(hop.location, hop.url)
      } catch {
        return yield* new DownstreamUnavailable({
          connection: prepared.id,
          target: origin,
          reason: "a redirect to an invalid URL",
          transient: false
        })
      }
      const refused = policy.checkUrl(target, prepared.allow, "redirect")
      if (refused !== undefined) return yield* refused
      const toGet = hop.status === 303 ? request.method !== "HEAD" : (hop.status === 301 || hop.status === 302) &&
        request.method === "POST"
      if (toGet) {
        request = HttpClientRequest.makeWith(
          "GET",
          request.url,
          request.urlParams,
          request.hash,
          request.headers,
          HttpBody.empty
        )
      }
      request = HttpClientRequest.setUrl(request, target)
      origin = target.origin
      if (origin !== prepared.origin && prepared.credentialHeader !== undefined) {
        request = HttpClientRequest.removeHeader(request, prepared.credentialHeader)
      }
    }
  })

  type Hop =
    | { readonly _tag: "Response"; readonly response: DownstreamResponse }
    | { readonly _tag: "Redirect"; readonly status: number; readonly location: string; readonly url: string }

  // One HTTP exchange. Bodies are read with one buffered read, bounded by
  // the agent's `maxResponseSize`. No scope and no stream: both abort the
  // request after a complete read, which costs an exception object per call
  // and can destroy the pooled socket. effect's client aborts the request
  // when the fiber is interrupted, before or during the read.
  const send = (
    prepared: PreparedConnection,
    request: HttpClientRequest.HttpClientRequest,
    origin: string,
    attempt: number,
    redirects: number
  ) =>
    prepared.client.execute(request).pipe(
      Effect.flatMap((response): Effect.Effect<Hop, HttpClientError.HttpClientError> => {
        const headers = response.headers // a getter that builds a new object
        const location = headers["location"]
        if (maxRedirects > 0 && location !== undefined && redirectStatuses.has(response.status)) {
          // Read the (small) redirect body so the socket goes back to the pool.
          return response.arrayBuffer.pipe(
            Effect.ignore,
            Effect.as<Hop>({ _tag: "Redirect", status: response.status, location, url: response.url })
          )
        }
        return Effect.map(response.arrayBuffer, (buffer) => ({
          _tag: "Response",
          response: {
            status: response.status,
            headers: { ...headers },
            body: new Uint8Array(buffer),
            url: response.url,
            attempts: attempt,
            redirects
          }
        }))
      }),
      Effect.catchTag("HttpClientError", (error) => Effect.fail(fromHttpClientError(prepared, origin, timeouts, error)))
    )

  const memo = new WeakMap<EgressConnection, PreparedConnection>()
  const call = (connection: EgressConnection, request: DownstreamRequest) => {
    const prepared = memo.get(connection)
    if (prepared !== undefined) return execute(prepared, request)
    return Effect.flatMap(prepare(connection), (prepared) => {
      memo.set(connection, prepared)
      return execute(prepared, request)
    })
  }

  return DownstreamClient.of({ prepare, execute, call })
})

const noHash = Option.none<string>()

const cancelled = (connection: string, signal: AbortSignal) =>
  Effect.callback<never, DownstreamCancelled>((resume) => {
    const onAbort = () => resume(Effect.fail(new DownstreamCancelled({ connection })))
    if (signal.aborted) return onAbort()
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

const fromHttpClientError = (
  prepared: PreparedConnection,
  target: string,
  timeouts: Timeouts,
  error: HttpClientError.HttpClientError
): DownstreamError => {
  const connection = prepared.id
  const found = facts(error.reason.cause)
  if (found.refused !== undefined) return found.refused
  const timeout = (phase: "connect" | "headers" | "body", timeoutMillis: number) =>
    new DownstreamTimeout({ connection, target, phase, timeoutMillis })
  switch (found.code) {
    case "UND_ERR_CONNECT_TIMEOUT":
      return timeout("connect", timeouts.connect)
    case "UND_ERR_HEADERS_TIMEOUT":
      return timeout("headers", timeouts.headers)
    case "UND_ERR_BODY_TIMEOUT":
      return timeout("body", timeouts.body)
    case "UND_ERR_RES_EXCEEDED_MAX_SIZE":
      return new ResponseTooLarge({ connection, target, limitBytes: prepared.maxResponseBytes })
    case "UND_ERR_INVALID_ARG":
      // refused before anything was sent: the request's fault, not the downstream's
      return new UnsendableRequest({
        connection,
        reason: "a header value, the method or the URL holds characters HTTP cannot carry"
      })
  }
  const transient = error.reason._tag === "TransportError" || error.reason._tag === "DecodeError"
  const detail = found.message === undefined ? found.code ?? error.reason._tag : found.message.slice(0, 200)
  return new DownstreamUnavailable({
    connection,
    target,
    reason: found.code === undefined || detail.includes(found.code) ? detail : `${found.code}: ${detail}`,
    transient
  })
}
