import { describe, expect, it } from "vitest"
import { argumentsOf, fieldsOf, WHOLE } from "../src/schemaForm.ts"

const schema = {
  type: "object",
  required: ["id", "kind"],
  properties: {
    id: { type: "string", description: "Pet id" },
    limit: { type: "integer" },
    ratio: { type: "number" },
    verbose: { type: "boolean" },
    kind: { type: "string", enum: ["cat", "dog"] },
    tags: { type: "array", items: { type: "string" } }
  }
}

describe("schema -> form", () => {
  it("makes one field per property, by type, with required and enum options", () => {
    expect(fieldsOf(schema).map((f) => [f.name, f.kind, f.required])).toEqual([
      ["id", "string", true],
      ["limit", "integer", false],
      ["ratio", "number", false],
      ["verbose", "boolean", false],
      ["kind", "enum", true],
      ["tags", "json", false]
    ])
    expect(fieldsOf(schema)[4]!.options).toEqual(["cat", "dog"])
    expect(fieldsOf(schema)[0]!.description).toBe("Pet id")
  })

  it("falls back to one JSON field for a schema without properties", () => {
    expect(fieldsOf({ type: "object" }).map((f) => f.name)).toEqual([WHOLE])
    expect(fieldsOf(undefined).map((f) => f.kind)).toEqual(["json"])
  })

  it("turns values into typed arguments, leaving empty optional fields out", () => {
    const fields = fieldsOf(schema)
    expect(argumentsOf(fields, { id: " 7 ", limit: "3", ratio: "0.5", verbose: true, kind: "cat", tags: "[\"a\"]" }))
      .toEqual({ ok: true, args: { id: "7", limit: 3, ratio: 0.5, verbose: true, kind: "cat", tags: ["a"] } })
    expect(argumentsOf(fields, { id: "7", kind: "dog", limit: "" })).toEqual({
      ok: true,
      args: { id: "7", kind: "dog" }
    })
  })

  it("names every wrong field", () => {
    const result = argumentsOf(fieldsOf(schema), { limit: "1.5", ratio: "x", tags: "[" })
    expect(result).toEqual({
      ok: false,
      errors: {
        id: "Required",
        kind: "Required",
        limit: "Expected an integer, got 1.5",
        ratio: "Expected a number, got x",
        tags: "Expected valid JSON"
      }
    })
  })

  it("spreads the whole-arguments JSON field, which must be an object", () => {
    const fields = fieldsOf({})
    expect(argumentsOf(fields, { [WHOLE]: "{\"a\":1}" })).toEqual({ ok: true, args: { a: 1 } })
    expect(argumentsOf(fields, { [WHOLE]: "[1]" })).toEqual({
      ok: false,
      errors: { [WHOLE]: "Expected a JSON object" }
    })
  })
})
