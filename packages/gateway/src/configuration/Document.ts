/**
 * The configuration document: the whole configuration of a gateway (no
 * secret value, no token value) as one YAML or JSON document, and how a
 * text becomes a checked document.
 *
 * **Rules**
 *
 * - The document is `{ apiVersion: "janus/v1", kind: "Configuration",
 *   secrets, connections, endpoints, virtualServers, clientTokens }`; every
 *   section is optional. Its schema is {@link Document}, built from the
 *   storage inputs (`ConnectionInput`, `EndpointInput`, ...), so its defaults
 *   and shape rules are storage's own, and {@link jsonSchema} derives the
 *   published JSON Schema from it (one source).
 * - Names are the keys: an endpoint names its `connection`, a virtual server
 *   its tools, a token its virtual servers, a connection its secrets. Ids
 *   never appear (they differ between environments).
 * - Secrets are names, with an optional `valueFrom: { env: NAME }`; client
 *   tokens are definitions (scopes, expiry, revoked), with an optional
 *   `valueFrom` too. No value is ever written into a document.
 * - Text: JSON when it starts with `{` and parses as JSON, YAML otherwise
 *   (YAML 1.2, several documents in a stream allowed, keys unique, at most
 *   100 aliases); at most `MAX_DOCUMENT_BYTES`, nested at most `MAX_DEPTH`
 *   levels. A parse error says where (line and column) and what kind of
 *   error, and quotes nothing of the text.
 * - A token's `expiresAt` is an RFC 3339 date-time that exists on the
 *   calendar (`Instants.parseDateTime`): 30 February is refused, not read as
 *   2 March.
 * - Unknown fields are refused, at every level. Every problem is reported at
 *   once with its document path (`connections[2].baseUrl`, prefixed by its
 *   file when there are several), the value given there (not for fields
 *   named like a credential) and what is expected.
 * - Several parts (files of a directory, documents of a stream) make one
 *   document: their sections are concatenated, and each item keeps where it
 *   came from for errors.
 *
 * @since 0.1.0
 */
import {
  ClientTokenInput,
  ConnectionInput,
  DisplayName,
  EndpointInput,
  EnvNamePattern,
  Instants,
  ResourceName,
  SecretName,
  Validation,
  VirtualServerInput
} from "@janus/storage"
import { Effect, Schema, SchemaAST, SchemaIssue, Struct } from "effect"

// Loaded on the first document, not at start-up (the YAML parser is about 60 modules).
const yaml = Effect.promise(() => import("yaml"))

export const API_VERSION = "janus/v1"
export const KIND = "Configuration"

/** Largest document text accepted, in bytes: far above a gateway's configuration with thousands of tools. */
export const MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
/** Deepest nesting accepted: the document's own 4 levels plus the deepest input schema an OpenAPI import makes. */
export const MAX_DEPTH = 100
/** YAML aliases accepted per document (the `yaml` parser's default): stops "billion laughs". */
const MAX_ALIASES = 100
/** Problems reported at most: past that, one more line says how many were left out. */
const MAX_PROBLEMS = 50

const expected = (text: string) => ({ expected: text })

/** Where a value comes from instead of the document: an environment variable of the process that applies it. */
export const ValueFrom = Schema.Struct({
  env: Schema.String.check(
    Schema.isPattern(EnvNamePattern, expected("an environment variable name (letters, digits and _)"))
  )
}).annotate({ description: "An environment variable of the process that applies the document" })

// a date-time that exists on the calendar: `Date.parse` would read 2030-02-30 as 2 March
const Rfc3339 = Schema.String.check(Schema.makeFilter((text: string) => {
  const parsed = Instants.parseDateTime(text)
  // the document's problem line puts `got <value>; ` before this
  return Instants.isRefusal(parsed) ? `Expected ${Instants.DATE_TIME_EXPECTED} (${parsed.reason})` : true
}, expected(Instants.DATE_TIME_EXPECTED)))

export const SecretItem = Schema.Struct({
  name: SecretName,
  valueFrom: Schema.optionalKey(ValueFrom)
}).annotate({
  description: "A secret the configuration uses: its name, and optionally where its value is read from"
})
export type SecretItem = typeof SecretItem.Type

export const EndpointItem = Schema.Struct({
  name: EndpointInput.fields.name,
  connection: ResourceName.annotate({ description: "The rest connection it belongs to (by name)" }),
  ...Struct.omit(EndpointInput.fields, ["connectionId", "name"])
}).annotate({ description: "One REST operation of a rest connection, exposed as one MCP tool" })
export type EndpointItem = typeof EndpointItem.Type

