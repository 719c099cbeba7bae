/**
 * A form generated from a tool's JSON Schema input, and the arguments it
 * yields.
 *
 * **Rules**
 *
 * - Each top-level property of an object schema is one field: `string`
 *   (text; `enum` becomes a select), `number`/`integer` (numeric input),
 *   `boolean` (checkbox); anything else (objects, arrays, unions) is a JSON
 *   text field, so every schema can be called.
 * - A schema that is not an object with properties is one JSON field for
 *   the whole arguments object.
 * - Empty optional fields are left out; an empty required field, a number
 *   that does not parse, or invalid JSON is an error naming the field.
 */
export type FieldKind = "string" | "number" | "integer" | "boolean" | "enum" | "json"

export interface Field {
  readonly name: string
  readonly kind: FieldKind
  readonly required: boolean
  readonly description: string | undefined
  readonly options: ReadonlyArray<string>
}

/** The name of the single JSON field used when a schema has no properties to list. */
export const WHOLE = "(arguments)"

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

export const fieldsOf = (schema: unknown): Array<Field> => {
  if (!isObject(schema) || !isObject(schema.properties)) {
    return [{ name: WHOLE, kind: "json", required: false, description: "The arguments as a JSON object", options: [] }]
  }
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : [])
  return Object.entries(schema.properties).map(([name, raw]) => {
    const prop = isObject(raw) ? raw : {}
    const description = typeof prop.description === "string" ? prop.description : undefined
    const base = { name, required: required.has(name), description }
    if (Array.isArray(prop.enum) && prop.enum.every((e) => typeof e === "string")) {
      return { ...base, kind: "enum", options: prop.enum as Array<string> }
    }
    const type = prop.type
    const kind: FieldKind = type === "string" || type === "number" || type === "integer" || type === "boolean"
      ? type
      : "json"
    return { ...base, kind, options: [] }
  })
}

export type Values = Readonly<Record<string, string | boolean>>

export type ArgsResult =
  | { readonly ok: true; readonly args: Record<string, unknown> }
  | { readonly ok: false; readonly errors: Readonly<Record<string, string>> }

export const argumentsOf = (fields: ReadonlyArray<Field>, values: Values): ArgsResult => {
  const args: Record<string, unknown> = {}
  const errors: Record<string, string> = {}
  for (const field of fields) {
    const value = values[field.name]
    if (field.kind === "boolean") {
      if (value === true || value === false) args[field.name] = value
      else if (field.required) args[field.name] = false
      continue
    }
    const text = typeof value === "string" ? value.trim() : ""
    if (text === "") {
      if (field.required) errors[field.name] = "Required"
      continue
    }
    switch (field.kind) {
      case "number":
      case "integer": {
        const n = Number(text)
        if (!Number.isFinite(n) || (field.kind === "integer" && !Number.isInteger(n))) {
          errors[field.name] = `Expected ${field.kind === "integer" ? "an integer" : "a number"}, got ${text}`
        } else args[field.name] = n
        break
      }
      case "json":
        try {
          const parsed: unknown = JSON.parse(text)
          if (field.name === WHOLE) {
            if (!isObject(parsed)) errors[field.name] = "Expected a JSON object"
            else Object.assign(args, parsed)
          } else args[field.name] = parsed
        } catch {
          errors[field.name] = "Expected valid JSON"
        }
        break
      default:
        args[field.name] = text
    }
  }
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, args }
}
