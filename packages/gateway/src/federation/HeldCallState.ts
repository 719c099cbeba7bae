/**
 * The `requestState` Janus gives a 2026-07-28 client for a held call
 * (`HeldCalls.ts`): which held call and round it continues, for whom, until
 * when, tamper-proof, checkable on any replica.
 *
 * **Rules**
 *
 * - The form is `janus1.<payload>.<tag>`: the payload is base64url JSON
 *   (`h` held call id, `r` round, `q` the round's input request keys and
 *   their methods, `t` tool, `c` caller digest, `e` expiry in ms since the
 *   epoch, `k` key id), the tag the base64url HMAC-SHA256 of
 *   `janus1.<payload>`.
 * - The HMAC key is derived from the master key (HKDF-SHA256, info
 *   {@link KEY_INFO}), so every replica holds it without new configuration,
 *   and it is no key that seals secrets. `k` names the master key it was
 *   derived from: a state survives a key rotation while the previous key is
 *   still configured (`JANUS_MASTER_KEY_PREVIOUS`), and is refused after.
 * - Bound to the caller: `c` is the first 16 bytes of SHA-256 of the caller
 *   id (the id itself is not shown), compared with the presenting caller's;
 *   bound to the tool it was issued for.
 * - Checked in this order, each with its own sentence: the form and tag
 *   (altered, or not issued by this gateway), the caller, the tool, the
 *   expiry. Tags are compared in constant time, and only in their canonical
 *   base64url spelling (a last character differing in its unused bits is a
 *   changed token, refused as altered).
 *
 * `node:crypto` directly, as `@janus/storage`'s `Crypto.ts` does: one
 * synchronous HMAC per round of a held call.
 *
 * @since 0.1.0
 */
import type { MasterKey } from "@janus/storage"
import { Effect, Option, Redacted, Result } from "effect"
import { createHash, createHmac, hkdfSync, timingSafeEqual } from "node:crypto"
import * as ClientText from "../observability/ClientText.ts"

/** What every state Janus issues starts with. */
export const PREFIX = "janus1."

/** HKDF info of the key: a key derived for this purpose only. */
export const KEY_INFO = "janus held-call requestState v1"

/** What a valid state says. */
export interface HeldState {
  readonly held: string
  readonly round: number
  /** The round's input requests: key -> method. */
  readonly asked: Readonly<Record<string, string>>
  readonly tool: string
  readonly expiresAt: number
}

/** Whether `state` is one of Janus's (not an upstream's, passed through). */
export const isHeldState = (state: string): boolean => state.startsWith(PREFIX)

const encode = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64url")

const callerDigest = (callerId: string) => encode(createHash("sha256").update(callerId).digest().subarray(0, 16))

/** Why a state is refused: one sentence, for a JSON-RPC -32602. */
const refused = (reason: string) => Result.fail(reason)

/** The refusal of a state that is not one Janus issued, or was changed. */
export const ALTERED = "requestState was altered or was not issued by this gateway; call the tool again without it"

/** Signs and checks states with keys derived from `masterKey`'s ring. */
export const make = (masterKey: MasterKey["Service"]) => {
  const derived = new Map<string, Buffer>()
  const keyFor = (id: string, master: Redacted.Redacted<Uint8Array>): Buffer => {
    let key = derived.get(id)
    if (key === undefined) {
      key = Buffer.from(hkdfSync("sha256", Redacted.value(master), new Uint8Array(0), KEY_INFO, 32))
      derived.set(id, key)
    }
    return key
  }
  const tag = (key: Buffer, signed: string) => createHmac("sha256", key).update(signed).digest()

  const sign = (state: HeldState, callerId: string): Effect.Effect<string> =>
    Effect.map(masterKey.current, (current) => {
      const payload = encode(JSON.stringify({
        h: state.held,
        r: state.round,
        q: state.asked,
        t: state.tool,
        c: callerDigest(callerId),
        e: state.expiresAt,
        k: current.id
      }))
      const signed = `${PREFIX}${payload}`
      return `${signed}.${encode(tag(keyFor(current.id, current.key), signed))}`
    })

  const verify = (
    token: string,
    callerId: string,
    tool: string,
    now: number
  ): Effect.Effect<Result.Result<HeldState, string>> =>
    Effect.gen(function*() {
      const parts = token.split(".")
      if (!isHeldState(token) || parts.length !== 3) return refused(ALTERED)
      let fields: Record<string, unknown>
      try {
        const parsed: unknown = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8"))
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return refused(ALTERED)
        fields = parsed as Record<string, unknown>
      } catch {
        return refused(ALTERED)
      }
      const { c, e, h, k, q, r, t } = fields
      if (
        typeof h !== "string" || typeof r !== "number" || typeof t !== "string" || typeof c !== "string" ||
        typeof e !== "number" || typeof k !== "string" || typeof q !== "object" || q === null || Array.isArray(q)
      ) return refused(ALTERED)
      const master = yield* masterKey.find(k)
      if (Option.isNone(master)) {
        return refused(
          "requestState was altered or was signed with a master key this gateway no longer has (rotated); call the tool again without it"
        )
      }
      const expected = tag(keyFor(k, master.value.key), `${parts[0]}.${parts[1]}`)
      const given = Buffer.from(parts[2]!, "base64url")
      // only the canonical spelling of the tag: base64url's last character carries unused low bits, so
      // other spellings decode to the same bytes, and a changed token must never be accepted
      if (encode(given) !== parts[2]) return refused(ALTERED)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return refused(ALTERED)
      if (c !== callerDigest(callerId)) {
        return refused(
          "requestState was issued to another caller; only the caller that started the call may continue it"
        )
      }
      if (t !== tool) {
        return refused(
          `requestState continues a call of tool '${ClientText.echoed(t)}', not '${
            ClientText.echoed(tool)
          }'; send it with the tool it was issued for`
        )
      }
      if (now >= e) {
        return refused(
          `requestState expired at ${
            new Date(e).toISOString()
          } (the gateway waits a limited time for a client's input); call the tool again without it`
        )
      }
      return Result.succeed({ held: h, round: r, asked: q as Readonly<Record<string, string>>, tool: t, expiresAt: e })
    })

  return { sign, verify } as const
}

export type HeldCallStates = ReturnType<typeof make>
