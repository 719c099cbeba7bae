/**
 * From an OpenAPI document to endpoints (one per operation), and the diff
 * against what a connection already has. Pure: no I/O.
 *
 * **Rules**
 *
 * - Operations: every `get put post delete options head patch` of every path
 *   (`trace` is skipped). Path-level parameters apply unless the operation
 *   redefines the same `name` + `in`.
 * - Names: the `operationId`, characters outside `[A-Za-z0-9_.-]` replaced by
 *   `_`, behind the optional `namePrefix`; without an operationId
 *   `<method>_<path>` (`get_pets_petId`). Names longer than 64 characters are
 *   cut and given a hash suffix; a repeated name gets `_2`, `_3`, ... .
 * - Input schema: an object whose properties are the path, query and header
 *   parameters (path ones always required) and the JSON request body. An
 *   object body whose property names do not collide with a parameter is
 *   spread into the arguments (each `"body"`); any other JSON body (array,
 *   scalar, composition, colliding names) is one `body` argument. The
 *   argument map says where each goes (see `tools/RestRequest.ts`).
 * - Skipped, with the reason: cookie parameters (a warning; the operation is
 *   kept), a required body that is not JSON, a path parameter whose name a
 *   path template cannot hold, a header parameter the gateway owns
 *   (`Authorization`, ...; a warning), two parameters with one name, and a
 *   schema pattern the gateway's linear-time engine (RE2) cannot run (a
 *   backreference, a lookaround: `SchemaPatterns` in storage; the reason
 *   names the pattern and where it is). The rest of the document imports.
 * - Description: `summary`, then `description`, at most 4096 characters.
 * - The base URL: the caller's, else the first `servers` entry with its
 *   variables at their defaults, resolved against the document's URL.
 *
 * @since 0.1.0
 */
import { type ArgumentLocation, type Endpoint, type HttpMethod, SchemaPatterns } from "@janus/storage"
import { Predicate, Result } from "effect"
import { createHash } from "node:crypto"
import { ownedHeaders } from "../tools/RestRequest.ts"
import { boundSchema, type OpenApiDocument, OpenApiError } from "./Document.ts"

export interface PlanOptions {
  /** Overrides the document's `servers`. */
  readonly baseUrl?: string | undefined
  /** Where the document came from, for relative `servers` URLs. */
  readonly documentUrl?: string | undefined
  /** Put in front of every endpoint name (e.g. `github_`), to keep APIs apart. */
  readonly namePrefix?: string | undefined
  /** Only operations carrying one of these tags. */
  readonly tags?: ReadonlyArray<string> | undefined
}

/** One endpoint an import would create, without its connection id. */
export interface PlannedEndpoint {
  readonly name: string
  readonly description: string
  readonly method: HttpMethod
  readonly pathTemplate: string
  readonly arguments: Readonly<Record<string, ArgumentLocation>>
  readonly inputSchema: Readonly<Record<string, unknown>>
  readonly operationId: string | undefined
}

export interface SkippedOperation {
  readonly method: string
  readonly path: string
  readonly reason: string
}

export interface ImportPlan {
  readonly title: string
  readonly openapi: string
  readonly baseUrl: string
  readonly endpoints: ReadonlyArray<PlannedEndpoint>
  readonly skipped: ReadonlyArray<SkippedOperation>
  readonly warnings: ReadonlyArray<string>
}

const methods = ["get", "put", "post", "delete", "options", "head", "patch"] as const

const paramNamePattern = /^[A-Za-z0-9_.-]{1,64}$/
const MAX_DESCRIPTION = 4096

const shortHash = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 8)

const fitName = (name: string, seed: string): string =>
  name.length <= 64 ? name : `${name.slice(0, 55)}_${shortHash(seed)}`

/** The endpoint name for an operation (before de-duplication). */
export const operationName = (
  prefix: string,
  method: string,
  path: string,
  operationId: string | undefined
): string => {
  const base = operationId !== undefined && operationId.trim() !== ""
    ? operationId.trim().replace(/[^A-Za-z0-9_.-]/g, "_")
    : `${method}_${path}`.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+/g, "_").replace(/^_+|_+$/g, "")
  return fitName(`${prefix}${base === "" ? method : base}`, `${method} ${path}`)
}

