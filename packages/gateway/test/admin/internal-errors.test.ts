import { assert, layer } from "@effect/vitest"
import { AuditLog, Secrets, StorageError } from "@janus/storage"
import { Effect, Layer, Logger } from "effect"
import { adminToken, client, expectStatus } from "./support.ts"
import * as Support from "./support.ts"

/** Every log line the server writes, as JSON text. */
const logged: Array<string> = []
const capture = Logger.layer([Logger.map(Logger.formatJson, (line) => void logged.push(line))])

const SQL = `relation "secrets" does not exist: SELECT id, name FROM secrets ORDER BY name`
const failing = Effect.fail(new StorageError({ operation: "secrets.list", cause: new Error(SQL) }))
/** A secrets repository whose database is broken, and whose delete has a bug (a defect). */
const broken = Layer.succeed(
  Secrets,
  Secrets.of({
    list: failing,
    set: () => failing,
    delete: () => Effect.die(new TypeError("Cannot read properties of undefined (reading 'id') at Secrets.ts:42")),
    reveal: () => failing,
    rotate: () => failing
  })
)

layer(Support.layer(Layer.merge(broken, capture)), Support.suiteOptions)("admin API: internal errors", (it) => {
  it.effect("are 500 with the request id and no internals; the cause is logged under that id, never the body", () =>
    Effect.gen(function*() {
      const c = client(yield* adminToken())
      const secretValue = "do-not-log-this-secret-value"
      const replies = [
        yield* c.get("/api/v1/secrets"),
        yield* c.put("/api/v1/secrets/db-password", { value: secretValue }),
        yield* c.del("/api/v1/secrets/db-password")
      ]
      for (const reply of replies) {
        expectStatus(reply, 500, "internal_error")
        const requestId = reply.headers["x-request-id"]!
        assert.strictEqual(reply.body.error.requestId, requestId)
        assert.strictEqual(reply.headers["cache-control"], "no-store")
        for (
          const internal of ["SELECT", "relation", "TypeError", "Secrets.ts", "StorageError", "stack", secretValue]
        ) {
          assert.notInclude(reply.text, internal)
        }
        const line = logged.find((l) => l.includes(requestId))
        assert.isDefined(line, `no log line for ${requestId}`)
        assert.include(line!, "admin API request failed")
      }
      // the failed writes (not the read) are audited as errors: the fixed message, no internals, no body
      const log = yield* AuditLog
      yield* log.flush
      for (const [reply, method] of [[replies[1]!, "PUT"], [replies[2]!, "DELETE"]] as const) {
        const rows = (yield* log.query({ requestId: reply.headers["x-request-id"]!, limit: 10 })).items
        assert.strictEqual(rows.length, 1, `${method}: one audit row`)
        assert.deepInclude(rows[0]!, {
          kind: "admin",
          outcome: "error",
          status: 500,
          method,
          path: "/api/v1/secrets/db-password"
        })
        assert.match(rows[0]!.reason!, /^internal_error: An internal error occurred/)
        for (const internal of ["SELECT", "TypeError", secretValue]) assert.notInclude(rows[0]!.reason!, internal)
      }
      const read = (yield* log.query({ requestId: replies[0]!.headers["x-request-id"]!, limit: 10 })).items
      assert.deepStrictEqual(read, [])
      const all = logged.join("\n")
      assert.include(all, "SELECT id, name FROM secrets")
      assert.include(all, "Cannot read properties of undefined")
      assert.notInclude(all, secretValue)
    }))
})
