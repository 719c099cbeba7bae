/**
 * "Answered means recorded" across three replicas behind the round-robin
 * proxy: an SDK session (2025-11-25, stateful, shared by the replicas) making
 * 60 calls and loops of stateless `tools/call`s, each request with its own
 * `X-Request-Id`, and one replica killed with `kill -9` halfway. Afterwards every call a
 * client saw answered has exactly one audit row (the default
 * AUDIT_DURABILITY=sync answers only after the row is committed), every row
 * is one call a client sent (no duplicate), and `janus audit verify` passes
 * on the three replicas' chains (the killed one's included: a batch is
 * committed with its chain head, or not at all).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { PostgresClient } from "@janus/storage"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { randomUUID } from "node:crypto"
import { clientToken, type Cluster, runJanus, startCluster, statelessCall } from "./support/Cluster.ts"
import { requireClusterTools, sleep } from "./support/Infra.ts"

interface Sent {
  readonly requestId: string
  readonly status: number | undefined
  readonly ok: boolean
  /** Why a call was not answered ok (the tool error's text or the exception), to say so when a check fails. */
  readonly why?: string | undefined
}

describe.skipIf(!requireClusterTools())("cluster: audit durability", () => {
  let cluster: Cluster

  beforeAll(async () => {
    cluster = await startCluster()
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it("kill -9 under load: every answered call has exactly one row, every row one call", async () => {
    // four stateless loops and the SDK session, each with a token of its own: the cluster's per-identity
    // limit (10/s, burst 40) is for one client, and a loop (one call per 100 ms) is one client's worth
    const [sessionToken, ...tokens] = await Promise.all([0, 1, 2, 3, 4].map(() => clientToken(cluster)))
    const sent: Array<Sent> = []
    let running = true
    const loops = tokens.map(async ({ token }, loop) => {
      for (let n = 0; running && n < 60; n++) {
        const requestId = `audit-${loop}-${n}-${randomUUID().slice(0, 8)}`
        try {
          const reply = await fetchWithId(cluster.proxy.url, token, requestId, `${loop}-${n}`)
          sent.push({ requestId, status: reply.status, ok: reply.status === 200 && reply.body?.result !== undefined })
        } catch {
          sent.push({ requestId, status: undefined, ok: false })
        }
        await sleep(100)
      }
    })
    const session = sdkSession(cluster, sessionToken!.token, sent)
    while (sent.length < 60) await sleep(50)
    await cluster.kill9(cluster.replicas[1]!)
    await Promise.all([...loops, session])
    running = false

    const answered = sent.filter((s) => s.ok)
    assert.isAbove(answered.length, 200, "most calls were answered")
    const sdkAnswered = answered.filter((s) => s.requestId.startsWith("audit-sdk-")).length
    const sdkFailed = sent.filter((s) => s.requestId.startsWith("audit-sdk-") && !s.ok)
    assert.isAtLeast(
      sdkAnswered,
      55,
      `the session carried on through another replica; not answered ok:\n${
        sdkFailed.map((s) => `${s.requestId}: ${s.why}`).join("\n")
      }`
    )
    const rows = await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ request_id: string; n: unknown }>`SELECT request_id, count(*) AS n FROM audit_records
          WHERE kind = 'call' AND request_id LIKE 'audit-%' GROUP BY request_id`
      }).pipe(Effect.provide(PostgresClient.layer({ url: Redacted.make(cluster.postgres.url), maxConnections: 1 })))
    )
    const counts = new Map(rows.map((r) => [r.request_id, Number(r.n)]))
    const missing = answered.filter((s) => counts.get(s.requestId) !== 1)
    assert.deepStrictEqual(missing.map((s) => s.requestId), [], "answered calls without exactly one row")
    const sentIds = new Set(sent.map((s) => s.requestId))
    assert.deepStrictEqual(rows.filter((r) => !sentIds.has(r.request_id)), [], "rows of calls nobody sent")
    assert.deepStrictEqual(rows.filter((r) => Number(r.n) !== 1), [], "a call with two rows")

    const verified = await runJanus(["audit", "verify"], cluster.env)
    assert.match(verified, /^ok {2}\d+ records in \d+ chain\(s\) checked; 0 broken/m)
  }, 240_000)
})

/** An SDK session through the proxy making 60 calls, each POST with its own request id (recorded in `sent`). */
const sdkSession = async (cluster: Cluster, token: string, sent: Array<Sent>) => {
  let current = ""
  const fetchWithIds: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers)
    const isCall = typeof init?.body === "string" && init.body.includes("\"tools/call\"")
    headers.set("x-request-id", isCall ? current : `sdk-other-${randomUUID()}`)
    return fetch(input, { ...init, headers })
  }
  const client = new Client({ name: "audit-session", version: "1.0.0" })
  await client.connect(
    new StreamableHTTPClientTransport(new URL("/mcp", cluster.proxy.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: fetchWithIds
    })
  )
  try {
    for (let n = 0; n < 60; n++) {
      current = `audit-sdk-${n}-${randomUUID().slice(0, 8)}`
      try {
        const result = await client.callTool({ name: "get_pet", arguments: { id: `sdk-${n}` } }, undefined, {
          timeout: 15_000
        })
        sent.push({
          requestId: current,
          status: 200,
          ok: result.isError !== true,
          why: result.isError === true ? JSON.stringify(result.content).slice(0, 300) : undefined
        })
      } catch (error) {
        sent.push({ requestId: current, status: undefined, ok: false, why: String(error).slice(0, 300) })
      }
      await sleep(100)
    }
  } finally {
    await client.close().catch(() => undefined)
  }
}

/** `statelessCall` with the client's own request id. */
const fetchWithId = (base: string, token: string, requestId: string, id: string) =>
  statelessCall(base, token, "get_pet", { id }, AbortSignal.timeout(20_000), { "x-request-id": requestId })
