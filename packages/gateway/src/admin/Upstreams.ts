/**
 * `GET /api/v1/upstreams`: the state of every upstream MCP server as this
 * replica sees it (Studio's federation view; the same numbers as the gauge
 * `janus.upstream.healthy`).
 *
 * **Rules**
 *
 * - One item per `kind: mcp` connection, sorted by connection name: state
 *   (`connecting`, `healthy`, `unhealthy`), negotiated protocol revision,
 *   tool count, the change channel (`open`, `opening`, `closed` and why:
 *   lists are then polled every `pollIntervalMs`), last error and when,
 *   since when, next attempt.
 * - Errors are the gateway's own descriptions: no credential or upstream
 *   response body is part of them.
 * - Without federation (`UpstreamHealth` absent) the list is empty.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import { UpstreamHealth, type UpstreamStatus } from "../federation/FederatedCatalog.ts"
import { AdminRouter } from "./AdminRouter.ts"
import type { JsonObject } from "./JsonBody.ts"

const iso = (date: Date | undefined) => date === undefined ? null : date.toISOString()

/** The JSON representation of an upstream's state. */
export const present = (s: UpstreamStatus): JsonObject => ({
  connectionId: s.connectionId,
  connection: s.connection,
  url: s.url,
  transport: s.transport,
  state: s.state,
  protocolVersion: s.protocolVersion ?? null,
  toolCount: s.toolCount,
  resourceCount: s.resourceCount,
  promptCount: s.promptCount,
  collisions: s.collisions.map((c) => ({ ...c, connections: [...c.connections] })),
  changeChannel: s.changeChannel ?? null,
  changeChannelDetail: s.changeChannelDetail ?? null,
  pollIntervalMs: s.pollIntervalMs,
  pid: s.pid ?? null,
  lastError: s.lastError ?? null,
  lastErrorAt: iso(s.lastErrorAt),
  since: s.since.toISOString(),
  nextAttemptAt: iso(s.nextAttemptAt)
})

export const UpstreamRoutes: Layer.Layer<never, never, AdminRouter> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const health = yield* Effect.serviceOption(UpstreamHealth)
    yield* router.add(
      "GET",
      "/upstreams",
      Effect.map(
        Option.isSome(health) ? health.value.list : Effect.succeed([]),
        (statuses) => HttpServerResponse.jsonUnsafe({ items: statuses.map(present) })
      )
    )
  })
)
