/**
 * The tools of every `kind: mcp` connection, federated: one supervised
 * upstream session per connection, its tools exposed under a namespace.
 *
 * **Fail open**
 * - `list` never calls an upstream: it returns the tools of the upstreams that
 *   are healthy now (waiting at most `firstListWait` for upstreams still on
 *   their first connection attempt); `UpstreamPool.ts` keeps those sessions
 *   and their health. `changes` fires only when what clients see changed.
 * - A call to a tool of an unhealthy upstream is refused (`unavailable`, with
 *   the upstream's last error); calls to other upstreams are unaffected.
 * - Two upstreams exposing one name (possible with prefixes): the connection
 *   whose name sorts first wins, the other tool is hidden.
 *
 * **Arguments** are checked against the tool's `inputSchema` as the upstream
 * listed it before the call is relayed (`ToolArguments.ts`); arguments that
 * do not conform are answered as REST tools answer them, and nothing is sent.
 *
 * **Calls** pass through progress (`_meta.progressToken` upstream, reported
 * through `request.progress`), cancellation (the request's `AbortSignal` or
 * fiber interruption aborts the upstream exchange; 2025 eras also get
 * `notifications/cancelled`), log messages and 2025 server requests (see
 * `Relay.ts`), 2026-07-28 `input_required` results (returned as they are
 * when valid, see `InputRequired.ts`; the client's
 * `inputResponses`/`requestState` are forwarded on retry) and
 * `Mcp-Param-*` headers for `x-mcp-header` arguments. The connection's
 * `timeoutMs` bounds each call. Results pass through unchanged except that
 * `resultType` and the upstream's `serverInfo` `_meta` are removed (the
 * gateway's transport adds its own).
 *
 * **Bridging**: a 2026-07-28 client's call to a tool of a 2025-era upstream
 * is run as a held call (`HeldCalls.ts`, when the service is provided) when
 * the client declared elicitation, sampling or roots (otherwise it is never
 * asked, and nothing needs holding): the upstream's server-to-client
 * requests become `input_required` for the client, and a `requestState`
 * Janus issued continues the call, whichever replica it reaches. Such a
 * call takes no other `requestState`.
 *
 * Naming is `ToolNames.ts`; health is `UpstreamHealth.ts`.
 *
 * @since 0.1.0
 */
import * as NodeChildProcessSpawner from "@effect/platform-node/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { type ChangeFeed, ConfigCache, type SecretCache } from "@janus/storage"
import { Context, Duration, Effect, Layer, Option, Predicate, PubSub, Stream } from "effect"
import { CurrentCall } from "../calls/CallRecord.ts"
import type { EgressPolicy } from "../egress/EgressPolicy.ts"
import { Features } from "../mcp/Features.ts"
import { invalidInputRequired } from "../mcp/InputRequired.ts"
import { Meta } from "../mcp/Protocol.ts"
import { UpstreamRelay } from "../mcp/Relay.ts"
import {
  type CallToolResult,
  type InputRequiredResult,
  InvalidToolArguments,
  type ProgressReporter,
  type Tool,
  type ToolCallOutcome,
  ToolCallRefused,
  ToolCatalog,
  ToolNotFound
} from "../mcp/ToolCatalog.ts"
import { toCallError, UpstreamError } from "./Errors.ts"
import * as FederatedFeatures from "./FederatedFeatures.ts"
import { HeldCalls } from "./HeldCalls.ts"
import * as HeldCallState from "./HeldCallState.ts"
import * as ToolArguments from "./ToolArguments.ts"
import { type ExposedTool, type ToolOrigin } from "./ToolNames.ts"
import { UpstreamAuth } from "./UpstreamAuth.ts"
import * as UpstreamClient from "./UpstreamClient.ts"
import { UpstreamHealth } from "./UpstreamHealth.ts"
import { UpstreamHttp } from "./UpstreamHttp.ts"
import * as UpstreamPool from "./UpstreamPool.ts"

export { exposedName, ORIGIN_META, type ToolOrigin } from "./ToolNames.ts"
export { UpstreamHealth, upstreamHealthy, type UpstreamState, type UpstreamStatus } from "./UpstreamHealth.ts"
export type { ConnectionOverrides, FederationOptions } from "./UpstreamPool.ts"

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
    options: UpstreamPool.FederationOptions = {}
  ): Layer.Layer<
    FederatedCatalog | UpstreamHealth | Features,
    never,
    ConfigCache | ChangeFeed | SecretCache | EgressPolicy
  > =>
    Layer.effectContext(make(options)).pipe(
      Layer.provide(UpstreamAuth.layer),
      Layer.provide(UpstreamHttp.layerSystem),
      // stdio upstreams: programs spawned through effect's process support
      Layer.provide(NodeChildProcessSpawner.layer.pipe(Layer.provide([NodeFileSystem.layer, NodePath.layer])))
    )
}

interface Exposed extends ExposedTool {
  readonly upstream: UpstreamPool.Upstream
}

const byName = (a: Tool, b: Tool): number => a.name < b.name ? -1 : a.name > b.name ? 1 : 0

const SERVER_INFO_META = Meta.serverInfo

