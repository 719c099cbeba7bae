/**
 * Every admin write the admin API refuses leaves exactly one audit row, on
 * PGlite and on real Postgres: for each kind of refusal (validation 400, a
 * stdio command outside JANUS_STDIO_COMMANDS, LD_PRELOAD refused by the stdio
 * environment rule, 409 for a taken name and for a stale version, 428 for a
 * missing precondition, 404 on an update or delete of something unknown, a
 * route that does not exist, 405, an unparsable body, one too large, the
 * wrong content type, a refused config/apply, a secret refused without its
 * value showing) a real HTTP request gets the error, and the audit log holds
 * one `admin` row of that request id with outcome `refused`, the actor
 * (admin token id and name, never the token), method, path (no query),
 * status and `<code>: <message>` as reason; nothing else changed (no
 * resource, no `admin` event). A write
 * that succeeds is audited as before (outcome ok, no path). A 100 KB field
 * name, a NUL or a lone surrogate in a refused body give a bounded, storable
 * reason, and the audit chain still verifies. With OAuth, a refused write of
 * an OAuth admin names the subject, and a token without the admin scope is
 * the one `auth` row it always was (outcome denied, reason
 * insufficient_scope).
 */
import { assert, describe, layer } from "@effect/vitest"
import { AdminTokens, AuditLog, type AuditRecord, Connections, EventLog } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Effect, Layer, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { randomUUID } from "node:crypto"
import * as GatewayTesting from "../../src/testing.ts"
import { call, client, expectStatus, type Reply, restConnection, suiteOptions } from "../admin/support.ts"
import * as Support from "../admin/support.ts"
import { type AuthServer, authServer, claims, oauthLayer, rsa, sign } from "../oauth/support.ts"

const postgres = await StorageTesting.requirePostgres()

const backends = [
  { name: "pglite", storage: () => StorageTesting.layerMemory(), run: true },
  { name: "postgres", storage: () => StorageTesting.layerPostgres(), run: postgres }
] as const

const SECRET_VALUE = "s3cr3t-refused-value-4e1d"

/** Every audit row (any kind) of the request `reply` answered, waiting briefly for rows written in the background. */
const rowsOf = (reply: Reply) =>
  Effect.gen(function*() {
    const requestId = reply.headers["x-request-id"]
    assert.isString(requestId, "every admin reply has X-Request-Id")
    const log = yield* AuditLog
    let rows: ReadonlyArray<AuditRecord> = []
    for (let i = 0; i < 20; i++) {
      yield* log.flush
      rows = (yield* log.query({ requestId: requestId!, limit: 10 })).items
      if (rows.length > 0) break
      yield* Effect.sleep("50 millis")
    }
    return rows
  })

/** Asserts `reply` is `status` `code` and left one refused row of `method path`; returns the row. */
const refusedOnce = (reply: Reply, status: number, code: string, method: string, path: string) =>
  Effect.gen(function*() {
    expectStatus(reply, status, code)
    const rows = yield* rowsOf(reply)
    assert.strictEqual(rows.length, 1, `${method} ${path}: exactly one audit row, got ${JSON.stringify(rows)}`)
    const row = rows[0]!
    assert.deepInclude(row, { kind: "admin", outcome: "refused", status, method, path, interface: "api" })
    assert.isString(row.reason)
    assert.isTrue(row.reason!.startsWith(`${code}: `), row.reason!)
    return row
  })

/** The stored state an admin write could change: connections, secrets, tokens, and `admin` events. */
const state = Effect.gen(function*() {
  yield* (yield* EventLog).flush
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ c: unknown; s: unknown; t: unknown; v: unknown; e: unknown }>`SELECT
    (SELECT count(*) FROM connections) AS c, (SELECT count(*) FROM secrets) AS s,
    (SELECT count(*) FROM client_tokens) AS t, (SELECT coalesce(sum(version), 0) FROM connections) AS v,
    (SELECT count(*) FROM broker_event WHERE topic = 'admin') AS e`
  return rows.map((r) => [Number(r.c), Number(r.s), Number(r.t), Number(r.v), Number(r.e)])[0]!
})

const isStorable = (text: string) =>
  !text.includes("\u0000") && !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text)

