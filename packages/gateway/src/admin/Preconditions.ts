/**
 * Preconditions of writes (`If-Match`, RFC 9110 §13): optimistic concurrency
 * for versioned resources (connections, endpoints, virtual servers, secrets).
 *
 * **Rules**
 *
 * - Every versioned resource has an integer `version`; `GET` returns it in the
 *   body and as `ETag: "<version>"`, and every successful write returns the
 *   new one the same way.
 * - A write names the version it was based on with `If-Match: "<version>"`
 *   (the ETag as read) or `"version": <n>` in the JSON body (for `DELETE`:
 *   `?version=<n>`). When both are given they must agree (400). A stale
 *   version is 409 `version_conflict` with `currentVersion` and the current
 *   `ETag`, and nothing is written.
 * - **Connections, endpoints and virtual servers refuse a `PUT`, `PATCH` or
 *   `DELETE` that names no version with 428 Precondition Required**: a
 *   careful admin API never lets one operator silently overwrite or delete
 *   what another just changed. Last-writer-wins is still available, but only
 *   on purpose: `If-Match: *` writes over whatever is stored.
 * - Secrets are write-only (no one can read a value, change it and write it
 *   back), so a blind `PUT` is the normal way to set or rotate one and needs no
 *   precondition; a version, when given, is still checked.
 * - Tokens have no version: they cannot be edited, revoking is idempotent and
 *   deleting is final, so no write can be lost.
 * - `If-Match` takes one strong entity tag or `*`; a weak tag (`W/"3"`), a
 *   list, or anything else is a 400 naming the header.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import * as Problem from "./Problem.ts"

/** What a write is conditioned on: an exact version, or explicitly anything (`If-Match: *`). */
export type Precondition =
  | { readonly _tag: "Version"; readonly version: number }
  | { readonly _tag: "Any" }

/** The ETag of `version`. */
export const etag = (version: number): string => `"${version}"`

const invalid = (path: string, message: string) => Problem.invalidFields([{ path, message }])

const parseIfMatch = (header: string): Effect.Effect<Precondition, Problem.ApiProblem> => {
  const value = header.trim()
  if (value === "*") return Effect.succeed({ _tag: "Any" })
  const match = /^"(\d{1,15})"$/.exec(value)
  const version = match === null ? NaN : Number(match[1])
  return Number.isSafeInteger(version) && version >= 1
    ? Effect.succeed({ _tag: "Version", version })
    : Effect.fail(invalid("If-Match", `Expected one strong ETag as returned by GET, e.g. "3", or *`))
}

const parseVersion = (value: unknown, path: string): Effect.Effect<number, Problem.ApiProblem> => {
  const version = typeof value === "string" && /^\d{1,15}$/.test(value) ? Number(value) : value
  return typeof version === "number" && Number.isSafeInteger(version) && version >= 1
    ? Effect.succeed(version)
    : Effect.fail(invalid(path, "Expected the version that was read: an integer >= 1"))
}

/**
 * The precondition of a write, from `If-Match` and/or the `version` the
 * caller supplied elsewhere (`suppliedAt` names where, for errors).
 */
export const fromRequest = (
  ifMatch: string | undefined,
  supplied: unknown,
  suppliedAt: string
): Effect.Effect<Option.Option<Precondition>, Problem.ApiProblem> =>
  Effect.gen(function*() {
    const header = ifMatch === undefined ? undefined : yield* parseIfMatch(ifMatch)
    const version = supplied === undefined ? undefined : yield* parseVersion(supplied, suppliedAt)
    if (header !== undefined && version !== undefined) {
      if (header._tag === "Version" && header.version === version) return Option.some(header)
      return yield* invalid(
        suppliedAt,
        `Expected the same version as If-Match (${ifMatch!.trim()}), or only one of them`
      )
    }
    if (header !== undefined) return Option.some(header)
    if (version !== undefined) return Option.some({ _tag: "Version", version } as const)
    return Option.none()
  })

/** Like `fromRequest`, but a write without any precondition is refused with 428. */
export const required = (
  ifMatch: string | undefined,
  supplied: unknown,
  suppliedAt: string
): Effect.Effect<Precondition, Problem.ApiProblem> =>
  Effect.flatMap(fromRequest(ifMatch, supplied, suppliedAt), (precondition) =>
    Option.match(precondition, {
      onSome: Effect.succeed,
      onNone: () =>
        Effect.fail(Problem.make(
          428,
          "precondition_required",
          `This write must name the version it is based on: send If-Match: "<version>" (the ETag of GET) or ` +
            `"${suppliedAt}" = <version>; send If-Match: * to overwrite whatever is stored`
        ))
    }))

/** Checks `precondition` against the stored `current` version (for writes that storage does not compare itself). */
export const check = (
  precondition: Precondition,
  entity: string,
  id: string,
  current: number
): Effect.Effect<void, Problem.ApiProblem> =>
  precondition._tag === "Any" || precondition.version === current
    ? Effect.void
    : Effect.fail(Problem.versionConflict(entity, id, precondition.version, current))
