/**
 * The official TypeScript SDK v2 client pinned to protocol 2026-07-28
 * (stateless: `server/discover`, per-request `_meta`, standard headers).
 */
import { assert, layer } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect, Ref } from "effect"
import { MANY, mcpUrl, PAGE_SIZE, Probe, serverLayer } from "./fixtures.ts"

const connect = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client(
        { name: "sdk-v2-test", version: "2.0.0" },
        { versionNegotiation: { mode: { pin: "2026-07-28" } } }
      )
      await client.connect(new StreamableHTTPClientTransport(new URL(url)))
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

const waitFor = <A>(ref: Ref.Ref<ReadonlyArray<A>>, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      if ((yield* Ref.get(ref)).length >= count) return
      yield* Effect.sleep("20 millis")
    }
  })

layer(serverLayer(), { excludeTestServices: true })("SDK v2 (2026-07-28)", (it) => {
  it.effect("negotiates 2026-07-28 through server/discover", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connect(yield* mcpUrl)
      assert.strictEqual(client.getNegotiatedProtocolVersion(), "2026-07-28")
      assert.strictEqual(client.getProtocolEra(), "modern")
      const discovered = yield* Effect.promise(() => client.discover())
      assert.include(discovered.supportedVersions, "2026-07-28")
      assert.isTrue(discovered.capabilities.tools?.listChanged)
    })))

  it.effect("lists every page, and a single page with a cursor", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connect(yield* mcpUrl)
      const all = yield* Effect.promise(() => client.listTools())
      const names = all.tools.map((tool) => tool.name)
      assert.deepStrictEqual(names, [...names].sort())
      assert.strictEqual(names.filter((name) => name.startsWith("many_")).length, MANY)
      assert.isAbove(names.length, 2 * PAGE_SIZE)
      const first = yield* Effect.promise(() =>
        client.request({ method: "tools/list", params: {} }) as Promise<
          { tools: Array<{ name: string }>; nextCursor?: string }
        >
      )
      assert.strictEqual(first.tools.length, PAGE_SIZE)
      const second = yield* Effect.promise(() => client.listTools({ cursor: first.nextCursor! }))
      assert.deepStrictEqual(second.tools.map((tool) => tool.name), names.slice(PAGE_SIZE, 2 * PAGE_SIZE))
    })))

  it.effect("calls tools, mirroring x-mcp-header arguments into Mcp-Param headers", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connect(yield* mcpUrl)
      const echo = yield* Effect.promise(() => client.callTool({ name: "echo", arguments: { text: "modern" } }))
      assert.deepStrictEqual(echo.content, [{ type: "text", text: "modern" }])
      yield* Effect.promise(() => client.listTools()) // the client mirrors headers from its cached tools/list
      const region = yield* Effect.promise(() =>
        client.callTool({ name: "region_echo", arguments: { region: "eu-west1", count: 2 } })
      )
      assert.deepStrictEqual(region.content, [{ type: "text", text: "region eu-west1" }])
    })))

  it.effect("streams progress on the response stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connect(yield* mcpUrl)
      const progress: Array<number> = []
      const result = yield* Effect.promise(() =>
        client.callTool({ name: "slow_progress", arguments: { steps: 3, delayMs: 20 } }, {
          onprogress: (p) => progress.push(p.progress)
        })
      )
      assert.deepStrictEqual(progress, [1, 2, 3])
      assert.deepStrictEqual(result.content, [{ type: "text", text: "done after 3 steps" }])
    })))

  it.effect("cancels by closing the response stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const probe = yield* Probe
      const before = (yield* Ref.get(probe.aborted)).length
      const client = yield* connect(yield* mcpUrl)
      const controller = new AbortController()
      const call = Effect.promise(() =>
        client.callTool({ name: "wait_for_cancel", arguments: {} }, { signal: controller.signal }).then(
          () => "completed",
          () => "rejected"
        )
      )
      const [outcome] = yield* Effect.all([call, Effect.delay(Effect.sync(() => controller.abort()), "150 millis")], {
        concurrency: "unbounded"
      })
      assert.strictEqual(outcome, "rejected")
      yield* waitFor(probe.aborted, before + 1)
      assert.isAbove((yield* Ref.get(probe.aborted)).length, before)
    })))

  it.effect("receives list_changed on a subscriptions/listen stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connect(yield* mcpUrl)
      const changes = yield* Ref.make<ReadonlyArray<unknown>>([])
      client.setNotificationHandler("notifications/tools/list_changed", (notification) => {
        Effect.runSync(Ref.update(changes, (all) => [...all, notification]))
      })
      const subscription = yield* Effect.acquireRelease(
        Effect.promise(() => client.listen({ toolsListChanged: true, promptsListChanged: true })),
        (subscription) => Effect.promise(() => subscription.close())
      )
      assert.deepStrictEqual(subscription.honoredFilter, { toolsListChanged: true })
      yield* Effect.promise(() => client.callTool({ name: "test_trigger_tool_change", arguments: {} }))
      yield* waitFor(changes, 1)
      assert.isAtLeast((yield* Ref.get(changes)).length, 1)
    })))
})
