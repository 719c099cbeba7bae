import { assert, describe, it } from "@effect/vitest"
import { Endpoint } from "@janus/storage"
import { Result } from "effect"
import { build, plan } from "../src/tools/RestRequest.ts"
import { fromResponse, MAX_ERROR_BODY } from "../src/tools/RestResult.ts"

const now = new Date(0)
const endpoint = (method: Endpoint["method"], pathTemplate: string, args: Record<string, any> = {}) =>
  new Endpoint({
    id: "e1",
    connectionId: "c1",
    name: "get_pet",
    description: "",
    method,
    pathTemplate,
    arguments: args,
    inputSchema: { type: "object" },
    idempotent: true,
    version: 1,
    createdAt: now,
    updatedAt: now
  })

const ok = <A, E>(r: Result.Result<A, E>): A => {
  if (Result.isFailure(r)) throw new Error(String(r.failure))
  return r.success
}

describe("RestRequest", () => {
  it("places arguments in path, query, header and body as mapped", () => {
    const p = plan(
      endpoint("POST", "/pets/{petId}/notes", { petId: "path", verbose: "query", "X-Trace": "header", note: "body" })
    )
    const req = ok(build(p, { petId: "a b/c?d", verbose: true, "X-Trace": "t1", note: "hi", extra: 1 }))
    assert.strictEqual(req.path, "/pets/a%20b%2Fc%3Fd/notes")
    assert.deepStrictEqual(req.query, [["verbose", "true"]])
    assert.strictEqual(req.headers["x-trace"], "t1")
    assert.strictEqual(req.headers["content-type"], "application/json")
    // `extra` is unmapped: body for POST
    assert.deepStrictEqual(JSON.parse(req.body!), { note: "hi", extra: 1 })
  })

  it("sends unmapped arguments of a GET as query, arrays repeating the key", () => {
    const req = ok(build(plan(endpoint("GET", "/pets")), { tag: ["a", "b"], limit: 2 }))
    assert.deepStrictEqual(req.query, [["tag", "a"], ["tag", "b"], ["limit", "2"]])
    assert.isUndefined(req.body)
  })

  it("sends a lone `body` argument as the whole body", () => {
    const req = ok(
      build(plan(endpoint("PUT", "/x", { body: "body" })), { body: [1, 2] })
    )
    assert.strictEqual(req.body, "[1,2]")
  })

  it("refuses a missing path parameter, an owned header and a header with a line break", () => {
    const p = plan(
      endpoint("GET", "/pets/{id}", { id: "path", Authorization: "header", h: "header" })
    )
    const missing = build(p, {})
    assert.isTrue(Result.isFailure(missing))
    assert.include(Result.isFailure(missing) ? missing.failure.message : "", "\"id\" is required")
    const owned = build(p, { id: 1, Authorization: "Bearer x" })
    assert.include(Result.isFailure(owned) ? owned.failure.message : "", "gateway sets itself")
    const crlf = build(p, { id: 1, h: "a\r\nX-Injected: 1" })
    assert.include(Result.isFailure(crlf) ? crlf.failure.message : "", "line break")
  })
})

describe("RestResult", () => {
  it("gives JSON objects as structuredContent and keeps the text", () => {
    const r = fromResponse({ status: 200, contentType: "application/json; charset=utf-8", body: "{\"a\":1}" })
    assert.deepStrictEqual(r.structuredContent, { a: 1 })
    assert.strictEqual(r.content[0]!.text, "{\"a\":1}")
    assert.isUndefined(r.isError)
  })

  it("wraps non-object JSON and passes text through", () => {
    assert.deepStrictEqual(
      fromResponse({ status: 200, contentType: "application/problem+json", body: "[1]" }).structuredContent,
      {
        result: [1]
      }
    )
    const text = fromResponse({ status: 200, contentType: "text/plain", body: "hello" })
    assert.isUndefined(text.structuredContent)
    assert.strictEqual(text.content[0]!.text, "hello")
  })

  it("marks 4xx/5xx as errors with the status and a trimmed body", () => {
    const r = fromResponse({
      status: 503,
      statusText: "Service Unavailable",
      contentType: "text/html",
      body: "x".repeat(5_000)
    })
    assert.isTrue(r.isError)
    assert.isTrue(r.content[0]!.text.startsWith("HTTP 503 Service Unavailable: xxx"))
    assert.isBelow(r.content[0]!.text.length, MAX_ERROR_BODY + 100)
  })
})