export const ClientTokenItem = Schema.Struct({
  name: DisplayName,
  allowedTools: ClientTokenInput.fields.allowedTools,
  allowedVirtualServers: ClientTokenInput.fields.allowedVirtualServers,
  expiresAt: Schema.optionalKey(Schema.NullOr(Rfc3339)),
  revoked: Schema.optionalKey(Schema.Boolean),
  valueFrom: Schema.optionalKey(ValueFrom)
}).annotate({
  description: "A client token's definition (never its value); null allow-lists mean unrestricted"
})
export type ClientTokenItem = typeof ClientTokenItem.Type

export type ConnectionItem = typeof ConnectionInput.Type
export type VirtualServerItem = typeof VirtualServerInput.Type

/** The configuration document (one part of it, when it is split over files). */
export const Document = Schema.Struct({
  apiVersion: Schema.Literal(API_VERSION),
  kind: Schema.Literal(KIND),
  secrets: Schema.optionalKey(Schema.Array(SecretItem)),
  connections: Schema.optionalKey(Schema.Array(ConnectionInput)),
  endpoints: Schema.optionalKey(Schema.Array(EndpointItem)),
  virtualServers: Schema.optionalKey(Schema.Array(VirtualServerInput)),
  clientTokens: Schema.optionalKey(Schema.Array(ClientTokenItem))
}).annotate({
  title: "Janus configuration",
  description: "The configuration of a Janus gateway: janus apply -f FILE, janus export"
})
export type Document = typeof Document.Type

/** The sections of a document, in the order they are written. */
export const SECTIONS = ["secrets", "connections", "endpoints", "virtualServers", "clientTokens"] as const
export type Section = (typeof SECTIONS)[number]

/** One thing wrong in a document: where, and what was given and expected. */
export class Problem extends Schema.Class<Problem>("@janus/gateway/configuration/Problem")({
  path: Schema.String,
  message: Schema.String
}) {
  get line(): string {
    return this.path === "" ? this.message : `${this.path}: ${this.message}`
  }
}

/** The document cannot be applied as it is; nothing was changed. */
export class ConfigurationInvalid extends Schema.TaggedError<ConfigurationInvalid>()("ConfigurationInvalid", {
  problems: Schema.Array(Problem)
}) {
  override get message(): string {
    const n = this.problems.length
    return `the configuration document is invalid (${n} problem${n === 1 ? "" : "s"}):\n` +
      this.problems.map((p) => `  - ${p.line}`).join("\n")
  }
}

export const invalid = (problems: ReadonlyArray<{ readonly path: string; readonly message: string }>) =>
  new ConfigurationInvalid({
    problems: problems.length <= MAX_PROBLEMS
      ? problems.map((p) => new Problem(p))
      : [
        ...problems.slice(0, MAX_PROBLEMS).map((p) => new Problem(p)),
        new Problem({ path: "", message: `and ${problems.length - MAX_PROBLEMS} more problems` })
      ]
  })

/** An item of the document and where it is (`connections[2]`, or `a.yaml: connections[2]`). */
export interface Located<A> {
  readonly value: A
  readonly at: string
}

/** A whole decoded document: every section, every item located. */
export type Configuration = {
  readonly secrets: ReadonlyArray<Located<SecretItem>>
  readonly connections: ReadonlyArray<Located<ConnectionItem>>
  readonly endpoints: ReadonlyArray<Located<EndpointItem>>
  readonly virtualServers: ReadonlyArray<Located<VirtualServerItem>>
  readonly clientTokens: ReadonlyArray<Located<ClientTokenItem>>
}

/** A parsed part of a document before it is decoded, and where it came from (a file, or undefined). */
export interface Part {
  readonly source: string | undefined
  readonly value: unknown
}

// -----------------------------------------------------------------------------
// Paths and values in messages
// -----------------------------------------------------------------------------

/** `[2]` for an index, `.name` for a key (`["odd key"]` for one that is not an identifier). */
export const pathOf = (segments: ReadonlyArray<PropertyKey>): string =>
  segments.map((s, i) =>
    typeof s === "number" || (typeof s === "string" && /^\d+$/.test(s))
      ? `[${String(s)}]`
      : typeof s === "string" && /^[A-Za-z_$][\w$-]*$/.test(s)
      ? `${i === 0 ? "" : "."}${s}`
      : `[${JSON.stringify(String(s))}]`
  ).join("")

