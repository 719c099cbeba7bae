/**
 * Signed heads of the audit log's hash chains (`audit_chains.head_mac`).
 *
 * **Rules**
 *
 * - The MAC key is HKDF-SHA256 of a master key (`MasterKey`; never in the
 *   database) with the info string `janus audit chain head`; the head MAC is
 *   HMAC-SHA256 under it of the canonical encoding of the head (a JSON array
 *   of a version tag, chain, first seq, first previous hash, last seq, last
 *   hash: no two heads encode alike), stored in hex with the id of the master
 *   key it came from (`head_key_id`), so a head signed before a rotation is
 *   checked with the key it was signed with while the ring holds it.
 * - A head is `signed` when its MAC matches, `unsigned` when it has none
 *   (written before migration 0011), `forged` otherwise (a MAC that does not
 *   match, or one from a key the ring does not hold).
 * - Whoever moves a head (the writer's batch, retention moving the retained
 *   start, rotation) reads it `FOR UPDATE` in its transaction and signs the new
 *   head only when the old one was `signed` (or there was none): a forged head
 *   is never laundered by a later write, and an unsigned one stays unsigned
 *   (a MAC removed to make a head unsigned cannot be re-signed that way).
 *
 * @since 0.1.0
 */
import { Effect, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto"
import type { KeyMaterial } from "./Crypto.ts"
import { toNumber } from "./internal/sql.ts"
import type { MasterKey } from "./MasterKey.ts"

const INFO = "janus audit chain head"
const VERSION = "janus-audit-head/1"

/** What a head MAC covers. */
export interface HeadFields {
  readonly chain: string
  readonly firstSeq: number
  readonly firstPrevHash: string
  readonly lastSeq: number
  readonly lastHash: string
}

/** A head as stored. */
export interface HeadRow {
  readonly chain: string
  readonly first_seq: unknown
  readonly first_prev_hash: string
  readonly last_seq: unknown
  readonly last_hash: string
  readonly head_mac: string | null
  readonly head_key_id: string | null
}

export type HeadState = "signed" | "unsigned" | "forged"

export const HEAD_COLUMNS = "chain, first_seq, first_prev_hash, last_seq, last_hash, head_mac, head_key_id"

const derived = new Map<string, Buffer>()

/** The MAC key derived from `key` (cached per master key id). */
const macKey = (key: KeyMaterial): Buffer => {
  let mac = derived.get(key.id)
  if (mac === undefined) {
    mac = Buffer.from(hkdfSync("sha256", Redacted.value(key.key), new Uint8Array(0), INFO, 32))
    derived.set(key.id, mac)
  }
  return mac
}

/** HMAC-SHA256 of the head's canonical encoding, hex. */
export const macOf = (key: KeyMaterial, head: HeadFields): string =>
  createHmac("sha256", macKey(key))
    .update(JSON.stringify([VERSION, head.chain, head.firstSeq, head.firstPrevHash, head.lastSeq, head.lastHash]))
    .digest("hex")

export const fieldsOf = (row: HeadRow): HeadFields => ({
  chain: row.chain,
  firstSeq: toNumber(row.first_seq),
  firstPrevHash: row.first_prev_hash,
  lastSeq: toNumber(row.last_seq),
  lastHash: row.last_hash
})

/** Whether the stored head carries a MAC of this deployment's keys over its fields. */
export const stateOf = (keys: MasterKey["Service"], row: HeadRow): Effect.Effect<HeadState> =>
  Effect.gen(function*() {
    if (row.head_mac === null) return "unsigned"
    const key = yield* keys.find(row.head_key_id ?? "")
    if (key._tag === "None") return "forged"
    const expected = Buffer.from(macOf(key.value, fieldsOf(row)), "hex")
    const given = Buffer.from(row.head_mac, "hex")
    return given.length === expected.length && timingSafeEqual(given, expected) ? "signed" : "forged"
  })

/** The MAC of `head` under the current master key, and that key's id. */
export const sign = (
  keys: MasterKey["Service"],
  head: HeadFields
): Effect.Effect<{ readonly mac: string; readonly keyId: string }> =>
  Effect.map(keys.current, (key) => ({ mac: macOf(key, head), keyId: key.id }))

/** What `resignAll` did. */
export interface ResignReport {
  readonly resigned: number
  readonly unsigned: number
  /** Chains whose head did not verify: left as they were, so they keep failing `verify`. */
  readonly forged: ReadonlyArray<string>
}

/**
 * Re-signs every `signed` head under the current key (run in the rotation's transaction, after the new key
 * was installed: the ring still holds the old one to check them). Forged and unsigned heads are left alone.
 */
export const resignAll = (keys: MasterKey["Service"]): Effect.Effect<ResignReport, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const heads = yield* sql<HeadRow>`SELECT ${sql.literal(HEAD_COLUMNS)} FROM audit_chains ORDER BY chain
      FOR UPDATE`
    let resigned = 0
    let unsigned = 0
    const forged: Array<string> = []
    for (const row of heads) {
      const state = yield* stateOf(keys, row)
      if (state === "unsigned") unsigned++
      else if (state === "forged") forged.push(row.chain)
      else {
        const signed = yield* sign(keys, fieldsOf(row))
        yield* sql`UPDATE audit_chains SET head_mac = ${signed.mac}, head_key_id = ${signed.keyId}
          WHERE chain = ${row.chain}`
        resigned++
      }
    }
    return { resigned, unsigned, forged }
  })
