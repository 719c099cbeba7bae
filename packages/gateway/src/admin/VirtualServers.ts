/**
 * `/api/v1/virtual-servers`: named subsets of tools, each at its own MCP URL.
 *
 * **Rules**
 *
 * - CRUD with pagination, ETags and preconditions as in `Resource`.
 * - The body is a `VirtualServerInput`; `tools` lists endpoint names,
 *   `<mcp connection>/<tool>` or `<mcp connection>/*`. A tool that does not
 *   exist is 422 `unknown_reference` naming it; one listed twice is 400.
 *   `bareNames: true` serves upstream tools without their connection prefix
 *   where the name is unique in the server.
 *
 * @since 0.1.0
 */
import { type VirtualServer, type VirtualServerInput, VirtualServers } from "@janus/storage"
import { Effect, Layer } from "effect"
import { AdminRouter } from "./AdminRouter.ts"
import type { JsonObject } from "./JsonBody.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"

/** The JSON representation of a virtual server. */
export const present = (s: VirtualServer): JsonObject => ({
  id: s.id,
  name: s.name,
  description: s.description,
  tools: s.tools,
  bareNames: s.bareNames,
  version: s.version,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString()
})

export const VirtualServerRoutes: Layer.Layer<never, never, AdminRouter | VirtualServers> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const servers = yield* VirtualServers
    yield* Resource.register(router, {
      path: "/virtual-servers",
      entity: "virtual_server",
      list: () => Effect.mapError(servers.list, Problem.fromStorage),
      get: servers.get,
      create: (input) => servers.create(input as VirtualServerInput),
      update: (id, version, input) => servers.update(id, version, input as VirtualServerInput),
      delete: servers.delete,
      present
    })
  })
)