const jsonMediaType = (type: string) => {
  const essence = type.split(";")[0]!.trim().toLowerCase()
  return essence === "application/json" || essence.endsWith("+json") || essence === "*/*"
}

const describe = (operation: Readonly<Record<string, unknown>>): string => {
  const parts = [operation.summary, operation.description]
    .filter((p): p is string => typeof p === "string" && p.trim() !== "")
    .map((p) => p.trim())
  const unique = parts.length === 2 && parts[0] === parts[1] ? [parts[0]!] : parts
  let text = unique.join("\n\n")
  if (operation.deprecated === true) text = `(deprecated) ${text}`
  return text.length <= MAX_DESCRIPTION ? text : `${text.slice(0, MAX_DESCRIPTION - 1)}…`
}

const baseUrlOf = (
  document: Readonly<Record<string, unknown>>,
  options: PlanOptions
): Result.Result<string, OpenApiError> => {
  const fail = (message: string) => Result.fail(new OpenApiError({ message }))
  let raw = options.baseUrl
  if (raw === undefined) {
    const servers = Array.isArray(document.servers) ? document.servers : []
    const first = servers.find(Predicate.isReadonlyObject)
    if (first === undefined || typeof first.url !== "string") {
      return fail("the document has no servers entry; give the base URL of the API")
    }
    const variables = Predicate.isReadonlyObject(first.variables) ? first.variables : {}
    raw = first.url.replace(/\{([^{}]+)\}/g, (whole, name: string) => {
      const variable = variables[name]
      return Predicate.isReadonlyObject(variable) && typeof variable.default === "string" ? variable.default : whole
    })
  }
  let url: URL
  try {
    url = options.documentUrl === undefined ? new URL(raw) : new URL(raw, options.documentUrl)
  } catch {
    return fail(`the server URL ${JSON.stringify(raw)} is not absolute; give the base URL of the API`)
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return fail(`the server URL ${JSON.stringify(raw)} is not http(s); give the base URL of the API`)
  }
  const href = url.href
  return Result.succeed(href.endsWith("/") ? href.slice(0, -1) : href)
}

interface Parameter {
  readonly name: string
  readonly in: string
  readonly required: boolean
  readonly description: string | undefined
  readonly schema: unknown
  readonly deprecated: boolean
}

const readParameters = (list: unknown): ReadonlyArray<Parameter> =>
  (Array.isArray(list) ? list : []).filter(Predicate.isReadonlyObject).flatMap((p) => {
    if (typeof p.name !== "string" || typeof p.in !== "string") return []
    let schema = p.schema
    if (schema === undefined && Predicate.isReadonlyObject(p.content)) {
      const first = Object.values(p.content).find(Predicate.isReadonlyObject)
      schema = first?.schema
    }
    return [{
      name: p.name,
      in: p.in,
      required: p.required === true || p.in === "path",
      description: typeof p.description === "string" ? p.description : undefined,
      schema,
      deprecated: p.deprecated === true
    }]
  })

