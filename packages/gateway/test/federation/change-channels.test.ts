/**
 * Change channels never decide health (issue #17): three 2026-07-28
 * upstreams (official SDK v2 servers, `./upstreams.ts` `v2Listen`) whose
 * `subscriptions/listen` answers newline-delimited JSON (200
 * `application/json`, one frame per line), HTTP 500, and a stream that
 * closes at once, behind a whole gateway with a 2025 client (SDK v1) on
 * `/mcp`.
 *
 * Expected: all three are healthy with their tools listed; `/api/v1/upstreams`
 * shows the newline-delimited channel open and the two others closed (their
 * lists polled every `pollIntervalMs`, 1 s here); a tool added on each
 * reaches the client (a `tools/list_changed`, then the tool in `tools/list`)
 * within the poll interval plus one list round-trip; and polls that find
 * nothing new send the client nothing. The same for their prompts and
 * resources: listed, and a prompt and a resource added on each reach the
 * client (`prompts/list_changed`, `resources/list_changed`, then the new
 * item listed and readable) within the poll interval.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, Connections } from "@janus/storage"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"
import { connectCounting, waitUntil } from "./support.ts"
import * as Upstreams from "./upstreams.ts"

type ListenUpstream = Effect.Success<ReturnType<typeof start>>
const start = (mode: Upstreams.ListenMode) => Upstreams.scoped(() => Upstreams.v2Listen(mode))

class Servers extends Context.Service<Servers, {
  readonly ndjson: ListenUpstream
  readonly status500: ListenUpstream
  readonly closeAtOnce: ListenUpstream
}>()("test/federation/ChangeChannelServers") {}

const POLL_MS = 1_000

const ServersLive = Layer.effect(
  Servers,
  Effect.gen(function*() {
    return {
      ndjson: yield* start("ndjson"),
      status500: yield* start("status500"),
      closeAtOnce: yield* start("closeAtOnce")
    }
  })
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const servers = yield* Servers
  const connections = yield* Connections
  for (const name of ["ndjson", "status500", "closeAtOnce"] as const) {
    yield* connections.create({
      kind: "mcp",
      name,
      url: servers[name].url,
      egressAllowList: ["127.0.0.1"],
      pollIntervalMs: POLL_MS
    })
  }
}))

const TestLayer = Seed.pipe(Layer.provideMerge(GatewayTesting.layer()), Layer.provideMerge(ServersLive))

const connect = connectCounting("channel-test")

interface Status {
  readonly connection: string
  readonly state: string
  readonly toolCount: number
  readonly changeChannel: string | null
  readonly changeChannelDetail: string | null
  readonly pollIntervalMs: number
  readonly lastError: string | null
}

const upstreams = Effect.gen(function*() {
  const token = Redacted.value((yield* (yield* AdminTokens).create({ name: `studio-${Math.random()}` })).plaintext)
  const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/api/v1/upstreams", base)))
  return yield* Effect.promise(async () => {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    const body = await response.json() as { items: Array<Status> }
    return Object.fromEntries(body.items.map((i) => [i.connection, i]))
  })
}).pipe(Effect.orDie)

layer(TestLayer, { timeout: 90_000, excludeTestServices: true })("change channels never decide health", (it) => {
  it.effect("ndjson, HTTP 500 and closed-at-once listen streams: healthy, listed, and their changes reach a client", () =>
    Effect.scoped(Effect.gen(function*() {
      const servers = yield* Servers
      const { changed, client } = yield* connect
      const names = Effect.promise(() => client.listTools()).pipe(Effect.map((r) => r.tools.map((t) => t.name)))
      yield* waitUntil(
        Effect.map(names, (n) => ["ndjson/echo", "status500/echo", "closeAtOnce/echo"].every((t) => n.includes(t))),
        "the three upstreams' tools"
      )
      // the listen variants were each tried, and a failed channel is retried (with backoff), not given up
      yield* waitUntil(Effect.sync(() => servers.status500.listens() >= 2), "listen tried again after its 500")
      const statuses = yield* upstreams
      for (const name of ["ndjson", "status500", "closeAtOnce"]) {
        assert.strictEqual(statuses[name]!.state, "healthy", JSON.stringify(statuses[name]))
        assert.strictEqual(statuses[name]!.toolCount, 1)
        assert.isNull(statuses[name]!.lastError)
        assert.strictEqual(statuses[name]!.pollIntervalMs, POLL_MS)
      }
      assert.strictEqual(statuses.ndjson!.changeChannel, "open")
      assert.strictEqual(statuses.status500!.changeChannel, "closed")
      assert.include(statuses.status500!.changeChannelDetail, "HTTP 500")
      assert.strictEqual(statuses.closeAtOnce!.changeChannel, "closed")
      assert.include(statuses.closeAtOnce!.changeChannelDetail, "before acknowledging")

      // polls that find the same lists send nothing to the client
      yield* Effect.sleep("500 millis")
      const quiet = changed.count
      yield* Effect.sleep(`${3 * POLL_MS} millis`)
      assert.strictEqual(changed.count, quiet, "list_changed without a change")

      // a tool added on each reaches the client: pushed on the newline-delimited channel, polled on the others
      for (const name of ["ndjson", "status500", "closeAtOnce"] as const) {
        const before = changed.count
        const started = Date.now()
        servers[name].addTool(`late_${name}`)
        yield* waitUntil(Effect.sync(() => changed.count > before), `list_changed after ${name} added a tool`, 10)
        const elapsed = Date.now() - started
        assert.include(yield* names, `${name}/late_${name}`)
        // the poll interval, plus a tools/list round trip and the notification to the client
        assert.isBelow(elapsed, POLL_MS + 1_500, `${name}: ${elapsed} ms`)
        const called = yield* Effect.promise(() => client.callTool({ name: `${name}/late_${name}`, arguments: {} }))
        assert.deepStrictEqual(called.content, [{ type: "text", text: `late_${name}` }])
      }
      for (const name of ["ndjson", "status500", "closeAtOnce"]) {
        assert.strictEqual((yield* upstreams)[name]!.state, "healthy")
      }
    })))

  it.effect("their prompts and resources stay listed, and a prompt and a resource added on each reach the client", () =>
    Effect.scoped(Effect.gen(function*() {
      const servers = yield* Servers
      const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base)))
      const changed = { prompts: 0, resources: 0 }
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new ClientV1({ name: "features-channel-test", version: "1" })
          client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
            changed.prompts++
          })
          client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
            changed.resources++
          })
          await client.connect(new StreamableHTTPClientTransport(url))
          return client
        }),
        (client) => Effect.promise(() => client.close())
      )
      const prompts = Effect.promise(() => client.listPrompts()).pipe(Effect.map((r) => r.prompts.map((p) => p.name)))
      const resources = Effect.promise(() => client.listResources()).pipe(
        Effect.map((r) => r.resources.map((p) => p.uri))
      )
      const modes = ["ndjson", "status500", "closeAtOnce"] as const
      yield* waitUntil(
        Effect.map(prompts, (n) => modes.every((m) => n.includes(`${m}/greet`))),
        "the three upstreams' prompts"
      )
      assert.includeMembers(yield* resources, modes.map((m) => `test://${m}/static`))
      for (const mode of modes) {
        const read = yield* Effect.promise(() => client.readResource({ uri: `test://${mode}/static` }))
        assert.deepStrictEqual(read.contents, [{
          uri: `test://${mode}/static`,
          mimeType: "text/plain",
          text: `test://${mode}/static of ${mode}`
        }])
      }
      // the GET stream (where list changes arrive) is open once the client has listed
      yield* Effect.sleep("500 millis")
      for (const mode of modes) {
        const before = { ...changed }
        const started = Date.now()
        servers[mode].addPrompt(`late_${mode}`)
        servers[mode].addResource(`test://${mode}/late`)
        yield* waitUntil(
          Effect.sync(() => changed.prompts > before.prompts && changed.resources > before.resources),
          `prompts and resources list_changed after ${mode} added some`,
          10
        )
        const elapsed = Date.now() - started
        assert.isBelow(elapsed, POLL_MS + 1_500, `${mode}: ${elapsed} ms`)
        assert.include(yield* prompts, `${mode}/late_${mode}`)
        assert.include(yield* resources, `test://${mode}/late`)
        const got = yield* Effect.promise(() => client.getPrompt({ name: `${mode}/late_${mode}` }))
        assert.deepStrictEqual(got.messages, [{
          role: "user",
          content: { type: "text", text: `late_${mode} from ${mode}` }
        }])
      }
      const statuses = yield* upstreams
      for (const mode of modes) assert.strictEqual(statuses[mode]!.state, "healthy")
    })))
})
