/**
 * `/api/v1/client-tokens` and `/api/v1/admin-tokens`: bearer tokens.
 *
 * **Rules**
 *
 * - A token's plaintext exists once: in the body of the `POST` that created
 *   it (`"token"`, with `Cache-Control: no-store` like every admin response).
 *   No other response carries it, and none carries a hash: reads return the
 *   stored metadata (name, display prefix, scopes, expiry, revocation, last
 *   use).
 * - Tokens have no version and no update: they are created, revoked
 *   (`POST …/:id/revoke`, idempotent: the first revocation time is kept) and,
 *   for client tokens, deleted. So no precondition is needed (`Preconditions`).
 * - Client tokens: `expiresAt` is an RFC 3339 date-time with a zone that
 *   exists on the calendar (`2030-02-30T00:00:00Z` is 400 naming the field
 *   and the value, never stored as 2 March), or `null`; storage checks it is in the future, that `allowedTools` are tool
 *   names and that `allowedVirtualServers` exist (422 otherwise); the tools
 *   named must exist too (`ToolReferences`, 422 otherwise).
 * - Admin tokens: revoking the last active admin token is refused with 409
 *   `last_admin_token`, so no one locks the team out of the API. Revocations
 *   are serialized in this instance so two concurrent ones cannot both pass
 *   the check. (Across replicas the check and the revoke are two statements;
 *   the remaining race is narrow, and an operator with console access can
 *   always recover: the gateway issues a new admin token when none is active.)
 * - Admin tokens are never deleted (kept for the audit trail).
 *
 * @since 0.1.0
 */
import { AdminTokens, type ClientTokenInput, ClientTokens, Connections, Endpoints, Instants } from "@janus/storage"
import { Clock, Effect, Layer, Redacted, Semaphore } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { AdminRouter, PREFIX } from "./AdminRouter.ts"
import { type JsonObject, readObject } from "./JsonBody.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"
import { presentAdminToken, presentClientToken } from "./TokenJson.ts"
import { checkAllowedTools } from "./ToolReferences.ts"

/** The JSON form of `expiresAt` (a date-time string) as the `Date` storage decodes. */
const clientTokenInput = (body: JsonObject): Effect.Effect<typeof ClientTokenInput.Encoded, Problem.ApiProblem> => {
  const expiresAt = body.expiresAt
  if (expiresAt === undefined || expiresAt === null) return Effect.succeed(body as typeof ClientTokenInput.Encoded)
  if (typeof expiresAt !== "string") {
    return Effect.fail(Problem.invalidFields([{
      path: "expiresAt",
      message: `Expected ${Instants.DATE_TIME_EXPECTED}, or null; got ${
        Array.isArray(expiresAt) ? "an array" : typeof expiresAt
      }`
    }]))
  }
  const date = Instants.parseDateTime(expiresAt)
  return Instants.isRefusal(date)
    ? Effect.fail(Problem.invalidFields([{
      path: "expiresAt",
      message: `${Instants.describeRefusal(expiresAt, date)}; expected ${Instants.DATE_TIME_EXPECTED}, or null`
    }]))
    : Effect.succeed({ ...body, expiresAt: date } as typeof ClientTokenInput.Encoded)
}

const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
const storage = Effect.mapError(Problem.fromStorage)
const byName = <A extends { readonly name: string; readonly id: string }>(t: A) => [t.name, t.id] as const

