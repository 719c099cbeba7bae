/**
 * The `client_tokens` repository: opaque bearer tokens for MCP clients.
 *
 * **Rules**
 *
 * - A token is `jns_` + 32 CSPRNG bytes in base64url. Only its SHA-256 is
 *   stored; `create` returns the plaintext once, inside `Redacted`, and no
 *   read ever returns the hash.
 * - `verify` rejects anything not shaped like a token before touching the
 *   database, looks the rest up by hash, compares hashes in constant time,
 *   and accepts only tokens that are neither revoked nor expired (by the
 *   effect `Clock`). It records `last_used_at` at most once a minute per
 *   token, so the hot path does not write on every call.
 * - Scopes: `allowedTools` are tool names (`<mcp connection>/*` allowed);
 *   `allowedVirtualServers` must name existing virtual servers; `null` means
 *   unrestricted. Names are unique; `expiresAt` must be in the future.
 * - `update` replaces a token's name, scopes and expiry; its value stays
 *   (tokens have no version: like revoke, the last write wins).
 * - A value may be given instead of a random one (`options.value`: a
 *   configuration document reads it from the operator's secret store); it
 *   must have the shape of a client token (`jns_` + 43 base64url
 *   characters, 256 bits) and no other token may have it. The refusal never
 *   echoes it. `hasValue` compares a value with the stored hash (constant
 *   time), so a re-applied document changes a token only when its value did.
 * - `options.allowExpired` accepts an `expiresAt` in the past: a document
 *   declares a token that has since expired, and must not become invalid
 *   because the clock passed that date.
 * - Create, update, revoke and delete signal a `client_token` change, so every
 *   instance drops its cached verifications within a second.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Option, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import { ChangeFeed } from "./ChangeFeed.ts"
import { isUuid } from "./Connections.ts"
import * as SecretBox from "./Crypto.ts"
import { ClientToken, ClientTokenInput } from "./Domain.ts"
import {
  type DuplicateName,
  InvalidInput,
  type InvalidToolName,
  NotFound,
  type StorageError,
  UnknownReference
} from "./Errors.ts"
import { duplicateName, storageError, toDate, toDateOrNull } from "./internal/sql.ts"
import { checkToolName, decodeInput } from "./Validation.ts"

/** A token just created: the only time its plaintext exists. */
export interface CreatedClientToken {
  readonly token: ClientToken
  readonly plaintext: Redacted.Redacted<string>
}

export type ClientTokenWriteError = InvalidInput | InvalidToolName | DuplicateName | UnknownReference | StorageError

/** How `create` and `update` write a token (see the module rules). */
export interface ClientTokenWriteOptions {
  /** The token's value, instead of a new random one (`create`) or the current one (`update`). */
  readonly value?: Redacted.Redacted<string> | undefined
  /** Accept an `expiresAt` in the past. */
  readonly allowExpired?: boolean | undefined
}

/** How often `verify` refreshes `last_used_at`. */
const LAST_USED_RESOLUTION_MS = 60_000

