/**
 * Every attempt audited, through the whole gateway: each refusal kind
 * (unauthenticated, per-IP and per-identity limits, denied, invalid
 * arguments, shed, downstream error) and ok produce exactly their row, with
 * the caller by name, request and trace ids, bytes; a flood of 10,000
 * unauthenticated requests leaves a bounded number of rows and exact counts.
 * Each test is its own client address (`X-Forwarded-For` behind a trusted
 * loopback proxy), so the per-IP buckets and sampled rows do not mix.
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog, type AuditRecord, ClientTokens, Endpoints } from "@janus/storage"
import { Effect, Layer, Metric, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import { createHash } from "node:crypto"
import { AdmissionAudit, refusals } from "../../src/calls/AdmissionAudit.ts"
import * as GatewayTesting from "../../src/testing.ts"
import * as Downstream from "../support/Downstream.ts"
import { META } from "../support/StatelessRequests.ts"

const seed = Effect.gen(function*() {
  const pets = yield* Downstream.connection()
  const endpoints = yield* Endpoints
  const schema = { type: "object", properties: { id: { type: "string" }, ms: { type: "number" } } }
  yield* endpoints.create({
    connectionId: pets.id,
    name: "get_pet",
    method: "GET",
    pathTemplate: "/pets/{id}",
    arguments: { id: "path" },
    inputSchema: { ...schema, required: ["id"] }
  })
  yield* endpoints.create({
    connectionId: pets.id,
    name: "slow",
    method: "GET",
    pathTemplate: "/slow",
    arguments: { ms: "query" },
    inputSchema: schema
  })
  yield* endpoints.create({
    connectionId: pets.id,
    name: "broken",
    method: "GET",
    pathTemplate: "/fail",
    inputSchema: schema
  })
})

const TestLayer = Layer.effectDiscard(seed).pipe(
  Layer.provideMerge(GatewayTesting.layer({
    config: {
      JANUS_ALLOW_ANONYMOUS: false,
      JANUS_TRUSTED_PROXIES: ["127.0.0.1"],
      RATE_LIMIT_IP: 5,
      RATE_LIMIT_IP_BURST: 5,
      RATE_LIMIT_IDENTITY: 3,
      RATE_LIMIT_IDENTITY_BURST: 3,
      MCP_MAX_CONCURRENT_CALLS: 1
    }
  })),
  Layer.provideMerge(Downstream.layer)
)

const mcpUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base).href))

/** Wall-clock wait (the suite runs under the TestClock). */
const liveSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

let ipCounter = 0
/** A client address of its own. */
const freshIp = () => `203.0.113.${++ipCounter}`

const call = (ip: string, token: string | undefined, name: string, args: Record<string, unknown> = {}) =>
  Effect.flatMap(mcpUrl, (url) =>
    Effect.promise(async () => {
      const response = await fetch(url, {
        method: "POST",
        headers: {
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          "x-forwarded-for": ip,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": "tools/call",
          "mcp-name": name
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name, arguments: args, _meta: META }
        })
      })
      await response.text()
      return { status: response.status, requestId: response.headers.get("x-request-id") }
    }))

const rows = (filter: (r: AuditRecord) => boolean) =>
  Effect.gen(function*() {
    const log = yield* AuditLog
    yield* log.flush
    const page = yield* log.query({ limit: 1_000 })
    return page.items.filter(filter)
  })

const token = (name: string, allowedTools: ReadonlyArray<string> | null = null) =>
  Effect.gen(function*() {
    const created = yield* (yield* ClientTokens).create({ name, allowedTools })
    return { id: created.token.id, value: Redacted.value(created.plaintext) }
  }).pipe(Effect.orDie)

const refusalCount = (outcome: string, bucket: string) =>
  Effect.map(
    Metric.value(Metric.withAttributes(refusals, { outcome, bucket, surface: "mcp" })),
    (state) => Number(state.count)
  )

