/**
 * Failure behaviour of three replicas behind a round-robin proxy (SPEC
 * "Scale-out"), each under bounded load (a few loops of `tools/call`):
 *
 * - kill -9 of one replica: only the calls in flight on it fail; clients
 *   carry on through the others; the event stream it served resumes on
 *   another replica with `Last-Event-ID`, with no gap and no duplicate.
 * - Redis killed: the documented fallback holds (limits per replica, each with
 *   its share of the policy, calls keep working), and Redis is used again once it is back.
 * - Postgres restarted: `/readyz` goes 503 then 200 on every replica; every
 *   call accepted meanwhile has its audit record and its `calls` event
 *   afterwards (the writers retry), none twice.
 *
 * The tests run in order on one cluster (each leaves it whole again).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import {
  api,
  clientToken,
  type Cluster,
  counter,
  IDENTITY_LIMIT,
  type Outcome,
  startCluster,
  startLoad,
  statelessCall,
  succeeded
} from "./support/Cluster.ts"
import { type EventReader, openEvents } from "./support/Events.ts"
import { requireClusterTools, sleep } from "./support/Infra.ts"

const waitUntil = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(25)
  }
}

/** Resolves once `reader` received nothing new for `quietMs`. */
const quiet = async (reader: EventReader, quietMs: number, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs
  let count = -1
  while (Date.now() < deadline) {
    if (reader.events.length === count) return
    count = reader.events.length
    await sleep(quietMs)
  }
}

const describeOutcomes = (outcomes: ReadonlyArray<Outcome>) =>
  outcomes.map((o) => `${o.loop}@${o.startedAt}:${o.status ?? o.error}`).join(", ")

