/**
 * `/api/v1/secrets`: downstream credentials, write-only.
 *
 * **Rules**
 *
 * - No response ever contains a secret value: reads return the name, key id,
 *   version and timestamps only. Secrets are addressed by name (connections
 *   refer to them by name).
 * - `PUT /secrets/:name` with `{ "value": "<text>" }` creates (201) or
 *   replaces (200) the secret; storage checks the name and the size (1 byte
 *   to 64 KiB) and encrypts it. The value is held as `Redacted` from the
 *   moment it is read, and neither the body nor the value is ever logged or
 *   echoed (a body that is not valid JSON gets a position, not a quote).
 * - Setting a secret is a blind write (nobody can read-modify-write a value),
 *   so no precondition is required. When one is given (`If-Match`, or
 *   `"version"` in the body, `?version=` for `DELETE`) it is compared with the
 *   stored version just before the write: 409 when stale, 404 when the secret
 *   does not exist.
 * - A name that cannot be a secret's name is 404 on `GET`/`DELETE` and 400 on
 *   `PUT`.
 *
 * @since 0.1.0
 */
import { ResourceNamePattern, type SecretInfo, Secrets } from "@janus/storage"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { AdminRouter, PREFIX } from "./AdminRouter.ts"
import { type JsonObject, readObject } from "./JsonBody.ts"
import * as Pagination from "./Pagination.ts"
import * as Preconditions from "./Preconditions.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"

/** What may be shown about a secret: never its value. */
export const present = (s: SecretInfo): JsonObject => ({
  id: s.id,
  name: s.name,
  keyId: s.keyId,
  version: s.version,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString()
})

// Only the type of `value` is checked here (storage checks its size); Schema messages never quote the value.
// `version` is the optional precondition (see `Preconditions`); any other member is refused.
const SetBody = Schema.Struct({ value: Schema.String, version: Schema.optionalKey(Schema.Unknown) })
const decodeSetBody = Schema.decodeUnknownEffect(SetBody, { errors: "all", onExcessProperty: "error" })

const storage = Effect.mapError(Problem.fromStorage)
const missing = (name: string) => Problem.notFound(`no secret named ${JSON.stringify(name)}`)

export const SecretRoutes: Layer.Layer<never, never, AdminRouter | Secrets> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const secrets = yield* Secrets

    const find = (name: string) =>
      Effect.map(storage(secrets.list), (all) => Option.fromNullishOr(all.find((s) => s.name === name)))

    // Compares a given precondition with the stored version (storage's set/delete take none).
    const checkPrecondition = (name: string, precondition: Option.Option<Preconditions.Precondition>) =>
      Option.match(precondition, {
        onNone: () => Effect.void,
        onSome: (expected) =>
          Effect.flatMap(find(name), (current) =>
            Option.match(current, {
              onNone: () => Effect.fail(missing(name)),
              onSome: (info) => Preconditions.check(expected, "secret", name, info.version)
            }))
      })

    yield* router.add(
      "GET",
      "/secrets",
      Effect.flatMap(storage(secrets.list), (all) => Resource.page(all, (s) => [s.name, s.id], present))
    )

    yield* router.add(
      "GET",
      "/secrets/:name",
      Effect.gen(function*() {
        const name = yield* Resource.param("name")
        const info = ResourceNamePattern.test(name) ? yield* find(name) : Option.none()
        if (Option.isNone(info)) return yield* missing(name)
        return Resource.one(present(info.value), info.value.version)
      })
    )

    yield* router.add(
      "PUT",
      "/secrets/:name",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const name = yield* Resource.param("name")
        const body = yield* readObject(request, { secretPaths: ["value"] })
        const { value } = yield* decodeSetBody(body).pipe(
          Effect.mapError((error) => Problem.invalidFields(Pagination.fieldErrors(error)))
        )
        const secret = Redacted.make(value)
        const precondition = yield* Preconditions.fromRequest(request.headers["if-match"], body.version, "version")
        yield* checkPrecondition(name, precondition)
        const info = yield* storage(secrets.set(name, secret))
        // A replaced secret's version is at least 2; 1 means this write created it.
        return Resource.one(
          present(info),
          info.version,
          info.version === 1 ? 201 : 200,
          info.version === 1 ? { location: `${PREFIX}/secrets/${encodeURIComponent(name)}` } : {}
        )
      })
    )

    yield* router.add(
      "DELETE",
      "/secrets/:name",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const query = yield* HttpServerRequest.ParsedSearchParams
        const name = yield* Resource.param("name")
        if (!ResourceNamePattern.test(name)) return yield* missing(name)
        const precondition = yield* Preconditions.fromRequest(request.headers["if-match"], query.version, "version")
        yield* checkPrecondition(name, precondition)
        yield* storage(secrets.delete(name))
        return HttpServerResponse.empty({ status: 204 })
      })
    )
  })
)
