/**
 * The write rules that are more than a shape check.
 *
 * **Rules**
 *
 * - Inputs are decoded with their Schema first; a failure becomes one
 *   `InvalidInput` naming the field path and what was expected.
 * - Unknown fields are refused, at any depth: the error names the field's
 *   path, the closest known name (`closestName`: edit distance, case
 *   ignored) and every known name there. A misspelled `allowedtools` or
 *   `egressAllowlist` must not silently widen what a write allows.
 * - Text Postgres cannot store (U+0000, unpaired surrogates: see
 *   `Storable`) is refused in any string or member name, with the field, its
 *   value JSON-escaped and what is expected: configuration is never altered
 *   to fit, and the database never sees it.
 * - URLs are absolute `http:` or `https:` URLs, without credentials in them
 *   (credentials belong in a secret).
 * - Egress allow-list entries follow `EgressAllowList.ts` (addresses, CIDRs,
 *   host names, suffixes, each with an optional port); nothing else is stored.
 * - Tool names match `^[A-Za-z0-9_./-]{1,64}$`.
 * - A path template starts with `/`; each `{param}` in it is declared in the
 *   argument map as `"path"`, and each `"path"` argument appears in it.
 * - Every argument in the argument map is a property of the input schema.
 * - An input schema, and an output schema when one is given, is a JSON
 *   Schema object with `"type": "object"` that Ajv accepts (draft 2020-12 by
 *   default, draft-07 when `$schema` says so) and compiles. Ajv is loaded on the first such check, not at start-up (it is
 *   about 90 modules).
 * - Every `pattern` and `patternProperties` key of those schemas runs on RE2
 *   (`SchemaPatterns`): one that RE2 cannot run (a backreference, a
 *   lookaround) is refused, naming where it is, the pattern and what is
 *   expected.
 *
 * @since 0.1.0
 */
import { Effect, Schema, SchemaAST, SchemaIssue } from "effect"
import { type JsonSchemaObject, ToolNamePattern } from "./Domain.ts"
import { ALLOW_LIST_FORMS, parseAllowListEntry } from "./EgressAllowList.ts"
import { InvalidInput, InvalidInputSchema, InvalidToolName, InvalidUrl, UndeclaredPathParam } from "./Errors.ts"
import * as SchemaPatterns from "./SchemaPatterns.ts"
import { isStorableText } from "./Storable.ts"

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** Fields whose value is not echoed even when wrong (a credential pasted where its name belongs). */
const sensitiveField = /secret|token|pass|pwd|credential|key|auth|cookie|session|private|signature/i

/**
 * Containers whose every field is hidden. Narrower than `sensitiveField`: an
 * `auth` or `oauth` object also holds plain settings (`auth.scheme`,
 * `oauth.issuer`) whose wrong value the operator needs to see.
 */
const sensitiveContainer = /secret|token|pass|pwd|credential/i

/**
 * Maps whose values are an operator's own strings, often credentials under
 * any name (`env.DB_PASS`, `headers.X-Api`): never shown, whatever the name.
 */
const opaqueMaps: ReadonlySet<string> = new Set(["env", "headers"])

/**
 * The value at `path` in `input`, shown in an error: JSON, at most 100
 * characters; nothing when the field is named like a credential, or lies
 * inside a credential-named container or an `env` or `headers` map.
 */
