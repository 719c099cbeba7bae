import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken, call, client, expectStatus, fieldPaths, restConnection } from "./support.ts"
import * as Support from "./support.ts"

layer(Support.layer(), Support.suiteOptions)("admin API: request bodies", (it) => {
  it.effect("malformed JSON is 400 with a position, never a quote of the body", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      for (const text of [`{"kind": "rest", "name": "x",`, `{'single': 1}`, `{"a": 01}`, `not json at all`]) {
        const reply = expectStatus(yield* c.call("POST", "/api/v1/connections", { text }), 400, "malformed_json")
        assert.notInclude(reply.text, "kind")
        assert.notInclude(reply.text, "single")
        assert.match(reply.body.error.message, /not valid JSON/)
      }
      expectStatus(yield* c.call("POST", "/api/v1/connections", { text: "" }), 400, "missing_body")
      for (const text of [`[1, 2]`, `"text"`, `42`, `null`]) {
        const reply = expectStatus(yield* c.call("POST", "/api/v1/connections", { text }), 400, "invalid_request")
        assert.deepStrictEqual(fieldPaths(reply), [""])
      }
    }))

  it.effect("a non-JSON content type on a write is 415", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const body = JSON.stringify(restConnection("x"))
      for (
        const contentType of ["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1"]
      ) {
        expectStatus(
          yield* c.call("POST", "/api/v1/connections", { text: body, contentType }),
          415,
          "unsupported_media_type"
        )
      }
      // JSON types are accepted
      expectStatus(
        yield* c.call("POST", "/api/v1/connections", {
          text: JSON.stringify(restConnection("json-charset")),
          contentType: "application/json; charset=utf-8"
        }),
        201
      )
      expectStatus(
        yield* c.call("POST", "/api/v1/connections", {
          text: JSON.stringify(restConnection("vendor-json")),
          contentType: "application/vnd.janus+json"
        }),
        201
      )
    }))

  it.effect("a body over 1 MiB is 413, with or without Content-Length", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const huge = JSON.stringify(restConnection("huge", { description: "x".repeat(2 * 1024 * 1024) }))
      expectStatus(yield* c.call("POST", "/api/v1/connections", { text: huge }), 413, "payload_too_large")
      expectStatus(
        yield* c.call("PUT", "/api/v1/secrets/big", { streamBytes: 3 * 1024 * 1024 }),
        413,
        "payload_too_large"
      )
      // the server is fine afterwards
      expectStatus(yield* c.get("/api/v1/connections"), 200)
    }))

  it.effect("deep nesting, NUL, lone surrogates and 1e400 are 400 naming the field (never a 500)", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const deep = "[".repeat(100_000) + "]".repeat(100_000)
      expectStatus(
        yield* c.call("POST", "/api/v1/connections", { text: `{"kind":"rest","name":"d","x":${deep}}` }),
        400,
        "too_deeply_nested"
      )
      const nul = expectStatus(
        yield* c.post("/api/v1/connections", restConnection("n", { description: "a\u0000b" })),
        400,
        "invalid_request"
      )
      assert.deepStrictEqual(fieldPaths(nul), ["description"])
      const surrogate = expectStatus(
        yield* c.call("POST", "/api/v1/connections", {
          text: `{"kind":"rest","name":"s","baseUrl":"https://x.example","egressAllowList":["ok","\\ud800"]}`
        }),
        400,
        "invalid_request"
      )
      assert.deepStrictEqual(fieldPaths(surrogate), ["egressAllowList.1"])
      const key = expectStatus(
        yield* c.call("POST", "/api/v1/endpoints", { text: `{"inputSchema":{"\\u0000":1}}` }),
        400,
        "invalid_request"
      )
      assert.deepStrictEqual(fieldPaths(key), ["inputSchema.?"])
      // 1e400 is no number a field can hold: named as such, not as the "null" JSON.stringify makes of Infinity
      const huge = expectStatus(
        yield* c.call("POST", "/api/v1/connections", {
          text:
            `{"kind":"rest","name":"h","baseUrl":"https://x.example","timeoutMs":1e400,"retry":{"maxAttempts":-1e400}}`
        }),
        400,
        "invalid_request"
      )
      assert.deepStrictEqual(fieldPaths(huge), ["timeoutMs", "retry.maxAttempts"])
      assert.include(huge.text, "too large to represent")
      assert.notInclude(huge.text, "got null")
    }))

  it.effect(
    "a value Postgres cannot store is refused naming the field, the value (escaped) and what is expected; " +
      "nothing changes and a secret is never echoed",
    () =>
      Effect.gen(function*() {
        const c = client(yield* adminToken())
        const nul = expectStatus(
          yield* c.post("/api/v1/connections", restConnection("nul-name", { description: "bad\u0000value" })),
          400,
          "invalid_request"
        )
        const [field] = nul.body.error.fields
        assert.strictEqual(field.path, "description")
        assert.include(field.message, String.raw`"bad\u0000value"`)
        assert.include(field.message, "U+0000")
        assert.include(nul.body.error.message, "description")
        const lone = expectStatus(
          yield* c.call("POST", "/api/v1/client-tokens", { text: `{"name":"t","allowedTools":["ok","x\\udc00"]}` }),
          400,
          "invalid_request"
        )
        assert.deepStrictEqual(fieldPaths(lone), ["allowedTools.1"])
        assert.include(lone.body.error.fields[0].message, String.raw`"x\udc00"`)
        const list = expectStatus(yield* c.get("/api/v1/connections?limit=500"), 200)
        assert.isFalse(list.body.items.some((i: { name: string }) => i.name === "nul-name"), "nothing written")

        // never echoed: a secret's value, or a field named like a credential
        const secret = expectStatus(yield* c.put("/api/v1/secrets/nul-secret", { value: "hunter2\u0000" }), 400)
        assert.deepStrictEqual(fieldPaths(secret), ["value"])
        assert.notInclude(secret.text, "hunter2")
        const auth = expectStatus(
          yield* c.post(
            "/api/v1/connections",
            restConnection("nul-auth", { auth: { scheme: "bearer", secret: "tok3n\u0000" } })
          ),
          400
        )
        assert.deepStrictEqual(fieldPaths(auth), ["auth.secret"])
        assert.notInclude(auth.text, "tok3n")
      })
  )
})

