/**
 * Unknown fields in admin API bodies are refused with the field's path and
 * the closest known name, everywhere in the admin API, and change nothing
 * (issue 15, item 6). What GET returned can still be sent back as it is.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken, client, endpointInput, expectStatus, restConnection } from "./support.ts"
import * as Support from "./support.ts"

type Api = ReturnType<typeof client>

/** Asserts a 400 whose only field error is at `path`, naming `closest`. */
const refusedAt = (reply: Support.Reply, path: string, closest: string) => {
  expectStatus(reply, 400)
  const fields = reply.body.error.fields as Array<{ path: string; message: string }>
  assert.deepStrictEqual(fields.map((f) => f.path), [path], reply.text)
  assert.include(fields[0]!.message, `did you mean "${closest}"?`, reply.text)
  assert.include(fields[0]!.message, `"${path.split(".").at(-1)}" is unknown`, reply.text)
  assert.include(reply.body.error.message, path, reply.text)
}

const names = (api: Api, collection: string) =>
  Effect.map(
    api.get(`/api/v1/${collection}?limit=500`),
    (reply) => (reply.body.items as Array<{ name: string }>).map((item) => item.name)
  )

layer(Support.layer(), Support.suiteOptions)("admin API: unknown fields", (it) => {
  it.effect("POST /client-tokens with allowedtools is refused (not an unrestricted token)", () =>
    Effect.gen(function*() {
      const api = client(yield* adminToken())
      const reply = yield* api.post("/api/v1/client-tokens", { name: "t-typo", allowedtools: ["demo_time"] })
      refusedAt(reply, "allowedtools", "allowedTools")
      assert.include(reply.body.error.fields[0].message, "name, allowedTools, allowedVirtualServers, expiresAt")
      assert.notInclude(yield* names(api, "client-tokens"), "t-typo")
      refusedAt(yield* api.post("/api/v1/admin-tokens", { name: "a", nmae: "b" }), "nmae", "name")
    }))

  it.effect("connections: a misspelled egressAllowlist, and unknown members of auth, retry and breaker", () =>
    Effect.gen(function*() {
      const api = client(yield* adminToken())
      refusedAt(
        yield* api.post("/api/v1/connections", restConnection("typo-1", { egressAllowlist: ["127.0.0.1"] })),
        "egressAllowlist",
        "egressAllowList"
      )
      refusedAt(
        yield* api.post(
          "/api/v1/connections",
          restConnection("typo-2", { auth: { scheme: "bearer", secret: "s", secert: "s" } })
        ),
        "auth.secert",
        "secret"
      )
      refusedAt(
        yield* api.post(
          "/api/v1/connections",
          restConnection("typo-3", { retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5, maxAttemps: 3 } })
        ),
        "retry.maxAttemps",
        "maxAttempts"
      )
      refusedAt(
        yield* api.post(
          "/api/v1/connections",
          restConnection("typo-4", { breaker: { consecutiveFailures: 2, openMS: 100 } })
        ),
        "breaker.openMS",
        "openMs"
      )
      refusedAt(
        yield* api.post("/api/v1/connections", {
          kind: "mcp",
          name: "typo-5",
          url: "https://mcp.example.com/mcp",
          toolprefix: ""
        }),
        "toolprefix",
        "toolPrefix"
      )
      const stored = yield* names(api, "connections")
      for (const n of ["typo-1", "typo-2", "typo-3", "typo-4", "typo-5"]) assert.notInclude(stored, n)
    }))

  it.effect("what GET returned can be PUT back; PUT and PATCH with an unknown field change nothing", () =>
    Effect.gen(function*() {
      const api = client(yield* adminToken())
      const created = expectStatus(yield* api.post("/api/v1/connections", restConnection("round-trip")), 201)
      const id = created.body.id as string
      const read = expectStatus(yield* api.get(`/api/v1/connections/${id}`), 200)
      const put = expectStatus(yield* api.put(`/api/v1/connections/${id}`, read.body), 200)
      assert.strictEqual(put.body.version, 2)
      refusedAt(
        yield* api.put(`/api/v1/connections/${id}`, { ...put.body, timeoutMS: 5 }),
        "timeoutMS",
        "timeoutMs"
      )
      refusedAt(
        yield* api.patch(`/api/v1/connections/${id}`, { desciption: "x" }, { headers: { "if-match": "\"2\"" } }),
        "desciption",
        "description"
      )
      assert.strictEqual(expectStatus(yield* api.get(`/api/v1/connections/${id}`), 200).body.version, 2)

      const endpoint = yield* api.post("/api/v1/endpoints", endpointInput(id, "typo_endpoint", { idempotant: true }))
      refusedAt(endpoint, "idempotant", "idempotent")
      const nested = yield* api.post("/api/v1/endpoints", endpointInput(id, "typo_endpoint", { argumnts: {} }))
      refusedAt(nested, "argumnts", "arguments")
      refusedAt(
        yield* api.post("/api/v1/virtual-servers", { name: "vs-typo", tools: [], bareName: true }),
        "bareName",
        "bareNames"
      )
    }))

  it.effect("secrets and OpenAPI import refuse unknown members too", () =>
    Effect.gen(function*() {
      const api = client(yield* adminToken())
      const secret = yield* api.put("/api/v1/secrets/typo-secret", { value: "v", vaule: "v" })
      refusedAt(secret, "vaule", "value")
      expectStatus(yield* api.get("/api/v1/secrets/typo-secret"), 404)
      expectStatus(yield* api.put("/api/v1/secrets/typo-secret", { value: "v" }), 201)

      const document = JSON.stringify({
        openapi: "3.0.0",
        info: { title: "t", version: "1" },
        servers: [{ url: "https://api.example.com" }],
        paths: {}
      })
      const importing = (body: unknown) => api.post("/api/v1/openapi/import?dryRun=true", body)
      refusedAt(
        yield* importing({ source: { text: document }, connection: { name: "imp", egresAllowList: [] } }),
        "connection.egresAllowList",
        "egressAllowList"
      )
      refusedAt(
        yield* importing({ source: { text: document }, connection: { name: "imp" }, option: {} }),
        "option",
        "options"
      )
      // the unknown member, and the text that is then missing
      const txt = expectStatus(yield* importing({ source: { txt: document }, connection: { name: "imp" } }), 400)
      assert.deepStrictEqual(txt.body.error.fields.map((f: { path: string }) => f.path), ["source.txt", "source"])
      assert.include(txt.body.error.fields[0].message, `did you mean "text"?`)
      refusedAt(
        yield* importing({
          source: { text: document },
          connection: { name: "imp", auth: { scheme: "bearer", secret: "s", secrett: "s" } }
        }),
        "connection.auth.secrett",
        "secret"
      )
      expectStatus(yield* importing({ source: { text: document }, connection: { name: "imp" } }), 200)
    }))
})
