/**
 * The JSON Schemas of REST tools, enforced: a call's arguments against the
 * tool's `inputSchema` before anything is sent, and the `structuredContent`
 * of its result against its `outputSchema` when it declares one.
 *
 * **Rules**
 *
 * - Draft: 2020-12, or draft-07 when the schema's `$schema` says so (the
 *   drafts storage accepts when the endpoint is written).
 * - Compiled once per tool version (endpoint id and version) on its first
 *   call, by Ajv, loaded then and not at start-up (about 90 modules); later
 *   calls run the compiled function. Validators of tool versions that left
 *   the configuration are dropped (`retain`).
 * - Numbers are strict: a non-finite number (`1e400` parses as Infinity)
 *   never satisfies `number` or `integer`. Formats are annotations, as
 *   2020-12 has them by default.
 * - Every violation is reported (at most `MAX_REPORTED`), each naming the
 *   path in the arguments (`arguments.items[2].id`), what was expected and
 *   the value given (shortened; never the value of a field named like a
 *   credential), so a model can correct its call.
 * - A schema Ajv cannot compile makes the tool version refuse its calls
 *   with the reason (remembered like a compiled one: no call pays for a
 *   second attempt); it never runs unchecked.
 * - Patterns (`pattern`, `patternProperties`) run on RE2, never on V8's
 *   backtracking `RegExp` (`SchemaPatterns` in storage): matching is linear
 *   in the text, and one call's matching stays within
 *   `SchemaPatterns.MATCH_BUDGET` (past it the arguments are refused as too
 *   large to check). A stored schema with a pattern RE2 cannot run (written
 *   before this rule) is a schema that does not compile.
 * - `schemaCompiler` and `check` are the same machinery for other tools'
 *   schemas (the federated tools'); an Ajv instance is replaced after
 *   `MAX_COMPILES_PER_INSTANCE` compiles, since it keeps every pattern it
 *   compiled.
 *
 * Why Ajv, by hand around it: it is the JSON Schema validator storage
 * already uses to accept these schemas, and it compiles a schema to a
 * function (tens of nanoseconds per call); effect's Schema does not read
 * JSON Schema.
 *
 * @since 0.1.0
 */
import { type Endpoint, SchemaPatterns, Validation } from "@janus/storage"
import type { ErrorObject, ValidateFunction } from "ajv"
import { Data, Effect, Predicate } from "effect"
import { describeValue } from "../mcp/JsonRpc.ts"

/** Violations named in one answer at most; the rest are counted. */
export const MAX_REPORTED = 8

/** A tool version's compiled checks: each returns what is wrong, or undefined when the value conforms. */
export interface ToolValidators {
  readonly input: (args: unknown) => string | undefined
  /** Present when the tool declares an output schema. */
  readonly output: ((structuredContent: unknown) => string | undefined) | undefined
}

/** The tool's schema cannot be compiled: its calls are refused with `reason`. */
export class UnusableSchema extends Data.TaggedError("UnusableSchema")<{
  readonly field: "inputSchema" | "outputSchema"
  readonly reason: string
}> {}

/** The validators of every tool version in use. */
export interface RestValidation {
  /** The validators of `endpoint`'s version, if already compiled (no allocation). */
  readonly cached: (endpoint: Endpoint) => ToolValidators | undefined
  /** Compiles (once) and returns the validators of `endpoint`'s version. */
  readonly compile: (endpoint: Endpoint) => Effect.Effect<ToolValidators, UnusableSchema>
  /** Drops the validators of tool versions not among `endpoints`. */
  readonly retain: (endpoints: ReadonlyArray<Endpoint>) => void
}

const keyOf = (endpoint: Endpoint): string => `${endpoint.id}@${endpoint.version}`

type Draft = "2020-12" | "draft-07"

interface AjvLike {
  compile: (schema: object) => ValidateFunction
  removeSchema: (schema: object) => unknown
}

// `import()` of a module already loaded answers from Node's module map.
const ajvModules = Effect.promise(() => Promise.all([import("ajv"), import("ajv/dist/2020.js")]))

/**
 * Compiles with one Ajv instance before a fresh one is made: an instance
 * keeps every pattern it compiled (its code scope), and upstream servers
 * may send ever-new schemas.
 */
export const MAX_COMPILES_PER_INSTANCE = 500

const ajvOptions = (regExp: typeof SchemaPatterns.regExpEngine) => ({
  strict: false,
  strictNumbers: true,
  validateFormats: false,
  allErrors: true,
  // `data` and `parentSchema` on each error: the value given and the properties allowed, for the message
  verbose: true,
  // compiled schemas are not kept by id or by object: tool schemas may repeat an $id, and
  // validators of old tool versions must be collectable
  addUsedSchema: false,
  // patterns run on RE2 (linear time), never on V8's backtracking RegExp
  code: { regExp }
})