/** `at` followed by `field` (a dotted storage field such as `auth.tokenUrl`). */
export const within = (at: string, field: string): string => field === "" || field === "(input)" ? at : `${at}.${field}`

/**
 * The value at `path` in `input` as storage shows one (never under a field
 * named like a credential), where the sections `secrets` and `clientTokens`
 * do not count as such: they hold names and definitions, never values.
 */
const shownAt = (input: unknown, path: ReadonlyArray<PropertyKey>): string | undefined => {
  const [section, ...inner] = path
  return (SECTIONS as ReadonlyArray<PropertyKey>).includes(section ?? "") &&
      typeof input === "object" && input !== null && Object.hasOwn(input, section!)
    ? Validation.shownValue((input as Record<PropertyKey, unknown>)[section!], inner)
    : Validation.shownValue(input, path)
}

const prefixed = (source: string | undefined, path: string) =>
  source === undefined ? path : path === "" ? source : `${source}: ${path}`

// -----------------------------------------------------------------------------
// Text
// -----------------------------------------------------------------------------

const tooDeep = (root: unknown): boolean => {
  const stack: Array<readonly [unknown, number]> = [[root, 1]]
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!
    if (value === null || typeof value !== "object") continue
    if (depth > MAX_DEPTH) return true
    for (const child of Object.values(value)) stack.push([child, depth + 1])
  }
  return false
}

/**
 * The parts of a document text (several for a YAML stream of documents).
 * `source` names the file in messages.
 */
