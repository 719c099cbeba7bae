/**
 * Secret encryption (`SecretBox`) and opaque tokens.
 *
 * **Rules**
 *
 * - Secrets are sealed with AES-256-GCM under a 32-byte master key, with a
 *   fresh 96-bit nonce per seal and the secret's name as additional
 *   authenticated data, so a ciphertext moved to another name fails to open.
 * - A key is identified by the first 8 bytes of its SHA-256, in hex; the id is
 *   stored beside each ciphertext so rotation and "unknown key" are explicit.
 * - Tokens are a recognisable prefix (`jns_` client, `jna_` admin) and 32
 *   bytes from the CSPRNG in base64url. Only their SHA-256 is stored; hashes
 *   are compared in constant time.
 * - Plaintext keys, secrets and tokens only ever travel inside `Redacted`.
 *
 * @since 0.1.0
 */
import { Redacted } from "effect"
import { createCipheriv, createDecipheriv, createHash, hash, randomBytes, timingSafeEqual } from "node:crypto"

const ALGORITHM = "aes-256-gcm"
const NONCE_BYTES = 12
const TAG_BYTES = 16
export const KEY_BYTES = 32

/** A master key and its id. */
export interface KeyMaterial {
  readonly id: string
  readonly key: Redacted.Redacted<Uint8Array>
}

/** The key id: first 8 bytes of SHA-256 of the key, hex. */
export const keyIdOf = (key: Uint8Array): string =>
  createHash("sha256").update(key).digest().subarray(0, 8).toString("hex")

export const keyMaterial = (key: Redacted.Redacted<Uint8Array>): KeyMaterial => ({
  id: keyIdOf(Redacted.value(key)),
  key
})

/** 32 fresh bytes from the CSPRNG. */
export const generateKey = (): Redacted.Redacted<Uint8Array> => Redacted.make(new Uint8Array(randomBytes(KEY_BYTES)))

/**
 * Decodes a base64 (or base64url) master key, or returns why it is not one.
 * The reason never contains the key.
 */
export const decodeKey = (encoded: Redacted.Redacted<string>): Redacted.Redacted<Uint8Array> | string => {
  const text = Redacted.value(encoded).trim()
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return "not base64"
  const bytes = new Uint8Array(Buffer.from(text, text.includes("-") || text.includes("_") ? "base64url" : "base64"))
  if (bytes.length !== KEY_BYTES) return `decodes to ${bytes.length} bytes, not ${KEY_BYTES}`
  return Redacted.make(bytes)
}

export const encodeKey = (key: Redacted.Redacted<Uint8Array>): string =>
  Buffer.from(Redacted.value(key)).toString("base64")

/** A sealed secret: ciphertext with the GCM tag appended, and its nonce. */
export interface Sealed {
  readonly ciphertext: Uint8Array
  readonly nonce: Uint8Array
  readonly keyId: string
}

/** Encrypts `plaintext` under `key`, bound to `name`. */
export const seal = (key: KeyMaterial, name: string, plaintext: Redacted.Redacted<string>): Sealed => {
  const nonce = randomBytes(NONCE_BYTES)
  const cipher = createCipheriv(ALGORITHM, Redacted.value(key.key), nonce, { authTagLength: TAG_BYTES })
  cipher.setAAD(Buffer.from(name, "utf8"))
  const body = Buffer.concat([cipher.update(Redacted.value(plaintext), "utf8"), cipher.final(), cipher.getAuthTag()])
  return { ciphertext: new Uint8Array(body), nonce: new Uint8Array(nonce), keyId: key.id }
}

/** Decrypts a sealed secret, or returns undefined when the key is wrong or the data was altered. */
export const open = (
  key: KeyMaterial,
  name: string,
  sealed: { readonly ciphertext: Uint8Array; readonly nonce: Uint8Array }
): Redacted.Redacted<string> | undefined => {
  if (sealed.ciphertext.length < TAG_BYTES || sealed.nonce.length !== NONCE_BYTES) return undefined
  try {
    const body = sealed.ciphertext.subarray(0, sealed.ciphertext.length - TAG_BYTES)
    const tag = sealed.ciphertext.subarray(sealed.ciphertext.length - TAG_BYTES)
    const decipher = createDecipheriv(ALGORITHM, Redacted.value(key.key), sealed.nonce, { authTagLength: TAG_BYTES })
    decipher.setAAD(Buffer.from(name, "utf8"))
    decipher.setAuthTag(tag)
    return Redacted.make(Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8"))
  } catch {
    return undefined
  }
}

// -----------------------------------------------------------------------------
// Tokens
// -----------------------------------------------------------------------------

export const CLIENT_TOKEN_PREFIX = "jns_"
export const ADMIN_TOKEN_PREFIX = "jna_"
const TOKEN_RANDOM_BYTES = 32
/** How much of a token is kept for display: the prefix and 8 characters. */
const DISPLAY_CHARS = 8

export interface IssuedToken {
  readonly plaintext: Redacted.Redacted<string>
  readonly hash: Uint8Array
  readonly display: string
}

/** A new opaque token with `prefix`. */
export const issueToken = (prefix: string): IssuedToken =>
  tokenOf(prefix, prefix + randomBytes(TOKEN_RANDOM_BYTES).toString("base64url"))

/** The stored form (hash, display prefix) of a token whose value was chosen elsewhere (check it with `looksLikeToken`). */
export const tokenOf = (prefix: string, plaintext: string): IssuedToken => ({
  plaintext: Redacted.make(plaintext),
  hash: hashToken(plaintext),
  display: plaintext.slice(0, prefix.length + DISPLAY_CHARS)
})

/** Whether `token` has the shape of a token with `prefix` (checked before any lookup). */
export const looksLikeToken = (prefix: string, token: string): boolean =>
  token.length === prefix.length + 43 && token.startsWith(prefix) &&
  /^[A-Za-z0-9_-]+$/.test(token.slice(prefix.length))

export const hashToken = (token: string): Uint8Array => new Uint8Array(hash("sha256", token, "buffer"))

/** `hashToken` in hex, in one step: the token cache's key, computed on every authenticated call. */
export const hashTokenHex = (token: string): string => hash("sha256", token, "hex")

export const hashesEqual = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && timingSafeEqual(a, b)
