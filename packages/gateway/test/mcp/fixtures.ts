/**
 * Test fixtures: an in-memory catalog (ordinary tools, tools that report
 * progress or wait for cancellation, an `x-mcp-header` tool, the conformance
 * suite's diagnostic tools) and the MCP endpoint served on 127.0.0.1.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Deferred, Effect, Layer, Option, Ref } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { McpHttp, ToolCatalog } from "../../src/mcp/index.ts"

const text = (value: string): ToolCatalog.CallToolResult => ({ content: [{ type: "text", text: value }] })

/** What the cancellation fixture observed. */
export class Probe extends Context.Service<Probe, {
  /** Completed with the tool call's `AbortSignal.reason` when a `wait_for_cancel` call is aborted. */
  readonly aborted: Ref.Ref<ReadonlyArray<string>>
  readonly started: Ref.Ref<number>
}>()("test/mcp/Probe") {}

export const PAGE_SIZE = 5
export const MANY = 12

const manyTools: ReadonlyArray<ToolCatalog.MemoryTool> = Array.from({ length: MANY }, (_, i) => ({
  tool: {
    name: `many_${String(i).padStart(2, "0")}`,
    description: `Pagination filler ${i}`,
    inputSchema: { type: "object" }
  },
  handler: () => Effect.succeed(text(`many ${i}`))
}))

const dynamicTool: ToolCatalog.MemoryTool = {
  tool: { name: "zz_dynamic", description: "Appears and disappears", inputSchema: { type: "object" } },
  handler: () => Effect.succeed(text("dynamic"))
}

export const makeTools = (probe: Probe["Service"]): ReadonlyArray<ToolCatalog.MemoryTool> => [
  {
    tool: {
      name: "echo",
      description: "Echoes its text argument",
      inputSchema: { type: "object", properties: { text: { type: "string" } } }
    },
    handler: ({ arguments: args }) => Effect.succeed(text(typeof args.text === "string" ? args.text : "(no text)"))
  },
  {
    tool: {
      name: "slow_progress",
      description: "Reports progress in steps, then finishes",
      inputSchema: { type: "object", properties: { steps: { type: "integer" }, delayMs: { type: "integer" } } }
    },
    handler: ({ arguments: args, progress }) =>
      Effect.gen(function*() {
        const steps = typeof args.steps === "number" ? args.steps : 3
        const delay = typeof args.delayMs === "number" ? args.delayMs : 20
        for (let i = 1; i <= steps; i++) {
          if (Option.isSome(progress)) yield* progress.value(i, steps, `step ${i}`)
          yield* Effect.sleep(delay)
        }
        return text(`done after ${steps} steps`)
      })
  },
  {
    tool: {
      name: "wait_for_cancel",
      description: "Runs until cancelled",
      inputSchema: { type: "object" }
    },
    handler: ({ signal, progress }) =>
      Effect.gen(function*() {
        yield* Ref.update(probe.started, (n) => n + 1)
        if (Option.isSome(progress)) yield* progress.value(0, 1, "started")
        const aborted = yield* Deferred.make<string>()
        // tools/call cancels by interruption (no signal); a caller outside Effect may pass one
        signal?.addEventListener("abort", () => Deferred.doneUnsafe(aborted, Effect.succeed(String(signal.reason))))
        const reason = yield* Deferred.await(aborted).pipe(Effect.timeout("20 seconds"), Effect.orDie)
        yield* Ref.update(probe.aborted, (all) => [...all, reason])
        return text("cancelled")
      }).pipe(Effect.onInterrupt(() => Ref.update(probe.aborted, (all) => [...all, "interrupted"])))
  },
  {
    tool: {
      name: "region_echo",
      description: "Echoes a region mirrored in the Mcp-Param-Region header",
      inputSchema: {
        type: "object",
        properties: { region: { type: "string", "x-mcp-header": "Region" }, count: { type: "integer" } },
        required: ["region"]
      }
    },
    handler: ({ arguments: args }) => Effect.succeed(text(`region ${String(args.region)}`))
  },
  {
    tool: {
      name: "failing",
      description: "Fails with invalid arguments",
      inputSchema: { type: "object" }
    },
    handler: () => Effect.fail(new ToolCatalog.InvalidToolArguments({ name: "failing", detail: "always wrong" }))
  },
  ...manyTools,
  // Diagnostic tools the conformance suite calls.
  {
    tool: {
      name: "test_missing_capability",
      description: "Needs sampling: answers input_required with a sampling request",
      inputSchema: { type: "object" }
    },
    handler: () =>
      Effect.succeed({
        resultType: "input_required",
        inputRequests: {
          sample: {
            method: "sampling/createMessage",
            params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 16 }
          }
        },
        requestState: "state-1"
      })
  },
  {
    tool: {
      name: "test_streaming_elicitation",
      description: "Asks the client for input with an elicitation input request",
      inputSchema: { type: "object" }
    },
    handler: () =>
      Effect.succeed({
        resultType: "input_required",
        inputRequests: {
          ask: {
            method: "elicitation/create",
            params: {
              mode: "form",
              message: "Your name?",
              requestedSchema: { type: "object", properties: { name: { type: "string" } } }
            }
          }
        }
      })
  },
  {
    tool: {
      name: "test_logging_tool",
      description: "Would log; the gateway never logs",
      inputSchema: { type: "object" }
    },
    handler: () => Effect.succeed(text("logged nothing"))
  },
  {
    tool: { name: "test_reconnection", description: "Runs long enough to be polled", inputSchema: { type: "object" } },
    handler: () => Effect.as(Effect.sleep("400 millis"), text("reconnected"))
  }
]

