/**
 * The tools of every `kind: mcp` connection, federated: one supervised
 * upstream session per connection, its tools exposed under a namespace.
 *
 * **Names**
 * - A tool is exposed as `<connection name>/<upstream tool name>`; the
 *   connection's stored `toolPrefix` (or `ConnectionOverrides.toolPrefix`)
 *   replaces `<connection name>/`, `""` for none. Names outside
 *   `^[A-Za-z0-9_./-]{1,64}$` have other characters replaced by `_` and, when
 *   too long, are cut with a hash suffix, so two upstream names never share
 *   an exposed name. The call goes upstream under the original name.
 * - Each exposed tool carries `_meta["janus/upstream"] = { connection, tool }`
 *   (virtual servers and Studio resolve members with it).
 *
 * **Fail open**
 * - `list` never calls an upstream: it returns the tools of the upstreams that
 *   are healthy now (waiting at most `firstListWait` for upstreams still on
 *   their first connection attempt). An upstream that fails to connect or to
 *   list within `listTimeout` is unhealthy: its tools are hidden and
 *   `changes` fires; it is retried with exponential backoff (`backoff`,
 *   jittered), and when it answers again its tools come back and `changes`
 *   fires.
 * - A healthy upstream is probed (`tools/list`) every `probeInterval`, at
 *   once when a call to it fails for transport reasons, and whenever its
 *   change stream is lost; a failed probe makes it unhealthy.
 * - Upstream list-changed notifications refresh its tools; `changes` fires
 *   only when what clients see changed.
 * - A call to a tool of an unhealthy upstream is refused (`unavailable`, with
 *   the upstream's last error); calls to other upstreams are unaffected.
 * - Two upstreams exposing one name (possible with prefixes): the connection
 *   whose name sorts first wins, the other tool is hidden.
 *
 * **Calls** pass through progress (`_meta.progressToken` upstream, reported
 * through `request.progress`), cancellation (the request's `AbortSignal` or
 * fiber interruption aborts the upstream exchange; 2025 eras also get
 * `notifications/cancelled`), log messages and 2025 server requests (see
 * `Relay.ts`), 2026-07-28 `input_required` results (returned as they are;
 * the client's `inputResponses`/`requestState` are forwarded on retry) and
 * `Mcp-Param-*` headers for `x-mcp-header` arguments. The connection's
 * `timeoutMs` bounds each call. Results pass through unchanged except that
 * `resultType` and the upstream's `serverInfo` `_meta` are removed (the
 * gateway's transport adds its own).
 *
 * **Configuration** comes from the config cache: a `connection` change
 * signal (or the 10 s backstop) restarts the sessions of changed
 * connections, stops those of removed ones and starts new ones. Credentials
 * come from the secret cache on every request, so rotations need no restart.
 *
 * **Health** is a service (`UpstreamHealth`) for Studio and the gauge
 * `janus.upstream.healthy{connection}` (1 healthy, 0 otherwise).
 *
 * @since 0.1.0
 */
import { ChangeFeed, ConfigCache, type McpConnection, type SecretCache, ToolNamePattern } from "@janus/storage"
import {
  Context,
  Deferred,
  Duration,
  Effect,
  Exit,
  FiberMap,
  Layer,
  Metric,
  Option,
  PubSub,
  Queue,
  Random,
  Schedule,
  Stream
} from "effect"
import { createHash } from "node:crypto"
import { CurrentCall } from "../calls/CallRecord.ts"
import type { EgressPolicy } from "../egress/EgressPolicy.ts"
import {
  type CallToolResult,
  type InputRequiredResult,
  type Tool,
  type ToolCallOutcome,
  ToolCallRefused,
  ToolCatalog,
  ToolNotFound
} from "../mcp/ToolCatalog.ts"
import { toCallError, UpstreamError } from "./Errors.ts"
import { UpstreamRelay } from "./Relay.ts"
import { UpstreamAuth, type UpstreamAuthConfig } from "./UpstreamAuth.ts"
import * as UpstreamClient from "./UpstreamClient.ts"
import { UpstreamHttp } from "./UpstreamHttp.ts"

