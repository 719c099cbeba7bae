import { assert, layer } from "@effect/vitest"
import { Secrets, StorageError } from "@janus/storage"
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
      const all = logged.join("\n")
      assert.include(all, "SELECT id, name FROM secrets")
      assert.include(all, "Cannot read properties of undefined")
      assert.notInclude(all, secretValue)
    }))
})