/** Adds the `test_trigger_tool_change` fixture, which toggles `zz_dynamic`. */
const withTrigger = Layer.effectDiscard(Effect.gen(function*() {
  const control = yield* ToolCatalog.InMemoryToolCatalog
  const present = yield* Ref.make(false)
  yield* control.upsert({
    tool: {
      name: "test_trigger_tool_change",
      description: "Adds or removes a tool, changing the tool list",
      inputSchema: { type: "object" }
    },
    handler: () =>
      Effect.gen(function*() {
        const now = yield* Ref.getAndUpdate(present, (p) => !p)
        if (now) yield* control.remove(dynamicTool.tool.name)
        else yield* control.upsert(dynamicTool)
        return text(now ? "removed" : "added")
      })
  })
}))

export const ProbeLive = Layer.effect(
  Probe,
  Effect.gen(function*() {
    return Probe.of({ aborted: yield* Ref.make<ReadonlyArray<string>>([]), started: yield* Ref.make(0) })
  })
)

export const CatalogLive = Layer.unwrap(Effect.gen(function*() {
  const probe = yield* Probe
  return Layer.provideMerge(withTrigger, ToolCatalog.ToolCatalog.layerMemory(makeTools(probe)))
}))

/** The MCP endpoint with the fixture catalog on 127.0.0.1, port chosen by the OS. */
export const serverLayer = (options?: Partial<McpHttp.McpHttpOptions>) =>
  HttpRouter.serve(
    McpHttp.layerMemory({
      serverInfo: { name: "janus-test", version: "0.0.1" },
      pageSize: PAGE_SIZE,
      keepAlive: "1 second",
      sseRetryMs: 100,
      ...options
    }),
    { disableLogger: true, disableListenLog: true }
  ).pipe(
    Layer.provideMerge(CatalogLive),
    Layer.provideMerge(ProbeLive),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1", gracefulShutdownTimeout: 500 }))
  )

/** The endpoint URL of the running server. */
export const mcpUrl = Effect.map(
  HttpServer.addressFormattedWith((base) => Effect.succeed(base)),
  (base) => new URL("/mcp", base).href
)
