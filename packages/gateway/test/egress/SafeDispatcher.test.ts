import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { layerMemory, Resolver } from "../../src/egress/index.ts"
import { call, egress, statusServer, trustLoopback } from "./servers.ts"

const ok = () => 200

describe("connect-time checks (SafeDispatcher)", () => {
  it.live("refuses a name that resolves to a refused address; nothing reaches the server", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(ok)
      const url = `http://rebind.test:${server.port}`
      const error = yield* Effect.flip(call({ id: "c1", baseUrl: url }, { method: "GET", path: "/x" }))
      assert.strictEqual(error._tag, "EgressRefused")
      if (error._tag !== "EgressRefused") return
      assert.strictEqual(error.address, "127.0.0.1")
      assert.strictEqual(error.reason, "loopback")
      assert.strictEqual(error.phase, "connect")
      assert.strictEqual(server.received.length, 0)
      assert.strictEqual(server.connections(), 0)
    }).pipe(Effect.provide(egress({ names: { "rebind.test": "127.0.0.1" } }))))

  const refusedAnswers: ReadonlyArray<readonly [string, string | ReadonlyArray<string>, string]> = [
    ["metadata.test", "169.254.169.254", "link-local (cloud metadata)"],
    ["private.test", "10.1.2.3", "private (RFC 1918)"],
    ["mapped.test", "::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1, which is loopback"],
    ["nat64.test", "64:ff9b::a9fe:a9fe", "NAT64 169.254.169.254, which is link-local (cloud metadata)"],
    ["ula.test", "fd00:ec2::254", "unique-local (cloud metadata)"],
    ["v6loop.test", "::1", "loopback"],
    ["mixed.test", ["93.184.216.34", "192.168.0.10"], "private (RFC 1918)"]
  ]
  for (const [name, answer, reason] of refusedAnswers) {
    it.live(`refuses ${name} -> ${String(answer)}`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(
          call({ id: name, baseUrl: `http://${name}:9` }, { method: "GET", path: "/", idempotent: false })
        )
        assert.strictEqual(error._tag, "EgressRefused")
        if (error._tag === "EgressRefused") assert.strictEqual(error.reason, reason)
      }).pipe(Effect.provide(egress({ names: { [name]: answer } }))))
  }

  it.live("a refused answer is not retried, even for GET", () => {
    const lookups = new Map<string, number>()
    return Effect.gen(function*() {
      const error = yield* Effect.flip(call({ id: "c", baseUrl: "http://meta.test" }, { method: "GET", path: "/" }))
      assert.strictEqual(error._tag, "EgressRefused")
      assert.strictEqual(lookups.get("meta.test"), 1)
    }).pipe(Effect.provide(egress({ names: { "meta.test": "169.254.169.254" }, lookups })))
  })

  it.live("refuses IP-literal and localhost base URLs before anything is sent", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(ok)
      for (
        const baseUrl of [
          server.origin,
          `http://2130706433:${server.port}`,
          `http://0x7f.1:${server.port}`,
          `http://[::ffff:127.0.0.1]:${server.port}`,
          `http://localhost:${server.port}`
        ]
      ) {
        const error = yield* Effect.flip(call({ id: "c", baseUrl }, { method: "GET", path: "/" }))
        assert.strictEqual(error._tag, "EgressRefused", baseUrl)
        if (error._tag === "EgressRefused") assert.strictEqual(error.phase, "url")
      }
      assert.strictEqual(server.connections(), 0)
    }).pipe(Effect.provide(egress())))

  it.live("an allow-listed name reaches the internal service; a warm pooled socket needs no lookup", () => {
    const lookups = new Map<string, number>()
    return Effect.gen(function*() {
      const server = yield* statusServer(ok)
      const connection = {
        id: "internal",
        baseUrl: `http://billing.internal:${server.port}`,
        allow: ["billing.internal"]
      }
      for (let i = 0; i < 5; i++) {
        const response = yield* call(connection, { method: "GET", path: `/n/${i}` })
        assert.strictEqual(response.status, 200)
      }
      // One socket (the per-host cap is 1 here), resolved and checked once.
      assert.strictEqual(lookups.get("billing.internal"), 1)
      assert.strictEqual(server.connections(), 1)
      assert.deepStrictEqual(server.received.map((r) => r.url), ["/n/0", "/n/1", "/n/2", "/n/3", "/n/4"])
    }).pipe(Effect.provide(egress({ names: { "billing.internal": "127.0.0.1" }, lookups, connectionsPerHost: 1 })))
  })

  it.live("with the default pool, warm sockets serve further calls without lookups", () => {
    const lookups = new Map<string, number>()
    return Effect.gen(function*() {
      const server = yield* statusServer(ok)
      const connection = {
        id: "internal",
        baseUrl: `http://billing.internal:${server.port}`,
        allow: ["billing.internal"]
      }
      for (let i = 0; i < 3; i++) yield* call(connection, { method: "GET", path: "/" })
      const warmLookups = lookups.get("billing.internal")
      const warmSockets = server.connections()
      for (let i = 0; i < 20; i++) yield* call(connection, { method: "GET", path: "/" })
      assert.strictEqual(lookups.get("billing.internal"), warmLookups)
      assert.strictEqual(server.connections(), warmSockets)
      assert.isAtMost(warmSockets, 2)
    }).pipe(Effect.provide(egress({ names: { "billing.internal": "127.0.0.1" }, lookups })))
  })

  it.live("an allow-listed CIDR admits the resolved address; another connection without it is refused", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(ok)
      const baseUrl = `http://svc.test:${server.port}`
      const trusted = yield* call({ id: "trusted", baseUrl, allow: trustLoopback }, { method: "GET", path: "/" })
      assert.strictEqual(trusted.status, 200)
      // Same origin, no allow-list: its own pool, so the trusted socket is not reused.
      const error = yield* Effect.flip(call({ id: "untrusted", baseUrl }, { method: "GET", path: "/" }))
      assert.strictEqual(error._tag, "EgressRefused")
      assert.strictEqual(server.received.length, 1)
    }).pipe(Effect.provide(egress({ names: { "svc.test": "127.0.0.1" } }))))

  it.live("an unknown name is a transport failure, not a refusal", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        call({ id: "c", baseUrl: "http://nowhere.test", retry: { retries: 0 } }, { method: "GET", path: "/" })
      )
      assert.strictEqual(error._tag, "DownstreamUnavailable")
      if (error._tag === "DownstreamUnavailable") assert.include(error.reason, "ENOTFOUND")
    }).pipe(Effect.provide(egress())))

  it.live("a request path cannot move the call to another host or out of the base path", () =>
    Effect.gen(function*() {
      const server = yield* statusServer(ok)
      const connection = { id: "c", baseUrl: `${server.origin}/api`, allow: trustLoopback }
      for (const path of ["@evil.test/x", "/../admin", "/%2e%2E/admin", "/x/..\\..\\admin"]) {
        const error = yield* Effect.flip(call(connection, { method: "GET", path }))
        assert.strictEqual(error._tag, "InvalidEgressConfig", path)
      }
      const response = yield* call(connection, { method: "GET", path: "//evil.test/x", query: { q: "1" } })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(server.received[0]?.url, "/api//evil.test/x?q=1")
    }).pipe(Effect.provide(egress())))

  it.live("the system resolver (layerMemory): an allow-listed localhost works end to end", () =>
    Effect.gen(function*() {
      const answers = yield* Effect.flatMap(Effect.service(Resolver), (resolver) => resolver.resolve("localhost")).pipe(
        Effect.provide(Resolver.layerSystem)
      )
      assert.isTrue(answers.some((a) => a.address === "127.0.0.1" || a.address === "::1"))
      const server = yield* statusServer(ok)
      const response = yield* call(
        { id: "local", baseUrl: `http://localhost:${server.port}`, allow: ["localhost"] },
        { method: "GET", path: "/" }
      )
      assert.strictEqual(response.status, 200)
      const refused = yield* Effect.flip(
        call({ id: "l", baseUrl: `http://localhost:${server.port}` }, { method: "GET", path: "/" })
      )
      assert.strictEqual(refused._tag, "EgressRefused")
    }).pipe(Effect.provide(layerMemory()), Effect.orDie))
})
