/**
 * Liveness and readiness probes.
 *
 * **Rules**
 *
 * - `GET /healthz` answers 200 while the process serves HTTP at all: it never
 *   touches the database, so a slow database does not get the pod killed.
 * - `GET /readyz` answers 200 only when the database answers and every
 *   migration is applied (`StorageHealth.check`), 503 otherwise, with the
 *   reason in the body so an operator sees why a pod takes no traffic.
 *
 * @since 0.1.0
 */
import { StorageHealth } from "@janus/storage"
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"

export const HealthRoutes = HttpRouter.use(Effect.fn(function*(router) {
  const storage = yield* StorageHealth
  yield* router.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))
  yield* router.add(
    "GET",
    "/readyz",
    storage.check.pipe(
      Effect.as(HttpServerResponse.jsonUnsafe({ status: "ready" })),
      Effect.catch((error) =>
        Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "unavailable", reason: error.message }, { status: 503 }))
      )
    )
  )
}))
