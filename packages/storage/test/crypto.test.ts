import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SecretBox, Validation } from "../src/index.ts"
import { expectFailure } from "./helpers.ts"

describe("SecretBox", () => {
  it("seals with a fresh nonce and opens only with the same key and name", () => {
    const key = SecretBox.keyMaterial(SecretBox.generateKey())
    const a = SecretBox.seal(key, "name", Redacted.make("value"))
    const b = SecretBox.seal(key, "name", Redacted.make("value"))
    assert.notDeepEqual(a.nonce, b.nonce)
    assert.notDeepEqual(a.ciphertext, b.ciphertext)
    assert.strictEqual(Redacted.value(SecretBox.open(key, "name", a)!), "value")
    assert.isUndefined(SecretBox.open(key, "other-name", a))
    assert.isUndefined(SecretBox.open(SecretBox.keyMaterial(SecretBox.generateKey()), "name", a))
    const flipped = new Uint8Array(a.ciphertext)
    flipped[0] = flipped[0]! ^ 1
    assert.isUndefined(SecretBox.open(key, "name", { ciphertext: flipped, nonce: a.nonce }))
  })

  it("key ids are the first 8 bytes of SHA-256, and keys decode from base64 only at 32 bytes", () => {
    const key = SecretBox.generateKey()
    assert.match(SecretBox.keyIdOf(Redacted.value(key)), /^[0-9a-f]{16}$/)
    const decoded = SecretBox.decodeKey(Redacted.make(SecretBox.encodeKey(key)))
    assert.deepStrictEqual(Redacted.value(decoded as Redacted.Redacted<Uint8Array>), Redacted.value(key))
    assert.strictEqual(SecretBox.decodeKey(Redacted.make("c2hvcnQ=")), "decodes to 5 bytes, not 32")
    assert.strictEqual(SecretBox.decodeKey(Redacted.make("not base64!")), "not base64")
  })

  it("tokens: prefix + 43 base64url characters, hashed with SHA-256", () => {
    const issued = SecretBox.issueToken(SecretBox.CLIENT_TOKEN_PREFIX)
    const plaintext = Redacted.value(issued.plaintext)
    assert.match(plaintext, /^jns_[A-Za-z0-9_-]{43}$/)
    assert.isTrue(SecretBox.looksLikeToken("jns_", plaintext))
    assert.isFalse(SecretBox.looksLikeToken("jna_", plaintext))
    assert.isTrue(SecretBox.hashesEqual(issued.hash, SecretBox.hashToken(plaintext)))
    assert.notStrictEqual(plaintext, Redacted.value(SecretBox.issueToken("jns_").plaintext))
    assert.strictEqual(issued.display, plaintext.slice(0, 12))
  })
})

describe("Validation", () => {
  it.effect("input schemas: type object, known drafts, and Ajv must compile them", () =>
    Effect.gen(function*() {
      yield* Validation.checkInputSchema("t", { type: "object" })
      yield* Validation.checkInputSchema("t", {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: { a: { type: "string" } }
      })
      yield* expectFailure(Validation.checkInputSchema("t", {}), "InvalidInputSchema")
      yield* expectFailure(Validation.checkInputSchema("t", { type: "array" }), "InvalidInputSchema")
      yield* expectFailure(
        Validation.checkInputSchema("t", { type: "object", $schema: "https://example.com/schema" }),
        "InvalidInputSchema"
      )
      yield* expectFailure(Validation.checkInputSchema("t", { type: "object", properties: 3 }), "InvalidInputSchema")
      yield* expectFailure(
        Validation.checkInputSchema("t", { type: "object", required: "a" }),
        "InvalidInputSchema"
      )
    }))

  it.effect("URLs: absolute http(s) without credentials", () =>
    Effect.gen(function*() {
      yield* Validation.checkHttpUrl("c", "baseUrl", "http://localhost:8080/api")
      yield* Validation.checkHttpUrl("c", "baseUrl", "https://api.example.com")
      for (
        const bad of ["file:///etc/passwd", "javascript:alert(1)", "//example.com", "https://u:p@x.com", "http://"]
      ) {
        yield* expectFailure(Validation.checkHttpUrl("c", "baseUrl", bad), "InvalidUrl")
      }
    }))

  it("path params", () => {
    assert.deepStrictEqual(Validation.pathParams("/a/{b}/c/{d.e}"), ["b", "d.e"])
    assert.deepStrictEqual(Validation.pathParams("/a"), [])
  })
})
