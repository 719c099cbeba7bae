/**
 * Reading an OpenAPI document: JSON or YAML text, version check, and `$ref`
 * resolution with bounds.
 *
 * **Rules**
 *
 * - OpenAPI 3.0.x and 3.1.x only (Swagger 2.0 is refused with a hint).
 * - Text is at most `MAX_DOCUMENT_BYTES` (20 MiB); YAML aliases are capped by
 *   the `yaml` parser's `maxAliasCount` (100), which stops "billion laughs".
 * - The YAML parser and the `$ref` resolver are loaded on first use.
 * - `$ref`s are resolved by `@apidevtools/json-schema-ref-parser` with every
 *   external resolver off (no file system, no HTTP: a document cannot make
 *   the gateway read a file or reach a host), a depth bound and a time bound.
 *   Circular references become object cycles; `boundSchema` later cuts
 *   them, and anything deeper than `MAX_SCHEMA_DEPTH` or past
 *   `MAX_SCHEMA_NODES`, into permissive schemas (`{"description":
 *   "(recursive)"}`), so one tool's input schema stays small and finite.
 *   An external `$ref` (ignored by the resolver) is cut the same way.
 *
 * @since 0.1.0
 */
import { Effect, Predicate, Schema } from "effect"

// Loaded on the first import of a document, not at start-up: the two parsers are about 100 modules.
// (`import()` of a module already loaded answers from Node's module map.)
const yaml = Effect.promise(() => import("yaml"))
const refParser = Effect.promise(() => import("@apidevtools/json-schema-ref-parser"))

export const MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
export const MAX_SCHEMA_DEPTH = 24
export const MAX_SCHEMA_NODES = 20_000

/** The document cannot be imported; `message` says why and what is expected. */
export class OpenApiError extends Schema.TaggedError<OpenApiError>()("OpenApiError", {
  message: Schema.String
}) {}

export interface OpenApiDocument {
  /** `3.0` or `3.1`. */
  readonly version: "3.0" | "3.1"
  readonly openapi: string
  readonly title: string
  /** The dereferenced document (it may contain cycles: read it with `boundSchema`). */
  readonly document: Readonly<Record<string, unknown>>
}