/** Settings an operator can give a connection besides (or instead of) the stored ones. */
export interface ConnectionOverrides {
  /** Replaces the stored `toolPrefix` (or `<connection name>/`) in front of every tool name (may be `""`). */
  readonly toolPrefix?: string | undefined
  /** Replaces the connection's stored auth. */
  readonly auth?: UpstreamAuthConfig | undefined
}

export interface FederationOptions {
  readonly clientInfo?: { readonly name: string; readonly version: string } | undefined
  /** Bound of connecting and of one complete `tools/list` (all pages). Default 5 s. */
  readonly listTimeout?: Duration.Input | undefined
  /** How long `list` waits for upstreams on their first connection attempt. Default 2 s. */
  readonly firstListWait?: Duration.Input | undefined
  /** Health probe interval of a healthy upstream. Default 30 s. */
  readonly probeInterval?: Duration.Input | undefined
  /** Reconnection backoff of an unhealthy upstream. Default 1 s doubling to 60 s. */
  readonly backoff?: { readonly initial?: Duration.Input; readonly max?: Duration.Input } | undefined
  /** Largest message accepted from an upstream. Default 16 MiB. */
  readonly maxMessageBytes?: number | undefined
  /** Tools accepted from one upstream. Default 5,000. */
  readonly maxTools?: number | undefined
  /** Per-connection settings beyond storage's columns. */
  readonly overrides?: ((connection: McpConnection) => ConnectionOverrides | undefined) | undefined
}

export type UpstreamState = "connecting" | "healthy" | "unhealthy"

/** What Studio and `/metrics` show about one upstream. */
export interface UpstreamStatus {
  readonly connectionId: string
  readonly connection: string
  readonly url: string
  readonly transport: "streamable-http" | "sse"
  readonly state: UpstreamState
  /** The negotiated protocol revision while connected. */
  readonly protocolVersion: string | undefined
  readonly toolCount: number
  readonly lastError: string | undefined
  readonly lastErrorAt: Date | undefined
  /** When the state last changed. */
  readonly since: Date
  /** When an unhealthy upstream is tried next. */
  readonly nextAttemptAt: Date | undefined
}

/** Per-upstream health, for Studio and metrics. */
export class UpstreamHealth extends Context.Service<UpstreamHealth, {
  /** Every upstream, ordered by connection name. */
  readonly list: Effect.Effect<ReadonlyArray<UpstreamStatus>>
  readonly get: (connection: string) => Effect.Effect<Option.Option<UpstreamStatus>>
  /** Fires whenever a status changes. */
  readonly changes: Stream.Stream<void>
}>()("@janus/gateway/federation/UpstreamHealth") {}

/** Where an exposed tool comes from. */
export interface ToolOrigin {
  readonly connection: string
  readonly tool: string
}

/** The `_meta` key naming a federated tool's origin. */
export const ORIGIN_META = "janus/upstream"

/** The federated tools as a catalog, plus where each exposed name comes from. */
export class FederatedCatalog extends Context.Service<
  FederatedCatalog,
  ToolCatalog["Service"] & {
    readonly origin: (name: string) => Option.Option<ToolOrigin>
  }
>()("@janus/gateway/federation/FederatedCatalog") {
  /**
   * The catalog and `UpstreamHealth`, over the config cache, change feed,
   * secret cache and egress policy (the gateway's).
   */
  static readonly layer = (
    options: FederationOptions = {}
  ): Layer.Layer<FederatedCatalog | UpstreamHealth, never, ConfigCache | ChangeFeed | SecretCache | EgressPolicy> =>
    Layer.effectContext(make(options)).pipe(
      Layer.provide(UpstreamAuth.layer),
      Layer.provide(UpstreamHttp.layerSystem)
    )
}

