import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken, client, endpointInput, expectStatus, fieldPaths, restConnection } from "./support.ts"
import * as Support from "./support.ts"

layer(Support.layer(), Support.suiteOptions)("/api/v1/endpoints", (it) => {
  const setup = Effect.gen(function*() {
    const c = client(yield* adminToken())
    const suffix = Math.random().toString(36).slice(2, 8)
    const rest = (yield* c.post("/api/v1/connections", restConnection(`rest-${suffix}`))).body
    return { c, rest, suffix }
  })

  it.effect("create, get, list (filtered by connection), replace, patch and delete", () =>
    Effect.gen(function*() {
      const { c, rest, suffix } = yield* setup
      const other = (yield* c.post("/api/v1/connections", restConnection(`other-${suffix}`))).body
      const created = expectStatus(
        yield* c.post("/api/v1/endpoints", endpointInput(rest.id, `get_user_${suffix}`)),
        201
      )
      assert.strictEqual(created.headers.etag, `"1"`)
      assert.deepInclude(created.body, {
        connectionId: rest.id,
        name: `get_user_${suffix}`,
        method: "GET",
        pathTemplate: "/users/{id}",
        arguments: { id: "path" },
        idempotent: true,
        version: 1
      })
      expectStatus(yield* c.post("/api/v1/endpoints", endpointInput(other.id, `other_user_${suffix}`)), 201)

      const got = expectStatus(yield* c.get(`/api/v1/endpoints/${created.body.id}`), 200)
      assert.deepStrictEqual(got.body, created.body)

      const mine = expectStatus(yield* c.get(`/api/v1/endpoints?connectionId=${rest.id}`), 200)
      assert.deepStrictEqual(mine.body.items.map((e: { name: string }) => e.name), [`get_user_${suffix}`])
      const none = expectStatus(yield* c.get("/api/v1/endpoints?connectionId=not-a-connection"), 200)
      assert.deepStrictEqual(none.body, { items: [], nextCursor: null })
      expectStatus(yield* c.get(`/api/v1/endpoints?connectionId=a&connectionId=b`), 400)

      const replaced = expectStatus(
        yield* c.put(`/api/v1/endpoints/${created.body.id}`, {
          ...got.body,
          method: "POST",
          description: "create a user"
        }, { headers: { "if-match": `"1"` } }),
        200
      )
      assert.strictEqual(replaced.body.method, "POST")
      assert.strictEqual(replaced.body.version, 2)
      const patched = expectStatus(
        yield* c.patch(`/api/v1/endpoints/${created.body.id}`, { idempotent: true }, {
          headers: { "if-match": `"2"` }
        }),
        200
      )
      assert.strictEqual(patched.body.idempotent, true)
      assert.strictEqual(patched.body.description, "create a user")

      expectStatus(yield* c.del(`/api/v1/endpoints/${created.body.id}`, { headers: { "if-match": `"3"` } }), 204)
      expectStatus(yield* c.get(`/api/v1/endpoints/${created.body.id}`), 404, "not_found")
    }))

  it.effect("validation errors map to their status with the field", () =>
    Effect.gen(function*() {
      const { c, rest, suffix } = yield* setup
      const mcp = (yield* c.post("/api/v1/connections", {
        kind: "mcp",
        name: `mcp-${suffix}`,
        url: "https://mcp.example.com"
      })).body
      const cases: ReadonlyArray<readonly [unknown, number, string, string]> = [
        [endpointInput(rest.id, "bad name with spaces"), 400, "invalid_tool_name", "name"],
        [
          endpointInput(rest.id, `s_${suffix}`, { inputSchema: { type: "array" } }),
          400,
          "invalid_input_schema",
          "inputSchema"
        ],
        [
          endpointInput(rest.id, `s2_${suffix}`, { inputSchema: { type: "object", properties: { id: { type: 12 } } } }),
          400,
          "invalid_input_schema",
          "inputSchema"
        ],
        [endpointInput(rest.id, `p_${suffix}`, { arguments: {} }), 400, "undeclared_path_param", "arguments.id"],
        [endpointInput(rest.id, `t_${suffix}`, { pathTemplate: "users/{id}" }), 400, "invalid_input", "pathTemplate"],
        [endpointInput(rest.id, `m_${suffix}`, { method: "FETCH" }), 400, "invalid_input", "method"],
        [
          endpointInput(rest.id, `a_${suffix}`, { arguments: { id: "path", q: "query" } }),
          400,
          "invalid_input",
          "arguments.q"
        ],
        [
          endpointInput("00000000-0000-0000-0000-000000000000", `u_${suffix}`),
          422,
          "unknown_reference",
          "connectionId"
        ],
        [endpointInput(mcp.id, `k_${suffix}`), 400, "invalid_input", "connectionId"]
      ]
      for (const [body, status, code, path] of cases) {
        const reply = expectStatus(yield* c.post("/api/v1/endpoints", body), status, code)
        assert.deepStrictEqual(fieldPaths(reply), [path], reply.text)
      }
      expectStatus(yield* c.post("/api/v1/endpoints", endpointInput(rest.id, `dup_${suffix}`)), 201)
      const dup = expectStatus(
        yield* c.post("/api/v1/endpoints", endpointInput(rest.id, `dup_${suffix}`)),
        409,
        "duplicate_name"
      )
      assert.deepStrictEqual(fieldPaths(dup), ["name"])
    }))

  it.effect("deleting a connection deletes its endpoints", () =>
    Effect.gen(function*() {
      const { c, rest, suffix } = yield* setup
      const e = (yield* c.post("/api/v1/endpoints", endpointInput(rest.id, `gone_${suffix}`))).body
      expectStatus(yield* c.del(`/api/v1/connections/${rest.id}`, { headers: { "if-match": `"1"` } }), 204)
      expectStatus(yield* c.get(`/api/v1/endpoints/${e.id}`), 404, "not_found")
    }))
})

