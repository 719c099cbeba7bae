/**
 * Resource subscriptions through Janus (issue #17), one gateway (anonymous
 * loopback mode) in front of two upstreams built with the official SDKs:
 *
 * - `old`: SDK v1, 2025 sessions, `resources.subscribe`; it records every
 *   `resources/subscribe` and `resources/unsubscribe` it is sent, and its
 *   tool `touch_old` announces that `old://watched` changed;
 * - `new`: SDK v2, 2026-07-28 only, `resources.subscribe`; it records the
 *   `subscriptions/listen` streams open with `resourceSubscriptions`, and
 *   the test publishes `new://watched`'s updates on its handler.
 *
 * Expected:
 * - two 2025 sessions subscribed to one URI make one upstream subscription;
 *   when both sessions end (DELETE) without unsubscribing, the upstream is
 *   unsubscribed once, after the last;
 * - an HTTP+SSE session's subscription is let go when its stream closes;
 * - a 2025 client (SDK v1) subscribed to a URI of the 2026-07-28 upstream
 *   makes Janus listen for it upstream (`resourceSubscriptions`), hears its
 *   updates on its session, and the upstream listen ends on unsubscribe;
 * - a 2026-07-28 client's `subscriptions/listen` with `resourceSubscriptions`
 *   is acknowledged with them, hears the updates of both upstreams' URIs, and
 *   holds the upstream subscriptions only while it is open; one through a
 *   virtual server without those upstreams is acknowledged without them and
 *   subscribes nothing upstream;
 * - a view without an upstream never hears of that upstream's resources,
 *   even under a URI the view routes to another upstream;
 * - when the 2026-07-28 upstream goes away and comes back (a new upstream
 *   session), the held URI is listened for again on the new session and its
 *   updates still reach the subscribed client.
 */
import { assert, layer } from "@effect/vitest"
import { Connections, VirtualServers } from "@janus/storage"
import { toNodeHandler } from "@modelcontextprotocol/node"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js"
import {
  ResourceUpdatedNotificationSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { createMcpHandler, McpServer as McpServerV2 } from "@modelcontextprotocol/server"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import type { ServerResponse } from "node:http"
import * as GatewayTesting from "../../src/testing.ts"
import { meta, post, STATELESS } from "../mcp/http-client.ts"
import { waitUntil } from "./support.ts"
import { serveMcp, v1Sessions } from "./upstreams.ts"

interface Observed {
  readonly subscribed: Array<string>
  readonly unsubscribed: Array<string>
  /** `resourceSubscriptions` of the upstream listens open now. */
  readonly watching: Array<string>
}

class Upstreams extends Context.Service<Upstreams, {
  readonly old: { readonly url: string }
  readonly new: {
    readonly url: string
    readonly updated: (uri: string) => void
    /** Down: every request's connection is dropped (open streams too); up again: served. */
    readonly down: (down: boolean) => void
    /** Requests that arrived while down. */
    readonly refused: () => number
  }
  readonly observed: Observed
}>()("test/federation/subscriptions/Upstreams") {}

const startOld = (observed: Observed) => {
  const makeServer = () => {
    const server = new McpServerV1(
      { name: "old", version: "1.0.0" },
      { capabilities: { tools: {}, resources: { subscribe: true } } }
    )
    server.registerResource("watched", "old://watched", { mimeType: "text/plain" }, async (uri) => ({
      contents: [{ uri: uri.href, mimeType: "text/plain", text: "old" }]
    }))
    server.registerTool("touch_old", { description: "announces that old://watched changed" }, async () => {
      await server.server.sendResourceUpdated({ uri: "old://watched" })
      return { content: [{ type: "text", text: "touched" }] }
    })
    server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
      observed.subscribed.push(request.params.uri)
      return {}
    })
    server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
      observed.unsubscribed.push(request.params.uri)
      return {}
    })
    return server
  }
  const { handle, sessions } = v1Sessions(makeServer)
  return serveMcp(handle, () => sessions.clear())
}

