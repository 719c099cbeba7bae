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
 * - With OAuth on, the body has an `oauth` detail: each issuer's key count,
 *   when its keys were last fetched and the last fetch error. While no
 *   issuer's keys were ever fetched and OAuth is the only way in (no active
 *   client token, no anonymous access), the instance is not ready: it could
 *   only answer 503 to every caller, and another replica may hold keys. Once
 *   keys were fetched they are held through an authorization server's
 *   outage, so readiness does not follow the authorization server's health
 *   (which would take every replica out at once).
 * - With `JANUS_CONFIG_FILE`, the body has a `configFile` detail: the state
 *   of its last read (`applied`, `unchanged`, `invalid`, `failed`), its
 *   digest, when it was applied and, when it was refused, why. A refused
 *   document does not make the instance unready: it keeps serving the
 *   configuration it has (`configuration/ConfigFile.ts`).
 *
 * @since 0.1.0
 */
import { ClientTokens, StorageHealth } from "@janus/storage"
import { Clock, Effect, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { JanusConfig } from "../config/JanusConfig.ts"
import { ConfigFile } from "../configuration/ConfigFile.ts"
import { JwksCache, type JwksStatus } from "../oauth/index.ts"

const oauthDetail = (statuses: ReadonlyArray<JwksStatus>) =>
  statuses.map((s) => ({
    issuer: s.issuer,
    keys: s.keyCount,
    fetchedAt: s.fetchedAt === undefined ? null : new Date(s.fetchedAt).toISOString(),
    ...(s.lastError === undefined ? {} : { lastError: s.lastError })
  }))

export const HealthRoutes = HttpRouter.use(Effect.fn(function*(router) {
  const storage = yield* StorageHealth
  const jwks = yield* Effect.serviceOption(JwksCache)
  const config = yield* Effect.serviceOption(JanusConfig)
  const tokens = yield* Effect.serviceOption(ClientTokens)
  const configFile = yield* Effect.serviceOption(ConfigFile)

  /** The detail of JANUS_CONFIG_FILE, when one is configured. */
  const configFileDetail = Option.match(configFile, {
    onNone: () => Effect.succeed({}),
    onSome: (file) =>
      Effect.map(file.status, Option.match({ onNone: () => ({}), onSome: (status) => ({ configFile: status }) }))
  })

  /** Whether a request can get in without OAuth: anonymous access, or an active client token. */
  const otherWayIn = Effect.gen(function*() {
    if (Option.isSome(config) && config.value.JANUS_ALLOW_ANONYMOUS) return true
    if (Option.isNone(tokens)) return true
    const now = new Date(yield* Clock.currentTimeMillis)
    // a listing that fails counts as "maybe": readiness then rests on the database check alone
    return yield* tokens.value.list.pipe(
      Effect.map((list) => list.some((token) => token.isActiveAt(now))),
      Effect.orElseSucceed(() => true)
    )
  })

  const ready = Effect.gen(function*() {
    const file = yield* configFileDetail
    if (Option.isNone(jwks)) return HttpServerResponse.jsonUnsafe({ status: "ready", ...file })
    const statuses = yield* jwks.value.status
    const oauth = oauthDetail(statuses)
    if (statuses.some((s) => s.fetchedAt !== undefined) || (yield* otherWayIn)) {
      return HttpServerResponse.jsonUnsafe({ status: "ready", oauth, ...file })
    }
    const errors = statuses.flatMap((s) => s.lastError === undefined ? [] : [`${s.issuer}: ${s.lastError}`])
    return HttpServerResponse.jsonUnsafe({
      status: "unavailable",
      reason: "OAuth access tokens are the only way in and no issuer's signing keys were fetched yet" +
        (errors.length === 0 ? "" : ` (${errors.join("; ")})`),
      oauth,
      ...file
    }, { status: 503 })
  })

  yield* router.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))
  yield* router.add(
    "GET",
    "/readyz",
    storage.check.pipe(
      Effect.andThen(ready),
      Effect.catch((error) =>
        Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "unavailable", reason: error.message }, { status: 503 }))
      )
    )
  )
}))
