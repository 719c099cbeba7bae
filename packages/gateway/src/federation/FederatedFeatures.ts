/**
 * The resources, resource templates, prompts and completion of every
 * `kind: mcp` connection, federated: the `Features` the MCP endpoint serves,
 * over the upstream pool the federated tools use.
 *
 * **Rules**
 *
 * - Views, naming, collisions and routing are `FeatureNames.ts`'s. Lists
 *   never call an upstream (the pool holds every upstream's lists); a view
 *   is computed once per pool change, configuration snapshot and view.
 * - `resources/read`, `prompts/get` and `completion/complete` go to the
 *   owning upstream under its own names (a prompt's upstream name, a
 *   resource's upstream URI, `ref` rewritten likewise), bounded by the
 *   connection's `timeoutMs`. An upstream's JSON-RPC error is relayed with
 *   its code, message and data, except its internal error (-32603, or no
 *   code): that is the upstream's failure, a refusal `unavailable` as for
 *   tools/call (relayed, a client would take it for the gateway's internal
 *   error). An unavailable upstream or a transport failure is a refusal
 *   (`unavailable`, `timeout`), and asks the pool to list that upstream
 *   again.
 * - `completion/complete` for an upstream that does not announce
 *   `completions` answers an empty completion without calling it.
 * - `resources/subscribe` / `unsubscribe` are authorized, audited and
 *   answered `{}` here; what the upstream is told is `hold`'s
 *   (`ResourceSubscriptions.ts`: one upstream subscription per upstream and
 *   URI across clients, 2025 upstreams through `resources/subscribe`,
 *   2026-07-28 ones through a `subscriptions/listen` of their own). Upstream
 *   `notifications/resources/updated` come out on `updatesFor(caller)` under
 *   each name that resolves to that upstream's resource in the caller's
 *   view: the URI as the upstream gives it (when that is where it leads)
 *   and `janus://<connection>/<uri>`, so a client subscribed to either form
 *   hears of it, and a client whose view does not hold that upstream hears
 *   nothing (not even for the same URI served by another upstream).
 * - Redaction (when on) covers `contents` of resources/read and `messages` of
 *   prompts/get; the count goes to the audit record.
 * - Response cache: a 2026-07-28 result with `ttlMs > 0` is reused for that
 *   long, for the same caller (`cacheScope: "private"`, the default) or for
 *   every caller of the same view (`public`); a cached answer is audited
 *   with `cached`.
 *
 * @since 0.1.0
 */
import type { ConfigCache, ConfigSnapshot } from "@janus/storage"
import { Duration, Effect, Option, Predicate, PubSub, Stream } from "effect"
import { CurrentCall } from "../calls/CallRecord.ts"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type { Caller } from "../mcp/Caller.ts"
import { type ChangeKind, type FeatureCapabilities, Features, type Route } from "../mcp/Features.ts"
import { ProtocolError } from "../mcp/JsonRpc.ts"
import { Meta } from "../mcp/Protocol.ts"
import { ToolCallRefused } from "../mcp/ToolCatalog.ts"
import * as ClientText from "../observability/ClientText.ts"
import { Redactor } from "../redaction/index.ts"
import { type UpstreamError } from "./Errors.ts"
import { qualify } from "./FeatureNames.ts"
import { type Collision, type RouteTarget, type View, viewOf } from "./FeatureView.ts"
import * as ResourceSubscriptions from "./ResourceSubscriptions.ts"
import { type Params } from "./upstream/Wire.ts"
import type { Upstream, UpstreamPool } from "./UpstreamPool.ts"

/** The result as the gateway passes it on: no `resultType`, no upstream `serverInfo` `_meta`. */
const clean = (result: Params): Params => {
  const { resultType: _, ...rest } = result
  if (Predicate.isReadonlyObject(rest._meta) && Meta.serverInfo in rest._meta) {
    const { [Meta.serverInfo]: _s, ...meta } = rest._meta
    if (Object.keys(meta).length > 0) return { ...rest, _meta: meta }
    const { _meta: _m, ...plain } = rest
    return plain
  }
  return rest
}

/** JSON-RPC Internal error: an upstream's is not relayed as such (see the rules). */

const notFound = (uri: string): ProtocolError =>
  new ProtocolError({
    code: ErrorCode.resourceNotFound,
    message: `Resource ${
      ClientText.quoted(uri)
    } not found: no upstream in this view lists it or has a template matching it; call resources/list and resources/templates/list`,
    data: { uri: ClientText.echoed(uri) },
    status: 200
  })

export interface FederatedFeatures {
  readonly features: Features["Service"]
  /** Collisions of every view, for `/api/v1/upstreams`. */
  readonly collisions: Effect.Effect<ReadonlyArray<Collision>>
  /** Signals the endpoint that lists of `kind` changed. */
  readonly changed: (kind: ChangeKind) => Effect.Effect<void>
}

