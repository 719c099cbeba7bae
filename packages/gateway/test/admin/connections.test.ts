import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken, client, expectStatus, fieldPaths, restConnection } from "./support.ts"
import * as Support from "./support.ts"

layer(Support.layer(), Support.suiteOptions)("/api/v1/connections", (it) => {
  const api = Effect.map(adminToken(), client)

  it.effect("create, get, list, replace, patch and delete; ETag tracks the version", () =>
    Effect.gen(function*() {
      const c = yield* api
      const created = expectStatus(
        yield* c.post("/api/v1/connections", restConnection("billing", { description: "Billing API" })),
        201
      )
      const id: string = created.body.id
      assert.strictEqual(created.headers.location, `/api/v1/connections/${id}`)
      assert.strictEqual(created.headers.etag, `"1"`)
      assert.strictEqual(created.headers["cache-control"], "no-store")
      assert.match(created.headers["x-request-id"]!, /^[0-9a-f-]{36}$/)
      assert.deepInclude(created.body, {
        kind: "rest",
        name: "billing",
        description: "Billing API",
        baseUrl: "https://api.example.com",
        auth: { scheme: "none" },
        timeoutMs: 30000,
        retry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 2000 },
        breaker: { consecutiveFailures: 5, openMs: 30000 },
        egressAllowList: null,
        version: 1
      })

      const got = expectStatus(yield* c.get(`/api/v1/connections/${id}`), 200)
      assert.deepStrictEqual(got.body, created.body)
      assert.strictEqual(got.headers.etag, `"1"`)

      const mcp = expectStatus(
        yield* c.post("/api/v1/connections", { kind: "mcp", name: "upstream", url: "https://mcp.example.com/mcp" }),
        201
      )
      assert.strictEqual(mcp.body.transport, "streamable-http")
      assert.isNull(mcp.body.toolPrefix)
      const prefixed = expectStatus(
        yield* c.put(`/api/v1/connections/${mcp.body.id}`, { ...mcp.body, toolPrefix: "" }, {
          headers: { "if-match": `"1"` }
        }),
        200
      )
      // "" is no prefix at all, kept apart from null (the default `<name>/`)
      assert.strictEqual(prefixed.body.toolPrefix, "")
      const list = expectStatus(yield* c.get("/api/v1/connections"), 200)
      assert.deepStrictEqual(list.body.items.map((i: { name: string }) => i.name), ["billing", "upstream"])
      assert.isNull(list.body.nextCursor)

      // PUT the representation back, changed: read-only members are ignored, If-Match names the version.
      // The secret it names must be set: before that, the write is refused at auth.secret.
      const unset = expectStatus(
        yield* c.put(`/api/v1/connections/${id}`, {
          ...got.body,
          auth: { scheme: "bearer", secret: "billing-key" }
        }, { headers: { "if-match": got.headers.etag! } }),
        422,
        "unknown_reference"
      )
      assert.deepStrictEqual(fieldPaths(unset), ["auth.secret"])
      assert.include(unset.body.error.message, "\"billing-key\"")
      expectStatus(yield* c.put("/api/v1/secrets/billing-key", { value: "b1lling" }), 201)
      const replaced = expectStatus(
        yield* c.put(`/api/v1/connections/${id}`, {
          ...got.body,
          timeoutMs: 5000,
          auth: { scheme: "bearer", secret: "billing-key" }
        }, {
          headers: { "if-match": got.headers.etag! }
        }),
        200
      )
      assert.strictEqual(replaced.body.version, 2)
      assert.strictEqual(replaced.headers.etag, `"2"`)
      assert.deepStrictEqual(replaced.body.auth, { scheme: "bearer", secret: "billing-key" })

      // PATCH: a JSON merge patch over the current representation; version in the body as precondition
      const patched = expectStatus(
        yield* c.patch(`/api/v1/connections/${id}`, { version: 2, description: null, retry: { maxAttempts: 5 } }),
        200
      )
      assert.strictEqual(patched.body.version, 3)
      assert.strictEqual(patched.body.description, "")
      assert.deepStrictEqual(patched.body.retry, { maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 2000 })
      assert.strictEqual(patched.body.timeoutMs, 5000)

      expectStatus(yield* c.del(`/api/v1/connections/${id}`, { headers: { "if-match": `"3"` } }), 204)
      expectStatus(yield* c.get(`/api/v1/connections/${id}`), 404, "not_found")
      expectStatus(yield* c.del(`/api/v1/connections/${mcp.body.id}?version=2`), 204)
    }))

  it.effect("optimistic concurrency: 428 without a version, 409 with a stale one, If-Match: * on purpose", () =>
    Effect.gen(function*() {
      const c = yield* api
      const created = (yield* c.post("/api/v1/connections", restConnection("contended"))).body
      const path = `/api/v1/connections/${created.id}`
      const edit = restConnection("contended", { timeoutMs: 1000 })

      const unconditioned = expectStatus(yield* c.put(path, edit), 428, "precondition_required")
      assert.include(unconditioned.body.error.message, "If-Match")
      expectStatus(yield* c.patch(path, { timeoutMs: 1000 }), 428, "precondition_required")
      expectStatus(yield* c.del(path), 428, "precondition_required")

      // Alice and Bob both read version 1; Alice writes first
      expectStatus(yield* c.put(path, edit, { headers: { "if-match": `"1"` } }), 200)
      const bob = expectStatus(
        yield* c.put(path, restConnection("contended", { timeoutMs: 2000 }), { headers: { "if-match": `"1"` } }),
        409,
        "version_conflict"
      )
      assert.strictEqual(bob.body.error.currentVersion, 2)
      assert.strictEqual(bob.headers.etag, `"2"`)
      expectStatus(yield* c.put(path, { ...edit, version: 1 }), 409, "version_conflict")
      expectStatus(yield* c.patch(path, { timeoutMs: 3 }, { headers: { "if-match": `"1"` } }), 409, "version_conflict")
      expectStatus(yield* c.del(path, { headers: { "if-match": `"1"` } }), 409, "version_conflict")
      expectStatus(yield* c.del(`${path}?version=1`), 409, "version_conflict")
      assert.strictEqual((yield* c.get(path)).body.timeoutMs, 1000)

      // malformed preconditions name the header or field
      for (const value of [`W/"2"`, `2`, `"2", "3"`, `"abc"`, `"0"`]) {
        const reply = expectStatus(yield* c.put(path, edit, { headers: { "if-match": value } }), 400)
        assert.deepStrictEqual(fieldPaths(reply), ["If-Match"])
      }
      expectStatus(yield* c.put(path, { ...edit, version: "two" }), 400)
      const disagree = expectStatus(
        yield* c.put(path, { ...edit, version: 1 }, { headers: { "if-match": `"2"` } }),
        400
      )
      assert.deepStrictEqual(fieldPaths(disagree), ["version"])

      // last-writer-wins only when asked for
      const forced = expectStatus(
        yield* c.put(path, restConnection("contended", { timeoutMs: 9000 }), { headers: { "if-match": "*" } }),
        200
      )
      assert.strictEqual(forced.body.version, 3)
      expectStatus(yield* c.del(path, { headers: { "if-match": "*" } }), 204)
      expectStatus(yield* c.put(path, edit, { headers: { "if-match": "*" } }), 404, "not_found")
      expectStatus(yield* c.put(path, edit, { headers: { "if-match": `"3"` } }), 404, "not_found")
    }))

  it.effect("every validation error is a 4xx naming the field", () =>
    Effect.gen(function*() {
      const c = yield* api
      const cases: ReadonlyArray<readonly [unknown, number, string, string]> = [
        [restConnection("bad name!"), 400, "invalid_input", "name"],
        [{ kind: "rest", name: "x" }, 400, "invalid_input", "baseUrl"],
        [restConnection("x", { baseUrl: 42 }), 400, "invalid_input", "baseUrl"],
        [restConnection("x", { baseUrl: "ftp://files.example.com" }), 400, "invalid_url", "baseUrl"],
        [restConnection("x", { baseUrl: "not a url" }), 400, "invalid_url", "baseUrl"],
        [{ kind: "mcp", name: "x", url: "mailto:a@b.c" }, 400, "invalid_url", "url"],
        [
          { kind: "mcp", name: "x", url: "https://m.example", toolPrefix: "has space/" },
          400,
          "invalid_input",
          "toolPrefix"
        ],
        [restConnection("x", { timeoutMs: 0 }), 400, "invalid_input", "timeoutMs"],
        [restConnection("x", { auth: { scheme: "bearer" } }), 400, "invalid_input", "auth.secret"],
        // an empty secret name is "required"; a name that is not set is refused like an unknown tool
        [restConnection("x", { auth: { scheme: "bearer", secret: "" } }), 400, "invalid_input", "auth.secret"],
        [
          restConnection("x", { auth: { scheme: "bearer", secret: "nowhere" } }),
          422,
          "unknown_reference",
          "auth.secret"
        ],
        [
          restConnection("x", { auth: { scheme: "header", header: "bad header", secret: "s" } }),
          400,
          "invalid_input",
          "auth.header"
        ],
        [
          restConnection("x", { retry: { maxAttempts: 99, initialDelayMs: 1, maxDelayMs: 1 } }),
          400,
          "invalid_input",
          "retry.maxAttempts"
        ],
        [{ kind: "soap", name: "x" }, 400, "invalid_input", "kind"],
        [
          restConnection("x", { egressAllowList: ["http://127.0.0.1:9103"] }),
          400,
          "invalid_input",
          "egressAllowList.0"
        ],
        [
          restConnection("x", { egressAllowList: ["10.0.0.0/8", "127.0.0.1:99999"] }),
          400,
          "invalid_input",
          "egressAllowList.1"
        ],
        [
          { kind: "mcp", name: "x", url: "https://m.example", egressAllowList: ["https://m.example"] },
          400,
          "invalid_input",
          "egressAllowList.0"
        ],
        [{ name: "x" }, 400, "invalid_input", "kind"]
      ]
      for (const [body, status, code, path] of cases) {
        const reply = expectStatus(yield* c.post("/api/v1/connections", body), status, code)
        assert.deepStrictEqual(fieldPaths(reply), [path], reply.text)
        assert.isString(reply.body.error.fields[0].message)
        assert.isAbove(reply.body.error.message.length, 10)
      }
      // an allow-list entry is refused with its value and the accepted forms; one with a port is kept as written
      const badEntry = expectStatus(
        yield* c.post("/api/v1/connections", restConnection("x", { egressAllowList: ["http://127.0.0.1:9103"] })),
        400
      )
      assert.include(badEntry.body.error.message, "\"http://127.0.0.1:9103\"")
      assert.include(badEntry.body.error.message, "billing.internal:8443")
      const ported = expectStatus(
        yield* c.post("/api/v1/connections", restConnection("ported", { egressAllowList: ["127.0.0.1:9103"] })),
        201
      )
      assert.deepStrictEqual(ported.body.egressAllowList, ["127.0.0.1:9103"])

      // credentials in a URL are refused, and not echoed back
      const secretUrl = expectStatus(
        yield* c.post("/api/v1/connections", restConnection("x", { baseUrl: "https://user:hunter2@api.example.com" })),
        400,
        "invalid_url"
      )
      assert.notInclude(secretUrl.text, "hunter2")

      expectStatus(yield* c.post("/api/v1/connections", restConnection("dup")), 201)
      const dup = expectStatus(yield* c.post("/api/v1/connections", restConnection("dup")), 409, "duplicate_name")
      assert.deepStrictEqual(fieldPaths(dup), ["name"])

      // the kind of a connection cannot change
      const rest = (yield* c.post("/api/v1/connections", restConnection("stays-rest"))).body
      const kind = expectStatus(
        yield* c.put(`/api/v1/connections/${rest.id}`, { kind: "mcp", name: "stays-rest", url: "https://x.example" }, {
          headers: { "if-match": `"1"` }
        }),
        400,
        "invalid_input"
      )
      assert.deepStrictEqual(fieldPaths(kind), ["kind"])

      expectStatus(yield* c.get("/api/v1/connections/not-a-uuid"), 404, "not_found")
      expectStatus(yield* c.get("/api/v1/connections/00000000-0000-0000-0000-000000000000"), 404, "not_found")
    }))
})