layer(Support.layer(), Support.suiteOptions)("/api/v1/virtual-servers", (it) => {
  it.effect("create, get, list, replace, patch and delete; unknown tools are 422", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const rest = (yield* c.post("/api/v1/connections", restConnection("crm"))).body
      yield* c.post("/api/v1/connections", { kind: "mcp", name: "github", url: "https://mcp.github.example" })
      yield* c.post("/api/v1/endpoints", endpointInput(rest.id, "get_contact"))
      yield* c.post("/api/v1/endpoints", endpointInput(rest.id, "list_contacts", { pathTemplate: "/contacts/{id}" }))

      const created = expectStatus(
        yield* c.post("/api/v1/virtual-servers", { name: "sales", tools: ["get_contact", "github/*"] }),
        201
      )
      assert.strictEqual(created.headers.etag, `"1"`)
      assert.deepInclude(created.body, {
        name: "sales",
        description: "",
        tools: ["get_contact", "github/*"],
        bareNames: false,
        version: 1
      })
      const path = `/api/v1/virtual-servers/${created.body.id}`
      assert.deepStrictEqual((yield* c.get(path)).body, created.body)
      const list = expectStatus(yield* c.get("/api/v1/virtual-servers"), 200)
      assert.deepStrictEqual(list.body.items.map((s: { name: string }) => s.name), ["sales"])

      const replaced = expectStatus(
        yield* c.put(path, { name: "sales", tools: ["list_contacts"] }, { headers: { "if-match": `"1"` } }),
        200
      )
      assert.deepStrictEqual(replaced.body.tools, ["list_contacts"])
      const patched = expectStatus(yield* c.patch(path, { version: 2, description: "for the sales team" }), 200)
      assert.deepStrictEqual(patched.body.tools, ["list_contacts"])
      assert.strictEqual(patched.body.description, "for the sales team")
      assert.isFalse(patched.body.bareNames)
      const bare = expectStatus(yield* c.patch(path, { version: 3, bareNames: true }), 200)
      assert.isTrue(bare.body.bareNames)
      expectStatus(
        yield* c.put(path, { name: "sales", tools: [] }, { headers: { "if-match": `"2"` } }),
        409,
        "version_conflict"
      )

      const unknown = expectStatus(
        yield* c.post("/api/v1/virtual-servers", { name: "broken", tools: ["no_such_tool"] }),
        422,
        "unknown_reference"
      )
      assert.deepStrictEqual(fieldPaths(unknown), ["tools"])
      assert.include(unknown.body.error.message, "no_such_tool")
      const twice = expectStatus(
        yield* c.post("/api/v1/virtual-servers", { name: "twice", tools: ["get_contact", "get_contact"] }),
        400,
        "invalid_input"
      )
      assert.deepStrictEqual(fieldPaths(twice), ["tools"])
      expectStatus(yield* c.post("/api/v1/virtual-servers", { name: "sales", tools: [] }), 409, "duplicate_name")
      expectStatus(yield* c.post("/api/v1/virtual-servers", { name: "no tools" }), 400, "invalid_input")

      expectStatus(yield* c.del(path, { headers: { "if-match": `"4"` } }), 204)
      expectStatus(yield* c.get(path), 404, "not_found")
    }))
})