export const make = Effect.fnUntraced(function*(
  pool: () => UpstreamPool,
  config: ConfigCache["Service"]
) {
  const redactor = yield* Effect.serviceOption(Redactor)
  const changes = yield* PubSub.unbounded<ChangeKind>()
  let version = 0
  const views = new WeakMap<ConfigSnapshot, Map<string, { version: number; view: View }>>()
  const cache = new Map<string, { readonly expires: number; readonly result: Params }>()

  const viewKey = (caller: Caller) =>
    `${caller.virtualServer ?? ""}\u0000${caller.tools === null || caller.tools === undefined ? "*" : caller.id}`

  const view = (caller: Caller) =>
    Effect.map(Effect.orElseSucceed(config.snapshot, () => undefined), (snapshot) => {
      const upstreams = [...pool().upstreams.values()]
      if (snapshot === undefined) return viewOf(upstreams, undefined, caller)
      let bySnapshot = views.get(snapshot)
      if (bySnapshot === undefined) {
        bySnapshot = new Map()
        views.set(snapshot, bySnapshot)
      }
      const key = viewKey(caller)
      const last = bySnapshot.get(key)
      if (last !== undefined && last.version === version) return last.view
      const computed = viewOf(upstreams, snapshot, caller)
      if (bySnapshot.size > 10_000) bySnapshot.clear()
      bySnapshot.set(key, { version, view: computed })
      return computed
    })

  const failure =
    (label: string, u: Upstream) => (error: UpstreamError): Effect.Effect<never, ProtocolError | ToolCallRefused> => {
      // the upstream's own internal error is the upstream's failure, refused as for tools/call: relayed as
      // -32603 a client would take it for the gateway's
      if (error.kind === "rpc" && error.code !== undefined && error.code !== ErrorCode.internalError) {
        return Effect.fail(
          new ProtocolError({
            code: error.code,
            message: error.detail,
            ...(error.data === undefined ? {} : { data: error.data }),
            status: 200
          })
        )
      }
      const refusal = new ToolCallRefused({
        name: label,
        reason: error.kind === "timeout" ? "timeout" : error.kind === "refused" ? "denied" : "unavailable",
        detail: error.message
      })
      return error.kind === "unavailable" || error.kind === "timeout"
        ? Effect.andThen(u.refresh(), Effect.fail(refusal))
        : Effect.fail(refusal)
    }

  const redact = (result: Params, field: string) =>
    Effect.gen(function*() {
      if (Option.isNone(redactor) || !redactor.value.enabled || result[field] === undefined) return result
      const redacted = yield* redactor.value.redactJson(result[field]).pipe(Effect.orElseSucceed(() => undefined))
      if (redacted === undefined || redacted.total === 0) return result
      const record = yield* Effect.serviceOption(CurrentCall)
      if (Option.isSome(record)) record.value.redactions += redacted.total
      return { ...result, [field]: redacted.value }
    })

  /** One request to `target`'s upstream, audited and cached as the module doc says. */
  const send = (
    caller: Caller,
    target: RouteTarget,
    method: string,
    params: Params
  ): Effect.Effect<Params, ProtocolError | ToolCallRefused> =>
    Effect.gen(function*() {
      const u = target.upstream
      const record = yield* Effect.serviceOption(CurrentCall)
      const body = JSON.stringify(params)
      if (Option.isSome(record)) {
        record.value.connection = u.connection.name
        record.value.metricName = target.metric
        // what the call carries in; the answer's bytes are measured by the guard on the result it returns
        record.value.bytesIn = body.length
      }
      const session = u.session
      if (session === undefined || u.state !== "healthy") {
        return yield* new ToolCallRefused({
          name: target.label,
          reason: "unavailable",
          detail: `the upstream MCP server ${u.connection.name} is unavailable (${u.lastError ?? "connecting"})`
        })
      }
      const now = Date.now()
      const shared = `${u.connection.name}\u0000${method}\u0000${body}`
      for (const key of [`${caller.id}\u0000${shared}`, `*${viewKey(caller)}\u0000${shared}`]) {
        const hit = cache.get(key)
        if (hit !== undefined && hit.expires > now) {
          if (Option.isSome(record)) record.value.cached = true
          return hit.result
        }
      }
      const raw = yield* session.request(method, params, { timeout: Duration.millis(u.connection.timeoutMs) }).pipe(
        Effect.catch(failure(target.label, u))
      )
      let result = clean(raw)
      if (method === "resources/read") result = yield* redact(result, "contents")
      if (method === "prompts/get") result = yield* redact(result, "messages")
      const ttl = typeof raw.ttlMs === "number" && Number.isFinite(raw.ttlMs) ? raw.ttlMs : 0
      if (ttl > 0 && session.era === "stateless") {
        if (cache.size > 10_000) cache.clear()
        const key = raw.cacheScope === "public" ? `*${viewKey(caller)}\u0000${shared}` : `${caller.id}\u0000${shared}`
        cache.set(key, { expires: now + Math.min(ttl, 3_600_000), result })
      }
      return result
    })

  /** Names the call's record with `target`'s catalog name, for metrics (a subscription calls no upstream here). */
  const named = (target: RouteTarget) =>
    Effect.map(Effect.serviceOption(CurrentCall), (record) => {
      if (Option.isSome(record)) record.value.metricName = target.metric
    })

  const subscriptions = yield* ResourceSubscriptions.make((caller, target, method) =>
    send(caller, target, method, { uri: target.name })
  )

  const route = (
    caller: Caller,
    method: string,
    params: Params
  ): Effect.Effect<Route, ProtocolError> =>
    Effect.flatMap(view(caller), (v) => {
      switch (method) {
        case "prompts/get": {
          const target = v.promptByName.get(params.name as string)
          if (target === undefined) {
            return Effect.fail(ProtocolError.invalidParams(
              `Unknown prompt ${ClientText.json(params.name)}: no prompt of that name is available to this caller; ` +
                "call prompts/list for the available prompts"
            ))
          }
          return Effect.succeed({
            label: target.label,
            run: send(caller, target, method, { ...params, name: target.name })
          })
        }
        case "completion/complete": {
          const ref = params.ref as Params
          const target = ref.type === "ref/prompt"
            ? v.promptByName.get(String(ref.name))
            : v.templateByServed.get(String(ref.uri)) ?? v.resourceByUri.get(String(ref.uri))
          if (target === undefined) {
            return Effect.fail(ProtocolError.invalidParams(
              `completion/complete: ${ref.type === "ref/prompt" ? "prompt" : "resource template"} ${
                ClientText.json(ref.type === "ref/prompt" ? ref.name : ref.uri)
              } is not available to this caller; call prompts/list or resources/templates/list`
            ))
          }
          const completions = target.upstream.session?.capabilities.completions
          const upstreamRef = ref.type === "ref/prompt" ? { ...ref, name: target.name } : { ...ref, uri: target.name }
          return Effect.succeed({
            label: target.label,
            run: Predicate.isReadonlyObject(completions)
              ? send(caller, target, method, { ...params, ref: upstreamRef })
              : Effect.succeed({ completion: { values: [], hasMore: false } })
          })
        }
        default: {
          const uri = params.uri as string
          const targets = v.resolve(uri)
          if (targets.length === 0) return Effect.fail(notFound(uri))
          if (method === "resources/subscribe" || method === "resources/unsubscribe") {
            // the session holds the subscription (`hold`) once this answer is a success
            return Effect.succeed({ label: targets[0]!.label, run: Effect.as(named(targets[0]!), {}) })
          }
          // an unlisted URI: the upstreams offering resources, in order, until one answers
          const attempt = (i: number): Effect.Effect<Params, ProtocolError | ToolCallRefused> =>
            send(caller, targets[i]!, method, { ...params, uri: targets[i]!.name }).pipe(
              Effect.catch((error) => i + 1 < targets.length ? attempt(i + 1) : Effect.fail(error))
            )
          return Effect.succeed({ label: targets[0]!.label, run: attempt(0) })
        }
      }
    })

  const capabilities = (caller: Caller): Effect.Effect<FeatureCapabilities> =>
    Effect.map(view(caller), (v) => ({
      ...(v.offers.resources ? { resources: { subscribe: true, listChanged: true } } : {}),
      ...(v.offers.prompts ? { prompts: { listChanged: true } } : {}),
      ...(v.offers.completions ? { completions: {} } : {})
    }))

  const hold = (caller: Caller, uri: string) =>
    Effect.flatMap(view(caller), (v) => {
      const target = v.resolve(uri)[0]
      return target === undefined ? Effect.succeed(false) : Effect.as(subscriptions.hold(caller, target), true)
    })

  const features = Features.of({
    capabilities,
    hold,
    list: (caller, kind) => Effect.andThen(pool().awaitFirst, Effect.map(view(caller), (v) => v.lists[kind])),
    route,
    changes: Stream.fromPubSub(changes),
    updatesFor: (caller) =>
      Effect.map(
        pool().subscribeUpdates,
        (updates) =>
          Stream.flatMap(updates, (update) =>
            Stream.fromIterableEffect(Effect.map(view(caller), (v) =>
              // as the upstream gives the URI, and qualified with its connection, where it leads to this resource
              [update.uri, qualify(update.connection, update.uri)].filter((name) =>
                v.resolve(name).some((target) =>
                  target.upstream.connection.name === update.connection && target.name === update.uri
                )
              ))))
      )
  })

  const collisions = Effect.gen(function*() {
    const snapshot = yield* Effect.orElseSucceed(config.snapshot, () => undefined)
    const upstreams = [...pool().upstreams.values()]
    const all: Array<Collision> = [...viewOf(upstreams, snapshot, { id: "", scopes: [] }).collisions]
    for (const name of snapshot?.virtualServerByName.keys() ?? []) {
      all.push(...viewOf(upstreams, snapshot, { id: "", scopes: [], virtualServer: name }).collisions)
    }
    return all
  })

  const changed = (kind: ChangeKind) =>
    Effect.suspend(() => {
      version++
      return PubSub.publish(changes, kind)
    })

  return { features, collisions, changed } satisfies FederatedFeatures
})
