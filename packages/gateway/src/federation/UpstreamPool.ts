/**
 * The upstream MCP servers of this replica: one supervised session per
 * `kind: mcp` connection, its tools, and its health.
 *
 * **Rules**
 *
 * - Configuration comes from the config cache: a `connection` change signal
 *   (or the 10 s backstop) restarts the sessions of changed connections,
 *   stops those of removed ones and starts new ones. Credentials come from
 *   the secret cache on every request, so rotations need no restart.
 * - An upstream that fails to connect or to list within `listTimeout` is
 *   unhealthy: its tools are hidden; it is retried with exponential backoff
 *   (`backoff`, jittered; it starts over only after a session that lasted
 *   `STABLE_SESSION_MS`, so a crash loop keeps backing off), and when it
 *   answers again its tools come back.
 *   Only transitions and new reasons are logged, not every retry.
 * - A healthy upstream's tools are listed again whenever its session reports
 *   a list change, at once when a call to it fails for transport reasons
 *   (`refresh`), and on an interval: every `probeInterval` while its change
 *   channel is open, every `pollIntervalMs` (the connection's) while it is
 *   closed (failed, or none offered), and once when it opens again (changes
 *   may have been missed), and at once when it breaks (the upstream may be
 *   gone: a request tells). A failed list or a lost session makes the
 *   upstream unhealthy; a failed change channel never does.
 * - Its resources, resource templates and prompts are listed with its tools
 *   (`FeatureLists.ts`), on the same triggers (any kind of list-changed
 *   notification refreshes all).
 * - `changed(kind)` runs whenever what clients may see changed: an
 *   upstream's tools, resources or prompts (by content) while it is
 *   healthy (`kind` names which), or whether it is visible (`all`).
 * - `notifications/resources/updated` of a session is published on
 *   `updates` with its connection.
 *
 * @since 0.1.0
 */
import { ChangeFeed, ConfigCache, type McpConnection, type SecretCache } from "@janus/storage"
import {
  Deferred,
  Duration,
  Effect,
  Exit,
  FiberHandle,
  FiberMap,
  Metric,
  Option,
  PubSub,
  Queue,
  Random,
  Schedule,
  type Scope,
  Stream
} from "effect"
import type { ChildProcessSpawner } from "effect/process/ChildProcessSpawner"
import { UpstreamError } from "./Errors.ts"
import * as FeatureLists from "./FeatureLists.ts"
import type { FederationOptions } from "./FederationOptions.ts"
import { expose, type ExposedTool } from "./ToolNames.ts"
import type { UpstreamAuth } from "./UpstreamAuth.ts"
import * as UpstreamClient from "./UpstreamClient.ts"
import { statusOf, UpstreamHealth, upstreamHealthy, type UpstreamState } from "./UpstreamHealth.ts"
import { UpstreamHttp } from "./UpstreamHttp.ts"

/** How long a session must last for the reconnection backoff to start over. */
const STABLE_SESSION_MS = 60_000

export type { ConnectionOverrides, FederationOptions } from "./FederationOptions.ts"

/** One upstream as this replica holds it. */
export interface Upstream {
  readonly connection: McpConnection
  readonly key: string
  state: UpstreamState
  since: Date
  protocolVersion: string | undefined
  lastError: string | undefined
  lastErrorAt: Date | undefined
  nextAttemptAt: Date | undefined
  session: UpstreamClient.UpstreamSession | undefined
  /** The session's change channel (list changes notified, or polled while closed). */
  channel: UpstreamClient.ChannelState | undefined
  tools: ReadonlyArray<ExposedTool>
  fingerprint: string
  /** Resources, templates and prompts as the upstream lists them (names not yet exposed). */
  features: FeatureLists.FeatureLists
  featureFingerprints: { resources: string; prompts: string }
  /** The tool prefix (also the prompts'). */
  prefix: string
  readonly settled: Deferred.Deferred<void>
  /** Asks the session's supervisor for a `tools/list` now (refresh or probe). */
  refresh: () => Effect.Effect<void>
}

