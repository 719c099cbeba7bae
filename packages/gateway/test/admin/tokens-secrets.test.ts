import { assert, layer } from "@effect/vitest"
import { ClientTokens, Secrets } from "@janus/storage"
import { Effect, Option, Redacted } from "effect"
import { adminToken, client, expectStatus, fieldPaths } from "./support.ts"
import * as Support from "./support.ts"

layer(Support.layer(), Support.suiteOptions)("/api/v1/client-tokens", (it) => {
  it.effect("the plaintext is shown once, at creation; reads never show it or a hash", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      yield* c.post("/api/v1/virtual-servers", { name: "vs-one", tools: [] })
      // the tools a token names must exist: github/* is every tool of the mcp connection github
      expectStatus(
        yield* c.post("/api/v1/connections", { kind: "mcp", name: "github", url: "https://github.example/mcp" }),
        201
      )
      const created = expectStatus(
        yield* c.post("/api/v1/client-tokens", {
          name: "Claude desktop",
          allowedTools: ["github/*"],
          allowedVirtualServers: ["vs-one"],
          expiresAt: "2999-01-01T00:00:00Z"
        }),
        201
      )
      const plaintext: string = created.body.token
      assert.match(plaintext, /^jns_[A-Za-z0-9_-]{43}$/)
      assert.strictEqual(created.headers["cache-control"], "no-store")
      assert.strictEqual(created.headers.location, `/api/v1/client-tokens/${created.body.id}`)
      assert.deepInclude(created.body, {
        name: "Claude desktop",
        allowedTools: ["github/*"],
        allowedVirtualServers: ["vs-one"],
        expiresAt: "2999-01-01T00:00:00.000Z",
        revokedAt: null,
        active: true
      })
      const tokens = yield* ClientTokens
      assert.isTrue(Option.isSome(yield* tokens.verify(plaintext)))

      const one = expectStatus(yield* c.get(`/api/v1/client-tokens/${created.body.id}`), 200)
      const list = expectStatus(yield* c.get("/api/v1/client-tokens"), 200)
      for (const reply of [one, list]) {
        assert.notInclude(reply.text, plaintext)
        assert.notInclude(reply.text.toLowerCase(), "hash")
      }
      assert.notProperty(one.body, "token")
      // verify() above recorded a use; everything else is what creation returned, without the token
      const { token: _token, lastUsedAt: _lastUsed, ...metadata } = created.body
      assert.deepStrictEqual({ ...one.body, lastUsedAt: undefined }, { ...metadata, lastUsedAt: undefined })
      assert.deepStrictEqual(list.body.items, [one.body])
      assert.isString(one.body.lastUsedAt)

      const revoked = expectStatus(yield* c.post(`/api/v1/client-tokens/${created.body.id}/revoke`), 200)
      assert.strictEqual(revoked.body.active, false)
      assert.isString(revoked.body.revokedAt)
      assert.isTrue(Option.isNone(yield* tokens.verify(plaintext)))
      const again = expectStatus(yield* c.post(`/api/v1/client-tokens/${created.body.id}/revoke`), 200)
      assert.strictEqual(again.body.revokedAt, revoked.body.revokedAt)

      expectStatus(yield* c.del(`/api/v1/client-tokens/${created.body.id}`), 204)
      expectStatus(yield* c.get(`/api/v1/client-tokens/${created.body.id}`), 404, "not_found")
      expectStatus(yield* c.del(`/api/v1/client-tokens/${created.body.id}`), 404, "not_found")
      expectStatus(yield* c.post(`/api/v1/client-tokens/${created.body.id}/revoke`), 404, "not_found")
    }))

  it.effect("validation errors name the field", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const cases: ReadonlyArray<readonly [unknown, number, string, string]> = [
        [{ name: "" }, 400, "invalid_input", "name"],
        [{}, 400, "invalid_input", "name"],
        [{ name: "t", expiresAt: "2000-01-01T00:00:00Z" }, 400, "invalid_input", "expiresAt"],
        [{ name: "t", expiresAt: "tomorrow" }, 400, "invalid_request", "expiresAt"],
        [{ name: "t", expiresAt: 1893456000 }, 400, "invalid_request", "expiresAt"],
        [{ name: "t", allowedTools: ["ok_tool", "bad tool"] }, 400, "invalid_tool_name", "allowedTools.1"],
        [{ name: "t", allowedTools: "all" }, 400, "invalid_input", "allowedTools"],
        [{ name: "t", allowedVirtualServers: ["nope"] }, 422, "unknown_reference", "allowedVirtualServers"],
        // a tool that does not exist is refused like a virtual server's (a typo would grant nothing, silently)
        [{ name: "t", allowedTools: ["demo_tim"] }, 422, "unknown_reference", "allowedTools.0"],
        [{ name: "t", allowedTools: ["github/*", "nope/*"] }, 422, "unknown_reference", "allowedTools.1"]
      ]
      for (const [body, status, code, path] of cases) {
        const reply = expectStatus(yield* c.post("/api/v1/client-tokens", body), status, code)
        assert.deepStrictEqual(fieldPaths(reply), [path], reply.text)
      }
      // days and times the calendar does not have are refused, never rolled over (2030-02-30 is not 2 March)
      for (
        const expiresAt of [
          "2030-02-30T00:00:00Z",
          "2030-04-31T12:00:00Z",
          "2029-02-29T00:00:00Z",
          "2030-01-01T24:00:00Z",
          "2030-01-01T23:59:60Z",
          "2030-01-01T00:00:00+24:00"
        ]
      ) {
        const reply = expectStatus(yield* c.post("/api/v1/client-tokens", { name: "t", expiresAt }), 400)
        assert.deepStrictEqual(fieldPaths(reply), ["expiresAt"], reply.text)
        assert.include(reply.body.error.fields[0].message, JSON.stringify(expiresAt))
        assert.include(reply.body.error.fields[0].message, "expected an RFC 3339 date-time")
      }
      const feb30 = yield* c.post("/api/v1/client-tokens", { name: "t", expiresAt: "2030-02-30T00:00:00Z" })
      assert.include(feb30.body.error.fields[0].message, "February 2030 has no day 30")
      // a leap day is a day
      const leap = expectStatus(
        yield* c.post("/api/v1/client-tokens", { name: "leap", expiresAt: "2032-02-29T23:59:59+01:00" }),
        201
      )
      assert.strictEqual(leap.body.expiresAt, "2032-02-29T22:59:59.000Z")
      expectStatus(yield* c.post("/api/v1/client-tokens", { name: "same" }), 201)
      expectStatus(yield* c.post("/api/v1/client-tokens", { name: "same" }), 409, "duplicate_name")
      // tokens cannot be edited
      const id = (yield* c.get("/api/v1/client-tokens")).body.items[0].id
      expectStatus(yield* c.put(`/api/v1/client-tokens/${id}`, { name: "x" }), 405, "method_not_allowed")
    }))
})

