/**
 * The routes of a versioned configuration resource (connections, endpoints,
 * virtual servers): list, get, create, replace, patch, delete.
 *
 * **Rules**
 *
 * - `GET /x` is paginated (`Pagination`); `GET /x/:id` answers with the
 *   resource and `ETag: "<version>"`.
 * - `POST /x` creates (201, `Location`, `ETag`); the JSON body is handed to
 *   storage, which decodes and validates it (nothing is checked twice) and
 *   refuses unknown fields naming the closest known one. The read-only
 *   members of a representation (`readOnly`: `id`, `version`, `createdAt`,
 *   `updatedAt`) are taken out first, so what GET returned can be sent back;
 *   any other member is a field of the input or an error.
 * - `PUT /x/:id` replaces, `PATCH /x/:id` applies a JSON merge patch
 *   (RFC 7386) to the current representation and replaces with the result,
 *   `DELETE /x/:id` deletes (204). All three need a precondition (see
 *   `Preconditions`: 428 without one, 409 when stale).
 * - Storage compares versions itself on update (atomically). Its delete takes
 *   no version, so the stored version is compared just before deleting: a
 *   write landing between the two is not caught (a narrow window; closing it
 *   needs `delete(id, version)` in storage).
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { AdminRouter } from "./AdminRouter.ts"
import { PREFIX } from "./AdminRouter.ts"
import { type JsonObject, readObject } from "./JsonBody.ts"
import * as Pagination from "./Pagination.ts"
import * as Preconditions from "./Preconditions.ts"
import * as Problem from "./Problem.ts"

export interface Versioned {
  readonly id: string
  readonly name: string
  readonly version: number
}

export interface ResourceSpec<A extends Versioned> {
  /** Path under `/api/v1`, e.g. `/connections`. */
  readonly path: `/${string}`
  /** The entity as named in messages, e.g. `connection`. */
  readonly entity: string
  readonly list: (
    query: HttpServerRequest.ParsedSearchParams["Service"]
  ) => Effect.Effect<ReadonlyArray<A>, Problem.ApiProblem>
  readonly get: (id: string) => Effect.Effect<A, Problem.StorageFailure>
  readonly create: (input: JsonObject) => Effect.Effect<A, Problem.StorageFailure>
  readonly update: (id: string, version: number, input: JsonObject) => Effect.Effect<A, Problem.StorageFailure>
  readonly delete: (id: string) => Effect.Effect<void, Problem.StorageFailure>
  /** The JSON representation (also what PATCH merges into). */
  readonly present: (item: A) => JsonObject
  /** Field hints for storage errors about `body`. */
  readonly hints?: (body: JsonObject) => Problem.FieldHints
  /** Members of the representation that a write ignores (default {@link READ_ONLY}). */
  readonly readOnly?: ReadonlyArray<string>
}

/** The members every versioned representation has that no write sets. */
export const READ_ONLY: ReadonlyArray<string> = ["id", "version", "createdAt", "updatedAt"]

/** `body` without the members named in `readOnly`. */
const writable = (body: JsonObject, readOnly: ReadonlyArray<string>): JsonObject =>
  Object.fromEntries(Object.entries(body).filter(([key]) => !readOnly.includes(key)))

/** A JSON response for one resource, with its ETag. */
export const one = (body: JsonObject, version: number, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers: { etag: Preconditions.etag(version), ...headers } })

/** A page of a list. */
export const page = <A>(
  all: ReadonlyArray<A>,
  keyOf: (item: A) => Pagination.SortKey,
  present: (item: A) => JsonObject
) =>
  Effect.gen(function*() {
    const query = yield* HttpServerRequest.ParsedSearchParams
    const request = yield* Pagination.fromQuery(query)
    const result = Pagination.paginate(all, keyOf, request)
    return HttpServerResponse.jsonUnsafe({ items: result.items.map(present), nextCursor: result.nextCursor })
  })

/** The `:id` (or other) path parameter. */
export const param = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