/**
 * Compiles JSON Schemas (the draft each declares) to validate functions,
 * patterns on `regExp`; fails with the reason a schema cannot be compiled.
 */
export const schemaCompiler = (
  regExp: typeof SchemaPatterns.regExpEngine = SchemaPatterns.regExpEngine
): (schema: Readonly<Record<string, unknown>>) => Effect.Effect<ValidateFunction, string> => {
  const instances = new Map<Draft, { readonly ajv: AjvLike; compiles: number }>()
  const options = ajvOptions(regExp)
  const ajvFor = (draft: Draft) =>
    Effect.map(ajvModules, ([{ Ajv }, { Ajv2020 }]) => {
      let instance = instances.get(draft)
      if (instance === undefined || instance.compiles >= MAX_COMPILES_PER_INSTANCE) {
        instance = { ajv: draft === "2020-12" ? new Ajv2020(options) : new Ajv(options), compiles: 0 }
        instances.set(draft, instance)
      }
      instance.compiles++
      return instance.ajv
    })
  return (schema) => {
    const draft = Validation.schemaDraft(schema)
    if (draft === undefined) return Effect.fail(`unsupported $schema ${JSON.stringify(schema.$schema)}`)
    return Effect.flatMap(ajvFor(draft), (ajv) => {
      try {
        const validate = ajv.compile(schema)
        ajv.removeSchema(schema)
        return Effect.succeed(validate)
      } catch (error) {
        ajv.removeSchema(schema)
        return Effect.fail(error instanceof Error ? error.message : String(error))
      }
    })
  }
}

/**
 * What is wrong with `value` (under `root`, e.g. `arguments`) by `validate`,
 * or undefined when it conforms; pattern matching within the budget.
 */
export const check = (validate: ValidateFunction, root: string, value: unknown): string | undefined => {
  try {
    return SchemaPatterns.withBudget(() => validate(value)) ? undefined : describeErrors(root, validate.errors)
  } catch (error) {
    if (error instanceof SchemaPatterns.PatternBudgetExceeded) return `${root}: ${error.message}`
    throw error
  }
}

/** Builds the validator cache. One Ajv instance per draft, created when first needed. */
export const make = (): RestValidation => {
  // a schema that does not compile is remembered too: a call must not cost a compile attempt
  const compiled = new Map<string, ToolValidators | UnusableSchema>()
  const compileWithAjv = schemaCompiler()

  const compileSchema = (field: "inputSchema" | "outputSchema", schema: Readonly<Record<string, unknown>>) =>
    Effect.mapError(compileWithAjv(schema), (reason) => new UnusableSchema({ field, reason }))

  const compile = (endpoint: Endpoint): Effect.Effect<ToolValidators, UnusableSchema> =>
    Effect.suspend(() => {
      const key = keyOf(endpoint)
      const existing = compiled.get(key)
      if (existing !== undefined) {
        return existing instanceof UnusableSchema
          ? Effect.fail(existing)
          : Effect.succeed(existing)
      }
      return Effect.gen(function*() {
        const input = yield* compileSchema("inputSchema", endpoint.inputSchema)
        const output = endpoint.outputSchema === undefined ?
          undefined :
          yield* compileSchema("outputSchema", endpoint.outputSchema)
        const validators: ToolValidators = {
          input: (args) => check(input, "arguments", args),
          output: output === undefined ?
            undefined :
            (value) => check(output, "structuredContent", value)
        }
        compiled.set(key, validators)
        return validators
      }).pipe(Effect.tapError((unusable) => Effect.sync(() => compiled.set(key, unusable))))
    })

  return {
    cached: (endpoint) => {
      const found = compiled.get(keyOf(endpoint))
      return found instanceof UnusableSchema ? undefined : found
    },
    compile,
    retain: (endpoints) => {
      if (compiled.size === 0) return
      const live = new Set(endpoints.map(keyOf))
      for (const key of compiled.keys()) if (!live.has(key)) compiled.delete(key)
    }
  }
}

// -----------------------------------------------------------------------------
// Messages
// -----------------------------------------------------------------------------

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** `arguments.items[2]["x-note"]`: a path in a JSON value, as a reader writes it. */
export const pathText = (root: string, segments: ReadonlyArray<string | number>): string => {
  let text = root
  for (const segment of segments) {
    text += typeof segment === "number" ?
      `[${segment}]` :
      identifier.test(segment) ?
      `.${segment}` :
      `[${JSON.stringify(segment)}]`
  }
  return text
}

