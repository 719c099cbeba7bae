/**
 * The `ToolCatalog` of REST endpoints: each endpoint of a rest connection is
 * one MCP tool, and a call runs the hot path from "resolve the tool" on.
 *
 * **Rules** (SPEC "The hot path of tools/call", after the guard's steps)
 *
 * - Resolve: from the config cache. Tools and request plans are compiled once
 *   per configuration snapshot (a `WeakMap` keyed by the snapshot object the
 *   cache hands out), so a call does a map lookup, not a query or a parse.
 * - Validate: the arguments against the tool's input schema before anything
 *   else (`RestValidation`: compiled once per tool version, on its first
 *   call); arguments that do not fit, or that the request cannot carry
 *   (`RestRequest`), are `InvalidToolArguments` answered as a tool result
 *   with `isError` and audited `invalid`. A declared output schema is
 *   enforced on the result (`RestResult.conform`).
 * - Response cache (`RESPONSE_CACHE_TTL` > 0): only GET endpoints marked
 *   idempotent; keyed by the caller's identity, the connection and everything
 *   that shapes the downstream request (`responseCacheKey`: method, path,
 *   query, every header the arguments put in, the body), so one caller never
 *   sees a response fetched for another, nor for other header arguments (a
 *   tenant header). Header values and the body enter the key only as a
 *   SHA-256 digest, never in clear; the connection's credential is not in the
 *   key (a change of it purges the cache). Purged whenever connections,
 *   endpoints or secrets change. Errors and 4xx/5xx are never cached.
 * - Egress: the connection's secret comes from the secret cache and is
 *   injected by the egress client; timeouts, retries, the breaker, the SSRF
 *   guard and cancellation are the egress client's (see `egress/`).
 * - Refusals map to JSON-RPC errors with a reason: breaker open ->
 *   `breaker_open`, timeout -> `timeout`, egress refused or a missing secret
 *   -> `denied`, a downstream that cannot be reached -> `unavailable`.
 *   A 4xx/5xx answer is a tool result with `isError`, so the model sees it.
 * - Progress: when the client asked for progress, a beat is sent every
 *   `PROGRESS_INTERVAL` while the downstream has not answered.
 * - `changes` fires when connections, endpoints or virtual servers change,
 *   on this instance or any other (the storage change feed).
 * - Redaction (`REDACTION_ENABLED`): arguments are redacted before the
 *   request is built (so nothing sensitive leaves), the downstream body before
 *   the client sees it; the count goes to the audit record.
 * - Whatever the redaction setting, the credential injected into the request
 *   (`injectedCredential`) is scrubbed from the downstream body, before it is
 *   trimmed, cached or shown: a downstream that echoes headers cannot hand
 *   the secret to the client. Scrubbed values count as redactions.
 *
 * @since 0.1.0
 */
import { ChangeFeed, ConfigCache, type ConfigSnapshot, type RestConnection, SecretCache } from "@janus/storage"
import { Cache, Duration, Effect, Layer, Option, type Redacted, Stream } from "effect"
import { createHash } from "node:crypto"
import { type CallRecord, CurrentCall } from "../calls/CallRecord.ts"
import { JanusConfig } from "../config/JanusConfig.ts"
import {
  type AuthScheme,
  type BreakerOpen,
  DownstreamClient,
  type DownstreamError,
  type DownstreamResponse,
  type EgressConnection,
  injectedCredential
} from "../egress/index.ts"
import {
  type CallToolResult,
  InvalidToolArguments,
  type Tool,
  ToolCallRefused,
  ToolCatalog,
  ToolNotFound
} from "../mcp/ToolCatalog.ts"
import * as Metrics from "../observability/Metrics.ts"
import { InjectedSecrets, Redactor } from "../redaction/index.ts"
import * as RestRequest from "./RestRequest.ts"
import * as RestResult from "./RestResult.ts"
import * as RestValidation from "./RestValidation.ts"

/** How often a long call reports progress when the client asked for it. */
export const PROGRESS_INTERVAL = Duration.seconds(1)