/** Parses JSON (when it starts with `{`) or YAML. */
export const parseText = (text: string): Effect.Effect<unknown, OpenApiError> =>
  Effect.flatMap(yaml, (Yaml) =>
    Effect.try({
      try: () => {
        if (Buffer.byteLength(text) > MAX_DOCUMENT_BYTES) {
          throw new Error(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`)
        }
        const trimmed = text.trimStart()
        return trimmed.startsWith("{")
          ? JSON.parse(trimmed)
          : Yaml.parse(text, { maxAliasCount: 100, prettyErrors: false, uniqueKeys: false })
      },
      catch: (error) =>
        new OpenApiError({
          message: `the document is neither valid JSON nor valid YAML: ${
            (error instanceof Error ? error.message : String(error)).slice(0, 300)
          }`
        })
    }))

/** Checks the version and resolves internal `$ref`s. */
export const load = (value: unknown): Effect.Effect<OpenApiDocument, OpenApiError> =>
  Effect.gen(function*() {
    if (!Predicate.isReadonlyObject(value)) {
      return yield* new OpenApiError({ message: "the document is not a JSON/YAML object" })
    }
    if (typeof value.swagger === "string") {
      return yield* new OpenApiError({
        message: `Swagger ${value.swagger} documents are not supported; convert it to OpenAPI 3 first`
      })
    }
    const openapi = typeof value.openapi === "string" ? value.openapi : undefined
    const version = openapi?.startsWith("3.0") ? "3.0" : openapi?.startsWith("3.1") ? "3.1" : undefined
    if (version === undefined) {
      return yield* new OpenApiError({
        message: `"openapi" is ${JSON.stringify(value.openapi) ?? "missing"}; expected 3.0.x or 3.1.x`
      })
    }
    if (!Predicate.isReadonlyObject(value.paths)) {
      return yield* new OpenApiError({ message: "the document has no \"paths\" object" })
    }
    const $RefParser = (yield* refParser).default
    const document = yield* Effect.tryPromise({
      try: () =>
        $RefParser.dereference(structuredClone(value), {
          resolve: { external: false, file: false, http: false },
          dereference: { circular: true, maxDepth: 64 },
          timeoutMs: 60_000
        }),
      catch: (error) =>
        new OpenApiError({
          message: `a $ref could not be resolved: ${
            (error instanceof Error ? error.message : String(error)).slice(0, 300)
          }`
        })
    })
    const info = Predicate.isReadonlyObject(value.info) ? value.info : {}
    return {
      version,
      openapi: openapi!,
      title: typeof info.title === "string" ? info.title : "",
      document: document as Record<string, unknown>
    }
  })

/** Keywords whose values are data, not schemas. */
const dataKeywords: ReadonlySet<string> = new Set(["enum", "const", "default", "examples", "required"])

/** A JSON copy of a data value, or `undefined` when it is too large (64 KiB) or not JSON. */
const cloneData = (value: unknown): unknown => {
  try {
    const text = JSON.stringify(value)
    return text === undefined || text.length > 65_536 ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * A JSON Schema (2020-12) copy of an OpenAPI schema, bounded in depth and
 * size. 3.0 specifics are translated: `nullable` becomes a `"null"` type,
 * boolean `exclusiveMinimum`/`exclusiveMaximum` become numbers, `example`
 * becomes `examples`; OpenAPI-only keywords (`discriminator`, `xml`,
 * `externalDocs`) are dropped; cycles and unresolved `$ref`s become
 * permissive schemas with a description saying so.
 */
export const boundSchema = (schema: unknown, version: "3.0" | "3.1"): Record<string, unknown> => {
  let nodes = 0
  const ancestors = new Set<unknown>()
  const copy = (value: unknown, depth: number): unknown => {
    if (typeof value !== "object" || value === null) return value
    nodes++
    if (ancestors.has(value)) return { description: "(recursive)" }
    if (depth > MAX_SCHEMA_DEPTH || nodes > MAX_SCHEMA_NODES) return { description: "(truncated)" }
    ancestors.add(value)
    try {
      if (Array.isArray(value)) return value.map((item) => copy(item, depth + 1))
      return copySchemaObject(value as Record<string, unknown>, depth)
    } finally {
      ancestors.delete(value)
    }
  }
  const copySchemaObject = (value: Record<string, unknown>, depth: number): Record<string, unknown> => {
    if (typeof value.$ref === "string") {
      return { description: `(recursive: ${value.$ref.slice(0, 200)})` }
    }
    const out: Record<string, unknown> = {}
    for (const [key, child] of Object.entries(value)) {
      if (key === "discriminator" || key === "xml" || key === "externalDocs" || key.startsWith("x-")) continue
      if (version === "3.0" && (key === "nullable" || key === "example")) continue
      if (dataKeywords.has(key)) {
        const data = cloneData(child)
        if (data !== undefined) out[key] = data
        continue
      }
      if (key === "properties" || key === "patternProperties" || key === "$defs" || key === "definitions") {
        if (Predicate.isReadonlyObject(child)) {
          const props: Record<string, unknown> = {}
          for (const [name, sub] of Object.entries(child)) props[name] = copy(sub, depth + 1)
          out[key] = props
        }
        continue
      }
      out[key] = copy(child, depth + 1)
    }
    if (version === "3.0") {
      if (value.nullable === true) {
        if (typeof out.type === "string") out.type = [out.type, "null"]
        else if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null]
      }
      if (value.example !== undefined && out.examples === undefined) {
        const example = cloneData(value.example)
        if (example !== undefined) out.examples = [example]
      }
      for (const [bound, exclusive] of [["minimum", "exclusiveMinimum"], ["maximum", "exclusiveMaximum"]] as const) {
        if (typeof out[exclusive] === "boolean") {
          if (out[exclusive] === true && typeof out[bound] === "number") {
            out[exclusive] = out[bound]
            delete out[bound]
          } else {
            delete out[exclusive]
          }
        }
      }
    }
    return out
  }
  const result = copy(schema, 0)
  return Predicate.isReadonlyObject(result) ? result : {}
}
