/**
 * stdio upstreams (issue #17), with real published servers installed from
 * npm: `@modelcontextprotocol/server-everything` (in stdio mode) and
 * `@modelcontextprotocol/server-memory`, run by a whole gateway whose
 * `JANUS_STDIO_COMMANDS` allows only this Node executable, called by an
 * official SDK v1 client on `/mcp`.
 *
 * Expected: a command outside the allow-list is refused with an error that
 * names the variable; both servers are federated and called (the memory
 * server keeps what it was given); `kill -9` of a program makes its upstream
 * unhealthy (calls in the gap get a clear error naming it), then it is
 * restarted after a backoff with a new pid and its tools return; when the
 * gateway stops (its scope closes, as on drain) no program it ran is left
 * (checked by pid). The gateway process itself being killed is
 * `stdio-process.test.ts`.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { AdminTokens, Connections } from "@janus/storage"
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { HttpServer } from "effect/http"
import * as Os from "node:os"
import * as Path from "node:path"
import * as GatewayTesting from "../../src/testing.ts"
import { alive, EVERYTHING, MEMORY } from "./stdio-servers.ts"
import { waitUntil } from "./support.ts"

const memoryFile = Path.join(Os.tmpdir(), `janus-stdio-memory-${process.pid}-${Date.now()}.json`)

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const connections = yield* Connections
  const node = process.execPath
  yield* connections.create({
    kind: "mcp",
    transport: "stdio",
    name: "everything",
    command: node,
    args: [EVERYTHING, "stdio"],
    timeoutMs: 10_000
  })
  yield* connections.create({
    kind: "mcp",
    transport: "stdio",
    name: "memory",
    command: node,
    args: [MEMORY],
    env: { MEMORY_FILE_PATH: memoryFile }
  })
}))

const gateway = () =>
  Seed.pipe(
    Layer.provideMerge(
      GatewayTesting.layer({ config: { JANUS_STDIO_COMMANDS: [process.execPath] } })
    )
  )

class Client extends Context.Service<Client, ClientV1>()("test/federation/StdioClient") {}

const ClientLive = Layer.effect(
  Client,
  Effect.acquireRelease(
    Effect.flatMap(
      HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base))),
      (url) =>
        Effect.promise(async () => {
          const client = new ClientV1({ name: "stdio-test", version: "1" })
          await client.connect(new StreamableHTTPClientTransport(url))
          return client
        })
    ),
    (client) => Effect.promise(() => client.close())
  )
)

interface Status {
  readonly connection: string
  readonly state: string
  readonly transport: string
  readonly url: string | null
  readonly pid: number | null
  readonly toolCount: number
  readonly lastError: string | null
  readonly nextAttemptAt: string | null
}

const api = (method: string, path: string, body?: unknown) =>
  Effect.gen(function*() {
    const token = Redacted.value((yield* (yield* AdminTokens).create({ name: `t-${Math.random()}` })).plaintext)
    const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(`/api/v1/${path}`, base)))
    return yield* Effect.promise(async () => {
      const response = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      return { status: response.status, body: await response.json() as any }
    })
  }).pipe(Effect.orDie)

const statuses = Effect.map(
  api("GET", "upstreams"),
  (r) => Object.fromEntries((r.body.items as Array<Status>).map((s) => [s.connection, s]))
)

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text

layer(ClientLive.pipe(Layer.provideMerge(gateway())), { timeout: 120_000, excludeTestServices: true })(
  "stdio upstreams",
  (it) => {
    it.effect("a command outside JANUS_STDIO_COMMANDS is refused, naming the variable", () =>
      Effect.gen(function*() {
        const refused = yield* api("POST", "connections", {
          kind: "mcp",
          transport: "stdio",
          name: "shell",
          command: "sh",
          args: ["-c", "echo hi"]
        })
        assert.strictEqual(refused.status, 400)
        assert.include(JSON.stringify(refused.body), "JANUS_STDIO_COMMANDS")
        assert.include(JSON.stringify(refused.body), "command")
        assert.notProperty(yield* statuses, "shell")
      }))

    it.effect("real servers from npm, federated over stdio and called", () =>
      Effect.gen(function*() {
        const client = yield* Client
        const names = Effect.promise(() => client.listTools()).pipe(Effect.map((r) => r.tools.map((t) => t.name)))
        yield* waitUntil(
          Effect.map(names, (n) => n.includes("everything/echo") && n.includes("memory/read_graph")),
          "the stdio servers' tools"
        )
        const echoed = yield* Effect.promise(() =>
          client.callTool({ name: "everything/echo", arguments: { message: "over stdio" } })
        )
        assert.include(textOf(echoed), "over stdio")
        yield* Effect.promise(() =>
          client.callTool({
            name: "memory/create_entities",
            arguments: { entities: [{ name: "Janus", entityType: "gateway", observations: ["speaks stdio"] }] }
          })
        )
        const graph = yield* Effect.promise(() => client.callTool({ name: "memory/read_graph", arguments: {} }))
        assert.include(JSON.stringify(graph), "speaks stdio")

        const status = yield* statuses
        for (const name of ["everything", "memory"]) {
          assert.strictEqual(status[name]!.state, "healthy")
          assert.strictEqual(status[name]!.transport, "stdio")
          assert.isNull(status[name]!.url)
          assert.isNumber(status[name]!.pid)
          assert.isTrue(alive(status[name]!.pid!))
        }
      }))

    it.effect("a 2026-07-28 client (SDK v2) is asked for a stdio server's sampling and elicitation with input_required", () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base)))
        const asked: Array<string> = []
        const modern = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new ClientV2({ name: "stdio-v2", version: "2" }, {
              versionNegotiation: { mode: { pin: "2026-07-28" } },
              capabilities: { elicitation: {}, sampling: {} }
            })
            client.setRequestHandler("elicitation/create", async () => {
              asked.push("elicitation/create")
              return { action: "accept", content: { name: "Ada Lovelace" } }
            })
            client.setRequestHandler("sampling/createMessage", async () => {
              asked.push("sampling/createMessage")
              return { role: "assistant", content: { type: "text", text: "sampled over stdio" }, model: "test-model" }
            })
            await client.connect(new TransportV2(url))
            return client
          }),
          (client) => Effect.promise(() => client.close())
        )
        yield* waitUntil(
          Effect.promise(() => modern.listTools()).pipe(
            Effect.map((r) => r.tools.some((t) => t.name === "everything/trigger-sampling-request"))
          ),
          "server-everything's sampling tool"
        )
        const sampled = yield* Effect.promise(() =>
          modern.callTool({ name: "everything/trigger-sampling-request", arguments: { prompt: "hello" } })
        )
        assert.include(textOf(sampled), "sampled over stdio")
        const elicited = yield* Effect.promise(() =>
          modern.callTool({ name: "everything/trigger-elicitation-request", arguments: {} })
        )
        assert.include(JSON.stringify(elicited.content), "Ada Lovelace")
        assert.deepStrictEqual(asked, ["sampling/createMessage", "elicitation/create"])
      })))

    it.effect("kill -9 of a program: calls in the gap get a clear error; it restarts with backoff and its tools return", () =>
      Effect.gen(function*() {
        const client = yield* Client
        const before = (yield* statuses).everything!
        const pid = before.pid!
        process.kill(pid, "SIGKILL")
        yield* waitUntil(Effect.map(statuses, (s) => s.everything!.state === "unhealthy"), "everything to be unhealthy")
        const down = (yield* statuses).everything!
        assert.include(down.lastError, "exited")
        assert.isString(down.nextAttemptAt)
        assert.isFalse(alive(pid))
        // a call in the gap: refused with the upstream's name and why
        const gap = yield* Effect.promise(() =>
          client.callTool({ name: "everything/echo", arguments: { message: "gap" } }).then(
            (result) => JSON.stringify(result),
            (error: Error) => error.message
          )
        )
        assert.include(gap, "everything")
        assert.match(gap, /unavailable|reconnecting/)
        // the other upstream is unaffected
        assert.strictEqual((yield* statuses).memory!.state, "healthy")

        yield* waitUntil(Effect.map(statuses, (s) => s.everything!.state === "healthy"), "everything to restart")
        const after = (yield* statuses).everything!
        assert.notStrictEqual(after.pid, pid)
        assert.isTrue(alive(after.pid!))
        yield* waitUntil(
          Effect.map(
            Effect.promise(() => client.listTools()),
            (r) => r.tools.some((t) => t.name === "everything/echo")
          ),
          "everything's tools to return"
        )
        const echoed = yield* Effect.promise(() =>
          client.callTool({ name: "everything/echo", arguments: { message: "back" } })
        )
        assert.include(textOf(echoed), "back")
      }))
  }
)

describe("stdio upstreams and the gateway's end", () => {
  it.live("closing the gateway (drain, exit) stops every program it ran", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(gateway(), scope)
      const pids = yield* Effect.gen(function*() {
        yield* waitUntil(
          Effect.map(statuses, (s) => s.everything?.pid != null && s.memory?.pid != null),
          "both programs"
        )
        const s = yield* statuses
        return [s.everything!.pid!, s.memory!.pid!]
      }).pipe(Effect.provide(context))
      assert.isTrue(pids.every(alive))
      yield* Scope.close(scope, Exit.void)
      // the scope closed only after the programs' process groups were stopped
      assert.deepStrictEqual(pids.filter(alive), [])
    }), 60_000)
})
