import { assert, describe, it } from "@effect/vitest"
import { Endpoint } from "@janus/storage"
import { Effect, Result } from "effect"
import { build, plan } from "../src/tools/RestRequest.ts"
import { conform, fromResponse, MAX_ERROR_BODY } from "../src/tools/RestResult.ts"
import * as RestValidation from "../src/tools/RestValidation.ts"

const now = new Date(0)
/** An endpoint whose input schema declares `declared` (default: the mapped arguments), untyped. */
const endpoint = (
  method: Endpoint["method"],
  pathTemplate: string,
  args: Record<string, any> = {},
  declared: ReadonlyArray<string> = Object.keys(args),
  schema: Record<string, unknown> = {}
) =>
  new Endpoint({
    id: "e1",
    connectionId: "c1",
    name: "get_pet",
    description: "",
    method,
    pathTemplate,
    arguments: args,
    inputSchema: { type: "object", properties: Object.fromEntries(declared.map((name) => [name, {}])), ...schema },
    idempotent: true,
    version: 1,
    createdAt: now,
    updatedAt: now
  })

const ok = <A, E>(r: Result.Result<A, E>): A => {
  if (Result.isFailure(r)) throw new Error(String(r.failure))
  return r.success
}

const refusal = <A>(r: Result.Result<A, { readonly message: string }>): string => {
  if (Result.isSuccess(r)) throw new Error(`expected a refusal, got ${JSON.stringify(r.success)}`)
  return r.failure.message
}

