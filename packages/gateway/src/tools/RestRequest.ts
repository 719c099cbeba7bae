/**
 * Turns a tools/call of a REST endpoint into the downstream HTTP request.
 *
 * **Rules**
 *
 * - Each argument goes where the endpoint's argument map says: `path`
 *   (substituted into `{name}` in the path template, percent-encoded, so an
 *   argument can never add a path segment or a query), `query` (arrays repeat
 *   the key, objects are sent as JSON), `header` (the argument's name is the
 *   header's name) or `body` (a JSON object of the body arguments; a single
 *   body argument named `body` is sent as the whole body).
 * - An argument the map does not name goes to the query for GET, HEAD,
 *   DELETE and OPTIONS and to the body otherwise, as most REST APIs expect.
 * - Only arguments the input schema declares are sent: its `properties`
 *   (also inside `allOf`/`anyOf`/`oneOf`/`if`/`then`/`else` and local
 *   `$ref`s) and `patternProperties`, or any argument when the schema
 *   explicitly allows more (`additionalProperties` other than false) or is
 *   free-form (no `properties` or `patternProperties` anywhere: it describes
 *   no argument, so there is nothing to hold the caller's against). Others
 *   are dropped, never forwarded.
 * - Refused with an `InvalidToolArguments` error that says which argument and
 *   why (arguments never override the secret the gateway injects nor the
 *   framing of the request, and a request never carries what the caller did
 *   not mean): a path parameter without a value; a header argument naming a
 *   header the gateway owns (authorization, host, content-length, hop-by-hop
 *   headers, cookies) or holding a character a header cannot carry (only
 *   tab, visible ASCII, space and Latin-1, as Node and undici accept); a
 *   lone surrogate in a path or query argument (a URL cannot carry it); a
 *   number too large to represent anywhere in a sent argument (`1e400`
 *   parses as Infinity, which would travel as `Infinity` in a URL and as
 *   `null` in JSON).
 *
 * @since 0.1.0
 */
import type { Endpoint } from "@janus/storage"
import { Predicate, Result, Schema } from "effect"
import { pathText } from "./RestValidation.ts"

/** The arguments of a call do not fit the endpoint. */
export class InvalidToolArguments extends Schema.TaggedError<InvalidToolArguments>()("InvalidToolArguments", {
  tool: Schema.String,
  message: Schema.String
}) {}

/**
 * What the egress client sends, relative to the connection's base URL. The
 * secret is added by the egress client, not here.
 */
export interface RestRequest {
  readonly method: Endpoint["method"]
  /** Begins with `/`; appended to the base URL's path. */
  readonly path: string
  readonly query: ReadonlyArray<readonly [string, string]>
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

/** Headers the gateway sets itself: no tool argument may name one. */
export const ownedHeaders: ReadonlySet<string> = new Set([
  "authorization",
  "proxy-authorization",
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "cookie",
  "set-cookie",
  "expect"
])

const bodyless = new Set(["GET", "HEAD", "DELETE", "OPTIONS"])

const scalar = (value: unknown): string =>
  typeof value === "string"
    ? value
    : typeof value === "object" && value !== null
    ? JSON.stringify(value)
    : String(value)

/**
 * A request plan precomputed per endpoint: the template split once, so each
 * call only substitutes values.
 */
export interface RestPlan {
  readonly endpoint: Endpoint
  readonly segments: ReadonlyArray<{ readonly literal: string } | { readonly param: string }>
  readonly defaultLocation: "query" | "body"
  /** Whether the input schema declares an argument of this name (only those are sent). */
  readonly declares: (name: string) => boolean
}

export const plan = (endpoint: Endpoint): RestPlan => {
  const segments: Array<{ literal: string } | { param: string }> = []
  const re = /\{([^{}]+)\}/g
  let last = 0
  for (let m = re.exec(endpoint.pathTemplate); m !== null; m = re.exec(endpoint.pathTemplate)) {
    if (m.index > last) segments.push({ literal: endpoint.pathTemplate.slice(last, m.index) })
    segments.push({ param: m[1]! })
    last = m.index + m[0].length
  }
  if (last < endpoint.pathTemplate.length) segments.push({ literal: endpoint.pathTemplate.slice(last) })
  return {
    endpoint,
    segments,
    defaultLocation: bodyless.has(endpoint.method) ? "query" : "body",
    declares: declaredArguments(endpoint.inputSchema)
  }
}

const composed = ["allOf", "anyOf", "oneOf"] as const
const conditional = ["if", "then", "else"] as const

/** The argument names `schema` declares, as a predicate (see the module rules). */
export const declaredArguments = (schema: Readonly<Record<string, unknown>>): (name: string) => boolean => {
  if (
    (schema.additionalProperties !== undefined && schema.additionalProperties !== false) ||
    (schema.unevaluatedProperties !== undefined && schema.unevaluatedProperties !== false)
  ) {
    return () => true
  }
  const names = new Set<string>()
  const patterns: Array<RegExp> = []
  const seen = new Set<unknown>()
  let describesArguments = false
  const visit = (node: unknown) => {
    if (!Predicate.isReadonlyObject(node) || seen.has(node)) return
    seen.add(node)
    if (node.properties !== undefined || node.patternProperties !== undefined) describesArguments = true
    if (Predicate.isReadonlyObject(node.properties)) {
      for (const name of Object.keys(node.properties)) {
        names.add(name)
      }
    }
    if (Predicate.isReadonlyObject(node.patternProperties)) {
      for (const pattern of Object.keys(node.patternProperties)) {
        try {
          patterns.push(new RegExp(pattern, "u"))
        } catch {
          // a pattern Ajv would not compile either: the tool's calls are refused before this matters
        }
      }
    }
    for (const key of composed) if (Array.isArray(node[key])) { for (const member of node[key]) visit(member) }
    for (const key of conditional) visit(node[key])
    if (typeof node.$ref === "string") visit(localRef(schema, node.$ref))
  }
  visit(schema)
  if (!describesArguments) return () => true
  return patterns.length === 0 ?
    (name) => names.has(name) :
    (name) => names.has(name) || patterns.some((pattern) => pattern.test(name))
}

/** The subschema a local `$ref` (`#/$defs/x`) points to in `root`. */
const localRef = (root: Readonly<Record<string, unknown>>, ref: string): unknown => {
  if (!ref.startsWith("#/")) return undefined
  let node: unknown = root
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~")
    if (!Predicate.isReadonlyObject(node)) return undefined
    node = node[key]
  }
  return node
}

