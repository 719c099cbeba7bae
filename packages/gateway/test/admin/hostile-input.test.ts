/**
 * Client input never produces a 5xx on /api/v1 (issue 15, item 8): U+0000
 * (`%00`), bytes that are not UTF-8 and instants beyond what Postgres holds,
 * in every path parameter and query parameter of the admin API.
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog } from "@janus/storage"
import { Effect } from "effect"
import { adminToken, client, expectStatus, fieldPaths, restConnection } from "./support.ts"
import * as Support from "./support.ts"

layer(Support.layer(), Support.suiteOptions)("admin API: hostile path and query values", (it) => {
  it.effect("GET /api/v1/audit with U+0000 in tool, identity or connection answers 200 with what was stored", () =>
    Effect.gen(function*() {
      const api = client(yield* adminToken())
      const audit = yield* AuditLog
      yield* audit.record({
        identity: "nul\u0000who",
        tool: "a\u0000b",
        connection: "c\u0000",
        outcome: "ok",
        durationMs: 1
      })
      yield* audit.flush
      for (const query of ["tool=a%00b", "identity=nul%00who", "connection=c%00", "tool=a%EF%BF%BDb"]) {
        const reply = expectStatus(yield* api.get(`/api/v1/audit?${query}`), 200)
        assert.deepStrictEqual(
          reply.body.items.map((r: { tool: string; identity: string }) => [r.identity, r.tool]),
          [["nul\ufffdwho", "a\ufffdb"]],
          query
        )
      }
      expectStatus(yield* api.get("/api/v1/audit?tool=%00&identity=%00&connection=%ED%A0%80"), 200)
    }))

  it.effect("GET /api/v1/audit with an instant Postgres cannot hold is a 400 naming the parameter", () =>
    Effect.gen(function*() {
      const api = client(yield* adminToken())
      for (
        const [query, field] of [
          ["from=-271821-04-20T00:00:00Z", "from"],
          ["to=%2B275760-09-13T00:00:00Z", "to"],
          ["from=0000-12-31T23:59:59Z", "from"],
          ["to=%2B010000-01-01T00:00:00Z", "to"]
        ] as const
      ) {
        const reply = expectStatus(yield* api.get(`/api/v1/audit?${query}`), 400, "invalid_request")
        assert.deepStrictEqual(fieldPaths(reply), [field], reply.text)
        assert.include(reply.body.error.fields[0].message, "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z")
      }
      expectStatus(yield* api.get("/api/v1/audit?from=0001-01-01T00:00:00Z&to=9999-12-31T23:59:59Z"), 200)
    }))

  it.effect("U+0000 and non-UTF-8 bytes in every path and query parameter: never a 5xx", () =>
    Effect.gen(function*() {
      const api = client(yield* adminToken())
      const created = expectStatus(yield* api.post("/api/v1/connections", restConnection("hostile")), 201)
      const id = created.body.id as string
      const values = ["a%00b", "%00", "%ED%A0%80", "%C0%AF", "%EF%BF%BD", "x".repeat(2_000)]
      const requests: Array<readonly [string, string, unknown?]> = []
      for (const v of values) {
        for (const collection of ["connections", "endpoints", "virtual-servers", "client-tokens", "admin-tokens"]) {
          requests.push(["GET", `/api/v1/${collection}/${v}`])
          requests.push(["GET", `/api/v1/${collection}?cursor=${v}&limit=${v}`])
        }
        requests.push(["GET", `/api/v1/secrets/${v}`])
        requests.push(["DELETE", `/api/v1/secrets/${v}`])
        requests.push(["PUT", `/api/v1/secrets/${v}`, { value: "s" }])
        requests.push(["POST", `/api/v1/connections/${v}/test`])
        requests.push(["POST", `/api/v1/client-tokens/${v}/revoke`])
        requests.push(["POST", `/api/v1/admin-tokens/${v}/revoke`])
        requests.push(["DELETE", `/api/v1/client-tokens/${v}`])
        requests.push(["DELETE", `/api/v1/connections/${v}`, undefined])
        requests.push(["DELETE", `/api/v1/connections/${id}?version=${v}`])
        requests.push(["GET", `/api/v1/endpoints?connectionId=${v}`])
        requests.push(["GET", `/api/v1/audit?cursor=${v}&outcome=${v}&limit=${v}`])
        requests.push(["POST", `/api/v1/openapi/import?dryRun=${v}`, {
          source: { text: "{}" },
          connection: { name: "x" }
        }])
      }
      for (const [method, path, json] of requests) {
        const reply = yield* api.call(method, path, {
          ...(json === undefined ? {} : { json }),
          headers: { "if-match": "\"1\"" }
        })
        assert.isBelow(reply.status, 500, `${method} ${path}: ${reply.status} ${reply.text}`)
      }
    }))
})
