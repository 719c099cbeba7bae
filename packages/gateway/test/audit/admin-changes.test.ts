/**
 * Every admin change audited: each write of the admin API (connections,
 * endpoints, virtual servers, client and admin tokens, secrets, an apply)
 * writes one `admin` row with the actor (admin token id and name), the
 * interface (api, or studio when Studio says so), the request id, the
 * versions and the field diff; credentials only as "changed". The whole
 * audit table and event log are searched for the secret values used: none
 * is there. A failed admin authentication is an `auth` row. Changes arrive
 * on the event stream's `admin` topic.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, AuditLog, type AuditRecord, EventLog } from "@janus/storage"
import { Effect, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import * as Fs from "node:fs"
import { AdmissionAudit } from "../../src/calls/AdmissionAudit.ts"
import {
  call,
  client,
  endpointInput,
  expectStatus,
  layer as adminLayer,
  restConnection,
  suiteOptions
} from "../admin/support.ts"

const SECRET_VALUE = "s3cr3t-Value-never-logged-9f1c"
const SECRET_VALUE_2 = "s3cr3t-Value-rotated-77ab"

const adminRows = (filter: (r: AuditRecord) => boolean = () => true) =>
  Effect.gen(function*() {
    const log = yield* AuditLog
    yield* log.flush
    return (yield* log.query({ kind: "admin", limit: 1_000 })).items.filter(filter)
  })

/** How many audit rows and broker events hold each of `secrets` (as text; bytea columns as hex and base64). */
const leaks = (secrets: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    yield* (yield* AuditLog).flush
    yield* (yield* EventLog).flush
    const sql = yield* SqlClient.SqlClient
    const found: Record<string, number> = {}
    for (const secret of secrets) {
      const hits = yield* sql<{ n: unknown }>`SELECT
        (SELECT count(*) FROM audit_records WHERE position(${secret} in audit_records::text) > 0) +
        (SELECT count(*) FROM broker_event WHERE position(${secret} in broker_event::text) > 0) AS n`
      if (Number(hits[0]!.n) > 0) found[secret] = Number(hits[0]!.n)
    }
    return found
  })

/** The stored hash (hex and base64) and prefix of the token `id` in `table`: none may reach the trail. */
const storedCredential = (table: "client_tokens" | "admin_tokens", id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ hex: string; b64: string; prefix: string }>`SELECT
      encode(token_hash, 'hex') AS hex, encode(token_hash, 'base64') AS b64, prefix
      FROM ${sql(table)} WHERE id = ${id}`
    assert.lengthOf(rows, 1, `${table} ${id} is stored`)
    return [rows[0]!.hex, rows[0]!.b64, rows[0]!.prefix]
  })

const one = (rows: ReadonlyArray<AuditRecord>, what: string) => {
  assert.strictEqual(rows.length, 1, `${what}: exactly one row, got ${rows.length}`)
  return rows[0]!
}

