/**
 * Three replicas behind a round-robin proxy with no affinity (SPEC
 * "Scale-out"): official SDK clients complete sessions and calls whichever
 * replica each request lands on; a token revoked on one replica is refused by
 * the others within a second, and the streams it holds open there end; the
 * per-identity limit is one global bucket.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import {
  api,
  clientToken,
  type Cluster,
  counter,
  IDENTITY_LIMIT,
  startCluster,
  statelessCall
} from "./support/Cluster.ts"
import { requireClusterTools, sleep } from "./support/Infra.ts"

const auth = (bearer: string) => ({ headers: { authorization: `Bearer ${bearer}` } })

const waitUntil = async (what: string, check: () => boolean, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(20)
  }
}

describe.skipIf(!requireClusterTools())("cluster: sessions, revocation and limits across replicas", () => {
  let cluster: Cluster

  beforeAll(async () => {
    cluster = await startCluster()
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  /** Backends that served requests carrying `sessionId`. */
  const backendsOf = (sessionId: string) =>
    new Set(cluster.proxy.routed.filter((r) => r.sessionId === sessionId).map((r) => r.backend))

  it("SDK v1 (2025-11-25 session): every request may land on another replica", async () => {
    const { token } = await clientToken(cluster)
    const client = new ClientV1({ name: "cluster-v1", version: "1.0.0" })
    const transport = new TransportV1(new URL("/mcp", cluster.proxy.url), { requestInit: auth(token) })
    let listChanged = 0
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      listChanged++
    })
    await client.connect(transport)
    try {
      const sessionId = transport.sessionId!
      assert.isString(sessionId)
      const tools = await client.listTools()
      assert.includeMembers(tools.tools.map((t) => t.name), ["get_pet", "slow"])
      for (let i = 0; i < 6; i++) {
        const result = await client.callTool({ name: "get_pet", arguments: { id: `p${i}` } })
        assert.notOk(result.isError, JSON.stringify(result))
        assert.include(JSON.stringify(result.content), `p${i}`)
      }
      // a call that outlives streamAfter is answered as an SSE stream, on whichever replica took the POST
      const slow = await client.callTool({ name: "slow", arguments: { ms: "1500", tag: "v1-slow" } })
      assert.include(JSON.stringify(slow.content), "v1-slow")
      assert.strictEqual(backendsOf(sessionId).size, 3, "the session's requests were spread over all replicas")

      // list_changed reaches the session's GET stream whatever replica holds it and wherever the write happened
      await waitUntil(
        "the GET stream",
        () => cluster.proxy.routed.some((r) => r.sessionId === sessionId && r.method === "GET")
      )
      const added = await api(cluster.proxy.url, "POST", "/api/v1/endpoints", cluster.adminToken, {
        connectionId: (await api(cluster.proxy.url, "GET", "/api/v1/connections", cluster.adminToken)).body.items[0].id,
        name: `pet_by_tag_${Date.now()}`,
        method: "GET",
        pathTemplate: "/pets/{id}",
        arguments: { id: "path" },
        inputSchema: { type: "object", properties: { id: { type: "string" } } }
      })
      assert.strictEqual(added.status, 201, JSON.stringify(added.body))
      await waitUntil("notifications/tools/list_changed", () => listChanged > 0)
      const after = await client.listTools()
      assert.include(after.tools.map((t) => t.name), added.body.name)
    } finally {
      await transport.terminateSession().catch(() => undefined)
      await client.close()
    }
  })

  it("SDK v2: a 2025-11-25 session and stateless 2026-07-28 calls through the proxy", async () => {
    for (const pin of ["2025-11-25", "2026-07-28"] as const) {
      const { token } = await clientToken(cluster)
      const client = new ClientV2({ name: "cluster-v2", version: "2.0.0" }, {
        versionNegotiation: { mode: pin === "2026-07-28" ? { pin } : "legacy" }
      })
      const transport = new TransportV2(new URL("/mcp", cluster.proxy.url), { requestInit: auth(token) })
      const before = cluster.proxy.routed.length
      await client.connect(transport)
      try {
        assert.strictEqual(client.getNegotiatedProtocolVersion(), pin)
        const tools = await client.listTools()
        assert.include(tools.tools.map((t) => t.name), "get_pet")
        for (let i = 0; i < 6; i++) {
          const result = await client.callTool({ name: "get_pet", arguments: { id: `${pin}-${i}` } })
          assert.notOk(result.isError, JSON.stringify(result))
          assert.include(JSON.stringify(result.content), `${pin}-${i}`)
        }
        const served = new Set(cluster.proxy.routed.slice(before).map((r) => r.backend))
        assert.strictEqual(served.size, 3, `${pin}: requests spread over all replicas`)
      } finally {
        await client.close()
      }
    }
  })

  it("a token revoked on one replica is refused by the others within a second", async () => {
    const { id, token } = await clientToken(cluster)
    const [a, ...others] = cluster.replicas
    // every replica has admitted (and cached, for an hour) the token
    for (const replica of cluster.replicas) {
      const ok = await statelessCall(replica.url, token, "get_pet", { id: "warm" })
      assert.strictEqual(ok.status, 200, `${replica.name}: ${JSON.stringify(ok.body)}`)
    }
    const revoked = await api(a!.url, "POST", `/api/v1/client-tokens/${id}/revoke`, cluster.adminToken)
    assert.strictEqual(revoked.status, 200)
    const at = Date.now()
    const refusedAfter = await Promise.all(others.map(async (replica) => {
      while (Date.now() - at < 5_000) {
        const reply = await statelessCall(replica.url, token, "get_pet", { id: "after" })
        if (reply.status === 401) return Date.now() - at
        await sleep(25)
      }
      return Infinity
    }))
    for (const [i, ms] of refusedAfter.entries()) {
      assert.isBelow(ms, 1_000, `${others[i]!.name} refused the revoked token after ${ms} ms`)
    }
  })

  it("a token revoked on one replica ends its open streams on the others within a second", async () => {
    const { id, token } = await clientToken(cluster)
    const [a, b, c] = cluster.replicas
    const controller = new AbortController()
    /** When each stream's body ended. */
    const ended: Array<number | undefined> = []
    const follow = async (response: Response, i: number) => {
      assert.strictEqual(response.status, 200)
      const reader = response.body!.getReader()
      while (!(await reader.read().catch(() => ({ done: true }))).done) {
        // keep reading until the server ends the stream
      }
      ended[i] = Date.now()
    }
    const headers = { authorization: `Bearer ${token}` }
    const listen = fetch(new URL("/mcp", b!.url), {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen"
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "subscriptions/listen",
        params: {
          notifications: { toolsListChanged: true },
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
          }
        }
      }),
      signal: controller.signal
    })
    const legacy = fetch(new URL("/sse", c!.url), {
      headers: { ...headers, accept: "text/event-stream" },
      signal: controller.signal
    })
    const reading = [follow(await listen, 0), follow(await legacy, 1)]
    try {
      await sleep(300)
      assert.deepStrictEqual(ended, [], "both streams are open")
      const revoked = await api(a!.url, "POST", `/api/v1/client-tokens/${id}/revoke`, cluster.adminToken)
      assert.strictEqual(revoked.status, 200)
      const at = Date.now()
      await waitUntil("both streams to end", () => ended[0] !== undefined && ended[1] !== undefined, 5_000)
      for (const [i, end] of ended.entries()) {
        assert.isBelow(
          end! - at,
          1_000,
          `${["listen on", "/sse on"][i]} ${[b, c][i]!.name} ended ${end! - at} ms later`
        )
      }
    } finally {
      controller.abort()
      await Promise.allSettled(reading)
    }
  })

  const fallbacks = async () => {
    let sum = 0
    for (const replica of cluster.replicas) sum += await counter(replica, "janus_limiter_fallback", "tier=\"identity\"")
    return sum
  }

  /**
   * One burst of `3 x burst` requests with a fresh token through the proxy, 16 at a time: the
   * requests must arrive faster than the bucket refills (10/s) even on a loaded machine, where
   * one call through the proxy can take 300 ms; 4 at a time arrived at 12.7/s under load 13,
   * too close to the refill for every replica to see a refusal.
   */
  const burstRound = async () => {
    const { token } = await clientToken(cluster)
    const total = 3 * IDENTITY_LIMIT.burst
    const fallbackBefore = await fallbacks()
    const before = cluster.proxy.routed.length
    const started = Date.now()
    const statuses: Array<number> = []
    let sent = 0
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (sent < total) {
        sent++
        statuses.push((await statelessCall(cluster.proxy.url, token, "get_pet", { id: "limit" })).status)
      }
    }))
    const elapsedS = (Date.now() - started) / 1000
    const ok = statuses.filter((s) => s === 200).length
    const refused = statuses.filter((s) => s === 429).length
    assert.strictEqual(ok + refused, total, `only 200 and 429: ${statuses}`)
    const fellBack = (await fallbacks()) - fallbackBefore
    const refusedBy = new Set(cluster.proxy.routed.slice(before).filter((r) => r.status === 429).map((r) => r.backend))
    return { total, ok, refused, elapsedS, fellBack, refusedBy }
  }

  it("the per-identity limit is one bucket for the whole cluster (Redis)", async () => {
    const round = await burstRound()
    const detail = `${round.ok} admitted in ${round.elapsedS}s (${round.fellBack} decided in memory), ` +
      `refused by ${[...round.refusedBy]}`
    // REDIS_TIMEOUT is 10 s in this cluster: a busy machine cannot push a decision to a replica's memory
    assert.strictEqual(round.fellBack, 0, `every decision is Redis's: ${detail}`)
    // One bucket: burst, plus what refilled meanwhile. Per-replica buckets would have admitted every
    // request: each replica got `burst` of them.
    const allowed = IDENTITY_LIMIT.burst + Math.ceil(IDENTITY_LIMIT.rate * round.elapsedS) + 2
    assert.isAtMost(round.ok, allowed, `the global bucket allows ${allowed}: ${detail}`)
    assert.isAtLeast(round.ok, IDENTITY_LIMIT.burst - 2, detail)
    assert.isAbove(round.refused, 0, detail)
    assert.strictEqual(round.refusedBy.size, 3, `every replica refuses once the shared bucket is empty; ${detail}`)
  })

  it("notifications/cancelled sent to another replica stops the call where it runs", async () => {
    const { token } = await clientToken(cluster)
    const [runner, other] = cluster.replicas
    const post = (base: string, body: unknown, sessionId?: string) =>
      fetch(new URL("/mcp", base), {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(sessionId === undefined ? {} : { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" })
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(20_000)
      })
    const init = await post(cluster.proxy.url, {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "cancel", version: "1" } }
    })
    assert.strictEqual(init.status, 200)
    const sessionId = init.headers.get("mcp-session-id")!
    assert.strictEqual(
      (await post(cluster.proxy.url, { jsonrpc: "2.0", method: "notifications/initialized" }, sessionId)).status,
      202
    )

    const tag = `cancel-${Date.now()}`
    const call = post(runner!.url, {
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "slow", arguments: { ms: "8000", tag } }
    }, sessionId).then((response) => response.text(), (error) => `failed: ${error}`)
    await waitUntil("the call to reach the downstream", () => cluster.downstream.open.has(tag))
    const cancelled = await post(other!.url, {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 7, reason: "changed my mind" }
    }, sessionId)
    assert.strictEqual(cancelled.status, 202)
    // the runner aborts the downstream request and ends the call's stream without a response
    await waitUntil("the downstream request to be aborted", () => cluster.downstream.aborted.includes(tag), 3_000)
    const body = await call
    assert.notInclude(body, "\"result\"")
    assert.notInclude(body, "\"id\":7")
  })

  it("a circuit opened by failures on one replica is open on the others (Redis)", async () => {
    const { token } = await clientToken(cluster)
    const { token: second } = await clientToken(cluster)
    const admin = (method: string, path: string, body?: unknown) =>
      api(cluster.proxy.url, method, path, cluster.adminToken, body)
    const connection = await admin("POST", "/api/v1/connections", {
      kind: "rest",
      name: "flaky",
      baseUrl: cluster.downstream.url,
      egressAllowList: ["127.0.0.1"]
    })
    assert.strictEqual(connection.status, 201, JSON.stringify(connection.body))
    const endpoint = await admin("POST", "/api/v1/endpoints", {
      connectionId: connection.body.id,
      name: "flaky_get",
      method: "GET",
      pathTemplate: "/fail",
      arguments: {},
      inputSchema: { type: "object", properties: {} }
    })
    assert.strictEqual(endpoint.status, 201, JSON.stringify(endpoint.body))
    const [a, ...others] = cluster.replicas
    // failed calls on A alone open the circuit (the default policy: 5 in a row), counted once two
    // identities have failed: the first is not, the next five are (each identity's own circuit, also 5,
    // stays closed at 3)
    for (let i = 0; i < 6; i++) await statelessCall(a!.url, i % 2 === 0 ? token : second, "flaky_get", {})
    const hits = cluster.downstream.failures.count
    assert.isAtLeast(hits, 6)
    for (const replica of others) {
      const reply = await statelessCall(replica.url, token, "flaky_get", {})
      assert.strictEqual(reply.status, 200)
      assert.isTrue(
        reply.body?.result?.isError === true || reply.body?.error !== undefined,
        `${replica.name}: ${JSON.stringify(reply.body)}`
      )
      assert.match(JSON.stringify(reply.body), /circuit|breaker/i, `${replica.name}: ${JSON.stringify(reply.body)}`)
    }
    assert.strictEqual(cluster.downstream.failures.count, hits, "the other replicas sent nothing downstream")
  })
})
