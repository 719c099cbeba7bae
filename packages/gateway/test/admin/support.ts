/**
 * Test support for the admin API: the whole gateway (`GatewayTesting.layer`'s
 * composition: test server on loopback, in-memory PGlite, configuration) with
 * `AdminApiRoutes` added, and request helpers.
 */
import { assert } from "@effect/vitest"
import { AdminTokens } from "@janus/storage"
import { Effect, Layer, Redacted, Stream } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import type { JanusSettings } from "../../src/config/JanusConfig.ts"
import * as GatewayTesting from "../../src/testing.ts"
import type { TestGateway } from "../../src/testing.ts"

/**
 * The whole gateway (`GatewayTesting.layer`: test server on loopback,
 * in-memory PGlite, default configuration, the admin routes among the
 * others). `extra` is provided under the gateway's services (e.g. the OAuth
 * layer with a test issuer); `config` overrides settings.
 */
export const layer = <E = never>(
  extra?: Layer.Layer<any, E, never>,
  config?: Partial<JanusSettings>
): Layer.Layer<TestGateway, unknown> =>
  GatewayTesting.layer({ ...(extra === undefined ? {} : { extra }), ...(config === undefined ? {} : { config }) })

/**
 * Options of every admin suite: the server runs on the real clock (no
 * TestClock), as in production, since storage and the verifier read it.
 */
export const suiteOptions = { timeout: 60_000, excludeTestServices: true } as const

/** A fresh admin token's plaintext. */
export const adminToken = (name = "test admin") =>
  Effect.gen(function*() {
    const tokens = yield* AdminTokens
    const created = yield* tokens.create({ name })
    return Redacted.value(created.plaintext)
  })

export interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
  /** The parsed body (`undefined` when empty). */
  readonly body: any
}

export interface Options {
  readonly token?: string | undefined
  /** A JSON value to send as `application/json`. */
  readonly json?: unknown
  /** A raw body (with `contentType`). */
  readonly text?: string
  readonly contentType?: string
  readonly headers?: Record<string, string>
  /** A chunked body of this many bytes of JSON-ish text (no Content-Length). */
  readonly streamBytes?: number
}

/** Sends one request and reads the whole reply. */
export const call = (method: string, path: string, options: Options = {}) =>
  Effect.gen(function*() {
    let request = HttpClientRequest.make(method as "GET")(path)
    if (options.token !== undefined) request = HttpClientRequest.bearerToken(request, options.token)
    if (options.json !== undefined) request = HttpClientRequest.bodyJsonUnsafe(request, options.json)
    if (options.text !== undefined) {
      request = HttpClientRequest.bodyText(request, options.text, options.contentType ?? "application/json")
    }
    if (options.streamBytes !== undefined) {
      const chunk = new TextEncoder().encode(" ".repeat(64 * 1024))
      const chunks = Math.ceil(options.streamBytes / chunk.length)
      request = HttpClientRequest.bodyStream(
        request,
        Stream.fromIterable(Array.from({ length: chunks }, () => chunk)),
        { contentType: "application/json" }
      )
    }
    if (options.contentType !== undefined && options.text === undefined) {
      request = HttpClientRequest.setHeader(request, "content-type", options.contentType)
    }
    if (options.headers !== undefined) request = HttpClientRequest.setHeaders(request, options.headers)
    const response = yield* HttpClient.execute(request)
    const text = yield* response.text
    let body: unknown = undefined
    if (text !== "") {
      try {
        body = JSON.parse(text)
      } catch {
        body = text
      }
    }
    return { status: response.status, headers: response.headers, text, body } as Reply
  })

/** Asserts the status, and for errors the error code; returns the reply. */
export const expectStatus = (reply: Reply, status: number, code?: string): Reply => {
  assert.strictEqual(reply.status, status, `expected ${status}, got ${reply.status}: ${reply.text}`)
  if (code !== undefined) assert.strictEqual(reply.body?.error?.code, code, reply.text)
  return reply
}

/** The field paths of an error reply. */
export const fieldPaths = (reply: Reply): Array<string> =>
  (reply.body?.error?.fields ?? []).map((f: { path: string }) => f.path)

/** A client bound to one admin token. */
export const client = (token: string) => ({
  get: (path: string, options: Options = {}) => call("GET", path, { token, ...options }),
  post: (path: string, json?: unknown, options: Options = {}) =>
    call("POST", path, { token, ...(json === undefined ? {} : { json }), ...options }),
  put: (path: string, json: unknown, options: Options = {}) => call("PUT", path, { token, json, ...options }),
  patch: (path: string, json: unknown, options: Options = {}) =>
    call("PATCH", path, { token, json, contentType: "application/merge-patch+json", ...options }),
  del: (path: string, options: Options = {}) => call("DELETE", path, { token, ...options }),
  call: (method: string, path: string, options: Options = {}) => call(method, path, { token, ...options })
})

export const restConnection = (name: string, extra: Record<string, unknown> = {}) => ({
  kind: "rest",
  name,
  baseUrl: "https://api.example.com",
  ...extra
})

export const endpointInput = (connectionId: string, name: string, extra: Record<string, unknown> = {}) => ({
  connectionId,
  name,
  method: "GET",
  pathTemplate: "/users/{id}",
  arguments: { id: "path" },
  inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  ...extra
})
