/**
 * `Storable`: what Postgres can store, decided once for every writer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Storable } from "../src/index.ts"

describe("Storable", () => {
  it("text: U+0000 and unpaired surrogates become U+FFFD; pairs and U+FFFD itself stay", () => {
    for (
      const [given, stored] of [
        ["plain", "plain"],
        ["x\u0000", "x\ufffd"],
        ["\u0000\u0000", "\ufffd\ufffd"],
        ["a\ud800b", "a\ufffdb"],
        ["\udc00", "\ufffd"],
        ["end\ud83d", "end\ufffd"],
        ["pair \ud83d\ude00", "pair \ud83d\ude00"],
        ["already \ufffd", "already \ufffd"]
      ] as const
    ) {
      assert.strictEqual(Storable.storableText(given), stored, JSON.stringify(given))
      assert.strictEqual(Storable.isStorableText(given), given === stored, JSON.stringify(given))
    }
  })

  it("JSON text: strings and member names at any depth are made storable; the rest is JSON.stringify's", () => {
    assert.strictEqual(
      Storable.storableJsonText({ ["k\u0000"]: ["v\ud800", { deep: "\udfff" }], n: 1, ok: "\ud83d\ude00" }),
      JSON.stringify({ ["k\ufffd"]: ["v\ufffd", { deep: "\ufffd" }], n: 1, ok: "\ud83d\ude00" })
    )
    // a backslash followed by "u0000" is text, not an escape: kept as it is
    assert.strictEqual(Storable.storableJsonText({ path: "C:\\u0000" }), JSON.stringify({ path: "C:\\u0000" }))
    // toJSON is respected, numbers JSON cannot write are null, as JSON.stringify does
    assert.strictEqual(
      Storable.storableJsonText({ at: new Date(0), inf: Infinity, nan: Number.NaN }),
      `{"at":"1970-01-01T00:00:00.000Z","inf":null,"nan":null}`
    )
    // no JSON text at all
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    assert.isUndefined(Storable.storableJsonText(cyclic))
    assert.isUndefined(Storable.storableJsonText({ big: 1n }))
    assert.isUndefined(Storable.storableJsonText(undefined))
  })
})
