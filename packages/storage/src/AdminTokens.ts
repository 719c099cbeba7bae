/**
 * The `admin_tokens` repository: bearer tokens for the admin API and CLI.
 *
 * **Rules**
 *
 * - A token is `jna_` + 32 CSPRNG bytes in base64url; only its SHA-256 is
 *   stored, `create` returns the plaintext once (`Redacted`), and listings
 *   never include the hash.
 * - `verify` is not cached (the admin API is not the hot path), so a revoked
 *   admin token stops working on every instance at once; it compares hashes
 *   in constant time and refreshes `last_used_at` at most once a minute.
 * - `count` counts active (unrevoked) tokens: the gateway creates and prints
 *   a first admin token when it is 0, which is also how an operator who
 *   revoked them all regains access (with access to the server's console).
 * - `createInitial` makes that first token only if there is no active one,
 *   under a transaction-scoped advisory lock ({@link INITIAL_LOCK_KEY}): of
 *   several replicas starting at once on an empty database, exactly one
 *   creates (and prints) a token.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { randomUUID } from "node:crypto"
import { ChangeFeed } from "./ChangeFeed.ts"
import { isUuid } from "./Connections.ts"
import * as SecretBox from "./Crypto.ts"
import { AdminToken, DisplayName } from "./Domain.ts"
import { type InvalidInput, NotFound, type StorageError } from "./Errors.ts"
import { storageError, toDate, toDateOrNull, toNumber } from "./internal/sql.ts"
import { decodeInput } from "./Validation.ts"

export interface CreatedAdminToken {
  readonly token: AdminToken
  readonly plaintext: Redacted.Redacted<string>
}

const LAST_USED_RESOLUTION_MS = 60_000

/** The advisory lock `createInitial` takes ("jadmin" in ASCII). */
export const INITIAL_LOCK_KEY = 0x6a61646d696e

export class AdminTokens extends Context.Service<AdminTokens, {
  readonly create: (input: { readonly name: string }) => Effect.Effect<CreatedAdminToken, InvalidInput | StorageError>
  readonly list: Effect.Effect<ReadonlyArray<AdminToken>, StorageError>
  readonly revoke: (id: string) => Effect.Effect<AdminToken, NotFound | StorageError>
  readonly verify: (token: string | Redacted.Redacted<string>) => Effect.Effect<Option.Option<AdminToken>, StorageError>
  /** Active (unrevoked) admin tokens. */
  readonly count: Effect.Effect<number, StorageError>
  /** A token named `name` when there is no active one (none otherwise), atomically across instances. */
  readonly createInitial: (name: string) => Effect.Effect<Option.Option<CreatedAdminToken>, InvalidInput | StorageError>
}>()("@janus/storage/AdminTokens") {
  static readonly layer: Layer.Layer<AdminTokens, never, SqlClient.SqlClient | ChangeFeed> = Layer.effect(
    AdminTokens,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const feed = yield* ChangeFeed
      const decode = decodeInput("admin_token", Schema.Struct({ name: DisplayName }))

      const countActive = sql<{ n: number | bigint }>`SELECT count(*) AS n FROM admin_tokens WHERE revoked_at IS NULL`
        .pipe(Effect.map((rows) => toNumber(rows[0]?.n ?? 0)))

      /** Inserts a token; run inside a transaction. */
      const insert = (name: string) =>
        Effect.gen(function*() {
          const issued = SecretBox.issueToken(SecretBox.ADMIN_TOKEN_PREFIX)
          const id = randomUUID()
          const rows = yield* sql<AdminRow>`
            INSERT INTO admin_tokens (id, name, token_hash, prefix)
            VALUES (${id}, ${name}, ${issued.hash}, ${issued.display})
            RETURNING ${sql.literal(columns)}`
          yield* feed.publish({ kind: "admin_token", ids: [id] })
          return { token: fromRow(rows[0]!), plaintext: issued.plaintext }
        })

      const create = Effect.fnUntraced(function*(raw: { readonly name: string }) {
        const input = yield* decode(raw)
        return yield* sql.withTransaction(insert(input.name)).pipe(storageError("adminTokens.create"))
      })

      const createInitial = Effect.fnUntraced(function*(name: string) {
        const input = yield* decode({ name })
        return yield* sql.withTransaction(Effect.gen(function*() {
          // held until commit: a concurrent caller counts after this insert is visible
          yield* sql`SELECT pg_advisory_xact_lock(${INITIAL_LOCK_KEY})`
          if ((yield* countActive) > 0) return Option.none<CreatedAdminToken>()
          return Option.some(yield* insert(input.name))
        })).pipe(storageError("adminTokens.createInitial"))
      })

      const verify = Effect.fnUntraced(function*(token: string | Redacted.Redacted<string>) {
        const plaintext = Redacted.isRedacted(token) ? Redacted.value(token) : token
        if (!SecretBox.looksLikeToken(SecretBox.ADMIN_TOKEN_PREFIX, plaintext)) return Option.none<AdminToken>()
        const hash = SecretBox.hashToken(plaintext)
        const rows = yield* sql<AdminRow & { readonly token_hash: Uint8Array }>`
          SELECT ${sql.literal(columns)}, token_hash FROM admin_tokens WHERE token_hash = ${hash}`
        const row = rows[0]
        if (row === undefined || !SecretBox.hashesEqual(new Uint8Array(row.token_hash), hash)) return Option.none()
        if (row.revoked_at !== null) return Option.none()
        const found = fromRow(row)
        const now = yield* Clock.currentTimeMillis
        if (found.lastUsedAt === null || now - found.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
          yield* sql`UPDATE admin_tokens SET last_used_at = ${new Date(now)} WHERE id = ${found.id}`
        }
        return Option.some(found)
      }, storageError("adminTokens.verify"))

      return AdminTokens.of({
        create,
        list: sql<AdminRow>`SELECT ${sql.literal(columns)} FROM admin_tokens ORDER BY created_at, name`.pipe(
          Effect.map((rows) => rows.map(fromRow)),
          storageError("adminTokens.list")
        ),
        revoke: (id) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = isUuid(id) ?
              yield* sql<AdminRow>`
                UPDATE admin_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id}
                RETURNING ${sql.literal(columns)}` :
              []
            if (rows[0] === undefined) return yield* new NotFound({ entity: "admin_token", id })
            yield* feed.publish({ kind: "admin_token", ids: [id] })
            return fromRow(rows[0])
          })).pipe(storageError("adminTokens.revoke")),
        verify,
        count: countActive.pipe(storageError("adminTokens.count")),
        createInitial
      })
    })
  )
}

const columns = "id, name, prefix, revoked_at, last_used_at, created_at"

interface AdminRow {
  readonly id: string
  readonly name: string
  readonly prefix: string
  readonly revoked_at: Date | null
  readonly last_used_at: Date | null
  readonly created_at: Date
}

const fromRow = (row: AdminRow): AdminToken =>
  new AdminToken({
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    revokedAt: toDateOrNull(row.revoked_at),
    lastUsedAt: toDateOrNull(row.last_used_at),
    createdAt: toDate(row.created_at)
  })