const startNew = async (observed: Observed) => {
  const factory = () => {
    const server = new McpServerV2({ name: "new", version: "1.0.0" }, {
      capabilities: { resources: { subscribe: true, listChanged: true } }
    })
    server.registerResource("watched", "new://watched", { mimeType: "text/plain" }, async (uri) => ({
      contents: [{ uri: uri.href, mimeType: "text/plain", text: "new" }]
    }))
    return server
  }
  const handler = createMcpHandler(factory, { legacy: "reject", keepAliveMs: 1_000 })
  const node = toNodeHandler(handler)
  let down = false
  let refused = 0
  const open = new Set<ServerResponse>()
  const served = await serveMcp(async (req, res) => {
    if (down) {
      refused++
      req.socket.destroy()
      return
    }
    open.add(res)
    res.on("close", () => open.delete(res))
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks)
    let uris: Array<string> = []
    try {
      const parsed = JSON.parse(body.toString("utf8"))
      if (parsed?.method === "subscriptions/listen") uris = parsed.params?.notifications?.resourceSubscriptions ?? []
    } catch {
      // not JSON: the SDK answers it
    }
    // watched from the SDK's first write on the listen (its acknowledgement), not from the request's arrival:
    // an update sent before the SDK has taken the listen reaches nobody, and a loaded machine widens that gap
    let watched = false
    if (uris.length > 0) {
      const write = res.write.bind(res) as (...args: Array<unknown>) => boolean
      res.write = ((...args: Array<unknown>) => {
        if (!watched) {
          watched = true
          for (const uri of uris) observed.watching.push(uri)
        }
        return write(...args)
      }) as typeof res.write
    }
    res.on("close", () => {
      if (watched) { for (const uri of uris) observed.watching.splice(observed.watching.indexOf(uri), 1) }
    })
    const replay = {
      method: req.method,
      url: req.url,
      headers: req.headers,
      async *[Symbol.asyncIterator]() {
        if (body.length > 0) yield body
      }
    }
    return node(replay as never, res)
  })
  return {
    ...served,
    updated: (uri: string) => handler.notify.resourceUpdated(uri),
    down: (value: boolean) => {
      down = value
      if (value) { for (const res of open) res.socket?.destroy() }
    },
    refused: () => refused
  }
}

const UpstreamsLive = Layer.effect(
  Upstreams,
  Effect.gen(function*() {
    const observed: Observed = { subscribed: [], unsubscribed: [], watching: [] }
    const old = yield* Effect.acquireRelease(Effect.promise(() => startOld(observed)), (u) => Effect.promise(u.stop))
    const fresh = yield* Effect.acquireRelease(Effect.promise(() => startNew(observed)), (u) => Effect.promise(u.stop))
    return { old, new: fresh, observed }
  })
)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const upstreams = yield* Upstreams
  for (const name of ["old", "new"] as const) {
    yield* (yield* Connections).create({
      kind: "mcp",
      name,
      url: upstreams[name].url,
      egressAllowList: ["127.0.0.1"],
      timeoutMs: 10_000,
      toolPrefix: "",
      // lost soon after it goes down (its lists fail), for the reconnection test
      ...(name === "new" ? { pollIntervalMs: 1_000 } : {})
    })
  }
  // a view with a tool of old and none of its resources
  yield* (yield* VirtualServers).create({ name: "empty", tools: ["old/touch_old"] })
  // a view with everything of old and nothing of new
  yield* (yield* VirtualServers).create({ name: "oldonly", tools: ["old/*"] })
}))

const TestLayer = Seed.pipe(
  Layer.provideMerge(GatewayTesting.layer({})),
  Layer.provideMerge(UpstreamsLive)
)

const urlOf = (path: string) => HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base).href))