layer(Support.layer(), Support.suiteOptions)("/api/v1/secrets", (it) => {
  const VALUE = "s3cr3t-VALUE-never-shown"

  it.effect("set, replace, list and delete; no response ever contains the value", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const created = expectStatus(yield* c.put("/api/v1/secrets/billing-key", { value: VALUE }), 201)
      assert.strictEqual(created.headers.etag, `"1"`)
      assert.strictEqual(created.headers.location, "/api/v1/secrets/billing-key")
      assert.deepStrictEqual(Object.keys(created.body).sort(), [
        "createdAt",
        "id",
        "keyId",
        "name",
        "updatedAt",
        "version"
      ])
      const secrets = yield* Secrets
      assert.strictEqual(Redacted.value(yield* secrets.reveal("billing-key")), VALUE)

      const replaced = expectStatus(yield* c.put("/api/v1/secrets/billing-key", { value: VALUE + "-2" }), 200)
      assert.strictEqual(replaced.body.version, 2)
      assert.strictEqual(Redacted.value(yield* secrets.reveal("billing-key")), VALUE + "-2")

      const one = expectStatus(yield* c.get("/api/v1/secrets/billing-key"), 200)
      assert.strictEqual(one.headers.etag, `"2"`)
      yield* c.put("/api/v1/secrets/another", { value: "x" })
      const list = expectStatus(yield* c.get("/api/v1/secrets"), 200)
      assert.deepStrictEqual(list.body.items.map((s: { name: string }) => s.name), ["another", "billing-key"])
      for (const reply of [created, replaced, one, list]) {
        assert.notInclude(reply.text, VALUE)
        assert.notInclude(reply.text.toLowerCase(), "ciphertext")
      }

      // a given version is checked; none is needed
      expectStatus(yield* c.put("/api/v1/secrets/billing-key", { value: "v3", version: 1 }), 409, "version_conflict")
      expectStatus(
        yield* c.put("/api/v1/secrets/billing-key", { value: "v3" }, { headers: { "if-match": `"2"` } }),
        200
      )
      expectStatus(yield* c.put("/api/v1/secrets/missing", { value: "v" }, { headers: { "if-match": `"1"` } }), 404)
      expectStatus(
        yield* c.del("/api/v1/secrets/billing-key", { headers: { "if-match": `"2"` } }),
        409,
        "version_conflict"
      )
      expectStatus(yield* c.del("/api/v1/secrets/billing-key?version=3"), 204)
      expectStatus(yield* c.del("/api/v1/secrets/billing-key"), 404, "not_found")
      expectStatus(yield* c.get("/api/v1/secrets/billing-key"), 404, "not_found")
      expectStatus(yield* c.del("/api/v1/secrets/another"), 204)
    }))

  it.effect("invalid names and values are 400 naming the field, without echoing the value", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const cases: ReadonlyArray<readonly [string, unknown, string, string]> = [
        ["ok", {}, "invalid_request", "value"],
        ["ok", { value: 12345 }, "invalid_request", "value"],
        ["ok", { value: { nested: VALUE } }, "invalid_request", "value"],
        ["ok", { value: "" }, "invalid_input", "value"],
        ["ok", { value: "x".repeat(64 * 1024 + 1) }, "invalid_input", "value"],
        ["bad%20name", { value: VALUE }, "invalid_input", "name"],
        ["-dash", { value: VALUE }, "invalid_input", "name"]
      ]
      for (const [name, body, code, path] of cases) {
        const reply = expectStatus(yield* c.put(`/api/v1/secrets/${name}`, body), 400, code)
        assert.deepStrictEqual(fieldPaths(reply), [path], reply.text)
        assert.notInclude(reply.text, VALUE)
      }
      const malformed = expectStatus(
        yield* c.call("PUT", "/api/v1/secrets/ok", { text: `{"value": "${VALUE}`, contentType: "application/json" }),
        400,
        "malformed_json"
      )
      assert.notInclude(malformed.text, VALUE)
      expectStatus(yield* c.get("/api/v1/secrets/bad%20name"), 404, "not_found")
      expectStatus(yield* c.del("/api/v1/secrets/bad%00name"), 404, "not_found")
      expectStatus(yield* c.post("/api/v1/secrets/ok", { value: "x" }), 405, "method_not_allowed")
    }))
})