export const shownValue = (input: unknown, path: ReadonlyArray<PropertyKey>): string | undefined => {
  const names = path.map(String)
  const last = names.at(-1)
  if (last !== undefined && sensitiveField.test(last)) return undefined
  if (names.some((key) => opaqueMaps.has(key))) return undefined
  if (names.slice(0, -1).some((key) => sensitiveContainer.test(key))) return undefined
  let current = input
  for (const key of path) {
    if (typeof current !== "object" || current === null || !Object.hasOwn(current, key)) return undefined
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  const json = JSON.stringify(current)
  if (json === undefined) return undefined
  return json.length > 100 ? `${json.slice(0, 97)}...` : json
}

/** Damerau-free Levenshtein distance, case ignored (names differ in case more than in anything else). */
const distance = (a: string, b: string): number => {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j)
  for (let i = 1; i <= x.length; i++) {
    const current = [i]
    for (let j = 1; j <= y.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[y.length]!
}

/** The known name closest to `name` (the first of equals), or undefined when there is none. */
export const closestName = (name: string, known: ReadonlyArray<string>): string | undefined => {
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of known) {
    const d = distance(name, candidate)
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}

/** What to expect instead of the unknown field `name`, given the `known` names at its place. */
export const unknownFieldExpected = (name: string, known: ReadonlyArray<string>): string => {
  const closest = closestName(name, known)
  return known.length === 0
    ? `no field here: ${JSON.stringify(name)} is unknown`
    : `one of the known fields (${known.join(", ")}): ${JSON.stringify(name)} is unknown` +
      (closest === undefined ? "" : `; did you mean ${JSON.stringify(closest)}?`)
}

/** The first unknown field a decode with `onExcessProperty: "error"` met: its path and the known names there. */
export const unknownField = (
  issue: SchemaIssue.Issue
): { readonly path: ReadonlyArray<PropertyKey>; readonly expected: string } | undefined => {
  const find = (
    node: SchemaIssue.Issue,
    path: ReadonlyArray<PropertyKey>
  ): { readonly path: ReadonlyArray<PropertyKey>; readonly expected: string } | undefined => {
    if (node._tag === "UnexpectedKey") {
      const known = SchemaAST.isObjects(node.ast) ? node.ast.propertySignatures.map((p) => String(p.name)) : []
      return { path, expected: unknownFieldExpected(String(path.at(-1) ?? ""), known) }
    }
    if (node._tag === "Pointer") return find(node.issue, [...path, ...node.path])
    if ("issues" in node) {
      for (const child of node.issues) {
        const found = find(child, path)
        if (found !== undefined) return found
      }
      return undefined
    }
    return "issue" in node && node.issue !== undefined ? find(node.issue as SchemaIssue.Issue, path) : undefined
  }
  return find(issue, [])
}

const UNSTORABLE = "text without U+0000 (NUL) or unpaired surrogates, which Postgres cannot store"

/** The path of the first string or member name in `input` that Postgres cannot store (depth-limited). */
const unstorablePath = (input: unknown): ReadonlyArray<string> | undefined => {
  const walk = (value: unknown, path: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
    if (typeof value === "string") return isStorableText(value) ? undefined : path
    if (path.length > 64 || value === null || typeof value !== "object") return undefined
    for (const [key, item] of Object.entries(value)) {
      if (!isStorableText(key)) return [...path, key]
      const found = walk(item, [...path, key])
      if (found !== undefined) return found
    }
    return undefined
  }
  return walk(input, [])
}

/**
 * Decodes `input` with `schema`, failing with `InvalidInput` for the first
 * issue: the field, the value given there and what was expected. Unknown
 * fields and text Postgres cannot store are refused (see the rules). Inputs
 * reference credentials by secret name, but a value pasted into such a field
 * by mistake may be the credential itself: fields named like one
 * (`sensitiveField`) are never echoed.
 */
export const decodeInput = <A>(entity: string, schema: Schema.Decoder<A>) => {
  const decode = Schema.decodeUnknownEffect(schema, { errors: "first", onExcessProperty: "error" })
  return (input: unknown): Effect.Effect<A, InvalidInput> => {
    const unstorable = unstorablePath(input)
    if (unstorable !== undefined) {
      const field = unstorable.map((key) => isStorableText(key) ? key : JSON.stringify(key).slice(1, -1)).join(".")
      const last = unstorable.at(-1)!
      // a member name that cannot be stored is shown itself; a value as usual
      const value = isStorableText(last) ? shownValue(input, unstorable) : JSON.stringify(last)
      return Effect.fail(new InvalidInput({ entity, field, value, expected: UNSTORABLE }))
    }
    return Effect.mapError(decode(input), (error) => {
      const unknown = unknownField(error.issue)
      if (unknown !== undefined) {
        return new InvalidInput({ entity, field: unknown.path.map(String).join("."), expected: unknown.expected })
      }
      const [issue] = formatIssues(error.issue).issues
      const path = (issue?.path ?? []).map((segment) => typeof segment === "object" ? segment.key : segment)
      const field = path.length === 0 ? "(input)" : path.map(String).join(".")
      // the message reads "... expected <text>": the formatter's own "Expected " would say it twice
      const expected = (issue?.message ?? error.message).replace(/^Expected /, "")
      return new InvalidInput({ entity, field, value: shownValue(input, path), expected })
    })
  }
}

/** An absolute http(s) URL without userinfo. */
export const checkHttpUrl = (entity: string, field: string, value: string): Effect.Effect<string, InvalidUrl> => {
  const fail = (why: string) =>
    Effect.fail(new InvalidUrl({ entity, field, value, expected: `an absolute http:// or https:// URL (${why})` }))
  if (!URL.canParse(value)) return fail("not a URL")
  const url = new URL(value)
  if (url.protocol !== "http:" && url.protocol !== "https:") return fail(`scheme ${url.protocol} is not allowed`)
  if (url.username !== "" || url.password !== "") return fail("credentials go in a secret, not in the URL")
  if (url.hostname === "") return fail("no host")
  return Effect.succeed(value)
}

/**
 * Every entry of an egress allow-list parses (`EgressAllowList.ts`): the
 * first that does not is an `InvalidInput` naming its index, its value, what
 * is wrong and the accepted forms.
 */
export const checkEgressAllowList = (
  entity: string,
  entries: ReadonlyArray<string> | null
): Effect.Effect<void, InvalidInput> => {
  if (entries === null) return Effect.void
  for (const [index, raw] of entries.entries()) {
    const parsed = parseAllowListEntry(raw)
    if ("error" in parsed) {
      return Effect.fail(
        new InvalidInput({
          entity,
          field: `egressAllowList.${index}`,
          value: JSON.stringify(raw),
          expected: `${parsed.problem}; expected ${ALLOW_LIST_FORMS}`
        })
      )
    }
  }
  return Effect.void
}

/** The `version` an update expects: a positive integer, as read. */
export const checkVersion = (entity: string, version: number): Effect.Effect<number, InvalidInput> =>
  Number.isSafeInteger(version) && version >= 1
    ? Effect.succeed(version)
    : Effect.fail(
      new InvalidInput({
        entity,
        field: "version",
        value: String(version),
        expected: "the version that was read (>= 1)"
      })
    )

export const checkToolName = (value: string): Effect.Effect<string, InvalidToolName> =>
  ToolNamePattern.test(value)
    ? Effect.succeed(value)
    : Effect.fail(new InvalidToolName({ value, expected: "1 to 64 of A-Z a-z 0-9 _ . / -" }))

const paramPattern = /\{([^{}]*)\}/g
const paramNamePattern = /^[A-Za-z0-9_.-]{1,64}$/

/** The `{param}` names of a path template, in order. */
export const pathParams = (template: string): ReadonlyArray<string> =>
  Array.from(template.matchAll(paramPattern), (match) => match[1]!)

/** Checks a path template against the argument map and the input schema's properties. */
export const checkEndpointShape = (input: {
  readonly name: string
  readonly pathTemplate: string
  readonly arguments: Readonly<Record<string, string>>
  readonly inputSchema: JsonSchemaObject
}): Effect.Effect<void, InvalidInput | UndeclaredPathParam> =>
  Effect.gen(function*() {
    const template = input.pathTemplate
    const invalid = (field: string, value: string, expected: string) =>
      new InvalidInput({ entity: "endpoint", field, value: JSON.stringify(value), expected })
    if (!template.startsWith("/")) {
      return yield* invalid("pathTemplate", template, "a path starting with /, e.g. /users/{id}")
    }
    if (template.replace(paramPattern, "").match(/[{}]/) !== null) {
      return yield* invalid("pathTemplate", template, "balanced {param} placeholders")
    }
    const params = pathParams(template)
    for (const param of params) {
      if (!paramNamePattern.test(param)) {
        return yield* invalid("pathTemplate", template, "placeholder names of A-Z a-z 0-9 _ . -")
      }
      if (input.arguments[param] !== "path") {
        return yield* new UndeclaredPathParam({ tool: input.name, param, pathTemplate: template })
      }
    }
    const properties = input.inputSchema.properties
    const declared = properties !== null && typeof properties === "object" ? Object.keys(properties) : []
    for (const [argument, location] of Object.entries(input.arguments)) {
      if (location === "path" && !params.includes(argument)) {
        return yield* invalid(`arguments.${argument}`, location, `a {${argument}} placeholder in ${template}`)
      }
      if (!declared.includes(argument)) {
        return yield* invalid(`arguments.${argument}`, location, "an argument that inputSchema.properties declares")
      }
    }
  })

// Ajv compiles schemas into functions; a fresh instance per check keeps $id
// collisions and compiled-schema growth out of a long-lived process.
// `import()` of a module already loaded answers from Node's module map.
const ajvModules = Effect.promise(() => Promise.all([import("ajv"), import("ajv/dist/2020.js")]))
const makeAjv = (draft: "2020-12" | "draft-07") =>
  Effect.map(ajvModules, ([{ Ajv }, { Ajv2020 }]) => {
    // patterns compile on RE2 as they will run: one it cannot run fails the compile
    const options = {
      strict: false,
      validateFormats: false,
      allErrors: false,
      code: { regExp: SchemaPatterns.regExpEngine }
    } as const
    return draft === "2020-12" ? new Ajv2020(options) : new Ajv(options)
  })

const schemaDrafts: Record<string, "2020-12" | "draft-07"> = {
  "https://json-schema.org/draft/2020-12/schema": "2020-12",
  "https://json-schema.org/draft/2020-12/schema#": "2020-12",
  "http://json-schema.org/draft-07/schema": "draft-07",
  "http://json-schema.org/draft-07/schema#": "draft-07"
}

/** The JSON Schema draft a schema declares in `$schema` (2020-12 when it declares none); undefined when unsupported. */
export const schemaDraft = (schema: JsonSchemaObject): "2020-12" | "draft-07" | undefined => {
  const declared = schema.$schema
  return declared === undefined ? "2020-12" : typeof declared === "string" ? schemaDrafts[declared] : undefined
}

/** A JSON Schema object with `"type": "object"` that Ajv accepts and compiles. */
export const checkInputSchema = (
  tool: string,
  schema: JsonSchemaObject,
  field: "inputSchema" | "outputSchema" = "inputSchema"
): Effect.Effect<JsonSchemaObject, InvalidInputSchema> => {
  const fail = (reason: string) =>
    Effect.fail(new InvalidInputSchema(field === "inputSchema" ? { tool, reason } : { tool, reason, field }))
  if (schema.type !== "object") {
    return fail(`"type" is ${JSON.stringify(schema.type) ?? "missing"}`)
  }
  const declared = schema.$schema
  const draft = schemaDraft(schema)
  if (draft === undefined) {
    return fail(`unsupported $schema ${JSON.stringify(declared)} (supported: 2020-12, draft-07)`)
  }
  if ("properties" in schema && (schema.properties === null || typeof schema.properties !== "object")) {
    return fail(`"properties" must be an object`)
  }
  const unsafe = SchemaPatterns.firstProblem(field, schema)
  if (unsafe !== undefined) return fail(unsafe)
  return Effect.flatMap(makeAjv(draft), (ajv) => {
    if (!ajv.validateSchema(schema)) {
      return fail(ajv.errorsText(ajv.errors, { dataVar: "schema" }))
    }
    try {
      ajv.compile(schema)
    } catch (error) {
      return fail(error instanceof Error ? error.message : String(error))
    }
    return Effect.succeed(schema)
  })
}
