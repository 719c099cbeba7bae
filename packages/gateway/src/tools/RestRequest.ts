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
 * - A path parameter without a value, or a header argument naming a header
 *   the gateway owns (authorization, host, content-length, hop-by-hop
 *   headers, cookies), is refused with an `InvalidToolArguments` error that
 *   says which argument and why: arguments never override the secret the
 *   gateway injects nor the framing of the request.
 *
 * @since 0.1.0
 */
import type { Endpoint } from "@janus/storage"
import { Result, Schema } from "effect"

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
    defaultLocation: bodyless.has(endpoint.method) ? "query" : "body"
  }
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
        `argument ${JSON.stringify(segment.param)} is required: it is part of the path ${endpoint.pathTemplate}`
      )
    }
    path += encodeURIComponent(scalar(value))
  }
  if (!path.startsWith("/")) path = `/${path}`
  const query: Array<readonly [string, string]> = []
  const headers: Record<string, string> = {}
  const bodyArgs: Array<[string, unknown]> = []
  for (const name in args) {
    const value = args[name]
    if (value === undefined) continue
    const location = endpoint.arguments[name] ?? p.defaultLocation
    switch (location) {
      case "path":
        break
      case "query":
        if (Array.isArray(value)) { for (const item of value) query.push([name, scalar(item)]) }
        else if (value !== null) query.push([name, scalar(value)])
        break
      case "header": {
        const header = name.toLowerCase()
        if (ownedHeaders.has(header)) {
          return fail(`argument ${JSON.stringify(name)} names the header ${header}, which the gateway sets itself`)
        }
        const text = scalar(value)
        if (/[\r\n\0]/.test(text)) {
          return fail(`argument ${JSON.stringify(name)} contains a line break; a header value cannot`)
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
