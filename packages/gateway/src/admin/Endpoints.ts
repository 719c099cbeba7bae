/**
 * `/api/v1/endpoints`: REST operations of rest connections, each one MCP tool.
 *
 * **Rules**
 *
 * - CRUD with pagination, ETags and preconditions as in `Resource`;
 *   `GET /endpoints?connectionId=<id>` lists the endpoints of one connection
 *   (an unknown connection has none).
 * - The body is an `EndpointInput`; storage validates the tool name, the
 *   JSON Schema (and the output schema, when one is given: `outputSchema`,
 *   null or absent for none), the path template against the argument map, and that
 *   `connectionId` names a rest connection (an unknown one is 422
 *   `unknown_reference`).
 *
 * @since 0.1.0
 */
import { type Endpoint, type EndpointInput, Endpoints } from "@janus/storage"
import { Effect, Layer, Option } from "effect"
import { endpointDefinition } from "../configuration/Items.ts"
import { AdminRouter } from "./AdminRouter.ts"
import type { JsonObject } from "./JsonBody.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"

/** The JSON representation of an endpoint. */
export const present = (e: Endpoint): JsonObject => ({
  id: e.id,
  connectionId: e.connectionId,
  name: e.name,
  ...endpointDefinition(e),
  version: e.version,
  createdAt: e.createdAt.toISOString(),
  updatedAt: e.updatedAt.toISOString()
})

export const EndpointRoutes: Layer.Layer<never, never, AdminRouter | Endpoints> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const endpoints = yield* Endpoints
    yield* Resource.register(router, {
      path: "/endpoints",
      entity: "endpoint",
      list: (query) =>
        Effect.flatMap(
          Resource.singleQuery(query, "connectionId"),
          (connectionId) =>
            endpoints.list(Option.match(connectionId, { onNone: () => ({}), onSome: (id) => ({ connectionId: id }) }))
              .pipe(Effect.mapError(Problem.fromStorage))
        ),
      get: endpoints.get,
      create: (input) => endpoints.create(input as EndpointInput),
      update: (id, version, input) => endpoints.update(id, version, input as EndpointInput),
      delete: endpoints.delete,
      present
    })
  })
)
