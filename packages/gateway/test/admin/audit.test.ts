import { assert, layer } from "@effect/vitest"
import { AdminTokens, AuditLog } from "@janus/storage"
import { Effect, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"

const get = (path: string, token: string) =>
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base))),
    (url) =>
      Effect.promise(async () => {
        const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
        return { status: response.status, body: (await response.json()) as any }
      })
  )

layer(GatewayTesting.layer(), { timeout: 60_000, excludeTestServices: true })("GET /api/v1/audit", (it) => {
  it.effect("filters and pages the audit records; a bad filter is a 400 naming it", () =>
    Effect.gen(function*() {
      const token = Redacted.value((yield* (yield* AdminTokens).create({ name: "auditor" })).plaintext)
      const audit = yield* AuditLog
      for (const [tool, outcome] of [["a", "ok"], ["b", "denied"], ["a", "shed"], ["a", "ok"]] as const) {
        yield* audit.record({ identity: "token:x", tool, outcome, durationMs: 1 })
      }
      yield* audit.flush
      const all = yield* get("/api/v1/audit?kind=call&limit=3", token)
      assert.strictEqual(all.status, 200)
      assert.strictEqual(all.body.items.length, 3)
      assert.isString(all.body.nextCursor)
      const rest = yield* get(
        `/api/v1/audit?kind=call&limit=3&cursor=${encodeURIComponent(all.body.nextCursor)}`,
        token
      )
      assert.strictEqual(rest.body.items.length, 1)
      assert.isNull(rest.body.nextCursor)
      const okA = yield* get("/api/v1/audit?tool=a&outcome=ok", token)
      assert.deepStrictEqual(okA.body.items.map((r: any) => [r.tool, r.outcome]), [["a", "ok"], ["a", "ok"]])
      // calls by the caller's name, as a case-insensitive substring
      yield* audit.record({
        identity: "token:y",
        callerName: "Nightly-Export",
        tool: "a",
        outcome: "ok",
        durationMs: 1
      })
      yield* audit.flush
      const byName = yield* get("/api/v1/audit?caller=nightly", token)
      assert.deepStrictEqual(byName.body.items.map((r: any) => r.identity), ["token:y"])
      const bad = yield* get("/api/v1/audit?outcome=maybe&from=yesterday", token)
      assert.strictEqual(bad.status, 400)
      assert.deepStrictEqual(bad.body.error.fields.map((f: any) => f.path).sort(), ["from", "outcome"])
      // a day the calendar does not have is refused, not read as the next month's
      for (const [query, field] of [["from=2030-02-30", "from"], ["to=2030-02-30T00:00:00Z", "to"]] as const) {
        const reply = yield* get(`/api/v1/audit?${query}`, token)
        assert.strictEqual(reply.status, 400, JSON.stringify(reply.body))
        assert.deepStrictEqual(reply.body.error.fields.map((f: any) => f.path), [field])
        assert.include(reply.body.error.fields[0].message, "February 2030 has no day 30")
        assert.include(reply.body.error.fields[0].message, "exists on the calendar")
      }
      const since = yield* get("/api/v1/audit/verify?since=2030-02-30", token)
      assert.strictEqual(since.status, 400, JSON.stringify(since.body))
      assert.include(since.body.error.fields[0].message, "\"2030-02-30\" is refused")
      assert.strictEqual((yield* get("/api/v1/audit?from=2024-02-29&to=2030-01-01T00:00Z", token)).status, 200)
    }))
})