/** Endpoints for every operation of `doc`. */
export const plan = (doc: OpenApiDocument, options: PlanOptions = {}): Result.Result<ImportPlan, OpenApiError> => {
  const document = doc.document
  const base = baseUrlOf(document, options)
  if (Result.isFailure(base)) return Result.fail(base.failure)
  const prefix = options.namePrefix ?? ""
  const tags = options.tags === undefined ? undefined : new Set(options.tags)
  const endpoints: Array<PlannedEndpoint> = []
  const skipped: Array<SkippedOperation> = []
  const warnings: Array<string> = []
  const taken = new Set<string>()
  const paths = document.paths as Readonly<Record<string, unknown>>

  for (const [path, item] of Object.entries(paths)) {
    if (!Predicate.isReadonlyObject(item)) continue
    const pathParameters = readParameters(item.parameters)
    for (const method of methods) {
      const operation = item[method]
      if (!Predicate.isReadonlyObject(operation)) continue
      const upper = method.toUpperCase() as HttpMethod
      const skip = (reason: string) => skipped.push({ method: upper, path, reason })
      if (tags !== undefined) {
        const own = Array.isArray(operation.tags) ? operation.tags : []
        if (!own.some((t) => typeof t === "string" && tags.has(t))) continue
      }
      if (!path.startsWith("/")) {
        skip("the path does not start with /")
        continue
      }
      const own = readParameters(operation.parameters)
      const parameters = [
        ...pathParameters.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in)),
        ...own
      ]
      const properties: Record<string, unknown> = {}
      const required: Array<string> = []
      const args: Record<string, ArgumentLocation> = {}
      let problem: string | undefined
      const label = `${upper} ${path}`
      for (const parameter of parameters) {
        if (parameter.in === "cookie") {
          warnings.push(`${label}: cookie parameter ${parameter.name} is not supported and was left out`)
          continue
        }
        if (parameter.in !== "path" && parameter.in !== "query" && parameter.in !== "header") continue
        if (parameter.in === "header" && ownedHeaders.has(parameter.name.toLowerCase())) {
          warnings.push(`${label}: header ${parameter.name} is set by the gateway and was left out`)
          continue
        }
        if (parameter.in === "path" && !paramNamePattern.test(parameter.name)) {
          problem = `path parameter ${JSON.stringify(parameter.name)} has characters a path template cannot hold`
          break
        }
        if (args[parameter.name] !== undefined) {
          problem = `two parameters are named ${JSON.stringify(parameter.name)} (${
            args[parameter.name]
          } and ${parameter.in})`
          break
        }
        const schema = boundSchema(parameter.schema ?? {}, doc.version)
        if (parameter.description !== undefined && schema.description === undefined) {
          schema.description = parameter.description
        }
        if (parameter.deprecated) schema.deprecated = true
        properties[parameter.name] = schema
        args[parameter.name] = parameter.in
        if (parameter.required) required.push(parameter.name)
      }
      if (problem === undefined) {
        const placeholders = Array.from(path.matchAll(/\{([^{}]*)\}/g), (m) => m[1]!)
        const undeclared = placeholders.find((name) => args[name] !== "path")
        if (undeclared !== undefined) {
          if (!paramNamePattern.test(undeclared)) {
            problem = `path parameter ${JSON.stringify(undeclared)} has characters a path template cannot hold`
          } else {
            // Declared nowhere: a string, as the template needs one.
            properties[undeclared] = { type: "string" }
            args[undeclared] = "path"
            required.push(undeclared)
            warnings.push(`${label}: path parameter ${undeclared} is not declared; assumed a string`)
          }
        }
        for (const [name, location] of Object.entries(args)) {
          if (location === "path" && !placeholders.includes(name)) {
            delete args[name]
            delete properties[name]
            required.splice(required.indexOf(name), 1)
            warnings.push(`${label}: path parameter ${name} is not in the path and was left out`)
          }
        }
      }
      if (problem === undefined && Predicate.isReadonlyObject(operation.requestBody)) {
        const body = operation.requestBody
        const content = Predicate.isReadonlyObject(body.content) ? body.content : {}
        const json = Object.entries(content).find(([type]) => jsonMediaType(type))
        if (json === undefined) {
          if (body.required === true) {
            problem = `the request body is ${Object.keys(content).join(", ") || "not described"}, not JSON`
          } else if (Object.keys(content).length > 0) {
            warnings.push(`${label}: the optional non-JSON request body was left out`)
          }
        } else {
          const media = Predicate.isReadonlyObject(json[1]) ? json[1] : {}
          const schema = boundSchema(media.schema ?? {}, doc.version)
          const bodyRequired = body.required === true
          const bodyProps = Predicate.isReadonlyObject(schema.properties) ? schema.properties : undefined
          const isPlainObject = (schema.type === "object" || (schema.type === undefined && bodyProps !== undefined)) &&
            bodyProps !== undefined && Object.keys(bodyProps).length > 0 &&
            schema.allOf === undefined && schema.oneOf === undefined && schema.anyOf === undefined
          const collides = bodyProps !== undefined && Object.keys(bodyProps).some((name) => args[name] !== undefined)
          if (isPlainObject && !collides) {
            const inner = Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : []
            for (const [name, sub] of Object.entries(bodyProps!)) {
              properties[name] = sub
              args[name] = "body"
              if (bodyRequired && inner.includes(name)) required.push(name)
            }
          } else if (args.body !== undefined) {
            problem = "the request body needs the argument name \"body\", which a parameter already has"
          } else {
            if (typeof body.description === "string" && schema.description === undefined) {
              schema.description = body.description
            }
            properties.body = schema
            args.body = "body"
            if (bodyRequired) required.push("body")
          }
        }
      }
      const inputSchema = {
        type: "object",
        properties,
        ...(required.length > 0 ? { required: [...new Set(required)] } : {})
      }
      // a pattern RE2 cannot run would make the endpoint's write fail: this operation alone is left out
      problem ??= SchemaPatterns.firstProblem("inputSchema", inputSchema)
      if (problem !== undefined) {
        skip(problem)
        continue
      }
      const operationId = typeof operation.operationId === "string" ? operation.operationId : undefined
      let name = operationName(prefix, method, path, operationId)
      for (let n = 2; taken.has(name); n++) {
        name = fitName(`${operationName(prefix, method, path, operationId)}_${n}`, `${label} ${n}`)
      }
      taken.add(name)
      endpoints.push({
        name,
        description: describe(operation),
        method: upper,
        pathTemplate: path,
        arguments: args,
        inputSchema,
        operationId
      })
    }
  }
  return Result.succeed({
    title: doc.title,
    openapi: doc.openapi,
    baseUrl: base.success,
    endpoints,
    skipped,
    warnings
  })
}

