/**
 * The `secrets` repository: downstream credentials, encrypted at rest.
 *
 * **Rules**
 *
 * - Write-only from outside: `set`, `delete` and `list` (names and metadata,
 *   never values). `reveal` is for the gateway's hot path (through
 *   `SecretCache`) and returns the value inside `Redacted`.
 * - Values are sealed with AES-256-GCM under the current master key
 *   (`MasterKey`), bound to the secret's name; the key id is stored per
 *   secret. A secret whose key id is not in the ring, or whose ciphertext
 *   does not authenticate, fails with `SecretDecryptionFailed` naming the
 *   secret and key id, never the value.
 * - `rotate(newKey)` makes `newKey` current (persisting it first when the ring
 *   is file-backed) and re-encrypts every secret under it in one
 *   transaction: if any secret cannot be opened nothing is re-encrypted. In
 *   the same transaction every audit chain head whose MAC verifies (with the
 *   key it was signed with, still in the ring) is re-signed under the new key
 *   (`AuditHeads.resignAll`); a forged head is not re-signed and does not stop
 *   the rotation (an attacker must not be able to block a key change): it is
 *   named in the result and keeps failing `janus audit verify`.
 * - Every write signals a `secret` change, so every instance drops its
 *   cached values.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { randomUUID } from "node:crypto"
import * as AuditHeads from "./AuditHeads.ts"
import { ChangeFeed } from "./ChangeFeed.ts"
import * as SecretBox from "./Crypto.ts"
import { SecretInfo, SecretName } from "./Domain.ts"
import {
  InvalidInput,
  type InvalidMasterKey,
  SecretDecryptionFailed,
  SecretNotFound,
  type StorageError
} from "./Errors.ts"
import { storageError, toBytes, toDate, toNumber } from "./internal/sql.ts"
import { MasterKey } from "./MasterKey.ts"
import { decodeInput } from "./Validation.ts"

/** Largest secret value accepted, in bytes. */
export const MAX_SECRET_BYTES = 64 * 1024