export class ClientTokens extends Context.Service<ClientTokens, {
  readonly create: (
    input: typeof ClientTokenInput.Encoded,
    options?: ClientTokenWriteOptions
  ) => Effect.Effect<CreatedClientToken, ClientTokenWriteError>
  /** Replaces the name, scopes and expiry of token `id` (and its value, when `options.value` is given). */
  readonly update: (
    id: string,
    input: typeof ClientTokenInput.Encoded,
    options?: ClientTokenWriteOptions
  ) => Effect.Effect<ClientToken, ClientTokenWriteError | NotFound>
  /** Whether `value` is the value of token `id` (false when there is no such token). */
  readonly hasValue: (id: string, value: Redacted.Redacted<string>) => Effect.Effect<boolean, StorageError>
  readonly list: Effect.Effect<ReadonlyArray<ClientToken>, StorageError>
  readonly get: (id: string) => Effect.Effect<ClientToken, NotFound | StorageError>
  /** Marks the token revoked (kept for the audit trail); revoking twice keeps the first time. */
  readonly revoke: (id: string) => Effect.Effect<ClientToken, NotFound | StorageError>
  readonly delete: (id: string) => Effect.Effect<void, NotFound | StorageError>
  /** The active token with this plaintext, if any. */
  readonly verify: (
    token: string | Redacted.Redacted<string>
  ) => Effect.Effect<Option.Option<ClientToken>, StorageError>
}>()("@janus/storage/ClientTokens") {
  static readonly layer: Layer.Layer<ClientTokens, never, SqlClient.SqlClient | ChangeFeed> = Layer.effect(
    ClientTokens,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const feed = yield* ChangeFeed
      const decode = decodeInput("client_token", ClientTokenInput)

      const selectById = (id: string): Effect.Effect<ReadonlyArray<TokenRow>, SqlError> =>
        isUuid(id)
          ? sql<TokenRow>`SELECT ${sql.literal(columns)} FROM client_tokens WHERE id = ${id}`
          : Effect.succeed([])

      // Decodes and checks an input: the expiry, the tool names (the virtual servers are checked in the write's
      // transaction, where they are locked).
      const validate = Effect.fnUntraced(function*(
        raw: typeof ClientTokenInput.Encoded,
        options: ClientTokenWriteOptions
      ) {
        const input = yield* decode(raw)
        const now = yield* Clock.currentTimeMillis
        if (input.expiresAt !== null && input.expiresAt.getTime() <= now && options.allowExpired !== true) {
          return yield* new InvalidInput({
            entity: "client_token",
            field: "expiresAt",
            value: input.expiresAt.toISOString(),
            expected: "a time in the future, or null for no expiry"
          })
        }
        for (const tool of input.allowedTools ?? []) {
          if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\/\*$/.test(tool)) yield* checkToolName(tool)
        }
        const value = options.value === undefined ? undefined : Redacted.value(options.value)
        if (value !== undefined && !SecretBox.looksLikeToken(SecretBox.CLIENT_TOKEN_PREFIX, value)) {
          return yield* new InvalidInput({
            entity: "client_token",
            field: "value",
            expected: `a client token: ${SecretBox.CLIENT_TOKEN_PREFIX} and 43 base64url characters (32 random bytes)`
          })
        }
        return { input, value }
      })

      const checkServers = Effect.fnUntraced(function*(servers: ReadonlyArray<string>) {
        const known = servers.length === 0 ? [] : yield* sql<{ name: string }>`
          SELECT name FROM virtual_servers WHERE name IN ${sql.in(servers)} FOR KEY SHARE`
        const missing = servers.find((name) => !known.some((row) => row.name === name))
        if (missing !== undefined) {
          return yield* new UnknownReference({
            entity: "client_token",
            field: "allowedVirtualServers",
            target: "virtual_server",
            value: missing
          })
        }
      })

      // A given value that another token already has: said without the value.
      const valueTaken = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.mapError(
          effect,
          (error): E | InvalidInput =>
            isSqlError(error) && error.reason._tag === "UniqueViolation" &&
              error.reason.constraint === "client_tokens_token_hash_key"
              ? new InvalidInput({ entity: "client_token", field: "value", expected: "a value no other token has" })
              : error
        )

      const create = Effect.fnUntraced(function*(
        raw: typeof ClientTokenInput.Encoded,
        options: ClientTokenWriteOptions = {}
      ) {
        const { input, value } = yield* validate(raw, options)
        const issued = value === undefined
          ? SecretBox.issueToken(SecretBox.CLIENT_TOKEN_PREFIX)
          : SecretBox.tokenOf(SecretBox.CLIENT_TOKEN_PREFIX, value)
        const id = randomUUID()
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          yield* checkServers(input.allowedVirtualServers ?? [])
          const rows = yield* sql<TokenRow>`
            INSERT INTO client_tokens (id, name, token_hash, prefix, allowed_tools, allowed_virtual_servers, expires_at)
            VALUES (${id}, ${input.name}, ${issued.hash}, ${issued.display}, ${input.allowedTools}::text[],
              ${input.allowedVirtualServers}::text[], ${input.expiresAt}::timestamptz)
            RETURNING ${sql.literal(columns)}`
          yield* feed.publish({ kind: "client_token", ids: [id] })
          return rows
        })).pipe(
          duplicateName("client_token", "client_tokens_name_key", input.name),
          valueTaken,
          storageError("clientTokens.create")
        )
        return { token: fromRow(rows[0]!), plaintext: issued.plaintext }
      })

      const update = Effect.fnUntraced(function*(
        id: string,
        raw: typeof ClientTokenInput.Encoded,
        options: ClientTokenWriteOptions = {}
      ) {
        const { input, value } = yield* validate(raw, options)
        const issued = value === undefined ? undefined : SecretBox.tokenOf(SecretBox.CLIENT_TOKEN_PREFIX, value)
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          yield* checkServers(input.allowedVirtualServers ?? [])
          const rows = !isUuid(id) ? [] : issued === undefined
            ? yield* sql<TokenRow>`
              UPDATE client_tokens SET name = ${input.name}, allowed_tools = ${input.allowedTools}::text[],
                allowed_virtual_servers = ${input.allowedVirtualServers}::text[],
                expires_at = ${input.expiresAt}::timestamptz
              WHERE id = ${id} RETURNING ${sql.literal(columns)}`
            : yield* sql<TokenRow>`
              UPDATE client_tokens SET name = ${input.name}, allowed_tools = ${input.allowedTools}::text[],
                allowed_virtual_servers = ${input.allowedVirtualServers}::text[],
                expires_at = ${input.expiresAt}::timestamptz, token_hash = ${issued.hash}, prefix = ${issued.display}
              WHERE id = ${id} RETURNING ${sql.literal(columns)}`
          if (rows[0] === undefined) return yield* new NotFound({ entity: "client_token", id })
          yield* feed.publish({ kind: "client_token", ids: [id] })
          return rows
        })).pipe(
          duplicateName("client_token", "client_tokens_name_key", input.name),
          valueTaken,
          storageError("clientTokens.update")
        )
        return fromRow(rows[0]!)
      })

      const hashOf = (id: string): Effect.Effect<ReadonlyArray<{ readonly token_hash: Uint8Array }>, SqlError> =>
        isUuid(id) ? sql`SELECT token_hash FROM client_tokens WHERE id = ${id}` : Effect.succeed([])

      const hasValue = (id: string, value: Redacted.Redacted<string>) =>
        hashOf(id).pipe(
          Effect.map((rows) =>
            rows[0] !== undefined &&
            SecretBox.hashesEqual(new Uint8Array(rows[0].token_hash), SecretBox.hashToken(Redacted.value(value)))
          ),
          storageError("clientTokens.hasValue")
        )

      const revoke = (id: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const rows = isUuid(id) ?
            yield* sql<TokenRow>`
              UPDATE client_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id}
              RETURNING ${sql.literal(columns)}` :
            []
          if (rows[0] === undefined) return yield* new NotFound({ entity: "client_token", id })
          yield* feed.publish({ kind: "client_token", ids: [id] })
          return fromRow(rows[0])
        })).pipe(storageError("clientTokens.revoke"))

      const verify = Effect.fnUntraced(function*(token: string | Redacted.Redacted<string>) {
        const plaintext = Redacted.isRedacted(token) ? Redacted.value(token) : token
        if (!SecretBox.looksLikeToken(SecretBox.CLIENT_TOKEN_PREFIX, plaintext)) return Option.none<ClientToken>()
        const hash = SecretBox.hashToken(plaintext)
        const rows = yield* sql<TokenRow & { readonly token_hash: Uint8Array }>`
          SELECT ${sql.literal(columns)}, token_hash FROM client_tokens WHERE token_hash = ${hash}`
        const row = rows[0]
        if (row === undefined || !SecretBox.hashesEqual(new Uint8Array(row.token_hash), hash)) return Option.none()
        const now = yield* Clock.currentTimeMillis
        const found = fromRow(row)
        if (!found.isActiveAt(new Date(now))) return Option.none()
        if (found.lastUsedAt === null || now - found.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
          yield* sql`UPDATE client_tokens SET last_used_at = ${new Date(now)} WHERE id = ${found.id}`
        }
        return Option.some(found)
      }, storageError("clientTokens.verify"))

      return ClientTokens.of({
        create,
        update,
        hasValue,
        list: sql<TokenRow>`SELECT ${sql.literal(columns)} FROM client_tokens ORDER BY created_at, name`.pipe(
          Effect.map((rows) => rows.map(fromRow)),
          storageError("clientTokens.list")
        ),
        get: (id) =>
          selectById(id).pipe(
            Effect.flatMap((rows) =>
              rows[0] === undefined
                ? Effect.fail(new NotFound({ entity: "client_token", id }))
                : Effect.succeed(fromRow(rows[0]))
            ),
            storageError("clientTokens.get")
          ),
        revoke,
        delete: (id) =>
          sql.withTransaction(Effect.gen(function*() {
            const deleted = isUuid(id) ? yield* sql`DELETE FROM client_tokens WHERE id = ${id} RETURNING id` : []
            if (deleted.length === 0) return yield* new NotFound({ entity: "client_token", id })
            yield* feed.publish({ kind: "client_token", ids: [id] })
          })).pipe(storageError("clientTokens.delete")),
        verify
      })
    })
  )
}

// Never `SELECT *`: the hash stays out of every listing.
const columns =
  "id, name, prefix, allowed_tools, allowed_virtual_servers, expires_at, revoked_at, last_used_at, created_at"

interface TokenRow {
  readonly id: string
  readonly name: string
  readonly prefix: string
  readonly allowed_tools: ReadonlyArray<string> | null
  readonly allowed_virtual_servers: ReadonlyArray<string> | null
  readonly expires_at: Date | null
  readonly revoked_at: Date | null
  readonly last_used_at: Date | null
  readonly created_at: Date
}

const fromRow = (row: TokenRow): ClientToken =>
  new ClientToken({
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    allowedTools: row.allowed_tools === null ? null : [...row.allowed_tools],
    allowedVirtualServers: row.allowed_virtual_servers === null ? null : [...row.allowed_virtual_servers],
    expiresAt: toDateOrNull(row.expires_at),
    revokedAt: toDateOrNull(row.revoked_at),
    lastUsedAt: toDateOrNull(row.last_used_at),
    createdAt: toDate(row.created_at)
  })