// ---------------------------------------------------------------------------
// Diff
// ---------------------------------------------------------------------------

/** JSON with object keys sorted, so equal values compare equal whatever their key order (JSONB reorders). */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    Predicate.isReadonlyObject(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]))
      : v)

export interface ChangedEndpoint {
  readonly id: string
  readonly version: number
  readonly name: string
  /** The fields that differ: description, method, pathTemplate, arguments, inputSchema. */
  readonly fields: ReadonlyArray<string>
  readonly next: PlannedEndpoint
  /** Kept on update unless the method changed (then the method's default). */
  readonly idempotent: boolean | undefined
  /** Kept on update: a document's import does not set one (an operator declared it). */
  readonly outputSchema: Endpoint["outputSchema"]
}

export interface RemovedEndpoint {
  readonly id: string
  readonly name: string
  readonly method: string
  readonly pathTemplate: string
}

export interface ImportDiff {
  readonly added: ReadonlyArray<PlannedEndpoint>
  readonly changed: ReadonlyArray<ChangedEndpoint>
  readonly removed: ReadonlyArray<RemovedEndpoint>
  readonly unchanged: ReadonlyArray<string>
}

/** What applying `planned` to a connection that has `existing` does, matched by name. */
export const diff = (existing: ReadonlyArray<Endpoint>, planned: ReadonlyArray<PlannedEndpoint>): ImportDiff => {
  const current = new Map(existing.map((e) => [e.name, e]))
  const next = new Set(planned.map((p) => p.name))
  const added: Array<PlannedEndpoint> = []
  const changed: Array<ChangedEndpoint> = []
  const unchanged: Array<string> = []
  for (const p of planned) {
    const e = current.get(p.name)
    if (e === undefined) {
      added.push(p)
      continue
    }
    const fields: Array<string> = []
    if (e.description !== p.description) fields.push("description")
    if (e.method !== p.method) fields.push("method")
    if (e.pathTemplate !== p.pathTemplate) fields.push("pathTemplate")
    if (canonical(e.arguments) !== canonical(p.arguments)) fields.push("arguments")
    if (canonical(e.inputSchema) !== canonical(p.inputSchema)) fields.push("inputSchema")
    if (fields.length === 0) unchanged.push(p.name)
    else {
      changed.push({
        id: e.id,
        version: e.version,
        name: p.name,
        fields,
        next: p,
        idempotent: e.method === p.method ? e.idempotent : undefined,
        outputSchema: e.outputSchema
      })
    }
  }
  const removed = existing
    .filter((e) => !next.has(e.name))
    .map((e) => ({ id: e.id, name: e.name, method: e.method, pathTemplate: e.pathTemplate }))
  return { added, changed, removed, unchanged }
}