export const ClientTokenRoutes: Layer.Layer<never, never, AdminRouter | ClientTokens | Endpoints | Connections> = Layer
  .effectDiscard(
    Effect.gen(function*() {
      const router = yield* AdminRouter
      const tokens = yield* ClientTokens
      const references = { endpoints: yield* Endpoints, connections: yield* Connections }

      yield* router.add(
        "GET",
        "/client-tokens",
        Effect.gen(function*() {
          const all = yield* storage(tokens.list)
          const at = yield* now
          return yield* Resource.page(all, byName, (t) => presentClientToken(t, at))
        })
      )

      yield* router.add(
        "POST",
        "/client-tokens",
        Effect.gen(function*() {
          const body = yield* readObject(yield* HttpServerRequest.HttpServerRequest)
          const input = yield* clientTokenInput(body)
          yield* checkAllowedTools(references, body.allowedTools)
          const allowedTools = Array.isArray(body.allowedTools) ? body.allowedTools : []
          const created = yield* tokens.create(input).pipe(Effect.mapError((error) =>
            Problem.fromStorage(error, {
              toolName: (value) => {
                const index = allowedTools.indexOf(value)
                return index === -1 ? "allowedTools" : `allowedTools.${index}`
              }
            })
          ))
          return HttpServerResponse.jsonUnsafe(
            { ...presentClientToken(created.token, yield* now), token: Redacted.value(created.plaintext) },
            { status: 201, headers: { location: `${PREFIX}/client-tokens/${created.token.id}` } }
          )
        })
      )

      yield* router.add(
        "GET",
        "/client-tokens/:id",
        Effect.gen(function*() {
          const token = yield* storage(tokens.get(yield* Resource.param("id")))
          return HttpServerResponse.jsonUnsafe(presentClientToken(token, yield* now))
        })
      )

      yield* router.add(
        "POST",
        "/client-tokens/:id/revoke",
        Effect.gen(function*() {
          const token = yield* storage(tokens.revoke(yield* Resource.param("id")))
          return HttpServerResponse.jsonUnsafe(presentClientToken(token, yield* now))
        })
      )

      yield* router.add(
        "DELETE",
        "/client-tokens/:id",
        Effect.gen(function*() {
          yield* storage(tokens.delete(yield* Resource.param("id")))
          return HttpServerResponse.empty({ status: 204 })
        })
      )
    })
  )

export const AdminTokenRoutes: Layer.Layer<never, never, AdminRouter | AdminTokens> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const tokens = yield* AdminTokens
    const revocations = yield* Semaphore.make(1)

    const find = (id: string) =>
      Effect.flatMap(storage(tokens.list), (all) => {
        const token = all.find((t) => t.id === id)
        return token === undefined
          ? Effect.fail(Problem.notFound(`no admin_token with id ${JSON.stringify(id)}`))
          : Effect.succeed(token)
      })

    yield* router.add(
      "GET",
      "/admin-tokens",
      Effect.flatMap(storage(tokens.list), (all) => Resource.page(all, byName, presentAdminToken))
    )

    yield* router.add(
      "POST",
      "/admin-tokens",
      Effect.gen(function*() {
        const body = yield* readObject(yield* HttpServerRequest.HttpServerRequest)
        const created = yield* storage(tokens.create(body as { readonly name: string }))
        return HttpServerResponse.jsonUnsafe(
          { ...presentAdminToken(created.token), token: Redacted.value(created.plaintext) },
          { status: 201, headers: { location: `${PREFIX}/admin-tokens/${created.token.id}` } }
        )
      })
    )

    yield* router.add(
      "GET",
      "/admin-tokens/:id",
      Effect.map(
        Effect.flatMap(Resource.param("id"), find),
        (token) => HttpServerResponse.jsonUnsafe(presentAdminToken(token))
      )
    )

    yield* router.add(
      "POST",
      "/admin-tokens/:id/revoke",
      Effect.gen(function*() {
        const id = yield* Resource.param("id")
        const revoked = yield* revocations.withPermit(Effect.gen(function*() {
          const target = yield* find(id)
          if (target.revokedAt === null && (yield* storage(tokens.count)) <= 1) {
            return yield* Problem.make(
              409,
              "last_admin_token",
              "Refusing to revoke the last active admin token: no one could use the admin API with a token " +
                "afterwards. Create another admin token first, then revoke this one."
            )
          }
          return yield* storage(tokens.revoke(id))
        }))
        return HttpServerResponse.jsonUnsafe(presentAdminToken(revoked))
      })
    )
  })
)