describe.skipIf(!requireClusterTools())("cluster: failures", () => {
  let cluster: Cluster

  beforeAll(async () => {
    cluster = await startCluster()
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it("kill -9 of one replica under load: only its in-flight calls fail, the event stream resumes elsewhere", async () => {
    const tokens = await Promise.all([1, 2, 3].map(() => clientToken(cluster).then((t) => t.token)))
    const stream = await openEvents(cluster.proxy.url, cluster.adminToken, { topics: "calls" })
    const victim = cluster.replicas.find((r) => r.name === stream.backend)!
    const survivor = cluster.replicas.find((r) => r !== victim)!
    assert.isDefined(victim, `the proxy named the stream's replica: ${stream.backend}`)

    // slow calls in flight on the victim and on a survivor when the kill comes
    const slow = (replica: typeof victim, tag: string) =>
      statelessCall(replica.url, tokens[0]!, "slow", { ms: "3000", tag }).then((r) => r.status, () => "cut")
    const onVictim = [slow(victim, "victim-1"), slow(victim, "victim-2")]
    const onSurvivor = [slow(survivor, "survivor-1"), slow(survivor, "survivor-2")]

    const load = startLoad(cluster, tokens)
    await waitUntil("the slow calls to reach the downstream", () => cluster.downstream.open.size === 4)
    await waitUntil("some load", () => stream.events.length >= 10)
    await cluster.kill9(victim)
    // the process is gone: every call that fails from here on started while it was alive
    const diedAt = Date.now()

    // the stream is cut; the client resumes through the proxy, which sends it elsewhere
    await stream.ended
    const lastSeen = stream.events[stream.events.length - 1]!.id
    const resumed = await openEvents(cluster.proxy.url, cluster.adminToken, { topics: "calls", lastEventId: lastSeen })
    assert.notStrictEqual(resumed.backend, victim.name)

    await sleep(1_500)
    await load.stop()

    // only the calls in flight on the victim failed: at most one per loop, each started before the kill
    const failed = load.outcomes.filter((o) => !succeeded(o))
    assert.isAtMost(failed.length, tokens.length, describeOutcomes(failed))
    for (const o of failed) {
      assert.isAtMost(o.startedAt, diedAt, `failed, started after the kill: ${describeOutcomes([o])}`)
      assert.isUndefined(o.status, `a failure is a cut connection, not an answer: ${describeOutcomes([o])}`)
    }
    const after = load.outcomes.filter((o) => o.startedAt > diedAt)
    assert.isAbove(after.length, 10, "clients carried on")
    assert.isTrue(after.every(succeeded))
    assert.deepStrictEqual(await Promise.all(onVictim), ["cut", "cut"])
    assert.deepStrictEqual(await Promise.all(onSurvivor), [200, 200])

    // no gap, no duplicate: what the two connections delivered is exactly the log from the first event on
    const firstId = stream.events[0]!.id
    const replay = await openEvents(cluster.proxy.url, cluster.adminToken, {
      topics: "calls",
      lastEventId: firstId - 1
    })
    await sleep(1_000)
    await quiet(replay, 1_000)
    const expected = replay.events.map((e) => e.id)
    await waitUntil(
      "the resumed stream to catch up",
      () => (resumed.events.at(-1)?.id ?? 0) >= expected.at(-1)!
    )
    const delivered = [...stream.events, ...resumed.events].map((e) => e.id)
    assert.strictEqual(new Set(delivered).size, delivered.length, "no duplicate")
    assert.deepStrictEqual(delivered, expected, "no gap")
    assert.isAbove(resumed.events.length, 5)
    replay.close()
    resumed.close()

    // the replica comes back and takes traffic again
    await cluster.startReplica(victim.name)
    const back = cluster.replicas.find((r) => r.name === victim.name)!
    assert.strictEqual((await statelessCall(back.url, tokens[1]!, "get_pet", { id: "back" })).status, 200)
  })

  const fallbacks = async (replica: Cluster["replicas"][number]) =>
    await counter(replica, "janus_limiter_fallback", "tier=\"identity\"")

  it("Redis killed: calls go on, each replica limits on its own with its share of the policy, Redis is used again when back", async () => {
    const tokens = await Promise.all([1, 2, 3].map(() => clientToken(cluster).then((t) => t.token)))
    await cluster.redis.kill()
    // a fixed amount of work while Redis is down (not what fits in a time window, which a busy machine
    // shrinks): seven calls per loop, so each replica of the round-robin takes seven
    const load = startLoad(cluster, tokens, { callsPerLoop: 7 })
    await load.finished
    const failed = load.outcomes.filter((o) => !succeeded(o))
    assert.deepStrictEqual(describeOutcomes(failed), "", "no call fails because Redis is gone")
    assert.isAbove(load.outcomes.length, 20)
    for (const replica of cluster.replicas) {
      assert.strictEqual((await fetch(`${replica.url}/readyz`)).status, 200, `${replica.name} stays ready`)
      assert.isAbove(await fallbacks(replica), 0, `${replica.name} decides in memory`)
    }

    // the fallback is a limit still: one replica, a fresh identity, twice its burst at once
    const [one] = cluster.replicas
    const { token } = await clientToken(cluster)
    const started = Date.now()
    const statuses = await Promise.all(
      Array.from(
        { length: 2 * IDENTITY_LIMIT.burst },
        () => statelessCall(one!.url, token, "get_pet", { id: "fallback" }).then((r) => r.status)
      )
    )
    const elapsedS = (Date.now() - started) / 1000
    const ok = statuses.filter((s) => s === 200).length
    assert.strictEqual(ok + statuses.filter((s) => s === 429).length, statuses.length, String(statuses))
    // a fallback decides with this replica's share of the limit: burst and rate divided by the replicas it
    // saw in Redis, 3, or 4 while the instance the kill -9 test replaced is still within its heartbeat TTL
    assert.isAtMost(ok, Math.floor(IDENTITY_LIMIT.burst / 3) + Math.ceil((IDENTITY_LIMIT.rate / 3) * elapsedS) + 1)
    assert.isAtLeast(ok, Math.floor(IDENTITY_LIMIT.burst / 4))

    // back: after the limiter's retry delay, decisions are taken in Redis again (the fallback count stops)
    await cluster.redis.start()
    const probe = await clientToken(cluster)
    await waitUntil("the replicas to use Redis again", async () => {
      const before = await Promise.all(cluster.replicas.map(fallbacks))
      for (const replica of cluster.replicas) {
        for (let i = 0; i < 3; i++) await statelessCall(replica.url, probe.token, "get_pet", { id: "probe" })
      }
      const after = await Promise.all(cluster.replicas.map(fallbacks))
      return after.every((n, i) => n === before[i])
    }, 15_000)
  })

  it("Postgres restarted under load: /readyz goes 503 then 200, and every accepted call is audited", async () => {
    const created = await Promise.all([1, 2, 3].map(() => clientToken(cluster)))
    const readiness = new Map<string, Array<{ at: number; status: number }>>()
    let polling = true
    const pollers = cluster.replicas.map(async (replica) => {
      const seen: Array<{ at: number; status: number }> = []
      readiness.set(replica.name, seen)
      while (polling) {
        const status = await fetch(`${replica.url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
          (r) => r.status,
          () => 0
        )
        seen.push({ at: Date.now(), status })
        await sleep(100)
      }
    })
    const log = await openEvents(cluster.proxy.url, cluster.adminToken, { topics: "calls" })
    const load = startLoad(cluster, created.map((t) => t.token))
    await sleep(1_000)
    const stoppedAt = Date.now()
    cluster.postgres.stop()
    await waitUntil(
      "every replica to report unready",
      () => [...readiness.values()].every((seen) => seen.some((s) => s.at > stoppedAt && s.status === 503))
    )
    await sleep(1_000)
    cluster.postgres.start()
    const startedAt = Date.now()
    await waitUntil(
      "every replica to be ready again",
      () => [...readiness.values()].every((seen) => seen.at(-1)!.at > startedAt && seen.at(-1)!.status === 200),
      30_000
    )
    await sleep(1_500)
    await load.stop()
    polling = false
    await Promise.all(pollers)

    const accepted = load.outcomes.filter(succeeded)
    const refused = load.outcomes.filter((o) => !succeeded(o))
    assert.isAbove(accepted.length, 30)
    assert.isAbove(accepted.filter((o) => o.startedAt > startedAt).length, 5, "calls succeed after the restart")
    // refusals while the database is down are answers (503 and the like), never cut connections
    for (const o of refused) assert.isDefined(o.status, describeOutcomes([o]))

    // every accepted call has its audit record once the writers have retried
    const auditedOk = async (id: string) => {
      let total = 0
      let cursor: string | undefined
      do {
        const page = await api(
          cluster.proxy.url,
          "GET",
          `/api/v1/audit?identity=token:${id}&outcome=ok&limit=500${cursor ? `&cursor=${cursor}` : ""}`,
          cluster.adminToken
        )
        assert.strictEqual(page.status, 200, JSON.stringify(page.body))
        total += page.body.items.length
        cursor = page.body.nextCursor ?? undefined
      } while (cursor !== undefined)
      return total
    }
    const expected = created.map((_, loop) => accepted.filter((o) => o.loop === loop).length)
    let audited: Array<number> = []
    await waitUntil("the audit records of every accepted call", async () => {
      audited = await Promise.all(created.map((t) => auditedOk(t.id)))
      return audited.every((n, i) => n >= expected[i]!)
    }, 20_000).catch((error) => {
      throw new Error(`${error.message}: audited ${audited}, accepted ${expected}`)
    })
    assert.deepStrictEqual(audited, expected)

    // and its `calls` event, delivered to a stream opened before the restart, counted per identity
    const evented = () =>
      created.map((t) =>
        log.events.filter((e) => e.data.data.identity === `token:${t.id}` && e.data.data.outcome === "ok").length
      )
    await waitUntil("the calls events of every accepted call", () => evented().every((n, i) => n >= expected[i]!))
      .catch((error) => {
        throw new Error(`${error.message}: events ${evented()}, accepted ${expected}`)
      })
    await quiet(log, 500)
    log.close()
    assert.deepStrictEqual(evented(), expected)
  })
})