/** `janus.upstream.healthy{connection}`: 1 while the upstream is healthy, else 0. */
export const upstreamHealthy = Metric.gauge("janus.upstream.healthy", {
  description: "1 while the upstream MCP server of a connection is healthy, 0 otherwise"
})

// ---------------------------------------------------------------------------
// Naming
// ---------------------------------------------------------------------------

const shortHash = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 8)

/** The exposed name of an upstream tool under `prefix`. */
export const exposedName = (prefix: string, upstreamName: string): string => {
  const plain = `${prefix}${upstreamName}`
  if (ToolNamePattern.test(plain)) return plain
  const cleaned = plain.replace(/[^A-Za-z0-9_./-]/g, "_")
  const hashed = cleaned.length <= 64 && cleaned !== plain
    ? `${cleaned.slice(0, 55)}_${shortHash(upstreamName)}`
    : cleaned
  return hashed.length <= 64 ? hashed : `${hashed.slice(0, 55)}_${shortHash(upstreamName)}`
}

// ---------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------

interface Exposed {
  readonly tool: Tool
  readonly upstreamName: string
  readonly inputSchema: unknown
  readonly upstream: Upstream
}

interface Upstream {
  readonly connection: McpConnection
  readonly key: string
  state: UpstreamState
  since: Date
  protocolVersion: string | undefined
  lastError: string | undefined
  lastErrorAt: Date | undefined
  nextAttemptAt: Date | undefined
  session: UpstreamClient.UpstreamSession | undefined
  tools: ReadonlyArray<Exposed>
  fingerprint: string
  readonly settled: Deferred.Deferred<void>
  /** Asks the session's supervisor for a `tools/list` now (refresh or probe). */
  refresh: () => Effect.Effect<void>
}

const byName = (a: Tool, b: Tool): number => a.name < b.name ? -1 : a.name > b.name ? 1 : 0

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"

/** A complete upstream result as the gateway returns it, or the `input_required` result. */
export const toOutcome = (result: Readonly<Record<string, unknown>>): ToolCallOutcome => {
  const { resultType, ...rest } = result
  if (resultType === "input_required") {
    return {
      resultType: "input_required",
      ...(isObject(rest.inputRequests) ? { inputRequests: rest.inputRequests } : {}),
      ...(typeof rest.requestState === "string" ? { requestState: rest.requestState } : {}),
      ...(isObject(rest._meta) ? { _meta: rest._meta } : {})
    } as InputRequiredResult
  }
  const out: Record<string, unknown> = rest
  if (isObject(rest._meta) && SERVER_INFO_META in rest._meta) {
    const { [SERVER_INFO_META]: _, ...meta } = rest._meta
    if (Object.keys(meta).length > 0) out._meta = meta
    else delete out._meta
  }
  if (!Array.isArray(out.content)) out.content = []
  return out as CallToolResult
}