/** Registers the six routes of `spec` on `router`. */
export const register = <A extends Versioned>(router: AdminRouter["Service"], spec: ResourceSpec<A>) =>
  Effect.gen(function*() {
    const byId = `${spec.path}/:id` as const
    const fail = (body: JsonObject) => (error: Problem.StorageFailure) =>
      Problem.fromStorage(error, spec.hints?.(body) ?? {})
    const storage = Effect.mapError(Problem.fromStorage)
    const keyOf = (item: A): Pagination.SortKey => [item.name, item.id]
    const input = (body: JsonObject) => writable(body, spec.readOnly ?? READ_ONLY)

    yield* router.add(
      "GET",
      spec.path,
      Effect.gen(function*() {
        const query = yield* HttpServerRequest.ParsedSearchParams
        const all = yield* spec.list(query)
        return yield* page(all, keyOf, spec.present)
      })
    )

    yield* router.add(
      "GET",
      byId,
      Effect.gen(function*() {
        const item = yield* storage(spec.get(yield* param("id")))
        return one(spec.present(item), item.version)
      })
    )

    yield* router.add(
      "POST",
      spec.path,
      Effect.gen(function*() {
        const body = input(yield* readObject(yield* HttpServerRequest.HttpServerRequest))
        const item = yield* spec.create(body).pipe(Effect.mapError(fail(body)))
        return one(spec.present(item), item.version, 201, { location: `${PREFIX}${spec.path}/${item.id}` })
      })
    )

    // Writes over the stored version: storage compares it and answers VersionConflict when stale.
    const write = (id: string, precondition: Preconditions.Precondition, input: JsonObject) =>
      Effect.gen(function*() {
        const version = precondition._tag === "Version"
          ? precondition.version
          : (yield* storage(spec.get(id))).version
        return yield* spec.update(id, version, input).pipe(Effect.mapError(fail(input)))
      })

    yield* router.add(
      "PUT",
      byId,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const id = yield* param("id")
        const body = yield* readObject(request)
        const precondition = yield* Preconditions.required(request.headers["if-match"], body.version, "version")
        const item = yield* write(id, precondition, input(body))
        return one(spec.present(item), item.version)
      })
    )

    yield* router.add(
      "PATCH",
      byId,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const id = yield* param("id")
        const patch = yield* readObject(request)
        const precondition = yield* Preconditions.required(request.headers["if-match"], patch.version, "version")
        const current = yield* storage(spec.get(id))
        yield* Preconditions.check(precondition, spec.entity, id, current.version)
        const { version: _version, ...changes } = patch
        const merged = input(mergePatch(spec.present(current), changes) as JsonObject)
        const item = yield* spec.update(id, current.version, merged).pipe(Effect.mapError(fail(merged)))
        return one(spec.present(item), item.version)
      })
    )

    yield* router.add(
      "DELETE",
      byId,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const query = yield* HttpServerRequest.ParsedSearchParams
        const id = yield* param("id")
        const precondition = yield* Preconditions.required(request.headers["if-match"], query.version, "version")
        if (precondition._tag === "Version") {
          const current = yield* storage(spec.get(id))
          yield* Preconditions.check(precondition, spec.entity, id, current.version)
        }
        yield* storage(spec.delete(id))
        return HttpServerResponse.empty({ status: 204 })
      })
    )
  })

/**
 * JSON merge patch (RFC 7386): `null` removes a member, objects merge, anything
 * else replaces. Objects are rebuilt with `Object.fromEntries`, so a
 * `__proto__` member is data, never a prototype.
 */
export const mergePatch = (target: unknown, patch: unknown): unknown => {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch
  const members = new Map<string, unknown>(
    target !== null && typeof target === "object" && !Array.isArray(target) ? Object.entries(target) : []
  )
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) members.delete(key)
    else members.set(key, mergePatch(members.get(key), value))
  }
  return Object.fromEntries(members)
}

/** Reads an optional query parameter given at most once. */
export const singleQuery = (
  query: HttpServerRequest.ParsedSearchParams["Service"],
  name: string
): Effect.Effect<Option.Option<string>, Problem.ApiProblem> => {
  const value = query[name]
  if (value === undefined) return Effect.succeed(Option.none())
  return typeof value === "string"
    ? Effect.succeed(Option.some(value))
    : Effect.fail(Problem.invalidFields([{ path: name, message: "Expected a single value" }]))
}
