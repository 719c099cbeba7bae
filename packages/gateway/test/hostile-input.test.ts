/**
 * Hostile input, property-based (fast-check), through one whole gateway:
 * `/mcp` on both wires (2026-07-28 stateless; 2025-era sessions, batches
 * included) and every `/api/v1` resource (create and update bodies, list and
 * audit queries, path and header positions), with NUL, lone surrogates,
 * U+2028, emoji and oversized numbers (1e400, -1e400, 2^64, long digit
 * strings) in every string and number position, header values included
 * (`Mcp-Name`, `Mcp-Method`, `Mcp-Param-*`, `Mcp-Session-Id`,
 * `MCP-Protocol-Version`, `If-Match`, `Last-Event-ID`; see `support/Hostile.ts`).
 *
 * Asserted (GUIDE "Hostile input is part of every feature"):
 * - no response is a 5xx, and no JSON-RPC answer is an internal error (-32603);
 * - every tools/call attempt is audited: the audit log holds exactly one row
 *   per attempt. An attempt is a tools/call request in a well-formed envelope
 *   (a supported revision, a live session, `Mcp-Method`/`Mcp-Name`/
 *   `Mcp-Param-*` mirroring the body, a string tool name, an object of
 *   arguments, a string or finite-number id), whatever its name, arguments and
 *   `_meta` hold. The generators build attempts so; every other request (a
 *   broken envelope) is generated apart and must not be audited as a call;
 * - no circuit breaker is opened by client input: `/metrics` shows every
 *   breaker closed, and a well-formed call still reaches the downstream;
 * - after the run, `GET /api/v1/events` still delivers a change signal and a
 *   `calls` event.
 *
 * Runs are bounded (`RUNS`); the seed is fixed (`SEED`; fast-check prints it
 * with the shrunk counterexample; `HOSTILE_FUZZ_SEED` runs another,
 * `HOSTILE_FUZZ_ALL=1` lists every failing value instead of the first).
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, AuditLog, Connections, Endpoints } from "@janus/storage"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import fc from "fast-check"
import * as GatewayTesting from "../src/testing.ts"
import * as Downstream from "./support/Downstream.ts"
import { assertNoServerError, check, send } from "./support/Hostile.ts"
import { adminRequest, type AdminTarget } from "./support/HostileAdmin.ts"
import { call, openSession, sessionRuns, statelessBroken, statelessCall } from "./support/HostileMcp.ts"

const SEED = Number(process.env.HOSTILE_FUZZ_SEED ?? 152_026)
const RUNS = { stateless: 150, sessions: 100, admin: 250 } as const
/** A property's run is bounded by `RUNS`; this only caps its wall time on a loaded machine. */
const PROPERTY_TIMEOUT = 180_000

// -----------------------------------------------------------------------------
// The gateway under test: the pets downstream and its tools, a playground for the admin API
// -----------------------------------------------------------------------------

/** The admin token and the playground the admin fuzz may change (never the pets connection the calls use). */
class Fixture extends Context.Service<Fixture, AdminTarget>()("test/hostile-input/Fixture") {}

