/**
 * The arguments of a federated tool's call, checked against the tool's
 * `inputSchema` as its upstream listed it, before the call is relayed.
 *
 * **Rules**
 *
 * - Same machinery as REST tools (`RestValidation.schemaCompiler` and
 *   `check`): Ajv, the draft the schema declares (2020-12 without
 *   `$schema`), strict numbers, every violation named, patterns on RE2
 *   within the matching budget. Arguments that do not conform are
 *   `InvalidToolArguments` answered as a tool result with `isError` (as REST
 *   tools answer), audited `invalid`; nothing is sent upstream.
 * - Compiled once per schema: by the schema object (a `WeakMap`, so a call
 *   costs one lookup) and by its JSON text, so a re-listed tool whose schema
 *   did not change is not compiled again. At most `MAX_CACHED_SCHEMAS` texts
 *   are kept (least recently used dropped).
 * - The schema is the upstream's, and may be hostile: one larger than
 *   `MAX_SCHEMA_CHARS` of JSON or nested deeper than `MAX_SCHEMA_DEPTH` is not
 *   compiled (Ajv compiles about 8 ms per KiB on the event loop).
 * - A schema the gateway cannot use (too large or deep, an unsupported
 *   `$schema`, a `$ref` it cannot resolve or that loops, anything Ajv
 *   refuses) leaves the tool callable without the gateway's check: the
 *   upstream still checks its own arguments, and an upstream that lists a
 *   schema Janus does not read must not lose its tool. A warning is logged
 *   once per schema, with the connection, the tool and the reason. A pattern
 *   RE2 cannot run (a backreference, a lookaround) is not checked; the rest
 *   of the schema is (also logged once).
 *
 * @since 0.1.0
 */
import { SchemaPatterns } from "@janus/storage"
import type { ValidateFunction } from "ajv"
import { Effect, Predicate } from "effect"
import * as RestValidation from "../tools/RestValidation.ts"

/** Largest upstream input schema compiled, in characters of JSON (real ones are a few KiB). */
export const MAX_SCHEMA_CHARS = 65_536

/** Deepest upstream input schema compiled, in nested objects and arrays. */
export const MAX_SCHEMA_DEPTH = 32

/** Schemas kept compiled, by JSON text. */
export const MAX_CACHED_SCHEMAS = 1_000

/** What the gateway knows about one schema. */
type Entry =
  | { readonly _tag: "checked"; readonly validate: ValidateFunction }
  | { readonly _tag: "unchecked" }

/** The tool whose arguments are checked, for the warnings. */
export interface CheckedTool {
  readonly connection: string
  readonly tool: string
  readonly inputSchema: unknown
}

export interface ToolArguments {
  /** What is wrong with `args` for `tool`, or undefined when they conform (or the schema is not usable). */
  readonly check: (tool: CheckedTool, args: unknown) => Effect.Effect<string | undefined>
}

/** Whether `value` nests deeper than `max` (objects and arrays), without recursion. */
const tooDeep = (value: unknown, max: number): boolean => {
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (node === null || typeof node !== "object") continue
    if (depth >= max) return true
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1])
    }
  }
  return false
}

/** The JSON text of a schema within the bounds, or why it is not used. */
const boundedText = (schema: unknown): { readonly text: string } | { readonly reason: string } => {
  if (!Predicate.isReadonlyObject(schema) || Array.isArray(schema)) return { reason: "it is not an object" }
  if (tooDeep(schema, MAX_SCHEMA_DEPTH)) return { reason: `it nests deeper than ${MAX_SCHEMA_DEPTH} levels` }
  const text = JSON.stringify(schema)
  if (text.length > MAX_SCHEMA_CHARS) {
    return { reason: `it is ${text.length} characters of JSON, more than ${MAX_SCHEMA_CHARS}` }
  }
  return { text }
}

export const make = (): ToolArguments => {
  const compile = RestValidation.schemaCompiler(SchemaPatterns.lenientRegExpEngine)
  const byObject = new WeakMap<object, Entry>()
  // insertion order is recency: a hit is moved to the end, the first is the least recently used
  const byText = new Map<string, Entry>()

  const warn = (tool: CheckedTool, what: string) =>
    Effect.logWarning(`tool ${tool.tool}: ${what}`).pipe(
      Effect.annotateLogs({ connection: tool.connection, tool: tool.tool })
    )

  const remember = (schema: object, text: string | undefined, entry: Entry) => {
    byObject.set(schema, entry)
    if (text === undefined) return entry
    byText.set(text, entry)
    if (byText.size > MAX_CACHED_SCHEMAS) byText.delete(byText.keys().next().value!)
    return entry
  }

  const entryOf = (tool: CheckedTool): Effect.Effect<Entry> =>
    Effect.suspend(() => {
      const schema = tool.inputSchema as object
      const known = byObject.get(schema)
      if (known !== undefined) return Effect.succeed(known)
      let bounded: ReturnType<typeof boundedText>
      try {
        bounded = boundedText(schema)
      } catch (error) {
        bounded = { reason: `it cannot be read as JSON (${(error as Error).message})` }
      }
      if ("reason" in bounded) {
        return Effect.as(
          warn(tool, `its inputSchema is not used, so the gateway does not check its arguments (${bounded.reason})`),
          remember(schema, undefined, { _tag: "unchecked" })
        )
      }
      const text = bounded.text
      const cached = byText.get(text)
      if (cached !== undefined) {
        byText.delete(text)
        byText.set(text, cached)
        byObject.set(schema, cached)
        return Effect.succeed(cached)
      }
      return compile(schema as Readonly<Record<string, unknown>>).pipe(
        Effect.matchEffect({
          onFailure: (reason) =>
            Effect.as(
              warn(tool, `its inputSchema cannot be compiled, so the gateway does not check its arguments (${reason})`),
              remember(schema, text, { _tag: "unchecked" })
            ),
          onSuccess: (validate) => {
            const unchecked = SchemaPatterns.firstProblem("inputSchema", schema)
            const entry = remember(schema, text, { _tag: "checked", validate })
            return unchecked === undefined ? Effect.succeed(entry) : Effect.as(
              warn(tool, `the gateway checks its arguments without one pattern: ${unchecked}`),
              entry
            )
          }
        })
      )
    })

  return {
    check: (tool, args) =>
      Effect.flatMap(entryOf(tool), (entry) => {
        if (entry._tag === "unchecked") return Effect.succeed(undefined)
        try {
          return Effect.succeed(RestValidation.check(entry.validate, "arguments", args))
        } catch (error) {
          // a schema that only fails when run (a $ref cycle overflowing the stack): not checked from now on
          const schema = tool.inputSchema as object
          byObject.set(schema, { _tag: "unchecked" })
          for (const [text, cached] of byText) if (cached === entry) byText.set(text, { _tag: "unchecked" })
          return Effect.as(
            warn(
              tool,
              `the gateway no longer checks its arguments: checking them failed (${(error as Error).message})`
            ),
            undefined
          )
        }
      })
  }
}
