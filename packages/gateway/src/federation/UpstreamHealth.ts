/**
 * The health model of upstream MCP servers: what Studio, `/api/v1/upstreams`
 * and `/metrics` show about each one, as this replica sees it.
 *
 * **Rules**
 *
 * - An upstream is `connecting` until its first session is up or has
 *   failed, then `healthy` while its session serves its requests
 *   (connecting, the lists, calls), `unhealthy` otherwise, with the last
 *   error, when it happened and when the next attempt is due. Its change
 *   channel is reported beside (`changeChannel`): a failed channel means its
 *   lists are polled, never that it is unhealthy.
 * - The gauge `janus.upstream.healthy{connection}` is 1 while healthy, else
 *   0 (and 0 once a connection is removed).
 *
 * @since 0.1.0
 */
import { Context, type Effect, Metric, type Option, type Stream } from "effect"
import type { Upstream } from "./UpstreamPool.ts"

export type UpstreamState = "connecting" | "healthy" | "unhealthy"

/** What Studio and `/metrics` show about one upstream. */
export interface UpstreamStatus {
  readonly connectionId: string
  readonly connection: string
  /** The upstream's URL; null for stdio. */
  readonly url: string | null
  readonly transport: "streamable-http" | "sse" | "stdio"
  readonly state: UpstreamState
  /** The negotiated protocol revision while connected. */
  readonly protocolVersion: string | undefined
  readonly toolCount: number
  /** Resources and resource templates the upstream lists. */
  readonly resourceCount: number
  readonly promptCount: number
  /**
   * URIs, templates and prompt names this upstream shares with another
   * upstream in one view (`/mcp` or a virtual server); see
   * `FeatureNames.ts` for how both stay reachable.
   */
  readonly collisions: ReadonlyArray<{
    readonly kind: "resource" | "resourceTemplate" | "prompt"
    readonly name: string
    readonly connections: ReadonlyArray<string>
    readonly view: string
  }>
  /**
   * The change channel while connected: `open` (list changes are notified),
   * `opening`, or `closed` (none offered, or failed: lists are polled every
   * `pollIntervalMs`); it never decides `state`.
   */
  readonly changeChannel: "opening" | "open" | "closed" | undefined
  /** Why the change channel is closed. */
  readonly changeChannelDetail: string | undefined
  readonly pollIntervalMs: number
  /** The program's pid while a stdio upstream runs. */
  readonly pid: number | undefined
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

/** `janus.upstream.healthy{connection}`: 1 while the upstream is healthy, else 0. */
export const upstreamHealthy = Metric.gauge("janus.upstream.healthy", {
  description: "1 while the upstream MCP server of a connection is healthy, 0 otherwise"
})

/** What Studio and `/metrics` show of one upstream of the pool (its collisions are added by the federation). */
export const statusOf = (u: Upstream): UpstreamStatus => ({
  connectionId: u.connection.id,
  connection: u.connection.name,
  url: u.connection.url,
  transport: u.connection.transport,
  state: u.state,
  protocolVersion: u.protocolVersion,
  toolCount: u.tools.length,
  resourceCount: u.features.resources.length + u.features.templates.length,
  promptCount: u.features.prompts.length,
  collisions: [],
  changeChannel: u.channel === undefined
    ? undefined
    : u.channel._tag === "Open"
    ? "open"
    : u.channel._tag === "Opening"
    ? "opening"
    : "closed",
  changeChannelDetail: u.channel?._tag === "Closed" ? u.channel.reason : undefined,
  pollIntervalMs: u.connection.pollIntervalMs,
  pid: u.session?.pid?.(),
  lastError: u.lastError,
  lastErrorAt: u.lastErrorAt,
  since: u.since,
  nextAttemptAt: u.nextAttemptAt
})
