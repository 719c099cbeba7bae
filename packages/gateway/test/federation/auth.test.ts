/**
 * Janus's credentials towards upstream MCP servers: a static bearer token
 * from a secret, and OAuth client credentials against a loopback
 * authorization server (token cached until expiry). The client's own
 * credential never reaches an upstream.
 */
import { assert, layer } from "@effect/vitest"
import { Connections, Secrets } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { EgressPolicy } from "../../src/egress/EgressPolicy.ts"
import { FederatedCatalog, UpstreamHealth } from "../../src/federation/FederatedCatalog.ts"
import { anonymous } from "../../src/mcp/Caller.ts"
import type { CallToolResult } from "../../src/mcp/ToolCatalog.ts"
import { fast, waitUntil } from "./support.ts"
import * as Upstreams from "./upstreams.ts"

class Servers extends Context.Service<Servers, {
  readonly bearer: Upstreams.V1Upstream
  readonly oauth: Upstreams.V2Upstream
  readonly token: Effect.Success<ReturnType<typeof startToken>>
}>()("test/federation/AuthServers") {}

const startToken = () =>
  Upstreams.scoped(() =>
    Upstreams.tokenEndpoint({ clientId: "janus", clientSecret: "client-s3cret", token: "oauth-tok", expiresIn: 3600 })
  )

const ServersLive = Layer.effect(
  Servers,
  Effect.gen(function*() {
    return {
      bearer: yield* Upstreams.scoped(() => Upstreams.v1StreamableHttp({ requireToken: "static-tok" })),
      oauth: yield* Upstreams.scoped(() => Upstreams.v2Modern({ requireToken: "oauth-tok" })),
      token: yield* startToken()
    }
  })
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const connections = yield* Connections
  const secrets = yield* Secrets
  const servers = yield* Servers
  yield* secrets.set("static-token", Redacted.make("static-tok"))
  yield* secrets.set("oauth-client", Redacted.make("client-s3cret"))
  const allow = ["127.0.0.1"]
  yield* connections.create({
    kind: "mcp",
    name: "bearer",
    url: servers.bearer.url,
    auth: { scheme: "bearer", secret: "static-token" },
    egressAllowList: allow
  })
  // OAuth client credentials as stored (admin API / storage), against the loopback token endpoint
  yield* connections.create({
    kind: "mcp",
    name: "oauth",
    url: servers.oauth.url,
    auth: {
      scheme: "oauth-client-credentials",
      tokenUrl: servers.token.url,
      clientId: "janus",
      secret: "oauth-client",
      scope: "tools"
    },
    egressAllowList: allow
  })
  yield* connections.create({
    kind: "mcp",
    name: "nosecret",
    url: servers.bearer.url,
    auth: { scheme: "bearer", secret: "missing-secret" },
    egressAllowList: allow
  })
}))

const Federation = FederatedCatalog.layer(fast)

const TestLayer = Federation.pipe(
  Layer.provideMerge(Seed),
  Layer.provideMerge(ServersLive),
  Layer.provideMerge(EgressPolicy.layerDefault),
  Layer.provideMerge(StorageTesting.layerMemory())
)

const call = (name: string, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    const outcome = yield* (yield* FederatedCatalog).call(anonymous, {
      name,
      arguments: args,
      signal: new AbortController().signal,
      progress: Option.none()
    })
    return ((outcome as CallToolResult).content[0] as { text: string }).text
  })

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("upstream auth", (it) => {
  it.effect("sends a bearer token from a secret, and an OAuth client-credentials token fetched once", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      assert.strictEqual(yield* call("bearer/echo", { text: "static" }), "static")
      for (let i = 0; i < 3; i++) assert.strictEqual(yield* call("oauth/echo", { text: `o${i}` }), `o${i}`)
      assert.strictEqual(servers.token.requests.length, 1)
      const form = servers.token.requests[0]!
      assert.strictEqual(form.get("grant_type"), "client_credentials")
      assert.strictEqual(form.get("scope"), "tools")
      assert.strictEqual(form.get("resource"), servers.oauth.url)
      // only Janus's own credentials ever reached the upstreams
      assert.deepStrictEqual([...new Set(servers.oauth.observed.authorization)], ["Bearer oauth-tok"])
      assert.deepStrictEqual([...new Set(servers.bearer.observed.authorization)], ["Bearer static-tok"])
    }))

  it.effect("an upstream whose secret is missing is unhealthy, with the reason", () =>
    Effect.gen(function*() {
      const health = yield* UpstreamHealth
      yield* waitUntil(
        Effect.map(health.get("nosecret"), (s) => Option.isSome(s) && s.value.state === "unhealthy"),
        "nosecret to be unhealthy"
      )
      const status = Option.getOrThrow(yield* health.get("nosecret"))
      assert.include(status.lastError, "missing-secret")
      assert.strictEqual(status.toolCount, 0)
    }))
})