/** A raw 2025-11-25 session: requests, and DELETE. */
const session = Effect.gen(function*() {
  const url = yield* urlOf("/mcp")
  const init = yield* post(url, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "subscriber", version: "1" } }
  })
  assert.strictEqual(init.status, 200, init.text)
  const headers = { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-11-25" }
  let id = 1
  const rpc = (method: string, params: Record<string, unknown> = {}) =>
    Effect.map(post(url, { jsonrpc: "2.0", id: id++, method, params }, headers), (reply) => {
      const body = reply.body ?? JSON.parse(reply.events.at(-1)?.data ?? "{}")
      return body as { result?: any; error?: { code: number; message: string } }
    })
  const end = Effect.promise(() => fetch(url, { method: "DELETE", headers }).then((r) => r.status))
  return { rpc, end }
})

/** Both upstreams' resources are listed. */
const ready = Effect.gen(function*() {
  const s = yield* session
  yield* waitUntil(
    Effect.map(s.rpc("resources/list"), (r) => {
      const uris = (r.result?.resources ?? []).map((x: { uri: string }) => x.uri)
      return uris.includes("old://watched") && uris.includes("new://watched")
    }),
    "both upstreams' resources"
  )
})

const sdkClient = (transport: "streamable" | "sse", updates: Array<string>) =>
  Effect.gen(function*() {
    const url = new URL(yield* urlOf(transport === "sse" ? "/sse" : "/mcp"))
    return yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new ClientV1({ name: `subscriber-${transport}`, version: "1" })
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
          updates.push(n.params.uri)
        })
        await client.connect(transport === "sse" ? new SSEClientTransport(url) : new StreamableHTTPClientTransport(url))
        return client
      }),
      (client) => Effect.promise(() => client.close())
    )
  })

/** A 2026-07-28 `subscriptions/listen` held open: the JSON-RPC messages it delivered so far; closed with the scope. */
const listen = (uris: ReadonlyArray<string>, path = "/mcp") =>
  Effect.gen(function*() {
    const url = yield* urlOf(path)
    const messages: Array<any> = []
    const abort = new AbortController()
    yield* Effect.addFinalizer(() => Effect.sync(() => abort.abort()))
    const params = { notifications: { resourceSubscriptions: uris }, _meta: meta() }
    const response = yield* Effect.promise(() =>
      fetch(url, {
        method: "POST",
        signal: abort.signal,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": STATELESS,
          "mcp-method": "subscriptions/listen"
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: "listen-1", method: "subscriptions/listen", params })
      })
    )
    assert.strictEqual(response.status, 200)
    void (async () => {
      const decoder = new TextDecoder()
      let buffer = ""
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        const lines = buffer.split("\n")
        buffer = lines.pop()!
        for (const line of lines) if (line.startsWith("data:")) messages.push(JSON.parse(line.slice(5)))
      }
    })().catch(() => {})
    return messages
  })