const aborted = (signal: AbortSignal, connection: string) =>
  Effect.callback<never, UpstreamError>((resume) => {
    const fail = () =>
      resume(Effect.fail(new UpstreamError({ connection, kind: "cancelled", detail: "the client cancelled the call" })))
    if (signal.aborted) {
      fail()
      return
    }
    signal.addEventListener("abort", fail, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", fail))
  })

const make = Effect.fnUntraced(function*(options: FederationOptions) {
  const configCache = yield* ConfigCache
  const feed = yield* ChangeFeed
  const http = yield* UpstreamHttp
  const context = yield* Effect.context<UpstreamHttp | UpstreamAuth>()

  const listTimeout = Duration.fromInputUnsafe(options.listTimeout ?? "5 seconds")
  const firstListWait = Duration.fromInputUnsafe(options.firstListWait ?? "2 seconds")
  const probeInterval = Duration.fromInputUnsafe(options.probeInterval ?? "30 seconds")
  const backoffInitial = Duration.toMillis(Duration.fromInputUnsafe(options.backoff?.initial ?? "1 second"))
  const backoffMax = Duration.toMillis(Duration.fromInputUnsafe(options.backoff?.max ?? "60 seconds"))
  const maxMessageBytes = options.maxMessageBytes ?? 16 * 1024 * 1024
  const maxTools = options.maxTools ?? 5_000
  const clientInfo = options.clientInfo ?? { name: "janus-gateway", version: "0.1.0" }

  const upstreams = new Map<string, Upstream>()
  let visible: ReadonlyArray<Tool> = []
  let visibleByName = new Map<string, Exposed>()
  let knownByName = new Map<string, Exposed>()

  const toolChanges = yield* PubSub.unbounded<void>()
  const statusChanges = yield* PubSub.unbounded<void>()
  const sessions = yield* FiberMap.make<string>()

  const rebuild = Effect.suspend(() => {
    const visibleMap = new Map<string, Exposed>()
    const known = new Map<string, Exposed>()
    const sorted = [...upstreams.values()].sort((a, b) => a.connection.name < b.connection.name ? -1 : 1)
    for (const upstream of sorted) {
      for (const exposed of upstream.tools) {
        if (!known.has(exposed.tool.name)) known.set(exposed.tool.name, exposed)
        if (upstream.state === "healthy" && !visibleMap.has(exposed.tool.name)) {
          visibleMap.set(exposed.tool.name, exposed)
        }
      }
    }
    visibleByName = visibleMap
    knownByName = known
    visible = Array.from(visibleMap.values(), (e) => e.tool).sort(byName)
    return PubSub.publish(toolChanges, undefined)
  })

  const statusOf = (u: Upstream): UpstreamStatus => ({
    connectionId: u.connection.id,
    connection: u.connection.name,
    url: u.connection.url,
    transport: u.connection.transport,
    state: u.state,
    protocolVersion: u.protocolVersion,
    toolCount: u.tools.length,
    lastError: u.lastError,
    lastErrorAt: u.lastErrorAt,
    since: u.since,
    nextAttemptAt: u.nextAttemptAt
  })

  const gauge = (u: Upstream) =>
    Metric.update(
      Metric.withAttributes(upstreamHealthy, { connection: u.connection.name }),
      u.state === "healthy" ? 1 : 0
    )

  const setState = (u: Upstream, state: UpstreamState) =>
    Effect.gen(function*() {
      const wasVisible = u.state === "healthy" && u.tools.length > 0
      if (u.state !== state) {
        u.state = state
        u.since = new Date()
      }
      yield* gauge(u)
      yield* PubSub.publish(statusChanges, undefined)
      const isVisible = u.state === "healthy" && u.tools.length > 0
      if (wasVisible !== isVisible) yield* rebuild
    })

  // --- one upstream -----------------------------------------------------------

  const expose = (u: Upstream, tools: ReadonlyArray<unknown>): ReadonlyArray<Exposed> => {
    const overrides = options.overrides?.(u.connection)
    const prefix = overrides?.toolPrefix ?? u.connection.toolPrefix ?? `${u.connection.name}/`
    const out: Array<Exposed> = []
    const seen = new Set<string>()
    for (const raw of tools) {
      if (!isObject(raw) || typeof raw.name !== "string" || raw.name === "" || !isObject(raw.inputSchema)) continue
      const name = exposedName(prefix, raw.name)
      if (seen.has(name)) continue
      seen.add(name)
      const meta = isObject(raw._meta) ? raw._meta : {}
      out.push({
        tool: {
          ...raw,
          name,
          _meta: { ...meta, [ORIGIN_META]: { connection: u.connection.name, tool: raw.name } }
        } as unknown as Tool,
        upstreamName: raw.name,
        inputSchema: raw.inputSchema,
        upstream: u
      })
      if (out.length >= maxTools) break
    }
    return out
  }

  const listAll = (u: Upstream, session: UpstreamClient.UpstreamSession) =>
    Effect.gen(function*() {
      const tools: Array<unknown> = []
      let cursor: string | undefined
      for (let page = 0; page < 100; page++) {
        const result = yield* session.request("tools/list", cursor === undefined ? {} : { cursor }, {
          timeout: listTimeout
        })
        if (Array.isArray(result.tools)) tools.push(...result.tools)
        cursor = typeof result.nextCursor === "string" && result.nextCursor !== "" ? result.nextCursor : undefined
        if (cursor === undefined || tools.length >= maxTools) break
      }
      return expose(u, tools)
    }).pipe(
      Effect.timeoutOrElse({
        duration: listTimeout,
        orElse: () =>
          Effect.fail(
            new UpstreamError({
              connection: u.connection.name,
              kind: "timeout",
              detail: `tools/list did not complete within ${Duration.format(listTimeout)}`
            })
          )
      })
    )

  const setTools = (u: Upstream, tools: ReadonlyArray<Exposed>) =>
    Effect.suspend(() => {
      const fingerprint = JSON.stringify(tools.map((t) => t.tool))
      if (fingerprint === u.fingerprint) return Effect.void
      u.tools = tools
      u.fingerprint = fingerprint
      return Effect.andThen(PubSub.publish(statusChanges, undefined), u.state === "healthy" ? rebuild : Effect.void)
    })

  /** One session: connects, lists, serves until the session is lost (always ends in failure). */
  const runSession = (u: Upstream, connected: Effect.Effect<void>) =>
    Effect.scoped(Effect.gen(function*() {
      const name = u.connection.name
      const lost = yield* Deferred.make<never, UpstreamError>()
      const refreshes = yield* Queue.sliding<void>(1)
      const overrides = options.overrides?.(u.connection)
      const allow = yield* http.allowList(name, u.connection.egressAllowList)
      const target: UpstreamClient.UpstreamTarget = {
        id: u.connection.id,
        name,
        url: u.connection.url,
        transport: u.connection.transport,
        allow,
        auth: overrides?.auth ?? u.connection.auth
      }
      const session = yield* UpstreamClient.connect(target, {
        clientInfo,
        requestTimeout: listTimeout,
        maxMessageBytes,
        onEvent: (event) =>
          event._tag === "Lost"
            ? Deferred.fail(lost, event.error).pipe(Effect.asVoid)
            : Queue.offer(refreshes, undefined).pipe(Effect.asVoid)
      }).pipe(
        Effect.timeoutOrElse({
          duration: listTimeout,
          orElse: () =>
            Effect.fail(
              new UpstreamError({
                connection: name,
                kind: "timeout",
                detail: `connecting did not complete within ${Duration.format(listTimeout)}`
              })
            )
        })
      )
      const tools = yield* listAll(u, session)
      u.session = session
      u.protocolVersion = session.protocolVersion
      u.nextAttemptAt = undefined
      u.refresh = () => Queue.offer(refreshes, undefined).pipe(Effect.asVoid)
      yield* setTools(u, tools)
      if (u.state === "unhealthy") yield* Effect.logInfo(`upstream MCP server ${name} is healthy again`)
      yield* setState(u, "healthy")
      yield* Deferred.succeed(u.settled, undefined)
      yield* connected
      // Refreshes (list-changed, probes after failed calls) and periodic probes.
      yield* Queue.take(refreshes).pipe(
        Effect.andThen(listAll(u, session)),
        Effect.flatMap((tools) => setTools(u, tools)),
        Effect.forever,
        Effect.catch((error) => Deferred.fail(lost, error)),
        Effect.forkScoped
      )
      yield* Queue.offer(refreshes, undefined).pipe(
        Effect.repeat(Schedule.spaced(probeInterval)),
        Effect.delay(probeInterval),
        Effect.forkScoped
      )
      return yield* Deferred.await(lost)
    })).pipe(Effect.ensuring(Effect.sync(() => {
      u.session = undefined
      u.refresh = () => Effect.void
    })))

  const supervise = (u: Upstream) =>
    Effect.gen(function*() {
      let attempt = 0
      while (true) {
        const exit = yield* Effect.exit(runSession(
          u,
          Effect.sync(() => {
            attempt = 0
          })
        ))
        const error = Exit.isFailure(exit)
          ? Option.getOrUndefined(Exit.findErrorOption(exit))
          : undefined
        const base = Math.min(backoffMax, backoffInitial * 2 ** Math.min(attempt, 20))
        const delay = Math.round(base * (0.8 + 0.4 * (yield* Random.next)))
        attempt++
        const detail = error?.detail ?? "the session ended"
        // Log transitions and new reasons, not every retry of a long outage.
        const report = u.state !== "unhealthy" || u.lastError !== detail
        u.lastError = detail
        u.lastErrorAt = new Date()
        u.nextAttemptAt = new Date(Date.now() + delay)
        u.protocolVersion = undefined
        if (report) yield* Effect.logWarning(`upstream MCP server ${u.connection.name} is unhealthy: ${detail}`)
        yield* setState(u, "unhealthy")
        yield* Deferred.succeed(u.settled, undefined)
        yield* Effect.sleep(Duration.millis(delay))
      }
    }).pipe(Effect.provide(context))

  // --- configuration ------------------------------------------------------------

  const keyOf = (c: McpConnection) =>
    JSON.stringify([c.version, c.url, c.transport, c.auth, c.egressAllowList, options.overrides?.(c) ?? null])

  const reconcile = Effect.gen(function*() {
    const snapshot = yield* configCache.snapshot
    const wanted = new Map<string, McpConnection>()
    for (const connection of snapshot.connections) {
      if (connection.kind === "mcp") wanted.set(connection.id, connection)
    }
    let removed = false
    for (const [id, u] of upstreams) {
      const next = wanted.get(id)
      if (next === undefined || keyOf(next) !== u.key) {
        upstreams.delete(id)
        yield* FiberMap.remove(sessions, id)
        yield* Metric.update(Metric.withAttributes(upstreamHealthy, { connection: u.connection.name }), 0)
        removed = true
      }
    }
    for (const [id, connection] of wanted) {
      if (upstreams.has(id)) continue
      const u: Upstream = {
        connection,
        key: keyOf(connection),
        state: "connecting",
        since: new Date(),
        protocolVersion: undefined,
        lastError: undefined,
        lastErrorAt: undefined,
        nextAttemptAt: undefined,
        session: undefined,
        tools: [],
        fingerprint: "[]",
        settled: yield* Deferred.make<void>(),
        refresh: () => Effect.void
      }
      upstreams.set(id, u)
      yield* gauge(u)
      yield* FiberMap.run(sessions, id, supervise(u))
    }
    if (removed) yield* rebuild
    yield* PubSub.publish(statusChanges, undefined)
  }).pipe(
    Effect.catch((error) => Effect.logWarning("federation could not read the configuration", error))
  )

  yield* reconcile
  yield* feed.changes.pipe(
    Stream.filter((change) => change.kind === "connection"),
    Stream.runForEach(() => reconcile),
    Effect.forkScoped
  )
  yield* reconcile.pipe(Effect.repeat(Schedule.spaced("10 seconds")), Effect.delay("10 seconds"), Effect.forkScoped)

  // --- the services ---------------------------------------------------------------

  const awaitFirst = Effect.suspend(() => {
    const waiting = [...upstreams.values()].filter((u) => u.state === "connecting")
    if (waiting.length === 0) return Effect.void
    return Effect.forEach(waiting, (u) => Deferred.await(u.settled), { concurrency: "unbounded", discard: true }).pipe(
      Effect.timeoutOption(firstListWait),
      Effect.asVoid
    )
  })

  const call: FederatedCatalog["Service"]["call"] = (_caller, request) =>
    Effect.gen(function*() {
      let exposed = visibleByName.get(request.name)
      if (exposed === undefined && [...upstreams.values()].some((u) => u.state === "connecting")) {
        // Right after start (or a new connection), a call may arrive before any list.
        yield* awaitFirst
        exposed = visibleByName.get(request.name)
      }
      if (exposed === undefined) {
        const known = knownByName.get(request.name)
        if (known !== undefined) {
          return yield* new ToolCallRefused({
            name: request.name,
            reason: "unavailable",
            detail: `the upstream MCP server ${known.upstream.connection.name} is unavailable (${
              known.upstream.lastError ?? "connecting"
            }); its tools return when it recovers`
          })
        }
        return yield* new ToolNotFound({ name: request.name })
      }
      const u = exposed.upstream
      const session = u.session
      const record = yield* Effect.serviceOption(CurrentCall)
      if (Option.isSome(record)) record.value.connection = u.connection.name
      if (session === undefined) {
        return yield* new ToolCallRefused({
          name: request.name,
          reason: "unavailable",
          detail: `the upstream MCP server ${u.connection.name} is reconnecting`
        })
      }
      const relay = yield* UpstreamRelay
      const params: Record<string, unknown> = { name: exposed.upstreamName, arguments: request.arguments }
      if (request.inputResponses !== undefined) params.inputResponses = request.inputResponses
      if (request.requestState !== undefined) params.requestState = request.requestState
      const onProgress = Option.match(request.progress, {
        onNone: () => undefined,
        onSome: (report) => (p: Readonly<Record<string, unknown>>) =>
          typeof p.progress === "number"
            ? report(
              p.progress,
              typeof p.total === "number" ? p.total : undefined,
              typeof p.message === "string" ? p.message : undefined
            )
            : Effect.void
      })
      if (Option.isSome(record)) record.value.bytesOut = JSON.stringify(request.arguments).length
      const result = yield* Effect.raceFirst(
        session.request("tools/call", params, {
          onProgress,
          relay,
          headers: session.era === "modern"
            ? UpstreamClient.paramHeaders(exposed.inputSchema, request.arguments)
            : undefined,
          timeout: Duration.millis(u.connection.timeoutMs)
        }),
        aborted(request.signal, u.connection.name)
      ).pipe(
        Effect.tapError((error) =>
          error.kind === "unavailable" || error.kind === "timeout" ? u.refresh() : Effect.void
        ),
        Effect.mapError((error) => toCallError(request.name, error))
      )
      return toOutcome(result)
    })

  const catalog = FederatedCatalog.of({
    list: () => Effect.as(awaitFirst, undefined).pipe(Effect.map(() => visible)),
    call,
    changes: Stream.fromPubSub(toolChanges),
    origin: (name) => {
      const exposed = knownByName.get(name)
      return exposed === undefined
        ? Option.none()
        : Option.some({ connection: exposed.upstream.connection.name, tool: exposed.upstreamName })
    }
  })

  const statuses = Effect.sync(() =>
    [...upstreams.values()].map(statusOf).sort((a, b) => a.connection < b.connection ? -1 : 1)
  )
  const health = UpstreamHealth.of({
    list: statuses,
    get: (connection) =>
      Effect.sync(() => Option.fromNullishOr([...upstreams.values()].find((u) => u.connection.name === connection)))
        .pipe(
          Effect.map(Option.map(statusOf))
        ),
    changes: Stream.fromPubSub(statusChanges)
  })

  return Context.make(FederatedCatalog, catalog).pipe(Context.add(UpstreamHealth, health))
})

/** The federated tools as a plain `ToolCatalog` (tests, single-catalog deployments). */
export const asToolCatalog: Layer.Layer<ToolCatalog, never, FederatedCatalog> = Layer.effect(
  ToolCatalog,
  Effect.gen(function*() {
    const catalog = yield* FederatedCatalog
    return ToolCatalog.of(catalog)
  })
)