/** Characters a header value cannot carry (what Node and undici refuse): not tab, visible ASCII, space or Latin-1. */
const notInHeader = /[^\t\x20-\x7e\x80-\xff]/

const characterNames: Readonly<Record<number, string>> = {
  0x00: "NUL",
  0x0a: "line feed",
  0x0d: "carriage return",
  0x7f: "DEL",
  0x2028: "line separator",
  0x2029: "paragraph separator"
}

/** `U+1F600`, `U+0000 (NUL)`, `U+D800 (a lone surrogate)`. */
const characterName = (codePoint: number): string => {
  const hex = `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`
  const name = codePoint >= 0xd800 && codePoint <= 0xdfff ? "a lone surrogate" : characterNames[codePoint]
  return name === undefined ? hex : `${hex} (${name})`
}

/** The first lone surrogate of a string that is not well-formed. */
const loneSurrogate = (text: string): number => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
      return c
    }
    if (c >= 0xdc00 && c <= 0xdfff) return c
  }
  return 0xfffd
}

const notInUrl = (name: string, text: string): string =>
  `${pathText("arguments", [name])} holds ${
    characterName(loneSurrogate(text))
  }, which a URL cannot carry; expected well-formed Unicode text`

const overflow = (name: string, below: ReadonlyArray<string | number>): string =>
  `${
    pathText("arguments", [name, ...below])
  } is a number too large to represent (it overflows to infinity, as 1e400 does); expected a finite number`

/** The path (below the argument) of the first non-finite number in `value`, or undefined. */
const nonFinite = (value: unknown): Array<string | number> | undefined => {
  if (typeof value === "number") return Number.isFinite(value) ? undefined : []
  if (typeof value !== "object" || value === null) return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nonFinite(value[i])
      if (found !== undefined) return [i, ...found]
    }
    return undefined
  }
  for (const key in value) {
    const found = nonFinite((value as Record<string, unknown>)[key])
    if (found !== undefined) return [key, ...found]
  }
  return undefined
}

export const build = (
  p: RestPlan,
  args: Readonly<Record<string, unknown>>
): Result.Result<RestRequest, InvalidToolArguments> => {
  const { endpoint } = p
  const fail = (message: string) => Result.fail(new InvalidToolArguments({ tool: endpoint.name, message }))
  let path = ""
  for (const segment of p.segments) {
    if ("literal" in segment) {
      path += segment.literal
      continue
    }
    const value = args[segment.param]
    if (value === undefined || value === null || value === "") {
      return fail(
        `${pathText("arguments", [segment.param])} is required: it is part of the path ${endpoint.pathTemplate}`
      )
    }
    const overflowing = nonFinite(value)
    if (overflowing !== undefined) return fail(overflow(segment.param, overflowing))
    const text = scalar(value)
    if (typeof value === "string" && !text.isWellFormed()) return fail(notInUrl(segment.param, text))
    path += encodeURIComponent(text)
  }
  if (!path.startsWith("/")) path = `/${path}`
  const query: Array<readonly [string, string]> = []
  const headers: Record<string, string> = {}
  const bodyArgs: Array<[string, unknown]> = []
  for (const name in args) {
    const value = args[name]
    if (value === undefined || !p.declares(name)) continue
    const overflowing = nonFinite(value)
    if (overflowing !== undefined) return fail(overflow(name, overflowing))
    const location = endpoint.arguments[name] ?? p.defaultLocation
    switch (location) {
      case "path":
        break
      case "query": {
        const items = Array.isArray(value) ? value : value === null ? [] : [value]
        for (const item of items) {
          const text = scalar(item)
          if (!text.isWellFormed()) return fail(notInUrl(name, text))
          query.push([name, text])
        }
        break
      }
      case "header": {
        const header = name.toLowerCase()
        if (ownedHeaders.has(header)) {
          return fail(`${pathText("arguments", [name])} names the header ${header}, which the gateway sets itself`)
        }
        const text = scalar(value)
        const bad = notInHeader.exec(text)
        if (bad !== null) {
          return fail(
            `${pathText("arguments", [name])} holds ${
              characterName(text.codePointAt(bad.index)!)
            }, which an HTTP header cannot carry; expected tabs, spaces, visible ASCII or Latin-1 characters`
          )
        }
        headers[header] = text
        break
      }
      case "body":
        bodyArgs.push([name, value])
        break
    }
  }
  let body: string | undefined
  if (bodyArgs.length > 0) {
    body = bodyArgs.length === 1 && bodyArgs[0]![0] === "body" && endpoint.arguments["body"] === "body"
      ? JSON.stringify(bodyArgs[0]![1])
      : JSON.stringify(Object.fromEntries(bodyArgs))
    headers["content-type"] = "application/json"
  }
  headers["accept"] ??= "application/json, text/plain;q=0.9, */*;q=0.5"
  return Result.succeed({ method: endpoint.method, path, query, headers, body })
}