for (const backend of backends) {
  describe.skipIf(!backend.run)(`refused admin writes are audited (${backend.name})`, () => {
    const gateway = GatewayTesting.layer({
      storage: backend.storage(),
      config: { JANUS_STDIO_COMMANDS: ["/usr/bin/true"] }
    })

    layer(gateway, suiteOptions)((it) => {
      it.effect("each kind of refusal: the error, one refused row with actor, method, path, reason; nothing else", () =>
        Effect.gen(function*() {
          const created = yield* (yield* AdminTokens).create({ name: "ops-refused" })
          const token = Redacted.value(created.plaintext)
          const api = client(token)
          const actor = { identity: `admin:${created.token.id}`, callerName: "ops-refused" }

          // a write that succeeds is audited as before: outcome ok, no path
          const ok = expectStatus(yield* api.post("/api/v1/connections", restConnection("crm")), 201)
          const okRows = yield* rowsOf(ok)
          assert.strictEqual(okRows.length, 1)
          assert.deepInclude(okRows[0]!, { ...actor, outcome: "ok", action: "create", path: null, reason: null })
          const id: string = ok.body.id
          const before = yield* state

          // validation: a name no connection may have
          const invalid = yield* refusedOnce(
            yield* api.post("/api/v1/connections", restConnection("not a name!")),
            400,
            "invalid_input",
            "POST",
            "/api/v1/connections"
          )
          assert.deepInclude(invalid, actor)
          assert.isNull(invalid.action)

          // a stdio command outside JANUS_STDIO_COMMANDS, and LD_PRELOAD refused by the stdio environment rule
          const outside = yield* api.post("/api/v1/connections", {
            kind: "mcp",
            transport: "stdio",
            name: "probe",
            command: "/usr/bin/env"
          })
          const outsideRow = yield* refusedOnce(outside, 400, outside.body?.error?.code, "POST", "/api/v1/connections")
          assert.include(outsideRow.reason!, "/usr/bin/env")
          const preload = yield* api.post("/api/v1/connections", {
            kind: "mcp",
            transport: "stdio",
            name: "preload",
            command: "/usr/bin/true",
            env: { LD_PRELOAD: "/tmp/evil.so" }
          })
          assert.strictEqual(preload.body?.error?.fields?.[0]?.path, "env.LD_PRELOAD", preload.text)
          const preloadRow = yield* refusedOnce(preload, 400, preload.body.error.code, "POST", "/api/v1/connections")
          assert.include(preloadRow.reason!, "LD_PRELOAD")

          // conflicts: a taken name, a stale version; a missing precondition
          yield* refusedOnce(
            yield* api.post("/api/v1/connections", restConnection("crm")),
            409,
            "duplicate_name",
            "POST",
            "/api/v1/connections"
          )
          yield* refusedOnce(
            yield* api.patch(`/api/v1/connections/${id}`, { timeoutMs: 999 }, { headers: { "if-match": `"7"` } }),
            409,
            "version_conflict",
            "PATCH",
            `/api/v1/connections/${id}`
          )
          const precondition = yield* api.patch(`/api/v1/connections/${id}`, { timeoutMs: 999 })
          yield* refusedOnce(precondition, 428, precondition.body?.error?.code, "PATCH", `/api/v1/connections/${id}`)

          // unknown resources: update and delete; a route that does not exist; a method a route does not take
          const unknown = randomUUID()
          yield* refusedOnce(
            yield* api.patch(`/api/v1/connections/${unknown}`, { timeoutMs: 5 }, { headers: { "if-match": "*" } }),
            404,
            "not_found",
            "PATCH",
            `/api/v1/connections/${unknown}`
          )
          yield* refusedOnce(
            yield* api.del("/api/v1/secrets/never-set"),
            404,
            "not_found",
            "DELETE",
            "/api/v1/secrets/never-set"
          )
          yield* refusedOnce(
            yield* api.post("/api/v1/no-such-thing?x=1", {}),
            404,
            "route_not_found",
            "POST",
            "/api/v1/no-such-thing"
          )
          yield* refusedOnce(
            yield* api.call("DELETE", "/api/v1/config/schema"),
            405,
            "method_not_allowed",
            "DELETE",
            "/api/v1/config/schema"
          )

          // bodies: not JSON, too large, the wrong content type
          yield* refusedOnce(
            yield* api.call("POST", "/api/v1/connections", { text: "{\"kind\": " }),
            400,
            "malformed_json",
            "POST",
            "/api/v1/connections"
          )
          const huge = JSON.stringify(restConnection("huge", { description: "x".repeat(2 * 1024 * 1024) }))
          yield* refusedOnce(
            yield* api.call("POST", "/api/v1/connections", { text: huge }),
            413,
            "payload_too_large",
            "POST",
            "/api/v1/connections"
          )
          yield* refusedOnce(
            yield* api.call("PUT", "/api/v1/secrets/big", { streamBytes: 3 * 1024 * 1024 }),
            413,
            "payload_too_large",
            "PUT",
            "/api/v1/secrets/big"
          )
          yield* refusedOnce(
            yield* api.call("POST", "/api/v1/connections", {
              text: JSON.stringify(restConnection("plain")),
              contentType: "text/plain"
            }),
            415,
            "unsupported_media_type",
            "POST",
            "/api/v1/connections"
          )

          // config/apply refused: an invalid document, a stale If-Match; the query is not recorded
          const applied = yield* refusedOnce(
            yield* api.post("/api/v1/config/apply?dryRun=false", {
              apiVersion: "janus/v1",
              kind: "Configuration",
              connections: [{ name: "billing", kind: "rest", baseUrl: "not a url" }]
            }),
            400,
            "invalid_configuration",
            "POST",
            "/api/v1/config/apply"
          )
          assert.include(applied.reason!, "baseUrl")
          yield* refusedOnce(
            yield* api.post(
              "/api/v1/config/apply",
              { apiVersion: "janus/v1", kind: "Configuration" },
              { headers: { "if-match": `"${"0".repeat(32)}"` } }
            ),
            409,
            "configuration_changed",
            "POST",
            "/api/v1/config/apply"
          )

          // a secret refused: the row says why, never the value (nor the token)
          const secret = yield* api.put("/api/v1/secrets/crm-key", { value: `${SECRET_VALUE}\u0000` })
          yield* refusedOnce(secret, 400, secret.body?.error?.code, "PUT", "/api/v1/secrets/crm-key")

          // nothing else changed, and neither the secret nor the token reached the audit table
          assert.deepStrictEqual(yield* state, before)
          const sql = yield* SqlClient.SqlClient
          for (const value of [SECRET_VALUE, token]) {
            const hits = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM audit_records
              WHERE position(${value} in audit_records::text) > 0`
            assert.strictEqual(Number(hits[0]!.n), 0, "a credential reached the audit table")
          }
          // refused rows are filtered by outcome like any other
          const listed = expectStatus(yield* api.get("/api/v1/audit?kind=admin&outcome=refused&limit=500"), 200)
          assert.isAtLeast(listed.body.items.length, 17)
          assert.isTrue(listed.body.items.every((r: any) => r.outcome === "refused" && r.path.startsWith("/api/v1")))
          const verified = expectStatus(yield* api.get("/api/v1/audit/verify"), 200)
          assert.isTrue(verified.body.ok, verified.text)
        }))

      it.effect("a 100 KB field name, a NUL, a lone surrogate: a bounded, storable reason; the chain verifies", () =>
        Effect.gen(function*() {
          const api = client(yield* Support.adminToken("ops-hostile"))
          const before = yield* state
          const longName = "f".repeat(100_000)
          const bodies: ReadonlyArray<[string, unknown]> = [
            ["/api/v1/connections", { ...restConnection("long-field"), [longName]: 1 }],
            ["/api/v1/connections", { ...restConnection("long-value"), description: 7, [`x${longName}`]: "y" }],
            ["/api/v1/connections", restConnection("nul\u0000name")],
            ["/api/v1/connections", restConnection("lone\ud800surrogate")],
            ["/api/v1/connections", { ...restConnection("bad-key"), ["k\u0000\ud800"]: 1 }],
            // a path longer than the bound (the request line itself is limited by the HTTP server to 16 KiB)
            [`/api/v1/${"p".repeat(4_000)}`, {}]
          ]
          const reasons: Array<string> = []
          for (const [path, body] of bodies) {
            const reply = yield* api.post(path, body)
            assert.include([400, 404], reply.status, reply.text.slice(0, 300))
            const rows = yield* rowsOf(reply)
            assert.strictEqual(rows.length, 1)
            const row = rows[0]!
            assert.strictEqual(row.outcome, "refused")
            assert.isAtMost(row.reason!.length, 512)
            assert.isAtMost(row.path!.length, 512)
            assert.isTrue(isStorable(row.reason!), JSON.stringify(row.reason))
            assert.isTrue(isStorable(row.path!))
            if (row.reason!.length === 512) assert.match(row.reason!, /…\[cut: \d+ characters\]$/)
            reasons.push(row.reason!, row.path!)
          }
          // the long field name and the long path were cut, saying so
          assert.isAtLeast(reasons.filter((r) => /…\[cut: \d+ characters\]$/.test(r)).length, 2, reasons.join("\n"))
          assert.deepStrictEqual(yield* state, before)
          const verified = expectStatus(yield* api.get("/api/v1/audit/verify"), 200)
          assert.isTrue(verified.body.ok, verified.text)
          assert.deepStrictEqual(verified.body.problems, [])
        }))

      it.effect("a read that fails is not a refused write; a write storage refuses (stale version) is one refused row", () =>
        Effect.gen(function*() {
          const api = client(yield* Support.adminToken("ops-reader"))
          const read = expectStatus(yield* api.get(`/api/v1/connections/${randomUUID()}`), 404, "not_found")
          assert.deepStrictEqual(yield* rowsOf(read), [])
          // storage refused the update (a stale version) after the route read the connection: one refused row
          const made = yield* (yield* Connections).create({
            kind: "rest",
            name: "direct",
            baseUrl: "https://api.example.com"
          } as any)
          const stale = yield* api.del(`/api/v1/connections/${made.id}?version=5`)
          const row = yield* refusedOnce(stale, 409, "version_conflict", "DELETE", `/api/v1/connections/${made.id}`)
          assert.isNull(row.versionBefore)
        }))
    })
  })
}

/** The loopback authorization server of the OAuth suite. */
class TestAuthServer extends Context.Service<TestAuthServer, AuthServer>()("test/audit/RefusedAuthServer") {}

const withOAuth = Layer.unwrap(
  Effect.map(Effect.service(TestAuthServer), (server) => Support.layer(oauthLayer(server)))
).pipe(Layer.provideMerge(Layer.effect(TestAuthServer, authServer())))

layer(withOAuth, suiteOptions)("refused admin writes with OAuth", (it) => {
  it.effect("an OAuth admin's refused write names the subject; no admin scope is one auth row, as before", () =>
    Effect.gen(function*() {
      const server = yield* TestAuthServer
      const now = Math.floor(Date.now() / 1000)
      const admin = yield* sign(rsa.RS256!, claims(server, now, { scope: "janus:admin", sub: "ops-oauth" }))
      const toolsOnly = yield* sign(rsa.RS256!, claims(server, now, { scope: "mcp:tools", sub: "tools-only" }))

      const refused = yield* call("POST", "/api/v1/connections", { token: admin, json: restConnection("bad name!") })
      const row = yield* refusedOnce(refused, 400, "invalid_input", "POST", "/api/v1/connections")
      assert.strictEqual(row.callerSubject, "ops-oauth")
      assert.match(row.identity, /^oauth:.+#ops-oauth$/)

      const forbidden = yield* call("POST", "/api/v1/connections", { token: toolsOnly, json: restConnection("x") })
      expectStatus(forbidden, 403, "insufficient_scope")
      const rows = yield* rowsOf(forbidden)
      assert.strictEqual(rows.length, 1, JSON.stringify(rows))
      assert.deepInclude(rows[0]!, { kind: "auth", outcome: "denied", status: 403, reason: "insufficient_scope" })
      const sql = yield* SqlClient.SqlClient
      for (const value of [admin, toolsOnly]) {
        const hits = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM audit_records
          WHERE position(${value} in audit_records::text) > 0`
        assert.strictEqual(Number(hits[0]!.n), 0)
      }
    }))
})
