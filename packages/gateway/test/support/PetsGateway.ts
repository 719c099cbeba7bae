/**
 * A whole gateway in front of the test downstream (`Downstream.ts`), seeded
 * with the `pets` connection and three endpoints: `slow` (GET /slow, `ms` in
 * the query), `get_pet` (GET /pets/{id}) and `create_pet` (POST /pets).
 */
import { Endpoints } from "@janus/storage"
import { Effect, Layer } from "effect"
import type { JanusSettings } from "../../src/config/JanusConfig.ts"
import * as GatewayTesting from "../../src/testing.ts"
import * as Downstream from "./Downstream.ts"

const seed = Effect.gen(function*() {
  const connection = yield* Downstream.connection()
  const endpoints = yield* Endpoints
  const schema = { type: "object", properties: { id: { type: "string" }, ms: { type: "number" } } }
  yield* endpoints.create({
    connectionId: connection.id,
    name: "slow",
    method: "GET",
    pathTemplate: "/slow",
    arguments: { ms: "query" },
    inputSchema: schema
  })
  yield* endpoints.create({
    connectionId: connection.id,
    name: "get_pet",
    method: "GET",
    pathTemplate: "/pets/{id}",
    arguments: { id: "path" },
    inputSchema: schema
  })
  yield* endpoints.create({
    connectionId: connection.id,
    name: "create_pet",
    method: "POST",
    pathTemplate: "/pets",
    inputSchema: schema
  })
})

export const gateway = (config: Partial<JanusSettings>) =>
  Layer.effectDiscard(seed).pipe(
    Layer.provideMerge(GatewayTesting.layer({ config })),
    Layer.provideMerge(Downstream.layer)
  )