layer(adminLayer(), suiteOptions)("admin changes are audited", (it) => {
  it.effect("every admin API write: one row with actor, versions and diff; no secret anywhere", () =>
    Effect.gen(function*() {
      const created = yield* (yield* AdminTokens).create({ name: "ops-alice" })
      const token = Redacted.value(created.plaintext)
      const api = client(token)
      const actor = { identity: `admin:${created.token.id}`, callerName: "ops-alice" }

      // connection: create, patch, (later) delete
      const conn = expectStatus(yield* api.post("/api/v1/connections", restConnection("crm")), 201)
      const connRow = one(yield* adminRows((r) => r.requestId === conn.headers["x-request-id"]), "connection create")
      assert.deepInclude(connRow, {
        ...actor,
        action: "create",
        resourceKind: "connection",
        resourceId: conn.body.id,
        resourceName: "crm",
        versionBefore: null,
        versionAfter: 1,
        interface: "api"
      })
      const patched = expectStatus(
        yield* api.patch(`/api/v1/connections/${conn.body.id}`, { timeoutMs: 4321 }, {
          headers: { "if-match": `"1"`, "x-janus-client": "studio" }
        }),
        200
      )
      const patchRow = one(yield* adminRows((r) => r.requestId === patched.headers["x-request-id"]), "patch")
      assert.deepInclude(patchRow, { action: "update", versionBefore: 1, versionAfter: 2, interface: "studio" })
      const changes = JSON.parse(patchRow.changes!)
      assert.deepStrictEqual(Object.keys(changes), ["timeoutMs"])
      assert.strictEqual(changes.timeoutMs.new, 4321)

      // endpoint and virtual server
      const ep = expectStatus(yield* api.post("/api/v1/endpoints", endpointInput(conn.body.id, "get_user")), 201)
      one(yield* adminRows((r) => r.requestId === ep.headers["x-request-id"] && r.resourceKind === "endpoint"), "ep")
      const vs = expectStatus(yield* api.post("/api/v1/virtual-servers", { name: "support", tools: ["get_user"] }), 201)
      const vsRow = one(yield* adminRows((r) => r.requestId === vs.headers["x-request-id"]), "virtual server")
      assert.strictEqual(vsRow.resourceKind, "virtual_server")
      expectStatus(yield* api.del(`/api/v1/virtual-servers/${vs.body.id}`, { headers: { "if-match": `"1"` } }), 204)
      expectStatus(yield* api.del(`/api/v1/endpoints/${ep.body.id}`, { headers: { "if-match": `"1"` } }), 204)
      const del = expectStatus(
        yield* api.del(`/api/v1/connections/${conn.body.id}`, { headers: { "if-match": `"2"` } }),
        204
      )
      assert.deepInclude(one(yield* adminRows((r) => r.requestId === del.headers["x-request-id"]), "delete"), {
        action: "delete",
        resourceName: "crm",
        versionBefore: 2,
        versionAfter: null
      })

      // secrets: set, set again, delete: the value never shows
      const set = expectStatus(yield* api.put("/api/v1/secrets/crm-key", { value: SECRET_VALUE }), 201)
      const setRow = one(yield* adminRows((r) => r.requestId === set.headers["x-request-id"]), "secret set")
      assert.deepInclude(setRow, { action: "create", resourceKind: "secret", resourceName: "crm-key" })
      assert.deepStrictEqual(JSON.parse(setRow.changes!), { value: "changed" })
      const again = yield* api.put("/api/v1/secrets/crm-key", { value: SECRET_VALUE_2 })
      assert.include([200, 201], again.status, again.text)
      assert.deepInclude(one(yield* adminRows((r) => r.requestId === again.headers["x-request-id"]), "again"), {
        action: "update",
        versionBefore: 1,
        versionAfter: 2
      })
      expectStatus(yield* api.del("/api/v1/secrets/crm-key"), 204)

      // client token: create (its value shown once), revoke, delete
      const ct = expectStatus(yield* api.post("/api/v1/client-tokens", { name: "ci-bot", allowedTools: null }), 201)
      const tokenValue: string = ct.body.token
      const ctRow = one(yield* adminRows((r) => r.requestId === ct.headers["x-request-id"]), "client token")
      assert.strictEqual(JSON.parse(ctRow.changes!).value, "changed")
      assert.strictEqual(JSON.parse(ctRow.changes!).prefix, "changed")
      const revoked = expectStatus(yield* api.post(`/api/v1/client-tokens/${ct.body.id}/revoke`), 200)
      const revokeRow = one(yield* adminRows((r) => r.requestId === revoked.headers["x-request-id"]), "revoke")
      assert.deepInclude(revokeRow, { action: "revoke", resourceName: "ci-bot" })
      assert.deepStrictEqual(Object.keys(JSON.parse(revokeRow.changes!)), ["revokedAt"])

      // admin token made through the API
      const at = expectStatus(yield* api.post("/api/v1/admin-tokens", { name: "ops-bob" }), 201)
      const atRow = one(yield* adminRows((r) => r.requestId === at.headers["x-request-id"]), "admin token")
      assert.deepInclude(atRow, { action: "create", resourceKind: "admin_token", resourceName: "ops-bob" })

      // nothing secret anywhere: not in the audit table, not in the event log
      yield* (yield* EventLog).flush
      const sql = yield* SqlClient.SqlClient
      for (const secret of [SECRET_VALUE, SECRET_VALUE_2, tokenValue, at.body.token as string, token]) {
        const hits = yield* sql<{ n: unknown }>`SELECT
          (SELECT count(*) FROM audit_records WHERE position(${secret} in audit_records::text) > 0) +
          (SELECT count(*) FROM broker_event WHERE position(${secret} in broker_event::text) > 0) AS n`
        assert.strictEqual(Number(hits[0]!.n), 0, "a credential leaked into the audit trail")
      }

      // the admin topic carries the changes
      yield* (yield* EventLog).flush
      const events = yield* sql<{ about: unknown }>`SELECT about FROM broker_event WHERE topic = 'admin'`
      assert.isAtLeast(events.length, 12)
      // an event and its row hold the same `at` (Studio merges a live change with its stored row by it)
      const [revokeEvent] = yield* sql<{ data: any }>`SELECT data FROM broker_event
        WHERE topic = 'admin' AND data->>'requestId' = ${revoked.headers["x-request-id"]!}`
      const eventData = typeof revokeEvent!.data === "string" ? JSON.parse(revokeEvent!.data) : revokeEvent!.data
      assert.deepInclude(eventData, { action: "revoke", resourceName: "ci-bot", at: revokeRow.at.toISOString() })

      // GET /api/v1/audit: filter by the actor's name (a substring), export as CSV
      const mine = expectStatus(yield* api.get("/api/v1/audit?kind=admin&caller=ALICE&limit=500"), 200)
      assert.isAtLeast(mine.body.items.length, 12)
      assert.isTrue(mine.body.items.every((r: any) => r.callerName === "ops-alice"))
      const csv = expectStatus(yield* api.get("/api/v1/audit?kind=admin&format=csv"), 200)
      assert.match(csv.headers["content-type"] ?? "", /text\/csv/)
      assert.match(csv.text.split("\n")[0]!, /^id,at,kind,identity,callerName/)
    }))

  it.effect("an apply: one row per change after it committed, through apply; a dry run writes none", () =>
    Effect.gen(function*() {
      const created = yield* (yield* AdminTokens).create({ name: "gitops" })
      const api = client(Redacted.value(created.plaintext))
      const document = {
        apiVersion: "janus/v1",
        kind: "Configuration",
        connections: [{ name: "billing", kind: "rest", baseUrl: "https://billing.example.com" }],
        clientTokens: [{ name: "billing-agent" }]
      }
      const dry = expectStatus(yield* api.post("/api/v1/config/apply?dryRun=true", document), 200)
      assert.deepStrictEqual(yield* adminRows((r) => r.requestId === dry.headers["x-request-id"]), [])
      const applied = expectStatus(yield* api.post("/api/v1/config/apply", document), 200)
      const rows = yield* adminRows((r) => r.requestId === applied.headers["x-request-id"])
      assert.deepStrictEqual(rows.map((r) => `${r.action} ${r.resourceKind} ${r.resourceName}`).sort(), [
        "create client_token billing-agent",
        "create connection billing"
      ])
      for (const row of rows) {
        assert.deepInclude(row, { interface: "apply", identity: `admin:${created.token.id}`, callerName: "gitops" })
      }
      const issued: string = applied.body.issuedTokens[0].token
      const sql = yield* SqlClient.SqlClient
      const hits = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM audit_records
        WHERE position(${issued} in audit_records::text) > 0`
      assert.strictEqual(Number(hits[0]!.n), 0)
    }))

  it.effect("a failed admin authentication is an auth row, never with the credential", () =>
    Effect.gen(function*() {
      const bogus = "jna_" + "q".repeat(40)
      const refused = yield* call("GET", "/api/v1/connections", { token: bogus })
      assert.strictEqual(refused.status, 401)
      yield* (yield* AdmissionAudit).flushSummaries
      const log = yield* AuditLog
      const rows = (yield* log.query({ kind: "auth", limit: 100 })).items.filter((r) => r.action === "admin")
      assert.isAtLeast(rows.length, 1)
      assert.deepInclude(rows[0]!, { outcome: "unauthenticated", status: 401, credentialKind: "admin_token" })
      const sql = yield* SqlClient.SqlClient
      const hits = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM audit_records
        WHERE position(${bogus} in audit_records::text) > 0`
      assert.strictEqual(Number(hits[0]!.n), 0)
    }))

  it.effect("OpenAPI import, client-token update and delete, admin-token revoke: the rows, their diffs, no credential", () =>
    Effect.gen(function*() {
      const created = yield* (yield* AdminTokens).create({ name: "ops-dana" })
      const api = client(Redacted.value(created.plaintext))
      const actor = { identity: `admin:${created.token.id}`, callerName: "ops-dana", interface: "api" }

      // OpenAPI import: one row per thing it created, after its transaction, through the API
      const petstore = Fs.readFileSync(new URL("../fixtures/openapi/petstore.yaml", import.meta.url), "utf8")
      const imported = expectStatus(
        yield* api.post("/api/v1/openapi/import", {
          source: { text: petstore },
          connection: { name: "pets-import" },
          options: { baseUrl: "https://pets.example.com/v1" }
        }),
        200
      )
      const importRows = yield* adminRows((r) => r.requestId === imported.headers["x-request-id"])
      assert.deepStrictEqual(importRows.map((r) => `${r.action} ${r.resourceKind} ${r.resourceName}`).sort(), [
        "create connection pets-import",
        "create endpoint createPets",
        "create endpoint listPets",
        "create endpoint showPetById"
      ])
      for (const row of importRows) assert.deepInclude(row, { ...actor, versionBefore: null, versionAfter: 1 })
      const connRow = importRows.find((r) => r.resourceKind === "connection")!
      assert.strictEqual(connRow.resourceId, imported.body.connection.id)
      assert.deepInclude(JSON.parse(connRow.changes!), { name: { old: null, new: "pets-import" } })

      // client token: an update (through an apply: the API has no PATCH for tokens), then a delete
      const ct = expectStatus(yield* api.post("/api/v1/client-tokens", { name: "audit-agent" }), 201)
      const ctValue: string = ct.body.token
      const ctStored = yield* storedCredential("client_tokens", ct.body.id)
      const applied = expectStatus(
        yield* api.post("/api/v1/config/apply", {
          apiVersion: "janus/v1",
          kind: "Configuration",
          clientTokens: [{ name: "audit-agent", expiresAt: "2031-01-01T00:00:00Z" }]
        }),
        200
      )
      const updateRow = one(yield* adminRows((r) => r.requestId === applied.headers["x-request-id"]), "token update")
      assert.deepInclude(updateRow, {
        identity: actor.identity,
        interface: "apply",
        action: "update",
        resourceKind: "client_token",
        resourceId: ct.body.id,
        resourceName: "audit-agent"
      })
      assert.deepStrictEqual(JSON.parse(updateRow.changes!), {
        expiresAt: { old: null, new: "2031-01-01T00:00:00.000Z" }
      })
      const deleted = expectStatus(yield* api.del(`/api/v1/client-tokens/${ct.body.id}`), 204)
      const deleteRow = one(yield* adminRows((r) => r.requestId === deleted.headers["x-request-id"]), "token delete")
      assert.deepInclude(deleteRow, {
        ...actor,
        action: "delete",
        resourceKind: "client_token",
        resourceId: ct.body.id,
        resourceName: "audit-agent"
      })
      const deleteChanges = JSON.parse(deleteRow.changes!)
      assert.deepStrictEqual(deleteChanges.name, { old: "audit-agent", new: null })
      assert.deepStrictEqual(deleteChanges.expiresAt, { old: "2031-01-01T00:00:00.000Z", new: null })
      for (const [field, change] of Object.entries(deleteChanges)) {
        if (/hash|prefix|token|value/i.test(field)) assert.strictEqual(change, "changed", field)
      }
      // a field absent on one side and null on the other did not change: it is not listed
      for (const row of [...importRows, deleteRow]) {
        for (const [field, change] of Object.entries(JSON.parse(row.changes!))) {
          assert.notDeepEqual(change, { old: null, new: null }, `${row.resourceKind} ${row.action}: ${field}`)
        }
      }

      // admin token: revoked through the API
      const at = expectStatus(yield* api.post("/api/v1/admin-tokens", { name: "ops-erin" }), 201)
      const atStored = yield* storedCredential("admin_tokens", at.body.id)
      const revoked = expectStatus(yield* api.post(`/api/v1/admin-tokens/${at.body.id}/revoke`), 200)
      const revokeRow = one(yield* adminRows((r) => r.requestId === revoked.headers["x-request-id"]), "admin revoke")
      assert.deepInclude(revokeRow, {
        ...actor,
        action: "revoke",
        resourceKind: "admin_token",
        resourceId: at.body.id,
        resourceName: "ops-erin"
      })
      const revokeChanges = JSON.parse(revokeRow.changes!)
      assert.deepStrictEqual(Object.keys(revokeChanges), ["revokedAt"])
      assert.isNull(revokeChanges.revokedAt.old)
      assert.match(revokeChanges.revokedAt.new, /^\d{4}-\d\d-\d\dT/)

      // no token value, hash or prefix anywhere in the audit table or the event log
      assert.deepStrictEqual(
        yield* leaks([ctValue, ...ctStored, at.body.token as string, ...atStored, Redacted.value(created.plaintext)]),
        {}
      )
    }))
})
