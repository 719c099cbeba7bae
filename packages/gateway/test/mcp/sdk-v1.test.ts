/**
 * The official TypeScript SDK v1 (2025 revisions) against the endpoint:
 * Streamable HTTP with sessions, and the deprecated HTTP+SSE transport.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Ref } from "effect"
import { MANY, mcpUrl, PAGE_SIZE, Probe, serverLayer } from "./fixtures.ts"

const connect = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "sdk-v1-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(url))
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client, transport }) =>
      Effect.promise(async () => {
        await transport.terminateSession().catch(() => {})
        await client.close()
      })
  )

const waitFor = <A>(ref: Ref.Ref<ReadonlyArray<A>>, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      if ((yield* Ref.get(ref)).length >= count) return
      yield* Effect.sleep("20 millis")
    }
  })

layer(serverLayer(), { excludeTestServices: true })("SDK v1 (2025 revisions)", (it) => {
  describe("Streamable HTTP", () => {
    it.effect("initializes a session and negotiates 2025-11-25", () =>
      Effect.scoped(Effect.gen(function*() {
        const { client, transport } = yield* connect(yield* mcpUrl)
        assert.isString(transport.sessionId)
        assert.strictEqual(transport.protocolVersion, "2025-11-25")
        assert.deepStrictEqual(client.getServerVersion(), { name: "janus-test", version: "0.0.1" })
        assert.isTrue(client.getServerCapabilities()?.tools?.listChanged)
      })))

    it.effect("lists tools page by page", () =>
      Effect.scoped(Effect.gen(function*() {
        const { client } = yield* connect(yield* mcpUrl)
        const names: Array<string> = []
        let cursor: string | undefined
        do {
          const page = yield* Effect.promise(() => client.listTools(cursor === undefined ? {} : { cursor }))
          assert.isAtMost(page.tools.length, PAGE_SIZE)
          names.push(...page.tools.map((tool) => tool.name))
          cursor = page.nextCursor
        } while (cursor !== undefined)
        assert.deepStrictEqual(names, [...names].sort())
        assert.strictEqual(names.filter((name) => name.startsWith("many_")).length, MANY)
        assert.include(names, "region_echo")
      })))

    it.effect("calls tools; errors of the call are JSON-RPC errors", () =>
      Effect.scoped(Effect.gen(function*() {
        const { client } = yield* connect(yield* mcpUrl)
        const result = yield* Effect.promise(() => client.callTool({ name: "echo", arguments: { text: "hello" } }))
        assert.deepStrictEqual(result.content, [{ type: "text", text: "hello" }])
        const unknown = yield* Effect.promise(() =>
          client.callTool({ name: "nope", arguments: {} }).then(() => undefined, (error: Error) => error)
        )
        assert.include(unknown?.message, "Unknown tool 'nope'")
      })))

    it.effect("reports progress", () =>
      Effect.scoped(Effect.gen(function*() {
        const { client } = yield* connect(yield* mcpUrl)
        const progress: Array<{ progress: number; total?: number | undefined; message?: string | undefined }> = []
        const result = yield* Effect.promise(() =>
          client.callTool({ name: "slow_progress", arguments: { steps: 4, delayMs: 10 } }, undefined, {
            onprogress: (p) => progress.push(p)
          })
        )
        assert.deepStrictEqual(progress.map((p) => p.progress), [1, 2, 3, 4])
        assert.strictEqual(progress[0]!.total, 4)
        assert.strictEqual(progress[0]!.message, "step 1")
        assert.deepStrictEqual(result.content, [{ type: "text", text: "done after 4 steps" }])
      })))

    it.effect("cancels a call with notifications/cancelled", () =>
      Effect.scoped(Effect.gen(function*() {
        const probe = yield* Probe
        const before = (yield* Ref.get(probe.aborted)).length
        const { client } = yield* connect(yield* mcpUrl)
        const controller = new AbortController()
        const call = Effect.promise(() =>
          client.callTool({ name: "wait_for_cancel", arguments: {} }, undefined, { signal: controller.signal }).then(
            () => "completed",
            (error: Error) => error.name
          )
        )
        const [outcome] = yield* Effect.all([
          call,
          Effect.gen(function*() {
            yield* Effect.sleep("150 millis")
            controller.abort("user cancelled")
          })
        ], { concurrency: "unbounded" })
        assert.notStrictEqual(outcome, "completed")
        yield* waitFor(probe.aborted, before + 1)
        assert.isAbove((yield* Ref.get(probe.aborted)).length, before)
      })))

    it.effect("receives list_changed on the GET stream", () =>
      Effect.scoped(Effect.gen(function*() {
        const { client } = yield* connect(yield* mcpUrl)
        const changes = yield* Ref.make<ReadonlyArray<unknown>>([])
        client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) => {
          Effect.runSync(Ref.update(changes, (all) => [...all, notification]))
        })
        yield* Effect.sleep("200 millis") // the SDK opens the GET stream after initialized
        yield* Effect.promise(() => client.callTool({ name: "test_trigger_tool_change", arguments: {} }))
        yield* waitFor(changes, 1)
        assert.isAtLeast((yield* Ref.get(changes)).length, 1)
      })))
  })

  describe("deprecated HTTP+SSE", () => {
    it.effect("lists, calls with progress, and cancels over /sse + /messages", () =>
      Effect.scoped(Effect.gen(function*() {
        const url = new URL("/sse", yield* mcpUrl)
        const { client } = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new Client({ name: "sdk-v1-legacy", version: "1.0.0" })
            await client.connect(new SSEClientTransport(url))
            return { client }
          }),
          ({ client }) => Effect.promise(() => client.close())
        )
        const tools = yield* Effect.promise(() => client.listTools())
        assert.strictEqual(tools.tools.length, PAGE_SIZE)
        assert.isString(tools.nextCursor)
        const progress: Array<number> = []
        const result = yield* Effect.promise(() =>
          client.callTool({ name: "slow_progress", arguments: { steps: 2, delayMs: 5 } }, undefined, {
            onprogress: (p) => progress.push(p.progress)
          })
        )
        assert.deepStrictEqual(progress, [1, 2])
        assert.deepStrictEqual(result.content, [{ type: "text", text: "done after 2 steps" }])
        const probe = yield* Probe
        const before = (yield* Ref.get(probe.aborted)).length
        const controller = new AbortController()
        const call = Effect.promise(() =>
          client.callTool({ name: "wait_for_cancel", arguments: {} }, undefined, { signal: controller.signal }).then(
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
  })
})