const configKinds = new Set(["connection", "endpoint", "virtual_server"])
const cacheKinds = new Set(["connection", "endpoint", "secret"])
const readOnlyMethods = new Set(["GET", "HEAD", "OPTIONS"])

interface CompiledTool {
  readonly plan: RestRequest.RestPlan
  readonly connection: RestConnection
  readonly egress: EgressConnection
  readonly cacheable: boolean
  /** Set on the tool version's first call (or from an earlier snapshot's). */
  validators: RestValidation.ToolValidators | undefined
}

interface Compiled {
  readonly tools: ReadonlyArray<Tool>
  readonly byName: ReadonlyMap<string, CompiledTool>
}

export const authScheme = (auth: RestConnection["auth"]): AuthScheme => {
  switch (auth.scheme) {
    case "none":
      return { _tag: "None" }
    case "bearer":
      return { _tag: "Bearer" }
    case "header":
      return { _tag: "Header", name: auth.header }
    case "basic":
      return { _tag: "Basic", username: auth.username }
  }
}

const compile = (snapshot: ConfigSnapshot, validation: RestValidation.RestValidation): Compiled => {
  validation.retain(snapshot.endpoints)
  const byName = new Map<string, CompiledTool>()
  const tools: Array<Tool> = []
  for (const endpoint of snapshot.endpoints) {
    const connection = snapshot.connectionById.get(endpoint.connectionId)
    if (connection === undefined || connection.kind !== "rest") continue
    const readOnly = readOnlyMethods.has(endpoint.method)
    tools.push({
      name: endpoint.name,
      description: endpoint.description !== ""
        ? endpoint.description
        : `${endpoint.method} ${endpoint.pathTemplate} on ${connection.name}`,
      inputSchema: endpoint.inputSchema as Tool["inputSchema"],
      ...(endpoint.outputSchema === undefined ? {} : { outputSchema: endpoint.outputSchema as Tool["inputSchema"] }),
      annotations: {
        title: endpoint.name,
        readOnlyHint: readOnly,
        destructiveHint: endpoint.method === "DELETE",
        idempotentHint: endpoint.idempotent,
        openWorldHint: true
      }
    })
    byName.set(endpoint.name, {
      plan: RestRequest.plan(endpoint),
      connection,
      egress: {
        id: connection.id,
        baseUrl: connection.baseUrl,
        auth: authScheme(connection.auth),
        timeout: Duration.millis(connection.timeoutMs),
        retry: {
          retries: connection.retry.maxAttempts - 1,
          baseDelay: Duration.millis(connection.retry.initialDelayMs),
          maxDelay: Duration.millis(connection.retry.maxDelayMs)
        },
        breaker: {
          failures: connection.breaker.consecutiveFailures,
          openDuration: Duration.millis(connection.breaker.openMs)
        },
        ...(connection.egressAllowList === null ? {} : { allow: connection.egressAllowList })
      },
      cacheable: endpoint.method === "GET" && endpoint.idempotent,
      validators: validation.cached(endpoint)
    })
  }
  tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return { tools, byName }
}

const refusal = (tool: string, error: DownstreamError | { readonly _tag: string; readonly message: string }) => {
  switch (error._tag) {
    case "BreakerOpen": {
      const { retryAfterMillis: retryAfterMs, scope } = error as BreakerOpen
      return new ToolCallRefused({
        name: tool,
        reason: "breaker_open",
        detail: scope === "caller" ?
          `${error.message}; check the arguments of the failing calls` :
          `${error.message}; the downstream failed repeatedly, so calls fail fast until it recovers`,
        retryAfterMs
      })
    }
    case "DownstreamTimeout":
      return new ToolCallRefused({ name: tool, reason: "timeout", detail: error.message })
    case "UnsendableRequest":
      // nothing was sent: what the arguments put into the request cannot travel over HTTP
      return new InvalidToolArguments({
        name: tool,
        detail: `the request built from them cannot be sent (${
          (error as { reason: string }).reason
        }); expected values HTTP can carry`,
        asToolResult: true
      })
    case "EgressRefused":
    case "SecretNotFound":
    case "SecretDecryptionFailed":
    case "InvalidEgressConfig":
      return new ToolCallRefused({ name: tool, reason: "denied", detail: error.message })
    default:
      return new ToolCallRefused({ name: tool, reason: "unavailable", detail: error.message })
  }
}

