/**
 * The credentials Janus injected into a request are scrubbed from what comes
 * back, in every spelling a downstream is likely to echo them in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { type AuthScheme, injectedCredential } from "../../src/egress/index.ts"
import { InjectedSecrets } from "../../src/redaction/index.ts"

const MARK = "[REDACTED:secret]"

describe("InjectedSecrets", () => {
  it("scrubs a bearer token, and the header value it came in, wherever they appear", () => {
    const injected = InjectedSecrets.fromHeaderValues(["Bearer s3cr3t-token-123"])
    const echoed = JSON.stringify({ headers: { authorization: "Bearer s3cr3t-token-123" }, again: "s3cr3t-token-123" })
    const scrubbed = injected.scrub(echoed)
    assert.strictEqual(
      scrubbed.text,
      JSON.stringify({ headers: { authorization: `Bearer ${MARK}` }, again: MARK })
    )
    assert.strictEqual(scrubbed.count, 2)
    assert.deepStrictEqual(JSON.parse(scrubbed.text).headers, { authorization: `Bearer ${MARK}` })
  })

  it("scrubs an API key sent as is, JSON-escaped, with escaped slashes, and percent-encoded", () => {
    const key = "k/ey+\"quoted\"é=="
    const injected = InjectedSecrets.fromHeaderValues([key])
    const spellings = [
      key,
      JSON.stringify(key).slice(1, -1),
      JSON.stringify(key).slice(1, -1).replaceAll("/", "\\/"),
      "k\\/ey+\\\"quoted\\\"\\u00e9==",
      encodeURIComponent(key),
      new URLSearchParams({ k: key }).toString().slice(2)
    ]
    for (const spelling of spellings) {
      const scrubbed = injected.scrub(`before ${spelling} after`)
      assert.strictEqual(scrubbed.text, `before ${MARK} after`, spelling)
      assert.strictEqual(scrubbed.count, 1)
    }
  })

  it("scrubs basic credentials: the encoded header value and the password it carries", () => {
    const encoded = Buffer.from("svc:pa55/word?").toString("base64")
    const injected = InjectedSecrets.fromHeaderValues([`Basic ${encoded}`])
    assert.strictEqual(injected.scrub(`Authorization: Basic ${encoded}`).text, `Authorization: Basic ${MARK}`)
    assert.strictEqual(
      injected.scrub("{\"user\":\"svc\",\"password\":\"pa55/word?\"}").text,
      `{"user":"svc","password":"${MARK}"}`
    )
    // the user name is not a secret
    assert.strictEqual(injected.scrub("user svc").count, 0)
  })

  it("gives back the very same text when nothing was injected or nothing matches, and scrubs every occurrence", () => {
    const text = "nothing to see ".repeat(100)
    assert.strictEqual(InjectedSecrets.none.scrub(text).text, text)
    assert.strictEqual(InjectedSecrets.fromHeaderValues([]).scrub(text).text, text)
    const injected = InjectedSecrets.fromHeaderValues(["Bearer abcdef", "x-other-value"])
    assert.strictEqual(injected.scrub(text).text, text)
    assert.strictEqual(injected.scrub(text).count, 0)
    const many = injected.scrub("abcdef abcdefabcdef x-other-value")
    assert.strictEqual(many.text, `${MARK} ${MARK}${MARK} ${MARK}`)
    assert.strictEqual(many.count, 4)
  })

  it("is built once per secret: the egress side memoises it on the secret it injected", () => {
    const secret = Redacted.make("abcdef-123")
    const bearer: AuthScheme = { _tag: "Bearer" }
    const first = injectedCredential(bearer, secret)
    assert.strictEqual(injectedCredential(bearer, secret), first)
    assert.strictEqual(first.scrub("Bearer abcdef-123").text, `Bearer ${MARK}`)
    // another scheme over the same secret injects something else
    const basic = injectedCredential({ _tag: "Basic", username: "u" }, secret)
    assert.notStrictEqual(basic, first)
    assert.strictEqual(basic.scrub(Buffer.from("u:abcdef-123").toString("base64")).text, MARK)
    assert.strictEqual(injectedCredential({ _tag: "None" }, secret), InjectedSecrets.none)
  })
})
