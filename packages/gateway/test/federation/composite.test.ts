/**
 * The composite catalog (REST + federated), virtual-server membership and
 * exposed-name rules, without network.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ConfigSnapshot, VirtualServer } from "@janus/storage"
import { Context, Effect, Layer, Option, Ref, Stream } from "effect"
import * as CompositeCatalog from "../../src/federation/CompositeCatalog.ts"
import { exposedName, toOutcome } from "../../src/federation/FederatedCatalog.ts"
import { toolsOfVirtualServer, withBareNames } from "../../src/federation/VirtualServers.ts"
import { anonymous } from "../../src/mcp/Caller.ts"
import {
  type CallToolResult,
  InMemoryToolCatalog,
  type MemoryTool,
  type Tool,
  ToolCatalog
} from "../../src/mcp/ToolCatalog.ts"

const tool = (name: string, from: string, meta?: Record<string, unknown>): MemoryTool => ({
  tool: { name, inputSchema: { type: "object" }, ...(meta === undefined ? {} : { _meta: meta }) } as Tool,
  handler: () => Effect.succeed({ content: [{ type: "text", text: from }] })
})

const memory = (tools: ReadonlyArray<MemoryTool>) =>
  Effect.map(Layer.build(ToolCatalog.layerMemory(tools)), (ctx) => ({
    catalog: Context.get(ctx, ToolCatalog),
    control: Context.get(ctx, InMemoryToolCatalog)
  }))

const request = (name: string) => ({
  name,
  arguments: {},
  signal: new AbortController().signal,
  progress: Option.none()
})

describe("CompositeCatalog", () => {
  it.live("merges sorted, earlier catalogs win a shared name, calls go where the list says", () =>
    Effect.gen(function*() {
      const rest = yield* memory([tool("get_pet", "rest"), tool("dup", "rest")])
      const fed = yield* memory([tool("gh/issues", "fed"), tool("dup", "fed"), tool("a/b", "fed")])
      const composite = CompositeCatalog.make([rest.catalog, fed.catalog])
      const listed = yield* composite.list(anonymous)
      assert.deepStrictEqual(listed.map((t) => t.name), ["a/b", "dup", "get_pet", "gh/issues"])
      assert.strictEqual(yield* composite.list(anonymous), listed, "the same array until something changes")
      const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text
      assert.strictEqual(text(yield* composite.call(anonymous, request("dup"))), "rest")
      assert.strictEqual(text(yield* composite.call(anonymous, request("gh/issues"))), "fed")
      const missing = yield* Effect.flip(composite.call(anonymous, request("nope")))
      assert.strictEqual(missing._tag, "ToolNotFound")

      const fired = yield* Ref.make(0)
      yield* composite.changes.pipe(Stream.runForEach(() => Ref.update(fired, (n) => n + 1)), Effect.forkScoped)
      // the merged stream subscribes to each catalog when its fiber first runs, which on a busy machine can take
      // longer than any fixed sleep: add and remove a probe on each catalog until its signal arrives (bounded), so
      // both are subscribed before the changes under test
      for (const control of [rest.control, fed.control]) {
        let seen = false
        for (let i = 0; i < 100 && !seen; i++) {
          yield* control.upsert(tool("probe", "probe"))
          yield* control.remove("probe")
          for (let j = 0; j < 10 && !seen; j++) {
            yield* Effect.sleep("10 millis")
            seen = (yield* Ref.get(fired)) > 0
          }
        }
        assert.isTrue(seen, "the composite's changes reach a subscriber")
        // the probe's later signals: wait until the count holds still, then start from zero
        for (let last = -1, now = yield* Ref.get(fired); now !== last;) {
          yield* Effect.sleep("100 millis")
          last = now
          now = yield* Ref.get(fired)
        }
        yield* Ref.set(fired, 0)
      }
      yield* fed.control.upsert(tool("gh/new", "fed"))
      yield* rest.control.remove("get_pet")
      for (let i = 0; i < 300 && (yield* Ref.get(fired)) < 2; i++) yield* Effect.sleep("10 millis")
      yield* Effect.sleep("50 millis") // and no third one
      assert.strictEqual(yield* Ref.get(fired), 2)
      const after = yield* composite.list(anonymous)
      assert.notStrictEqual(after, listed)
      assert.deepStrictEqual(after.map((t) => t.name), ["a/b", "dup", "gh/issues", "gh/new"])
    }).pipe(Effect.scoped))

  it.effect("a listed name goes straight to the catalog that listed it; an unlisted one asks them in order", () =>
    Effect.gen(function*() {
      const rest = yield* memory([tool("get_pet", "rest"), tool("dup", "rest")])
      const fed = yield* memory([tool("gh/issues", "fed"), tool("dup", "fed")])
      const asked: Array<string> = []
      const counting = ToolCatalog.of({
        ...rest.catalog,
        call: (caller, req) => Effect.suspend(() => (asked.push(req.name), rest.catalog.call(caller, req)))
      })
      const composite = CompositeCatalog.make([counting, fed.catalog])
      const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text
      // before any list: the chain (the REST catalog misses first)
      assert.strictEqual(text(yield* composite.call(anonymous, request("gh/issues"))), "fed")
      assert.deepStrictEqual(asked, ["gh/issues"])
      yield* composite.list(anonymous)
      asked.length = 0
      assert.strictEqual(text(yield* composite.call(anonymous, request("gh/issues"))), "fed")
      assert.strictEqual(text(yield* composite.call(anonymous, request("dup"))), "rest")
      assert.deepStrictEqual(asked, ["dup"], "the federated tool's call never asked the REST catalog")
      // a name no list has: both asked, in order, and ToolNotFound
      const missing = yield* Effect.flip(composite.call(anonymous, request("nope")))
      assert.strictEqual(missing._tag, "ToolNotFound")
      assert.deepStrictEqual(asked, ["dup", "nope"])
      // only one catalog has tools: its names go to it, others still through the chain
      const lone = CompositeCatalog.make([counting, (yield* memory([])).catalog])
      yield* lone.list(anonymous)
      asked.length = 0
      assert.strictEqual(text(yield* lone.call(anonymous, request("get_pet"))), "rest")
      assert.strictEqual((yield* Effect.flip(lone.call(anonymous, request("gh/issues"))))._tag, "ToolNotFound")
      assert.deepStrictEqual(asked, ["get_pet", "gh/issues"])
    }).pipe(Effect.scoped))
})

describe("toolsOfVirtualServer", () => {
  const snapshot = {
    connectionByName: new Map([
      ["gh", { kind: "mcp", name: "gh" }],
      ["jira", { kind: "mcp", name: "jira" }],
      ["pets", { kind: "rest", name: "pets" }]
    ]),
    endpointByName: new Map([["get_pet", {}], ["list_pets", {}]])
  } as unknown as ConfigSnapshot
  const origin = (connection: string, name: string) => ({ "janus/upstream": { connection, tool: name } })
  const all: ReadonlyArray<Tool> = [
    tool("get_pet", "r").tool,
    tool("gh/issues", "f", origin("gh", "issues")).tool,
    tool("gh/pulls", "f", origin("gh", "pulls")).tool,
    tool("j_search", "f", origin("jira", "search")).tool,
    tool("jira/create", "f", origin("jira", "create")).tool,
    tool("list_pets", "r").tool
  ]
  const vs = (tools: Array<string>) => ({ name: "vs", tools }) as unknown as VirtualServer

  it("resolves endpoint names, <conn>/<tool> by origin (prefixes included) and <conn>/*", () => {
    const names = (members: Array<string>) => toolsOfVirtualServer(snapshot, vs(members), all).map((t) => t.name)
    assert.deepStrictEqual(names(["get_pet", "gh/issues"]), ["get_pet", "gh/issues"])
    assert.deepStrictEqual(names(["jira/*"]), ["j_search", "jira/create"])
    assert.deepStrictEqual(names(["jira/search", "gh/*"]), ["gh/issues", "gh/pulls", "j_search"])
    assert.deepStrictEqual(names(["gone_endpoint", "nope/*", "gh/missing"]), [])
  })

  it("bareNames: upstream tools lose their prefix where the bare name is unique in the server", () => {
    const served = (tools: ReadonlyArray<Tool>) => withBareNames(tools).map((t) => t.name)
    assert.deepStrictEqual(served(all), ["get_pet", "issues", "pulls", "search", "create", "list_pets"])
    // two upstreams sharing a name keep their prefixes; so does one whose bare name is an endpoint's
    const shared = [
      ...all,
      tool("other/issues", "f", origin("other", "issues")).tool,
      tool("pets2/get_pet", "f", origin("pets2", "get_pet")).tool
    ]
    assert.deepStrictEqual(served(shared), [
      "get_pet",
      "gh/issues",
      "pulls",
      "search",
      "create",
      "list_pets",
      "other/issues",
      "pets2/get_pet"
    ])
  })
})

describe("exposed names and results", () => {
  it("namespaces, sanitises and bounds names, keeping them distinct", () => {
    assert.strictEqual(exposedName("gh/", "list_issues"), "gh/list_issues")
    assert.strictEqual(exposedName("", "plain"), "plain")
    const spaced = exposedName("gh/", "list issues")
    assert.match(spaced, /^gh\/list_issues_[0-9a-f]{8}$/)
    assert.notStrictEqual(exposedName("gh/", "a:b"), exposedName("gh/", "a b"))
    const long = exposedName("connection/", "x".repeat(100))
    assert.isAtMost(long.length, 64)
    assert.match(long, /^[A-Za-z0-9_./-]{1,64}$/)
    assert.notStrictEqual(long, exposedName("connection/", "x".repeat(101)))
  })

  it("strips resultType and the upstream's serverInfo, and keeps input_required as it is", () => {
    const complete = toOutcome({
      content: [{ type: "text", text: "ok" }],
      resultType: "complete",
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "up" }, trace: 1 }
    })
    assert.deepStrictEqual(complete, { content: [{ type: "text", text: "ok" }], _meta: { trace: 1 } })
    const input = toOutcome({
      resultType: "input_required",
      inputRequests: { a: { method: "roots/list" } },
      requestState: "s"
    })
    assert.deepStrictEqual(input, {
      resultType: "input_required",
      inputRequests: { a: { method: "roots/list" } },
      requestState: "s"
    })
  })
})