const decoder = new TextDecoder()

/**
 * The response cache's key for a request built for `callerId` on
 * `connectionId`: whatever the downstream sees of the request is in it, the
 * headers (sorted by name) and the body as one SHA-256 digest, so a header
 * value (a tenant, a token an argument carries) is never held in clear.
 */
export const responseCacheKey = (callerId: string, connectionId: string, request: RestRequest.RestRequest): string => {
  const digest = createHash("sha256")
  for (const name of Object.keys(request.headers).sort()) {
    digest.update(JSON.stringify([name, request.headers[name]]))
  }
  digest.update(request.body === undefined ? "\u0000no body" : `\u0001${request.body}`)
  const query = new URLSearchParams(request.query as Array<[string, string]>)
  return [callerId, connectionId, request.method, `${request.path}?${query}`, digest.digest("base64url")].join("\n")
}

export const layer: Layer.Layer<
  ToolCatalog,
  never,
  ConfigCache | SecretCache | ChangeFeed | DownstreamClient | JanusConfig | Redactor
> = Layer.effect(
  ToolCatalog,
  Effect.gen(function*() {
    const configCache = yield* ConfigCache
    const secrets = yield* SecretCache
    const feed = yield* ChangeFeed
    const downstream = yield* DownstreamClient
    const config = yield* JanusConfig
    const redactor = yield* Redactor

    const validation = RestValidation.make()
    const compiledBySnapshot = new WeakMap<ConfigSnapshot, Compiled>()
    const compiled = Effect.map(configCache.snapshot, (snapshot) => {
      let c = compiledBySnapshot.get(snapshot)
      if (c === undefined) {
        c = compile(snapshot, validation)
        compiledBySnapshot.set(snapshot, c)
      }
      return c
    })

    const responseTtl = config.RESPONSE_CACHE_TTL
    const responses = Duration.isZero(responseTtl)
      ? undefined
      : yield* Cache.make<string, CallToolResult>({
        capacity: 10_000,
        timeToLive: responseTtl,
        lookup: () => Effect.die("the response cache is only read with getOption")
      })
    if (responses !== undefined) {
      yield* feed.register((change) => cacheKinds.has(change.kind) ? Cache.invalidateAll(responses) : Effect.void)
    }

    const send = (
      caller: string,
      tool: CompiledTool,
      request: RestRequest.RestRequest,
      signal: AbortSignal | undefined,
      secret: Redacted.Redacted<string> | undefined
    ) =>
      downstream.call(tool.egress, {
        caller,
        method: request.method,
        path: request.path,
        query: request.query as Array<[string, string]>,
        headers: request.headers,
        body: request.body,
        idempotent: tool.plan.endpoint.idempotent,
        secret,
        ...(signal === undefined ? {} : { signal })
      })

    /** The first call of a tool version compiles its validators (later snapshots find them in `validation`). */
    const compileValidators = (tool: CompiledTool) =>
      validation.compile(tool.plan.endpoint).pipe(
        Effect.tap((validators) => Effect.sync(() => tool.validators = validators)),
        Effect.mapError((unusable) =>
          new ToolCallRefused({
            name: tool.plan.endpoint.name,
            reason: "unavailable",
            detail: `the tool's ${unusable.field} cannot be used (${unusable.reason}); an administrator must correct it`
          })
        )
      )

    const toResult = (
      tool: CompiledTool,
      validators: RestValidation.ToolValidators,
      response: DownstreamResponse,
      record: Option.Option<CallRecord>,
      injected: InjectedSecrets
    ) =>
      Effect.gen(function*() {
        const contentType = response.headers["content-type"]
        let body = decoder.decode(response.body)
        // Always, redaction on or off: the downstream may echo the credential Janus injected.
        const scrubbed = injected.scrub(body)
        body = scrubbed.text
        if (scrubbed.count > 0 && Option.isSome(record)) record.value.redactions += scrubbed.count
        if (redactor.enabled) {
          const redacted = /json/i.test(contentType ?? "")
            ? yield* redactor.redactJsonText(body).pipe(
              Effect.catch(() => redactor.redactText(body))
            )
            : yield* redactor.redactText(body)
          body = redacted.value
          if (Option.isSome(record)) record.value.redactions += redacted.total
        }
        const result = RestResult.fromResponse({ status: response.status, contentType, body })
        return (validators.output === undefined ?
          result :
          RestResult.conform(tool.plan.endpoint.name, result, contentType, validators.output)) as CallToolResult
      })

    return ToolCatalog.of({
      list: () => compiled.pipe(Effect.map((c) => c.tools), Effect.orDie),
      changes: feed.changes.pipe(Stream.filter((change) => configKinds.has(change.kind)), Stream.as(undefined)),
      call: (caller, request) =>
        Effect.gen(function*() {
          const c = yield* compiled.pipe(
            Effect.mapError((error) =>
              new ToolCallRefused({ name: request.name, reason: "unavailable", detail: error.message })
            )
          )
          const tool = c.byName.get(request.name)
          if (tool === undefined) return yield* new ToolNotFound({ name: request.name })
          const record = yield* Effect.serviceOption(CurrentCall)
          if (Option.isSome(record)) {
            record.value.connection = tool.connection.name
            record.value.metricName = request.name
          }

          // the caller's arguments as sent, before redaction rewrites any of them
          const validators = tool.validators ?? (yield* compileValidators(tool))
          const invalid = validators.input(request.arguments)
          if (invalid !== undefined) {
            return yield* new InvalidToolArguments({ name: request.name, detail: invalid, asToolResult: true })
          }

          let args = request.arguments
          if (redactor.enabled) {
            const redacted = yield* redactor.redactJson(args).pipe(
              Effect.mapError((e) => new InvalidToolArguments({ name: request.name, detail: e.message }))
            )
            args = redacted.value as typeof args
            if (Option.isSome(record)) record.value.redactions += redacted.total
          }
          const built = RestRequest.build(tool.plan, args)
          if (built._tag === "Failure") {
            return yield* new InvalidToolArguments({
              name: request.name,
              detail: built.failure.message,
              asToolResult: true
            })
          }
          const req = built.success
          if (Option.isSome(record)) record.value.bytesIn = req.body?.length ?? JSON.stringify(args ?? {}).length

          const cacheKey = responses !== undefined && tool.cacheable
            ? responseCacheKey(caller.id, tool.connection.id, req)
            : undefined
          if (cacheKey !== undefined) {
            const hit = yield* Cache.getOption(responses!, cacheKey)
            yield* Metrics.cacheLookup("response", Option.isSome(hit))
            if (Option.isSome(hit)) {
              if (Option.isSome(record)) record.value.cached = true
              return hit.value
            }
          }

          const auth = tool.connection.auth
          const secret = auth.scheme === "none"
            ? undefined
            : yield* secrets.reveal(auth.secret).pipe(Effect.mapError((error) => refusal(request.name, error)))
          const call = send(caller.id, tool, req, request.signal, secret)
          const response = yield* Option.match(request.progress, {
            onNone: () => call,
            onSome: (report) => {
              let beats = 0
              return Effect.raceFirst(
                call,
                Effect.forever(
                  Effect.sleep(PROGRESS_INTERVAL).pipe(Effect.andThen(Effect.suspend(() => report(++beats))))
                ) as Effect.Effect<never>
              )
            }
          }).pipe(Effect.mapError((error) => refusal(request.name, error)))
          if (Option.isSome(record)) {
            record.value.status = response.status
            record.value.bytesOut = response.body.length
          }
          const result = yield* toResult(
            tool,
            validators,
            response,
            record,
            secret === undefined ? InjectedSecrets.none : injectedCredential(tool.egress.auth!, secret)
          )
          if (cacheKey !== undefined && result.isError !== true) yield* Cache.set(responses!, cacheKey, result)
          return result
        })
    })
  })
)