export interface UpstreamPool {
  /** By connection id. */
  readonly upstreams: ReadonlyMap<string, Upstream>
  /** Waits (at most `firstListWait`) for upstreams still on their first connection attempt. */
  readonly awaitFirst: Effect.Effect<void>
  readonly health: UpstreamHealth["Service"]
  /** `notifications/resources/updated` of every upstream. */
  readonly updates: Stream.Stream<ResourceUpdate>
  /** The same, subscribed when this runs (not when first pulled): nothing published after it is missed. */
  readonly subscribeUpdates: Effect.Effect<Stream.Stream<ResourceUpdate>, never, Scope.Scope>
}

/** What changed for clients. */
export type ChangeKind = "tools" | "resources" | "prompts" | "all"

/** An upstream's resource changed (it was subscribed to). */
export interface ResourceUpdate {
  readonly connection: string
  readonly uri: string
}

export const make = Effect.fnUntraced(function*(
  options: FederationOptions,
  changed: (kind: ChangeKind) => Effect.Effect<void>
) {
  const configCache = yield* ConfigCache
  const feed = yield* ChangeFeed
  const http = yield* UpstreamHttp
  const context = yield* Effect.context<UpstreamHttp | UpstreamAuth | SecretCache | ChildProcessSpawner>()

  const listTimeout = Duration.fromInputUnsafe(options.listTimeout ?? "5 seconds")
  const firstListWait = Duration.fromInputUnsafe(options.firstListWait ?? "2 seconds")
  const probeInterval = Duration.fromInputUnsafe(options.probeInterval ?? "30 seconds")
  const backoffInitial = Duration.toMillis(Duration.fromInputUnsafe(options.backoff?.initial ?? "1 second"))
  const backoffMax = Duration.toMillis(Duration.fromInputUnsafe(options.backoff?.max ?? "60 seconds"))
  const maxMessageBytes = options.maxMessageBytes ?? 16 * 1024 * 1024
  const maxTools = options.maxTools ?? 5_000
  const clientInfo = options.clientInfo ?? { name: "janus-gateway", version: "0.1.0" }

  const upstreams = new Map<string, Upstream>()
  const statusChanges = yield* PubSub.unbounded<void>()
  const updates = yield* PubSub.unbounded<ResourceUpdate>()
  const sessions = yield* FiberMap.make<string>()

  const gauge = (u: Upstream) =>
    Metric.update(
      Metric.withAttributes(upstreamHealthy, { connection: u.connection.name }),
      u.state === "healthy" ? 1 : 0
    )

  const setState = (u: Upstream, state: UpstreamState) =>
    Effect.gen(function*() {
      const wasVisible = u.state === "healthy" && u.tools.length > 0
      const wasHealthy = u.state === "healthy"
      if (u.state !== state) {
        u.state = state
        u.since = new Date()
      }
      yield* gauge(u)
      yield* PubSub.publish(statusChanges, undefined)
      const isVisible = u.state === "healthy" && u.tools.length > 0
      if (wasVisible !== isVisible) yield* changed("tools")
      if (wasHealthy !== (u.state === "healthy")) {
        const f = u.features
        if (f.resources.length > 0 || f.templates.length > 0) yield* changed("resources")
        if (f.prompts.length > 0) yield* changed("prompts")
      }
    })

  // --- one upstream -----------------------------------------------------------

  /** Bounds `what` by `listTimeout`. */
  const within = (connection: string, what: string) => <A, R>(self: Effect.Effect<A, UpstreamError, R>) =>
    Effect.timeoutOrElse(self, {
      duration: listTimeout,
      orElse: () =>
        Effect.fail(
          new UpstreamError({
            connection,
            kind: "timeout",
            detail: `${what} did not complete within ${Duration.format(listTimeout)}`
          })
        )
    })

  const listAll = (u: Upstream, session: UpstreamClient.UpstreamSession) =>
    Effect.gen(function*() {
      const tools = yield* FeatureLists.fetchTools(session, maxTools, listTimeout)
      const prefix = options.overrides?.(u.connection)?.toolPrefix ?? u.connection.toolPrefix ??
        `${u.connection.name}/`
      u.prefix = prefix
      const features = yield* FeatureLists.fetch(session, maxTools, listTimeout)
      return { tools: expose(u.connection.name, prefix, tools, maxTools), features }
    }).pipe(within(u.connection.name, "tools/list"))

  const setTools = (
    u: Upstream,
    listed: { readonly tools: ReadonlyArray<ExposedTool>; readonly features: FeatureLists.FeatureLists }
  ) =>
    Effect.gen(function*() {
      const kinds: Array<ChangeKind> = []
      const fingerprint = JSON.stringify(listed.tools.map((t) => t.tool))
      if (fingerprint !== u.fingerprint) {
        u.tools = listed.tools
        u.fingerprint = fingerprint
        kinds.push("tools")
      }
      const resources = JSON.stringify([listed.features.resources, listed.features.templates])
      const prompts = JSON.stringify(listed.features.prompts)
      u.features = listed.features
      if (resources !== u.featureFingerprints.resources) kinds.push("resources")
      if (prompts !== u.featureFingerprints.prompts) kinds.push("prompts")
      u.featureFingerprints = { resources, prompts }
      if (kinds.length === 0) return
      yield* PubSub.publish(statusChanges, undefined)
      if (u.state === "healthy") yield* Effect.forEach(kinds, changed, { discard: true })
    })

  /** Whether a session event means the lists may have changed. */
  const refreshes = (event: UpstreamClient.SessionEvent) =>
    event._tag === "Notification" && UpstreamClient.LIST_CHANGED.includes(event.method)

  const resourceUpdate = (u: Upstream, event: UpstreamClient.SessionEvent) =>
    event._tag === "Notification" && event.method === "notifications/resources/updated" &&
      typeof event.params.uri === "string"
      ? PubSub.publish(updates, { connection: u.connection.name, uri: event.params.uri })
      : Effect.void

  /** One session: connects, lists, serves until the session is lost (always ends in failure). */
  const runSession = (u: Upstream, connected: Effect.Effect<void>) =>
    Effect.scoped(Effect.gen(function*() {
      const name = u.connection.name
      const lost = yield* Deferred.make<never, UpstreamError>()
      const wanted = yield* Queue.sliding<void>(1)
      const overrides = options.overrides?.(u.connection)
      const allow = yield* http.allowList(name, u.connection.egressAllowList)
      const target: UpstreamClient.UpstreamTarget = {
        id: u.connection.id,
        name,
        url: u.connection.url ?? "",
        transport: u.connection.transport,
        command: u.connection.stdio ?? undefined,
        allow,
        auth: overrides?.auth ?? u.connection.auth
      }
      const session = yield* UpstreamClient.connect(target, {
        clientInfo,
        requestTimeout: listTimeout,
        maxMessageBytes
      }).pipe(within(name, "connecting"))
      const channelEvents = yield* Queue.unbounded<UpstreamClient.ChannelState>()
      yield* session.events.pipe(
        Stream.runForEach((event) =>
          event._tag === "Channel"
            ? Queue.offer(channelEvents, event.state)
            : refreshes(event)
            ? Queue.offer(wanted, undefined)
            : resourceUpdate(u, event)
        ),
        Effect.forkScoped({ startImmediately: true })
      )
      yield* session.lost.pipe(Effect.catch((error) => Deferred.fail(lost, error)), Effect.forkScoped)
      const tools = yield* listAll(u, session)
      u.session = session
      u.protocolVersion = session.protocolVersion
      u.nextAttemptAt = undefined
      u.refresh = () => Queue.offer(wanted, undefined).pipe(Effect.asVoid)
      yield* setTools(u, tools)
      if (u.state === "unhealthy") yield* Effect.logInfo(`upstream MCP server ${name} is healthy again`)
      yield* setState(u, "healthy")
      yield* Deferred.succeed(u.settled, undefined)
      yield* connected
      // Refreshes (list-changed, probes after failed calls) and periodic probes.
      yield* Queue.take(wanted).pipe(
        Effect.andThen(listAll(u, session)),
        Effect.flatMap((tools) => setTools(u, tools)),
        Effect.forever,
        Effect.catch((error) => Deferred.fail(lost, error)),
        Effect.forkScoped
      )
      // Probes while the change channel is open, polls while it is closed; the timer restarts only when the
      // mode changes, so a channel failing again and again never delays a poll.
      const timer = yield* FiberHandle.make<void, never>()
      const every = (interval: Duration.Duration) =>
        Queue.offer(wanted, undefined).pipe(Effect.repeat(Schedule.spaced(interval)), Effect.delay(interval))
      const pollInterval = Duration.millis(u.connection.pollIntervalMs)
      const onChannel = (state: UpstreamClient.ChannelState) =>
        Effect.gen(function*() {
          const previous = u.channel
          u.channel = state
          const polling = state._tag === "Closed"
          const wasPolling = previous?._tag === "Closed"
          if (previous === undefined || polling !== wasPolling) {
            yield* FiberHandle.run(timer, every(polling ? pollInterval : probeInterval))
          }
          // Opened again: changes may have been missed. Broken: the upstream may be gone, and only a request
          // can tell (a channel never decides health), so the lists are fetched at once either way.
          if ((state._tag === "Open" && wasPolling) || (polling && previous?._tag === "Open")) {
            yield* Queue.offer(wanted, undefined)
          }
          const detail = (c: UpstreamClient.ChannelState | undefined) => c?._tag === "Closed" ? c.reason : c?._tag
          if (detail(previous) !== detail(state)) yield* PubSub.publish(statusChanges, undefined)
        })
      yield* onChannel(session.channel)
      yield* Queue.take(channelEvents).pipe(Effect.flatMap(onChannel), Effect.forever, Effect.forkScoped)
      return yield* Deferred.await(lost)
    })).pipe(Effect.ensuring(Effect.sync(() => {
      u.session = undefined
      u.channel = undefined
      u.refresh = () => Effect.void
    })))

  const supervise = (u: Upstream) =>
    Effect.gen(function*() {
      let attempt = 0
      while (true) {
        let connectedAt: number | undefined
        const exit = yield* Effect.exit(runSession(
          u,
          Effect.sync(() => {
            connectedAt = Date.now()
          })
        ))
        // the backoff starts over only after a session that lasted: one that connects and fails again at once
        // (a stdio program crashing after its handshake) keeps backing off
        if (connectedAt !== undefined && Date.now() - connectedAt >= STABLE_SESSION_MS) attempt = 0
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
    JSON.stringify([
      c.version,
      c.url,
      c.transport,
      c.stdio,
      c.auth,
      c.egressAllowList,
      c.pollIntervalMs,
      options.overrides?.(c) ?? null
    ])

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
        channel: undefined,
        tools: [],
        fingerprint: "[]",
        features: FeatureLists.empty,
        featureFingerprints: { resources: "", prompts: "" },
        prefix: `${connection.name}/`,
        settled: yield* Deferred.make<void>(),
        refresh: () => Effect.void
      }
      upstreams.set(id, u)
      yield* gauge(u)
      yield* FiberMap.run(sessions, id, supervise(u))
    }
    if (removed) yield* changed("all")
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

  const awaitFirst = Effect.suspend(() => {
    const waiting = [...upstreams.values()].filter((u) => u.state === "connecting")
    if (waiting.length === 0) return Effect.void
    return Effect.forEach(waiting, (u) => Deferred.await(u.settled), { concurrency: "unbounded", discard: true }).pipe(
      Effect.timeoutOption(firstListWait),
      Effect.asVoid
    )
  })

  const health = UpstreamHealth.of({
    list: Effect.sync(() => [...upstreams.values()].map(statusOf).sort((a, b) => a.connection < b.connection ? -1 : 1)),
    get: (connection) =>
      Effect.sync(() =>
        Option.map(
          Option.fromNullishOr([...upstreams.values()].find((u) => u.connection.name === connection)),
          statusOf
        )
      ),
    changes: Stream.fromPubSub(statusChanges)
  })

  return {
    upstreams,
    awaitFirst,
    health,
    updates: Stream.fromPubSub(updates),
    subscribeUpdates: Effect.map(PubSub.subscribe(updates), Stream.fromSubscription)
  } satisfies UpstreamPool
}) as (
  options: FederationOptions,
  changed: (kind: ChangeKind) => Effect.Effect<void>
) => Effect.Effect<
  UpstreamPool,
  never,
  ConfigCache | ChangeFeed | UpstreamHttp | UpstreamAuth | SecretCache | ChildProcessSpawner | Scope.Scope
>
