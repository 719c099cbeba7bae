/**
 * Failure behaviour of three replicas behind a round-robin proxy (SPEC
 * "Scale-out"), each under bounded load (a few loops of `tools/call`):
 *
 * - kill -9 of one replica: only the calls in flight on it fail; clients
 *   carry on through the others; the event stream it served resumes on
 *   another replica with `Last-Event-ID`, with no gap and no duplicate.
 * - Redis killed: the documented fallback holds (limits per replica, same
 *   policy, calls keep working), and Redis is used again once it is back.
 * - Postgres restarted: `/readyz` goes 503 then 200 on every replica; every
 *   call accepted meanwhile has its audit record afterwards.
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
import { sleep } from "./support/Infra.ts"

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

describe("cluster: failures", () => {
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
})