layer(Support.layer(), Support.suiteOptions)("admin API: routing and headers", (it) => {
  it.effect("unknown routes are 404, wrong methods 405 with Allow; every response is no-store with a request id", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const notFound = expectStatus(yield* c.get("/api/v1/widgets"), 404, "route_not_found")
      expectStatus(yield* c.get("/api/v1"), 404, "route_not_found")
      const wrong = expectStatus(yield* c.call("DELETE", "/api/v1/connections"), 405, "method_not_allowed")
      assert.strictEqual(wrong.headers.allow, "GET, POST")
      const replies = [
        notFound,
        wrong,
        yield* c.get("/api/v1/connections"),
        yield* c.post("/api/v1/connections", restConnection("hdr")),
        yield* c.post("/api/v1/connections", {}),
        yield* call("GET", "/api/v1/secrets")
      ]
      const ids = new Set<string>()
      for (const reply of replies) {
        assert.strictEqual(reply.headers["cache-control"], "no-store", reply.text)
        assert.strictEqual(reply.headers["content-type"], "application/json")
        ids.add(reply.headers["x-request-id"]!)
      }
      assert.strictEqual(ids.size, replies.length)
    }))

  it.effect("pagination: limit, cursor, the last page, and bad parameters", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      // created out of order; listed by name
      const names = Array.from({ length: 7 }, (_, i) => `page-${String.fromCharCode(103 - i)}`)
      for (const name of names) expectStatus(yield* c.put(`/api/v1/secrets/${name}`, { value: "v" }), 201)
      const sorted = [...names].sort()

      const seen: Array<string> = []
      let cursor: string | null = null
      let pages = 0
      do {
        const query: string = cursor === null ? "?limit=3" : `?limit=3&cursor=${cursor}`
        const reply = expectStatus(yield* c.get(`/api/v1/secrets${query}`), 200)
        assert.isAtMost(reply.body.items.length, 3)
        seen.push(...reply.body.items.map((s: { name: string }) => s.name))
        cursor = reply.body.nextCursor
        pages++
      } while (cursor !== null)
      assert.deepStrictEqual(seen, sorted)
      assert.strictEqual(pages, 3)

      // exactly one page: no cursor
      const exact = (yield* c.get("/api/v1/secrets?limit=7")).body
      assert.strictEqual(exact.items.length, 7)
      assert.isNull(exact.nextCursor)
      const all = (yield* c.get("/api/v1/secrets")).body
      assert.strictEqual(all.items.length, 7)
      assert.isNull(all.nextCursor)

      // a cursor stays valid when its item is deleted meanwhile
      const first = (yield* c.get("/api/v1/secrets?limit=2")).body
      expectStatus(yield* c.del(`/api/v1/secrets/${first.items[1].name}`), 204)
      const next = (yield* c.get(`/api/v1/secrets?limit=2&cursor=${first.nextCursor}`)).body
      assert.deepStrictEqual(next.items.map((s: { name: string }) => s.name), sorted.slice(2, 4))

      for (const query of ["limit=0", "limit=501", "limit=abc", "limit=1.5", "limit=-1", "limit=1&limit=2"]) {
        const reply = expectStatus(yield* c.get(`/api/v1/secrets?${query}`), 400, "invalid_request")
        assert.deepStrictEqual(fieldPaths(reply), ["limit"], query)
      }
      expectStatus(yield* c.get("/api/v1/secrets?limit=500"), 200)
      for (const cursor of ["garbage!", "bm90IGpzb24", Buffer.from("[1,2]").toString("base64url")]) {
        const reply = expectStatus(yield* c.get(`/api/v1/secrets?cursor=${cursor}`), 400, "invalid_request")
        assert.deepStrictEqual(fieldPaths(reply), ["cursor"])
      }
      // every list is paginated
      for (const path of ["connections", "endpoints", "virtual-servers", "client-tokens", "admin-tokens", "secrets"]) {
        const reply = expectStatus(yield* c.get(`/api/v1/${path}?limit=1`), 200)
        assert.deepStrictEqual(Object.keys(reply.body).sort(), ["items", "nextCursor"])
        expectStatus(yield* c.get(`/api/v1/${path}?limit=0`), 400)
      }
    }))
})