/** The segments of a JSON Pointer (`/items/2/id`); numeric segments are array indexes. */
const pointerSegments = (pointer: string): Array<string | number> =>
  pointer === "" ? [] : pointer.slice(1).split("/").map((raw) => {
    const segment = raw.replace(/~1/g, "/").replace(/~0/g, "~")
    return /^(?:0|[1-9][0-9]*)$/.test(segment) ? Number(segment) : segment
  })

/** Fields whose value is never echoed, even when wrong (a credential pasted where it does not belong). */
const sensitiveField = /secret|token|password|passwd|credential|api[-_]?key|authorization/i

const shown = (segments: ReadonlyArray<string | number>, value: unknown): string =>
  segments.some((segment) => typeof segment === "string" && sensitiveField.test(segment)) ?
    "a value not shown (the field looks like it holds a credential)" :
    describeValue(value)

const listed = (values: ReadonlyArray<unknown>): string => {
  const first = values.slice(0, 10).map((value) => JSON.stringify(value) ?? String(value)).join(", ")
  return values.length > 10 ? `${first}, … (${values.length} values)` : first
}

const codePoints = (value: unknown): number => typeof value === "string" ? [...value].length : 0

/** One violation in words: the path, what was expected, and what was given. */
const describeError = (root: string, error: ErrorObject): string => {
  const segments = pointerSegments(error.instancePath)
  const at = pathText(root, segments)
  const params = error.params as Record<string, unknown>
  const got = () => shown(segments, error.data)
  switch (error.keyword) {
    case "type":
      return `${at} must be ${String(params.type).split(",").join(" or ")}; got ${got()}`
    case "required":
      return `${pathText(root, [...segments, String(params.missingProperty)])} is required but missing`
    case "additionalProperties": {
      const name = String(params.additionalProperty)
      const properties =
        Predicate.isReadonlyObject(error.parentSchema) && Predicate.isReadonlyObject(error.parentSchema.properties) ?
          Object.keys(error.parentSchema.properties) :
          []
      const what = segments.length === 0 && root === "arguments"
        ? "an argument of this tool"
        : "a property allowed here"
      return `${pathText(root, [...segments, name])} is not ${what}${
        properties.length === 0 ? "" : ` (it takes ${properties.join(", ")})`
      }`
    }
    case "enum":
      return `${at} must be one of ${listed(params.allowedValues as ReadonlyArray<unknown>)}; got ${got()}`
    case "const":
      return `${at} must be ${JSON.stringify(params.allowedValue)}; got ${got()}`
    case "maxLength":
    case "minLength":
      return `${at} must be at ${
        error.keyword === "maxLength" ? "most" : "least"
      } ${params.limit} characters long; got ${codePoints(error.data)} characters`
    case "maximum":
    case "minimum":
    case "exclusiveMaximum":
    case "exclusiveMinimum":
      return `${at} must be ${params.comparison} ${params.limit}; got ${got()}`
    case "maxItems":
    case "minItems":
      return `${at} must have at ${error.keyword === "maxItems" ? "most" : "least"} ${params.limit} items; got ${
        Array.isArray(error.data) ? error.data.length : 0
      }`
    case "maxProperties":
    case "minProperties":
      return `${at} must have at ${error.keyword === "maxProperties" ? "most" : "least"} ${params.limit} properties`
    case "pattern":
      return `${at} must match the pattern ${JSON.stringify(params.pattern)}; got ${got()}`
    case "multipleOf":
      return `${at} must be a multiple of ${params.multipleOf}; got ${got()}`
    case "uniqueItems":
      return `${at} must not repeat items (items ${params.j} and ${params.i} are equal)`
    default:
      return `${at} ${error.message ?? `does not satisfy "${error.keyword}"`}`
  }
}

/** Every violation of one validation, in words, `MAX_REPORTED` at most. */
export const describeErrors = (root: string, errors: ReadonlyArray<ErrorObject> | null | undefined): string => {
  if (errors === null || errors === undefined || errors.length === 0) return `${root} does not match its schema`
  const seen = new Set<string>()
  for (const error of errors) {
    seen.add(describeError(root, error))
    if (seen.size > MAX_REPORTED) break
  }
  const lines = [...seen]
  if (lines.length > MAX_REPORTED) {
    lines.length = MAX_REPORTED
    lines.push(`and more (${errors.length} problems in all)`)
  }
  return lines.join("; ")
}