describe("RestRequest", () => {
  it("places arguments in path, query, header and body as mapped", () => {
    const p = plan(
      endpoint("POST", "/pets/{petId}/notes", { petId: "path", verbose: "query", "X-Trace": "header", note: "body" }, [
        "petId",
        "verbose",
        "X-Trace",
        "note",
        "extra"
      ])
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
    const req = ok(build(plan(endpoint("GET", "/pets", {}, ["tag", "limit"])), { tag: ["a", "b"], limit: 2 }))
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
    assert.include(refusal(missing), "arguments.id is required")
    const owned = build(p, { id: 1, Authorization: "Bearer x" })
    assert.include(refusal(owned), "gateway sets itself")
    const crlf = build(p, { id: 1, h: "a\r\nX-Injected: 1" })
    assert.include(refusal(crlf), "arguments.h holds U+000D (carriage return), which an HTTP header cannot carry")
  })

  it("names each character a header cannot carry; tab, space and Latin-1 pass as Node sends them", () => {
    const p = plan(endpoint("GET", "/pets", { "x-note": "header" }))
    const named = (value: string) => refusal(build(p, { "x-note": value }))
    assert.include(named("a\u0000b"), "arguments[\"x-note\"] holds U+0000 (NUL)")
    assert.include(named("\u{1F600}"), "holds U+1F600, which an HTTP header cannot carry")
    assert.include(named("a\u2028"), "holds U+2028 (line separator)")
    assert.include(named("\u007f"), "holds U+007F (DEL)")
    assert.include(named("\ud800"), "holds U+D800 (a lone surrogate)")
    assert.include(named("\n"), "holds U+000A (line feed)")
    assert.strictEqual(ok(build(p, { "x-note": "a\tb c é" })).headers["x-note"], "a\tb c é")
  })

  it("never sends an argument the schema does not declare", () => {
    const post = plan(endpoint("POST", "/users", { name: "body" }))
    assert.strictEqual(ok(build(post, { name: "a", role: "admin", isAdmin: true })).body, "{\"name\":\"a\"}")
    const get = plan(endpoint("GET", "/users", {}, ["q"]))
    assert.deepStrictEqual(ok(build(get, { q: "x", admin: "1" })).query, [["q", "x"]])
    // declared through composition, a local $ref or a pattern; or extras allowed explicitly
    const composed = plan(endpoint("POST", "/u", {}, [], {
      allOf: [{ properties: { a: {} } }, { $ref: "#/$defs/more" }],
      $defs: { more: { properties: { b: {} } } },
      patternProperties: { "^x-": {} }
    }))
    assert.deepStrictEqual(JSON.parse(ok(build(composed, { a: 1, b: 2, "x-c": 3, d: 4 })).body!), {
      a: 1,
      b: 2,
      "x-c": 3
    })
    const open = plan(endpoint("POST", "/u", {}, [], { additionalProperties: true }))
    assert.deepStrictEqual(JSON.parse(ok(build(open, { any: 1 })).body!), { any: 1 })
    const closed = plan(endpoint("POST", "/u", {}, []))
    assert.isUndefined(ok(build(closed, { any: 1 })).body)
    // a free-form schema (`{type:"object"}`, nothing declared anywhere) describes no argument to hold extras against
    const freeForm = plan(new Endpoint({ ...endpoint("POST", "/u"), inputSchema: { type: "object" } }))
    assert.deepStrictEqual(JSON.parse(ok(build(freeForm, { any: 1 })).body!), { any: 1 })
  })

  it("refuses a number too large to represent anywhere in an argument, and a lone surrogate in a URL", () => {
    const p = plan(endpoint("POST", "/pets/{id}", { id: "path", q: "query", note: "body" }))
    assert.include(
      refusal(build(p, { id: Infinity })),
      "arguments.id is a number too large to represent (it overflows to infinity, as 1e400 does); expected a finite number"
    )
    assert.include(refusal(build(p, { id: 1, note: { deep: [1, -Infinity] } })), "arguments.note.deep[1] is a number")
    assert.include(refusal(build(p, { id: 1, q: [Infinity] })), "arguments.q[0] is a number too large")
    assert.include(refusal(build(p, { id: "a\udc00" })), "arguments.id holds U+DC00 (a lone surrogate), which a URL")
    assert.include(refusal(build(p, { id: 1, q: ["ok", "\ud83d"] })), "arguments.q holds U+D83D (a lone surrogate)")
    // a well-formed pair is fine; in a JSON body a lone surrogate is escaped, which JSON allows
    assert.strictEqual(ok(build(p, { id: "\u{1F600}" })).path, "/pets/%F0%9F%98%80")
    assert.strictEqual(ok(build(p, { id: 1, note: "\ud800" })).body, "{\"note\":\"\\ud800\"}")
  })
})

describe("RestValidation", () => {
  const versioned = (version: number, schema: Record<string, unknown>, outputSchema?: Record<string, unknown>) =>
    new Endpoint({
      ...endpoint("GET", "/"),
      version,
      inputSchema: schema,
      ...(outputSchema === undefined ? {} : { outputSchema })
    })

  it.effect("compiles once per tool version, and forgets versions that left the configuration", () =>
    Effect.gen(function*() {
      const validation = RestValidation.make()
      const v1 = versioned(1, { type: "object", properties: { n: { type: "integer" } } })
      assert.isUndefined(validation.cached(v1))
      const first = yield* validation.compile(v1)
      assert.strictEqual(yield* validation.compile(v1), first, "the same compiled validators")
      // the same version read again (a new configuration snapshot) finds them without compiling
      assert.strictEqual(validation.cached(new Endpoint({ ...v1 })), first)
      const v2 = versioned(2, { type: "object", properties: { n: { type: "string" } } })
      const second = yield* validation.compile(v2)
      assert.notStrictEqual(second, first)
      assert.isUndefined(first.input({ n: 1 }))
      assert.include(second.input({ n: 1 })!, "arguments.n must be string; got the number 1")
      validation.retain([v2])
      assert.isUndefined(validation.cached(v1))
      assert.strictEqual(validation.cached(v2), second)
    }))

  it.effect("two tools may declare the same $id; an unsupported $schema makes the tool unusable, with the reason", () =>
    Effect.gen(function*() {
      const validation = RestValidation.make()
      const a = new Endpoint({ ...versioned(1, { $id: "https://x/s", type: "object", required: ["a"] }), id: "a" })
      const b = new Endpoint({ ...versioned(1, { $id: "https://x/s", type: "object", required: ["b"] }), id: "b" })
      assert.include((yield* validation.compile(a)).input({})!, "arguments.a is required")
      assert.include((yield* validation.compile(b)).input({})!, "arguments.b is required")
      const odd = versioned(3, { $schema: "http://json-schema.org/draft-04/schema#", type: "object" })
      const unusable = yield* Effect.flip(validation.compile(odd))
      assert.strictEqual(unusable.field, "inputSchema")
      assert.include(unusable.reason, "unsupported $schema")
      assert.strictEqual(yield* Effect.flip(validation.compile(odd)), unusable, "remembered, not compiled again")
      const broken = versioned(4, { type: "object", properties: { a: { $ref: "#/$defs/missing" } } })
      const unresolved = yield* Effect.flip(validation.compile(broken))
      assert.include(unresolved.reason, "can't resolve reference")
      assert.strictEqual(yield* Effect.flip(validation.compile(broken)), unresolved)
    }))

  it.effect("names at most MAX_REPORTED violations, and never echoes a credential-like field", () =>
    Effect.gen(function*() {
      const validation = RestValidation.make()
      const properties = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`p${i}`, { type: "integer" }]))
      const many = yield* validation.compile(versioned(1, { type: "object", properties }))
      const text = many.input(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`p${i}`, "x"])))!
      assert.strictEqual(text.split("; got").length - 1, RestValidation.MAX_REPORTED)
      assert.include(text, "and more (12 problems in all)")
      const secret = yield* validation.compile(
        versioned(2, { type: "object", properties: { apiKey: { type: "integer" } } })
      )
      const hidden = secret.input({ apiKey: "sk-live-123" })!
      assert.notInclude(hidden, "sk-live-123")
      assert.include(hidden, "arguments.apiKey must be integer; got a value not shown")
    }))

  it.effect("an output schema: a conforming result passes, anything else is an error result", () =>
    Effect.gen(function*() {
      const validation = RestValidation.make()
      const typed = yield* validation.compile(
        versioned(1, { type: "object" }, { type: "object", properties: { id: { type: "string" } }, required: ["id"] })
      )
      const check = typed.output!
      const good = fromResponse({ status: 200, contentType: "application/json", body: `{"id":"1"}` })
      assert.strictEqual(conform("t", good, "application/json", check), good)
      const bad = conform(
        "t",
        fromResponse({ status: 200, contentType: "application/json", body: `{"id":1}` }),
        "x",
        check
      )
      assert.isTrue(bad.isError)
      assert.isUndefined(bad.structuredContent)
      assert.include(bad.content[0]!.text, "structuredContent.id must be string; got the number 1")
      const text = conform(
        "t",
        fromResponse({ status: 200, contentType: "text/plain", body: "hi" }),
        "text/plain",
        check
      )
      assert.include(text.content[0]!.text, "no structured content (a text/plain body, not JSON)")
      // a downstream error stays what it is
      const failed = fromResponse({ status: 503, contentType: "application/json", body: "{}" })
      assert.strictEqual(conform("t", failed, "application/json", check), failed)
    }))
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