const count = (list: ReadonlyArray<string>, uri: string) => list.filter((u) => u === uri).length

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("resource subscriptions through Janus", (it) => {
  it.effect("two 2025 sessions share one upstream subscription, released when the last session ends", () =>
    Effect.gen(function*() {
      yield* ready
      const { observed } = yield* Upstreams
      const a = yield* session
      const b = yield* session
      assert.deepStrictEqual((yield* a.rpc("resources/subscribe", { uri: "old://watched" })).result, {})
      assert.deepStrictEqual((yield* b.rpc("resources/subscribe", { uri: "old://watched" })).result, {})
      // subscribing again in one session holds nothing more
      yield* b.rpc("resources/subscribe", { uri: "old://watched" })
      assert.strictEqual(count(observed.subscribed, "old://watched"), 1)
      assert.strictEqual(yield* a.end, 204)
      yield* Effect.sleep("300 millis")
      assert.strictEqual(count(observed.unsubscribed, "old://watched"), 0)
      assert.strictEqual(yield* b.end, 204)
      yield* waitUntil(Effect.sync(() => count(observed.unsubscribed, "old://watched") === 1), "upstream unsubscribe")
      // a new subscriber subscribes upstream again
      const c = yield* session
      yield* c.rpc("resources/subscribe", { uri: "old://watched" })
      assert.strictEqual(count(observed.subscribed, "old://watched"), 2)
      yield* c.rpc("resources/unsubscribe", { uri: "old://watched" })
      yield* waitUntil(Effect.sync(() => count(observed.unsubscribed, "old://watched") === 2), "upstream unsubscribe")
      yield* c.end
    }))

  it.effect("an HTTP+SSE session's subscription is let go when its stream closes", () =>
    Effect.gen(function*() {
      yield* ready
      const { observed } = yield* Upstreams
      const before = count(observed.unsubscribed, "old://watched")
      const subscribed = count(observed.subscribed, "old://watched")
      yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* sdkClient("sse", [])
        yield* Effect.promise(() => client.subscribeResource({ uri: "old://watched" }))
        assert.strictEqual(count(observed.subscribed, "old://watched"), subscribed + 1)
      }))
      yield* waitUntil(
        Effect.sync(() => count(observed.unsubscribed, "old://watched") === before + 1),
        "upstream unsubscribe after the stream closed"
      )
    }))

  it.effect("a 2025 client subscribed to a 2026-07-28 upstream's URI hears its updates; unsubscribing ends the watch", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* ready
      const upstreams = yield* Upstreams
      const updates: Array<string> = []
      const client = yield* sdkClient("streamable", updates)
      yield* Effect.promise(() => client.subscribeResource({ uri: "new://watched" }))
      yield* waitUntil(Effect.sync(() => count(upstreams.observed.watching, "new://watched") === 1), "upstream listen")
      yield* Effect.promise(() => client.listTools())
      // the session's GET stream (where updates arrive) is open once the client has made its requests
      yield* Effect.sleep("500 millis")
      upstreams.new.updated("new://watched")
      yield* waitUntil(Effect.sync(() => updates.includes("new://watched")), "resources/updated", 10)
      yield* Effect.promise(() => client.unsubscribeResource({ uri: "new://watched" }))
      yield* waitUntil(Effect.sync(() => count(upstreams.observed.watching, "new://watched") === 0), "listen ended")
    })))

  it.effect("a 2026-07-28 client's listen with resourceSubscriptions hears both upstreams and holds them while open", () =>
    Effect.gen(function*() {
      yield* ready
      const upstreams = yield* Upstreams
      const { observed } = upstreams
      const subscribedBefore = count(observed.subscribed, "old://watched")
      const unsubscribedBefore = count(observed.unsubscribed, "old://watched")
      yield* Effect.scoped(Effect.gen(function*() {
        const messages = yield* listen(["old://watched", "new://watched"])
        yield* waitUntil(Effect.sync(() => messages.length > 0), "acknowledgement")
        assert.strictEqual(messages[0].method, "notifications/subscriptions/acknowledged")
        assert.deepStrictEqual(messages[0].params.notifications.resourceSubscriptions, [
          "old://watched",
          "new://watched"
        ])
        yield* waitUntil(Effect.sync(() => count(observed.watching, "new://watched") === 1), "upstream listen")
        assert.strictEqual(count(observed.subscribed, "old://watched"), subscribedBefore + 1)
        upstreams.new.updated("new://watched")
        const s = yield* session
        yield* s.rpc("tools/call", { name: "touch_old", arguments: {} })
        const updated = () =>
          messages.filter((m) => m.method === "notifications/resources/updated").map((m) => m.params.uri)
        yield* waitUntil(
          Effect.sync(() => updated().includes("new://watched") && updated().includes("old://watched")),
          "both updates on the listen"
        ).pipe(Effect.tapDefect(() => Effect.sync(() => console.log(`updates heard: ${JSON.stringify(updated())}`))))
        assert.strictEqual(
          messages.find((m) => m.method === "notifications/resources/updated").params._meta[
            "io.modelcontextprotocol/subscriptionId"
          ],
          "listen-1"
        )
        yield* s.end
      }))
      yield* waitUntil(Effect.sync(() => count(observed.watching, "new://watched") === 0), "upstream listen ended")
      yield* waitUntil(
        Effect.sync(() => count(observed.unsubscribed, "old://watched") === unsubscribedBefore + 1),
        "upstream unsubscribe after the listen closed"
      )
    }))

  it.effect("a listen through a view without the URI's owner is acknowledged without it and holds nothing", () =>
    Effect.gen(function*() {
      yield* ready
      const { observed } = yield* Upstreams
      const subscribedBefore = count(observed.subscribed, "old://watched")
      yield* Effect.scoped(Effect.gen(function*() {
        const messages = yield* listen(["old://watched", "new://watched"], "/servers/empty/mcp")
        yield* waitUntil(Effect.sync(() => messages.length > 0), "acknowledgement")
        assert.strictEqual(messages[0].method, "notifications/subscriptions/acknowledged")
        assert.isUndefined(messages[0].params.notifications.resourceSubscriptions)
        yield* Effect.sleep("300 millis")
        assert.strictEqual(count(observed.subscribed, "old://watched"), subscribedBefore)
        assert.strictEqual(count(observed.watching, "new://watched"), 0)
      }))
    }))

  it.effect("a view without an upstream never hears of its resources, even under a URI it routes to another", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* ready
      const upstreams = yield* Upstreams
      // new://watched is not in this view: as an unlisted URI it is routed to old, which may serve it
      const outside = yield* listen(["new://watched"], "/servers/oldonly/mcp")
      // the control: a listen of the whole view, which does hold new's resource
      const inside = yield* listen(["new://watched"])
      yield* waitUntil(Effect.sync(() => outside.length > 0 && inside.length > 0), "both acknowledgements")
      yield* waitUntil(Effect.sync(() => count(upstreams.observed.watching, "new://watched") >= 1), "upstream listen")
      const updated = (messages: ReadonlyArray<any>) =>
        messages.filter((m) => m.method === "notifications/resources/updated").map((m) => m.params.uri)
      yield* waitUntil(
        Effect.sync(() => {
          upstreams.new.updated("new://watched")
          return updated(inside).includes("new://watched")
        }),
        "the update on the listen whose view holds new"
      )
      yield* Effect.sleep("300 millis")
      assert.deepStrictEqual(updated(outside), [], "new's update reached a view without new")
    })))

  it.effect("a held URI of an upstream that was lost and came back is listened for on the new session", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* ready
      const upstreams = yield* Upstreams
      const updates: Array<string> = []
      const client = yield* sdkClient("streamable", updates)
      yield* Effect.promise(() => client.subscribeResource({ uri: "new://watched" }))
      yield* waitUntil(Effect.sync(() => count(upstreams.observed.watching, "new://watched") === 1), "upstream listen")
      upstreams.new.down(true)
      // the pool's list requests fail: the upstream session is lost
      yield* waitUntil(Effect.sync(() => upstreams.new.refused() >= 3), "requests while down", 20)
      yield* Effect.sleep("1 second")
      upstreams.new.down(false)
      const s = yield* session
      yield* waitUntil(
        Effect.map(s.rpc("resources/read", { uri: "new://watched" }), (r) => r.result !== undefined),
        "the upstream back",
        30
      )
      yield* waitUntil(Effect.sync(() => count(upstreams.observed.watching, "new://watched") >= 1), "listen again")
      yield* Effect.promise(() => client.listTools())
      yield* Effect.sleep("500 millis")
      const heard = updates.length
      // the watch may be reopened a moment after the upstream is back: announce until heard
      yield* waitUntil(
        Effect.sync(() => {
          upstreams.new.updated("new://watched")
          return updates.length > heard
        }),
        "resources/updated after the upstream came back",
        10
      )
      yield* s.end
    })))
})