layer(TestLayer, { timeout: "180 seconds" })("every attempt is audited", (it) => {
  it.effect("unauthenticated: one auth row with the credential's kind and fingerprint, never its value", () =>
    Effect.gen(function*() {
      const ip = freshIp()
      const bogus = "jns_" + "x".repeat(40)
      assert.strictEqual((yield* call(ip, undefined, "get_pet", { id: "1" })).status, 401)
      const other = freshIp()
      assert.strictEqual((yield* call(other, bogus, "get_pet", { id: "1" })).status, 401)
      const none = yield* rows((r) => r.clientIp === ip)
      assert.strictEqual(none.length, 1)
      assert.deepInclude(none[0]!, {
        kind: "auth",
        outcome: "unauthenticated",
        status: 401,
        identity: `ip:${ip}`,
        credentialKind: "none",
        credentialFingerprint: null,
        repeats: 1
      })
      assert.isNotNull(none[0]!.requestId)
      const bad = yield* rows((r) => r.clientIp === other)
      assert.strictEqual(bad.length, 1)
      assert.deepInclude(bad[0]!, {
        credentialKind: "client_token",
        credentialFingerprint: createHash("sha256").update(bogus).digest("hex").slice(0, 16)
      })
      const sql = yield* SqlClient.SqlClient
      const leaked = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM audit_records
        WHERE position(${bogus} in audit_records::text) > 0`
      assert.strictEqual(Number(leaked[0]!.n), 0, "the token value is nowhere in the table")
    }))

  it.effect("rate limited per IP and per identity: one auth row each, naming the bucket and the caller", () =>
    Effect.gen(function*() {
      const ip = freshIp()
      const alice = yield* token("alice-ci")
      // the identity's burst is 3: of 4 at once, one is refused
      const four = yield* Effect.all(Array.from({ length: 4 }, () => call(ip, alice.value, "get_pet", { id: "1" })), {
        concurrency: 4
      })
      assert.deepStrictEqual(four.map((a) => a.status).sort(), [200, 200, 200, 429])
      const limited = four.find((a) => a.status === 429)!
      const byIdentity = yield* rows((r) => r.clientIp === ip && r.kind === "auth")
      assert.strictEqual(byIdentity.length, 1)
      assert.deepInclude(byIdentity[0]!, {
        outcome: "rate_limited",
        bucket: "identity",
        identity: `token:${alice.id}`,
        callerName: "alice-ci",
        credentialKind: "client_token",
        requestId: limited.requestId
      })

      const flooded = freshIp()
      const bob = yield* token("bob-ci")
      // 6 at once: the IP's burst of 5 lets 5 through (one refused by the IP bucket), of which the identity's
      // burst of 3 lets 3 through (two refused by the identity bucket)
      const six = yield* Effect.all(Array.from({ length: 6 }, () => call(flooded, bob.value, "get_pet", { id: "1" })), {
        concurrency: 6
      })
      assert.deepStrictEqual(six.map((a) => a.status).sort(), [200, 200, 200, 429, 429, 429])
      const auth = yield* rows((r) => r.clientIp === flooded && r.kind === "auth")
      assert.deepStrictEqual(auth.map((r) => r.bucket).sort(), ["identity", "ip"], "one sampled row per bucket")
      yield* (yield* AdmissionAudit).flushSummaries
      const all = yield* rows((r) => r.clientIp === flooded && r.kind === "auth")
      assert.strictEqual(all.reduce((n, r) => n + r.repeats, 0), 3, "the repeats add up to every refusal")
    }))

  it.effect("denied, invalid, shed, downstream error and ok: one call row each, the caller by name", () =>
    Effect.gen(function*() {
      // one token per call: the identity's limit (3/s) is not what this test is about
      const scoped = yield* Effect.forEach([1, 2, 3, 4], (i) => token(`scoped-bot-${i}`, ["get_pet", "broken"]))
      const sent = [
        [freshIp(), "get_pet", { id: "7" }, "ok"],
        [freshIp(), "slow", { ms: 1 }, "denied"],
        [freshIp(), "get_pet", { id: 7 }, "invalid"],
        [freshIp(), "broken", {}, "error"]
      ] as const
      const answers: Array<{ readonly status: number; readonly requestId: string | null }> = []
      for (const [i, [ip, tool, args]] of sent.entries()) {
        answers.push(yield* call(ip, scoped[i]!.value, tool, args))
      }
      for (const [i, [ip, tool, , outcome]] of sent.entries()) {
        const found = yield* rows((r) => r.requestId === answers[i]!.requestId)
        assert.strictEqual(found.length, 1, `${tool}: exactly one row`)
        assert.deepInclude(found[0]!, {
          kind: "call",
          tool,
          outcome,
          identity: `token:${scoped[i]!.id}`,
          callerName: `scoped-bot-${i + 1}`
        }, ip)
        assert.match(found[0]!.traceId ?? "", /^[0-9a-f]{32}$/)
      }
      const ok = (yield* rows((r) => r.requestId === answers[0]!.requestId))[0]!
      assert.isAbove(ok.bytesOut, 0, "the answer's bytes are measured")
      assert.strictEqual((yield* rows((r) => r.requestId === answers[3]!.requestId))[0]!.status, 503)

      // MCP_MAX_CONCURRENT_CALLS is 1: a second call while `slow` runs is shed
      const other = yield* token("shed-bot")
      const [slow, shed] = yield* Effect.all([
        call(freshIp(), other.value, "slow", { ms: 800 }),
        Effect.andThen(liveSleep(200), call(freshIp(), other.value, "get_pet", { id: "1" }))
      ], { concurrency: 2 })
      assert.strictEqual(slow.status, 200)
      const shedRows = yield* rows((r) => r.requestId === shed.requestId)
      assert.strictEqual(shedRows.length, 1)
      assert.deepInclude(shedRows[0]!, { outcome: "shed", callerName: "shed-bot" })
    }))

  it.effect("a flood of 10,000 unauthenticated requests: bounded rows, exact counters", () =>
    Effect.gen(function*() {
      const ip = freshIp()
      const before = (yield* refusalCount("unauthenticated", "none")) + (yield* refusalCount("rate_limited", "ip"))
      const url = yield* mcpUrl
      yield* Effect.promise(async () => {
        let next = 0
        const worker = async () => {
          while (next < 10_000) {
            next++
            const r = await fetch(url, {
              method: "POST",
              headers: {
                "x-forwarded-for": ip,
                authorization: `Bearer jns_flood${next}`,
                "content-type": "application/json"
              },
              body: "{}"
            })
            await r.arrayBuffer()
          }
        }
        await Promise.all(Array.from({ length: 32 }, worker))
      })
      const after = (yield* refusalCount("unauthenticated", "none")) + (yield* refusalCount("rate_limited", "ip"))
      assert.strictEqual(after - before, 10_000, "every refusal counted")
      yield* (yield* AdmissionAudit).flushSummaries
      const flood = yield* rows((r) => r.clientIp === ip)
      assert.isAtMost(flood.length, 4, "two keys (unauthenticated, per-IP limit), at most two rows each a minute")
      assert.strictEqual(flood.reduce((n, r) => n + r.repeats, 0), 10_000, "the rows' repeats add up exactly")
    }))
})