const seed = Effect.gen(function*() {
  // two failures open the circuit: were client input counted, the run would open it at once
  yield* Downstream.petsTools({ breaker: { consecutiveFailures: 2, openMs: 600_000 } }, [
    {
      name: "get_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path", tag: "query", "x-note": "header" },
      inputSchema: {
        type: "object",
        properties: { id: { type: "string" }, tag: { type: "string" }, "x-note": { type: "string" } },
        required: ["id"]
      }
    },
    {
      name: "create_pet",
      method: "POST",
      pathTemplate: "/pets",
      arguments: { name: "body", meta: "body" },
      inputSchema: { type: "object", properties: { name: { type: "string" }, meta: {} } }
    },
    Downstream.anyPet,
    // on 2026-07-28 the `Mcp-Param-Region` header mirrors `region`
    {
      name: "region_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path", region: "query" },
      inputSchema: {
        type: "object",
        properties: { id: { type: "string" }, region: { type: "string", "x-mcp-header": "Region" } },
        required: ["id", "region"]
      }
    }
  ])
  const endpoints = yield* Endpoints

  const admins = yield* AdminTokens
  const admin = yield* admins.create({ name: "hostile-input" })
  const spare = yield* admins.create({ name: "playground" })
  const connection = yield* (yield* Connections).create({
    kind: "rest",
    name: "playground",
    baseUrl: "https://api.example.com"
  })
  const endpoint = yield* endpoints.create({
    connectionId: connection.id,
    name: "playground_tool",
    method: "GET",
    pathTemplate: "/things/{id}",
    arguments: { id: "path" },
    inputSchema: { type: "object", properties: { id: { type: "string" } } }
  })
  const base = yield* baseUrl
  const post = (path: string, body: unknown) =>
    Effect.promise(() =>
      fetch(new URL(path, base), {
        method: "POST",
        headers: { authorization: `Bearer ${Redacted.value(admin.plaintext)}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then((r) => r.json() as Promise<{ readonly id: string }>)
    )
  const server = yield* post("/api/v1/virtual-servers", { name: "playground-vs", tools: ["playground_tool"] })
  const token = yield* post("/api/v1/client-tokens", { name: "playground-token" })
  return Fixture.of({
    adminToken: Redacted.value(admin.plaintext),
    playground: {
      connections: connection.id,
      endpoints: endpoint.id,
      "virtual-servers": server.id,
      "client-tokens": token.id,
      "admin-tokens": spare.token.id,
      secrets: "playground-secret"
    }
  })
})

const baseUrl = HttpServer.addressFormattedWith((url) => Effect.succeed(new URL(url)))

const TestLayer = Layer.effect(Fixture, seed).pipe(
  Layer.provideMerge(GatewayTesting.layer()),
  Layer.provideMerge(Downstream.layer)
)

/** tools/call attempts sent (see the module doc), counted when sent, whatever the answer. */
let attempts = 0

// -----------------------------------------------------------------------------
// The run: one gateway, the properties in order, then what must still hold
// -----------------------------------------------------------------------------

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })("hostile input", (it) => {
  it.effect(
    "/mcp 2026-07-28: hostile names, arguments, ids, _meta and headers never get a server error",
    () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const request = fc.oneof(
          { weight: 3, arbitrary: call(true).map((c) => ({ attempt: true, wire: statelessCall(c) })) },
          { weight: 2, arbitrary: statelessBroken.map((wire) => ({ attempt: false, wire })) }
        )
        yield* Effect.promise(() =>
          check(request, { numRuns: RUNS.stateless, seed: SEED }, async ({ attempt, wire }) => {
            if (attempt) attempts++
            assertNoServerError(await send(base, wire))
          })
        )
      }),
    PROPERTY_TIMEOUT
  )

  it.effect(
    "/mcp 2025 sessions and batches: hostile clientInfo, calls and messages never get a server error",
    () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const sessions = yield* Effect.promise(() =>
          Promise.all([openSession(base, "2025-11-25"), openSession(base, "2025-03-26")])
        )
        yield* Effect.promise(() =>
          check(sessionRuns(sessions), { numRuns: RUNS.sessions, seed: SEED }, async (run) => {
            attempts += run.attempts
            assertNoServerError(await send(base, run.wire))
          })
        )
      }),
    PROPERTY_TIMEOUT
  )

  it.effect("/api/v1: hostile bodies, queries, paths and headers never get a 5xx", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const fixture = yield* Fixture
      yield* Effect.promise(() =>
        check(adminRequest(fixture), { numRuns: RUNS.admin, seed: SEED }, async (wire) => {
          assertNoServerError(await send(base, wire))
        })
      )
    }), PROPERTY_TIMEOUT)

  it.effect("after the run: every tools/call attempt is audited, exactly once", () =>
    Effect.gen(function*() {
      yield* (yield* AuditLog).flush
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM audit_records WHERE kind = 'call'`
      assert.isAbove(attempts, 0)
      assert.strictEqual(rows[0]!.n, attempts, "audit records vs tools/call attempts")
    }))

  it.effect("after the run: no circuit breaker is open, and a well-formed call reaches the downstream", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const downstream = yield* Downstream.Downstream
      const metrics = yield* Effect.promise(() => fetch(new URL("/metrics", base)).then((r) => r.text()))
      for (const line of metrics.split("\n").filter((l) => l.startsWith("janus_breaker_state{"))) {
        assert.match(line, /\s0$/, `a breaker is not closed: ${line}`)
      }
      attempts++
      const answer = yield* Effect.promise(() =>
        send(base, statelessCall({ name: "get_pet", arguments: { id: "after-the-run" }, id: 1, meta: {} }))
      )
      assert.strictEqual(answer.status, 200, answer.text)
      assert.notInclude(answer.text, "breaker")
      assert.strictEqual(downstream.hits.get("GET /pets/after-the-run"), 1)
    }))

  it.effect("after the run: the event stream still delivers a change signal and a calls event", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const { adminToken } = yield* Fixture
      const received = yield* Effect.promise(async () => {
        const controller = new AbortController()
        const timer = setTimeout(() => controller.abort(), 15_000)
        const seen = { signal: false, calls: false }
        try {
          const response = await fetch(new URL("/api/v1/events?topics=connection,calls", base), {
            headers: { authorization: `Bearer ${adminToken}` },
            signal: controller.signal
          })
          assert.strictEqual(response.status, 200)
          const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
          // the stream is open: now a write and a call
          const written = fetch(new URL("/api/v1/connections", base), {
            method: "POST",
            headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
            body: JSON.stringify({ kind: "rest", name: "after-the-run", baseUrl: "https://api.example.com" })
          }).then((r) => r.status)
          attempts++
          const called = send(base, statelessCall({ name: "get_pet", arguments: { id: "watched" }, id: 2, meta: {} }))
          let buffer = ""
          while (!(seen.signal && seen.calls)) {
            const { done, value } = await reader.read()
            if (done) break
            buffer += value
            seen.signal ||= /event: signal\ndata: \{"topic":"connection"/.test(buffer)
            seen.calls ||= /event: event\ndata: \{"topic":"calls"/.test(buffer)
          }
          assert.strictEqual(await written, 201)
          assert.strictEqual((await called).status, 200)
        } catch (error) {
          // the timer ended the wait: `seen` says what arrived
          if (!controller.signal.aborted) throw error
        } finally {
          clearTimeout(timer)
          controller.abort()
        }
        return seen
      })
      assert.deepStrictEqual(received, { signal: true, calls: true })
    }))
})