/** A complete upstream result as the gateway returns it, or the `input_required` result. */
export const toOutcome = (result: Readonly<Record<string, unknown>>): ToolCallOutcome => {
  const { resultType, ...rest } = result
  if (resultType === "input_required") {
    return {
      resultType: "input_required",
      ...(Predicate.isReadonlyObject(rest.inputRequests) ? { inputRequests: rest.inputRequests } : {}),
      ...(typeof rest.requestState === "string" ? { requestState: rest.requestState } : {}),
      ...(Predicate.isReadonlyObject(rest._meta) ? { _meta: rest._meta } : {})
    } as InputRequiredResult
  }
  const out: Record<string, unknown> = rest
  if (Predicate.isReadonlyObject(rest._meta) && SERVER_INFO_META in rest._meta) {
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

/** Whether a client declared a capability an upstream's server-to-client request needs. */
const canBeAsked = (capabilities: Readonly<Record<string, unknown>> | undefined): boolean =>
  capabilities !== undefined &&
  (Predicate.isReadonlyObject(capabilities.elicitation) || Predicate.isReadonlyObject(capabilities.sampling) ||
    Predicate.isReadonlyObject(capabilities.roots))

/** What the session's `notifications/progress` params report, through `progress`. */
const progressOf = (progress: Option.Option<ProgressReporter>) =>
  Option.match(progress, {
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

/** The outcome of an upstream result; an `input_required` one that is not valid is the upstream's failure. */
const outcomeOf = (connection: string, tool: string, result: Readonly<Record<string, unknown>>) => {
  const invalid = result.resultType === "input_required" ? invalidInputRequired(result) : undefined
  return invalid === undefined ?
    Effect.succeed(toOutcome(result)) :
    Effect.fail(
      new ToolCallRefused({
        name: tool,
        reason: "unavailable",
        detail: `upstream ${connection}: its input_required result is not valid (${invalid})`
      })
    )
}

const make = Effect.fnUntraced(function*(options: UpstreamPool.FederationOptions) {
  // held calls (bridging 2026-07-28 clients to 2025-era upstreams) when the gateway provides them
  const heldCalls = yield* Effect.serviceOption(HeldCalls)
  const toolArguments = ToolArguments.make()
  let visible: ReadonlyArray<Tool> = []
  let visibleByName = new Map<string, Exposed>()
  let knownByName = new Map<string, Exposed>()
  const toolChanges = yield* PubSub.unbounded<void>()

  // the pool calls `rebuild` from its own fibers, which may run before `make` returns
  let upstreams: ReadonlyMap<string, UpstreamPool.Upstream> = new Map()
  const rebuild = Effect.suspend(() => {
    const visibleMap = new Map<string, Exposed>()
    const known = new Map<string, Exposed>()
    const sorted = [...upstreams.values()].sort((a, b) => a.connection.name < b.connection.name ? -1 : 1)
    for (const upstream of sorted) {
      for (const tool of upstream.tools) {
        const exposed: Exposed = { ...tool, upstream }
        if (!known.has(tool.tool.name)) known.set(tool.tool.name, exposed)
        if (upstream.state === "healthy" && !visibleMap.has(tool.tool.name)) {
          visibleMap.set(tool.tool.name, exposed)
        }
      }
    }
    visibleByName = visibleMap
    knownByName = known
    visible = Array.from(visibleMap.values(), (e) => e.tool).sort(byName)
    return PubSub.publish(toolChanges, undefined)
  })

  // the features read the pool lazily: the pool signals changes from its own fibers before `make` returns
  const holder: { pool?: UpstreamPool.UpstreamPool } = {}
  const featured = yield* FederatedFeatures.make(() => holder.pool!, yield* ConfigCache)
  const pool = yield* UpstreamPool.make(options, (kind) =>
    kind === "tools"
      ? Effect.asVoid(rebuild)
      : kind === "all"
      ? Effect.andThen(
        Effect.asVoid(rebuild),
        Effect.andThen(featured.changed("resources"), featured.changed("prompts"))
      )
      : featured.changed(kind))
  holder.pool = pool
  upstreams = pool.upstreams

  const call: FederatedCatalog["Service"]["call"] = (caller, request) =>
    Effect.gen(function*() {
      const relay = yield* UpstreamRelay
      // a 2026-07-28 client's calls of 2025-era upstreams are held calls
      const held = relay.stateless === true ? Option.getOrUndefined(heldCalls) : undefined
      const resumes = request.requestState !== undefined && HeldCallState.isHeldState(request.requestState)
      let exposed = visibleByName.get(request.name)
      if (exposed === undefined && [...pool.upstreams.values()].some((u) => u.state === "connecting")) {
        // Right after start (or a new connection), a call may arrive before any list.
        yield* pool.awaitFirst
        exposed = visibleByName.get(request.name)
      }
      if (exposed === undefined) {
        const known = knownByName.get(request.name)
        if (known === undefined) return yield* new ToolNotFound({ name: request.name })
        // a held call lives on the replica that started it, whatever this one's session of its upstream does
        if (held === undefined || !resumes) {
          return yield* new ToolCallRefused({
            name: request.name,
            reason: "unavailable",
            detail: `the upstream MCP server ${known.upstream.connection.name} is unavailable (${
              known.upstream.lastError ?? "connecting"
            }); its tools return when it recovers`
          })
        }
        exposed = known
      }
      const u = exposed.upstream
      const upstreamName = exposed.upstreamName
      const record = yield* Effect.serviceOption(CurrentCall)
      if (Option.isSome(record)) {
        record.value.connection = u.connection.name
        record.value.metricName = request.name
        record.value.bytesIn = JSON.stringify(request.arguments ?? {}).length
      }
      if (held !== undefined && resumes) {
        return yield* held.resume({
          caller,
          tool: request.name,
          connection: u.connection.name,
          timeout: Duration.millis(u.connection.timeoutMs),
          requestState: request.requestState!,
          inputResponses: request.inputResponses,
          progress: request.progress,
          log: relay.log
        })
      }
      // the arguments against the tool's input schema, before anything is sent (a resumed call's were checked)
      const invalid = yield* toolArguments.check(
        { connection: u.connection.name, tool: request.name, inputSchema: exposed.inputSchema },
        request.arguments
      )
      if (invalid !== undefined) {
        return yield* new InvalidToolArguments({ name: request.name, detail: invalid, asToolResult: true })
      }
      const session = u.session
      if (session === undefined) {
        return yield* new ToolCallRefused({
          name: request.name,
          reason: "unavailable",
          detail: `the upstream MCP server ${u.connection.name} is reconnecting`
        })
      }
      if (held !== undefined && session.era === "stateful" && request.requestState !== undefined) {
        return yield* new InvalidToolArguments({ name: request.name, detail: HeldCallState.ALTERED })
      }
      // a client that declared none of the input capabilities is never asked: nothing to hold
      if (held !== undefined && session.era === "stateful" && canBeAsked(relay.clientCapabilities)) {
        return yield* held.start({
          caller,
          tool: request.name,
          connection: u.connection.name,
          timeout: Duration.millis(u.connection.timeoutMs),
          progress: request.progress,
          log: relay.log,
          run: (hooks) =>
            session.request("tools/call", { name: upstreamName, arguments: request.arguments }, {
              onProgress: progressOf(Option.some(hooks.progress)),
              relay: { ...relay, request: hooks.request, log: hooks.log },
              // the held call bounds the upstream's own time; a person's time to answer is not the upstream's
              timeout: Duration.infinity
            }).pipe(
              Effect.tapError((error) =>
                error.kind === "unavailable" || error.kind === "timeout" ? u.refresh() : Effect.void
              ),
              Effect.mapError((error) => toCallError(request.name, error)),
              Effect.flatMap((result) => outcomeOf(u.connection.name, request.name, result))
            )
        })
      }
      const params: Record<string, unknown> = { name: upstreamName, arguments: request.arguments }
      if (request.inputResponses !== undefined) params.inputResponses = request.inputResponses
      if (request.requestState !== undefined) params.requestState = request.requestState
      const onProgress = progressOf(request.progress)
      const sent = session.request("tools/call", params, {
        onProgress,
        relay,
        headers: session.era === "stateless"
          ? UpstreamClient.paramHeaders(exposed.inputSchema, request.arguments)
          : undefined,
        timeout: Duration.millis(u.connection.timeoutMs)
      })
      const result = yield* (request.signal === undefined
        ? sent
        : Effect.raceFirst(sent, aborted(request.signal, u.connection.name))).pipe(
          Effect.tapError((error) =>
            error.kind === "unavailable" || error.kind === "timeout" ? u.refresh() : Effect.void
          ),
          Effect.mapError((error) => toCallError(request.name, error))
        )
      return yield* outcomeOf(u.connection.name, request.name, result)
    })

  const catalog = FederatedCatalog.of({
    list: () => Effect.as(pool.awaitFirst, undefined).pipe(Effect.map(() => visible)),
    call,
    changes: Stream.fromPubSub(toolChanges),
    origin: (name) => {
      const exposed = knownByName.get(name)
      return exposed === undefined
        ? Option.none()
        : Option.some({ connection: exposed.upstream.connection.name, tool: exposed.upstreamName })
    }
  })

  // each upstream's status with the collisions it is part of
  const health = UpstreamHealth.of({
    ...pool.health,
    list: Effect.gen(function*() {
      const statuses = yield* pool.health.list
      const collisions = yield* featured.collisions
      return statuses.map((s) => ({
        ...s,
        collisions: collisions.filter((c) => c.connections.includes(s.connection))
      }))
    })
  })
  return Context.make(FederatedCatalog, catalog).pipe(
    Context.add(UpstreamHealth, health),
    Context.add(Features, featured.features)
  )
})

/** The federated tools as a plain `ToolCatalog` (tests, single-catalog deployments). */
export const asToolCatalog: Layer.Layer<ToolCatalog, never, FederatedCatalog> = Layer.effect(
  ToolCatalog,
  Effect.gen(function*() {
    const catalog = yield* FederatedCatalog
    return ToolCatalog.of(catalog)
  })
)
