/**
 * Small helpers shared by the repositories: SQL error mapping and row values
 * that the two drivers return differently (bigint vs number).
 *
 * @internal
 */
import { Effect } from "effect"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type { EntityKind } from "../Errors.ts"
import { DuplicateName, StorageError } from "../Errors.ts"

/** Maps the remaining `SqlError`s of `operation` to `StorageError`. */
export const storageError =
  (operation: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError> | StorageError, R> =>
    Effect.mapError(
      effect,
      (error) => isSqlError(error) ? new StorageError({ operation, cause: error }) : error
    ) as Effect.Effect<A, Exclude<E, SqlError> | StorageError, R>

/** A unique violation of `<table>_name_key` becomes `DuplicateName`. */
export const duplicateName =
  (entity: EntityKind, constraint: string, name: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | DuplicateName, R> =>
    Effect.mapError(
      effect,
      (error): E | DuplicateName =>
        isSqlError(error) && error.reason._tag === "UniqueViolation" && error.reason.constraint === constraint
          ? new DuplicateName({ entity, name })
          : error
    )

export const toNumber = (value: unknown): number => typeof value === "bigint" ? Number(value) : Number(value)

export const toDate = (value: unknown): Date => value instanceof Date ? value : new Date(String(value))

export const toDateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : toDate(value)

export const toBytes = (value: unknown): Uint8Array =>
  value instanceof Uint8Array ? value : new Uint8Array(Buffer.from(String(value).replace(/^\\x/, ""), "hex"))

/** JSON for a `jsonb` parameter: bound as text and cast in SQL (`${json(x)}::jsonb`), the same on both drivers. */
export const json = (value: unknown): string => JSON.stringify(value)