export const parseText = (
  text: string,
  source?: string
): Effect.Effect<ReadonlyArray<Part>, ConfigurationInvalid> =>
  Effect.gen(function*() {
    const fail = (message: string) => Effect.fail(invalid([{ path: source ?? "", message }]))
    if (Buffer.byteLength(text) > MAX_DOCUMENT_BYTES) {
      return yield* fail(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes (8 MiB)`)
    }
    const body = text.replace(/^\uFEFF/, "")
    const values: Array<unknown> = []
    const json = body.trimStart().startsWith("{") ? parseJson(body) : undefined
    if (json !== undefined) values.push(json.value)
    else {
      // YAML (a superset of JSON): also what says where JSON text that JSON.parse refused is wrong
      const Yaml = yield* yaml
      const docs = Yaml.parseAllDocuments(body, { uniqueKeys: true, prettyErrors: true, version: "1.2" })
      if (!Array.isArray(docs)) return yield* fail("no document: expected a YAML or JSON configuration document")
      const problems: Array<{ path: string; message: string }> = []
      for (const [i, doc] of docs.entries()) {
        for (const error of doc.errors) {
          const where = error.linePos?.[0]
          const at = where === undefined ? `position ${error.pos[0]}` : `line ${where.line}, column ${where.col}`
          problems.push({ path: prefixed(source, ""), message: `not valid YAML at ${at}: ${yamlReason(error.code)}` })
        }
        if (doc.errors.length > 0) continue
        try {
          values.push(doc.toJS({ maxAliasCount: MAX_ALIASES }))
        } catch (error) {
          problems.push({
            path: prefixed(source, docs.length > 1 ? `(document ${i + 1})` : ""),
            message: `not a usable YAML document: ${error instanceof Error ? error.message.slice(0, 200) : "?"}`
          })
        }
      }
      if (problems.length > 0) return yield* Effect.fail(invalid(problems))
    }
    const parts = values.filter((value) => value !== null && value !== undefined)
    if (parts.length === 0) return yield* fail("no document: expected a YAML or JSON configuration document")
    const deep = parts.findIndex(tooDeep)
    if (deep !== -1) return yield* fail(`nested more than ${MAX_DEPTH} levels deep`)
    return parts.map((value, i) => ({
      source: parts.length === 1
        ? source
        : source === undefined
        ? `document ${i + 1}`
        : `${source} (document ${i + 1})`,
      value
    }))
  })

const parseJson = (text: string): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(text) }
  } catch {
    return undefined
  }
}

// The parser's codes, not its messages: those quote the text, which may be anything.
const yamlReason = (code: string): string => code.toLowerCase().replaceAll("_", " ")

// -----------------------------------------------------------------------------
// Decoding
// -----------------------------------------------------------------------------

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()
const decodeDocument = Schema.decodeUnknownEffect(Document, { errors: "all", onExcessProperty: "error" })

/** The known member names where each unknown field was found (keyed by its path). */
const knownFields = (root: SchemaIssue.Issue): Map<string, ReadonlyArray<string>> => {
  const found = new Map<string, ReadonlyArray<string>>()
  const walk = (node: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): void => {
    if (node._tag === "UnexpectedKey") {
      found.set(
        pathOf(path),
        SchemaAST.isObjects(node.ast) ? node.ast.propertySignatures.map((p) => String(p.name)) : []
      )
    } else if (node._tag === "Pointer") walk(node.issue, [...path, ...node.path])
    else if ("issues" in node) { for (const child of node.issues) walk(child, path) }
    else if ("issue" in node && node.issue !== undefined) walk(node.issue as SchemaIssue.Issue, path)
  }
  walk(root, [])
  return found
}

/** What a union of tagged alternatives (`kind`, `scheme`) accepts, read from its message. */
const discriminator = (message: string, value: unknown): { key: string; literals: Array<string> } | undefined => {
  if (!message.startsWith("Expected {") || value === null || typeof value !== "object") return undefined
  for (const key of ["kind", "scheme"]) {
    const literals = [...message.matchAll(new RegExp(`"${key}": ("[^"]*")`, "g"))].map((m) => m[1]!)
    if (literals.length > 0) return { key, literals }
  }
  return undefined
}

const decodePart = (part: Part): Effect.Effect<Document, ConfigurationInvalid> =>
  decodeDocument(part.value).pipe(Effect.mapError((error) => {
    const known = knownFields(error.issue)
    const seen = new Set<string>()
    const problems = formatIssues(error.issue).issues.flatMap((issue) => {
      let segments = (issue.path ?? []).map((s) => typeof s === "object" ? s.key : s)
      let message: string
      if (issue.message === "Expected no excess property") {
        const name = String(segments.at(-1) ?? "")
        message = `expected ${Validation.unknownFieldExpected(name, known.get(pathOf(segments)) ?? [])}`
      } else if (issue.message === "Missing key") {
        message = "missing: this field is required"
      } else {
        const value = segments.reduce<unknown>(
          (v, k) => v !== null && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k] : undefined,
          part.value
        )
        const union = discriminator(issue.message, value)
        if (union !== undefined) segments = [...segments, union.key]
        const given = shownAt(part.value, segments)
        const what = union === undefined
          ? issue.message.replace(/^Expected /, "expected ")
          : `expected one of ${union.literals.join(", ")}`
        message = given === undefined ? what : `got ${given}; ${what}`
      }
      const path = prefixed(part.source, pathOf(segments))
      const key = `${path}\n${message}`
      if (seen.has(key)) return []
      seen.add(key)
      return [{ path, message }]
    })
    return invalid(problems)
  }))

/** The one document the `parts` make, decoded and located; every problem of every part at once. */
export const decode = (parts: ReadonlyArray<Part>): Effect.Effect<Configuration, ConfigurationInvalid> =>
  Effect.gen(function*() {
    const results = yield* Effect.forEach(parts, (part) => Effect.result(decodePart(part)))
    const problems = results.flatMap((r) => r._tag === "Failure" ? r.failure.problems : [])
    if (problems.length > 0) return yield* Effect.fail(invalid(problems))
    const merged: Record<Section, Array<Located<unknown>>> = {
      secrets: [],
      connections: [],
      endpoints: [],
      virtualServers: [],
      clientTokens: []
    }
    results.forEach((result, i) => {
      if (result._tag === "Failure") return
      for (const section of SECTIONS) {
        for (const [index, value] of (result.success[section] ?? []).entries()) {
          merged[section].push({ value, at: prefixed(parts[i]!.source, `${section}[${index}]`) })
        }
      }
    })
    return merged as unknown as Configuration
  })

/** Parses and decodes one text. */
export const fromText = (text: string, source?: string): Effect.Effect<Configuration, ConfigurationInvalid> =>
  Effect.flatMap(parseText(text, source), decode)

// -----------------------------------------------------------------------------
// JSON Schema
// -----------------------------------------------------------------------------

/** Where the published JSON Schema is committed, relative to the repository root. */
export const SCHEMA_PATH = "docs/configuration.schema.json"

/** The JSON Schema (draft 2020-12) of the document, derived from {@link Document}. */
export const jsonSchema = (): Record<string, unknown> => {
  const generated = Schema.toJsonSchemaDocument(Document, { onExcessProperty: "error", generateDescriptions: true })
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: "urn:janus:configuration:v1",
    ...generated.schema,
    ...(Object.keys(generated.definitions).length === 0 ? {} : { $defs: generated.definitions })
  }
}