export class Secrets extends Context.Service<Secrets, {
  /** Creates or replaces the secret `name`. */
  readonly set: (
    name: string,
    value: Redacted.Redacted<string>
  ) => Effect.Effect<SecretInfo, InvalidInput | StorageError>
  readonly delete: (name: string) => Effect.Effect<void, SecretNotFound | StorageError>
  readonly list: Effect.Effect<ReadonlyArray<SecretInfo>, StorageError>
  /** The decrypted value, for the gateway's own use only. */
  readonly reveal: (
    name: string
  ) => Effect.Effect<Redacted.Redacted<string>, SecretNotFound | SecretDecryptionFailed | StorageError>
  /** Re-encrypts every secret under `newKey`, which becomes the current master key. */
  readonly rotate: (newKey: Redacted.Redacted<Uint8Array>) => Effect.Effect<
    { readonly keyId: string; readonly reencrypted: number; readonly heads: AuditHeads.ResignReport },
    SecretDecryptionFailed | InvalidMasterKey | StorageError
  >
}>()("@janus/storage/Secrets") {
  static readonly layer: Layer.Layer<Secrets, never, SqlClient.SqlClient | ChangeFeed | MasterKey> = Layer.effect(
    Secrets,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const feed = yield* ChangeFeed
      const keys = yield* MasterKey
      const decodeName = decodeInput("secret", Schema.Struct({ name: SecretName }))

      const openRow = Effect.fnUntraced(function*(row: SecretRow) {
        const key = yield* keys.find(row.key_id)
        if (Option.isNone(key)) {
          return yield* new SecretDecryptionFailed({
            name: row.name,
            keyId: row.key_id,
            reason: "no master key with this id is configured (set the key it was sealed with, e.g. as a previous key)"
          })
        }
        const value = SecretBox.open(key.value, row.name, {
          ciphertext: toBytes(row.ciphertext),
          nonce: toBytes(row.nonce)
        })
        if (value === undefined) {
          return yield* new SecretDecryptionFailed({
            name: row.name,
            keyId: row.key_id,
            reason: "authentication failed (wrong key or altered ciphertext)"
          })
        }
        return value
      })

      const set = Effect.fnUntraced(function*(name: string, value: Redacted.Redacted<string>) {
        yield* decodeName({ name })
        const size = Buffer.byteLength(Redacted.value(value), "utf8")
        if (size === 0 || size > MAX_SECRET_BYTES) {
          return yield* new InvalidInput({
            entity: "secret",
            field: "value",
            value: `${size} bytes`,
            expected: `1..${MAX_SECRET_BYTES} bytes`
          })
        }
        const sealed = SecretBox.seal(yield* keys.current, name, value)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<InfoRow>`
            INSERT INTO secrets (id, name, ciphertext, nonce, key_id)
            VALUES (${randomUUID()}, ${name}, ${sealed.ciphertext}, ${sealed.nonce}, ${sealed.keyId})
            ON CONFLICT (name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, nonce = EXCLUDED.nonce,
              key_id = EXCLUDED.key_id, version = secrets.version + 1, updated_at = now()
            RETURNING ${sql.literal(infoColumns)}`
          yield* feed.publish({ kind: "secret", ids: [rows[0]!.id] })
          return infoFromRow(rows[0]!)
        })).pipe(storageError("secrets.set"))
      })

      const rotate = Effect.fnUntraced(function*(newKey: Redacted.Redacted<Uint8Array>) {
        const installed = yield* keys.install(newKey)
        const done = yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<SecretRow>`SELECT * FROM secrets ORDER BY name FOR UPDATE`
          const resealed = []
          for (const row of rows) {
            const plaintext = yield* openRow(row)
            resealed.push({ id: row.id, sealed: SecretBox.seal(installed, row.name, plaintext) })
          }
          for (const { id, sealed } of resealed) {
            yield* sql`UPDATE secrets SET ciphertext = ${sealed.ciphertext}, nonce = ${sealed.nonce},
              key_id = ${sealed.keyId}, version = version + 1, updated_at = now() WHERE id = ${id}`
          }
          if (rows.length > 0) yield* feed.publish({ kind: "secret", ids: rows.map((r) => r.id) })
          const heads = yield* AuditHeads.resignAll(keys).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          return { count: rows.length, heads }
        })).pipe(storageError("secrets.rotate"))
        return { keyId: installed.id, reencrypted: done.count, heads: done.heads }
      })

      return Secrets.of({
        set,
        delete: (name) =>
          sql.withTransaction(Effect.gen(function*() {
            const rows = yield* sql<{ id: string }>`DELETE FROM secrets WHERE name = ${name} RETURNING id`
            if (rows[0] === undefined) return yield* new SecretNotFound({ name })
            yield* feed.publish({ kind: "secret", ids: [rows[0].id] })
          })).pipe(storageError("secrets.delete")),
        list: sql<InfoRow>`SELECT ${sql.literal(infoColumns)} FROM secrets ORDER BY name`.pipe(
          Effect.map((rows) => rows.map(infoFromRow)),
          storageError("secrets.list")
        ),
        reveal: (name) =>
          sql<SecretRow>`SELECT * FROM secrets WHERE name = ${name}`.pipe(
            Effect.flatMap((rows): Effect.Effect<Redacted.Redacted<string>, SecretNotFound | SecretDecryptionFailed> =>
              rows[0] === undefined ? Effect.fail(new SecretNotFound({ name })) : openRow(rows[0])
            ),
            storageError("secrets.reveal")
          ),
        rotate
      })
    })
  )
}

const infoColumns = "id, name, key_id, version, created_at, updated_at"

interface InfoRow {
  readonly id: string
  readonly name: string
  readonly key_id: string
  readonly version: number | bigint
  readonly created_at: Date
  readonly updated_at: Date
}

interface SecretRow extends InfoRow {
  readonly ciphertext: Uint8Array
  readonly nonce: Uint8Array
}

const infoFromRow = (row: InfoRow): SecretInfo =>
  new SecretInfo({
    id: row.id,
    name: row.name,
    keyId: row.key_id,
    version: toNumber(row.version),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at)
  })
