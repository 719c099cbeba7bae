/**
 * What every repository write refuses before the database sees it, on PGlite
 * and real Postgres (issue 15, items 1 and 6): unknown fields at any depth,
 * naming the closest known name, and text Postgres cannot store (U+0000,
 * unpaired surrogates), naming the field and its value escaped. Nothing is
 * written.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { AdminTokens, ClientTokens, Connections, Endpoints, Validation, VirtualServers } from "../src/index.ts"
import { requirePostgres } from "../src/testing.ts"
import { backends, count, endpointInput, expectFailure, restInput, unique } from "./helpers.ts"

const postgres = await requirePostgres()

type Services = SqlClient.SqlClient | Connections | Endpoints | VirtualServers | ClientTokens | AdminTokens

describe("closestName", () => {
  const known = ["name", "allowedTools", "allowedVirtualServers", "expiresAt"]
  for (
    const [given, closest] of [
      ["allowedtools", "allowedTools"],
      ["allowed_tools", "allowedTools"],
      ["nmae", "name"],
      ["expires", "expiresAt"],
      ["allowedVirtualServer", "allowedVirtualServers"]
    ] as const
  ) {
    layer(Layer.empty)((it) => {
      it.effect(`${given} -> ${closest}`, () =>
        Effect.sync(() => assert.strictEqual(Validation.closestName(given, known), closest)))
    })
  }
})

for (const backend of backends<Services>(postgres)) {
  describe.skipIf(!backend.run)(`input validation: ${backend.name}`, () => {
    layer(backend.layer(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
      it.effect("unknown fields are refused at any depth, naming the path and the closest known name", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const before = yield* count("connections")
          const cases = [
            [{ egressAllowlist: ["127.0.0.1"] }, "egressAllowlist", "egressAllowList"],
            [{ auth: { scheme: "bearer", secret: "s", secert: "s" } }, "auth.secert", "secret"],
            [
              { retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5, maxAttemps: 3 } },
              "retry.maxAttemps",
              "maxAttempts"
            ],
            [{ breaker: { consecutiveFailures: 2, openMs: 100, OpenMs: 1 } }, "breaker.OpenMs", "openMs"]
          ] as const
          for (const [extra, field, closest] of cases) {
            const error = yield* expectFailure(connections.create(restInput(unique("c"), extra)), "InvalidInput")
            assert.strictEqual(error.field, field)
            assert.include(error.message, `did you mean "${closest}"?`)
            assert.notInclude(error.message, "(got", "an unknown field's value is not shown")
          }
          assert.strictEqual(yield* count("connections"), before)

          const tokens = yield* ClientTokens
          const typo = yield* expectFailure(
            tokens.create({ name: "t", allowedtools: ["x"] } as never),
            "InvalidInput"
          )
          assert.strictEqual(typo.field, "allowedtools")
          assert.include(typo.message, "name, allowedTools, allowedVirtualServers, expiresAt")
          const admin = yield* expectFailure(
            (yield* AdminTokens).create({ name: "a", scope: "all" } as never),
            "InvalidInput"
          )
          assert.strictEqual(admin.field, "scope")
          const servers = yield* expectFailure(
            (yield* VirtualServers).create({ name: unique("vs"), tools: [], barenames: true } as never),
            "InvalidInput"
          )
          assert.include(servers.message, `did you mean "bareNames"?`)
          const created = yield* connections.create(restInput(unique("c")))
          const endpoint = yield* expectFailure(
            (yield* Endpoints).create(endpointInput(created.id, "e", { idempotant: true }) as never),
            "InvalidInput"
          )
          assert.strictEqual(endpoint.field, "idempotant")
          // an input schema is a JSON Schema: its members are its own
          yield* (yield* Endpoints).create(
            endpointInput(created.id, unique("e").replaceAll("-", "_"), {
              inputSchema: {
                type: "object",
                properties: { id: { type: "string" }, verbose: { type: "boolean" } },
                "x-anything": 1
              }
            })
          )
        }))

      it.effect("text Postgres cannot store is refused with the field and the value escaped; nothing is written", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const before = yield* count("connections")
          const nul = yield* expectFailure(
            connections.create(restInput(unique("c"), { description: "bad\u0000value" })),
            "InvalidInput"
          )
          assert.strictEqual(nul.field, "description")
          assert.include(nul.message, String.raw`(got "bad\u0000value")`)
          assert.include(nul.message, "U+0000")
          const lone = yield* expectFailure(
            connections.create(restInput(unique("c"), { egressAllowList: ["ok", "x\ud800"] })),
            "InvalidInput"
          )
          assert.strictEqual(lone.field, "egressAllowList.1")
          assert.include(lone.message, String.raw`"x\ud800"`)
          const key = yield* expectFailure(
            connections.create(restInput(unique("c"), { ["k\u0000"]: 1 })),
            "InvalidInput"
          )
          assert.strictEqual(key.field, String.raw`k\u0000`)
          // a credential's name is never echoed
          const secret = yield* expectFailure(
            connections.create(restInput(unique("c"), { auth: { scheme: "bearer", secret: "tok3n\u0000" } })),
            "InvalidInput"
          )
          assert.strictEqual(secret.field, "auth.secret")
          assert.notInclude(secret.message, "tok3n")
          // a plain setting beside the credential is shown: the operator needs to see the wrong value
          const scheme = yield* expectFailure(
            connections.create(restInput(unique("c"), { auth: { scheme: "kerb\u0000eros" } })),
            "InvalidInput"
          )
          assert.strictEqual(scheme.field, "auth.scheme")
          assert.include(scheme.message, String.raw`"kerb\u0000eros"`)
          // nor any value of a stdio connection's environment, whatever its name
          const env = yield* expectFailure(
            connections.create({
              kind: "mcp",
              transport: "stdio",
              name: unique("local"),
              command: "npx",
              env: { DB_PASS: "hunter2\u0000", PLAIN: "x" }
            }),
            "InvalidInput"
          )
          assert.strictEqual(env.field, "env.DB_PASS")
          assert.notInclude(env.message, "hunter2")
          assert.strictEqual(yield* count("connections"), before)
        }))
    })
  })
}
