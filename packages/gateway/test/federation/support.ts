/** Shared settings and helpers of the federation tests. */
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { HttpServer } from "effect/http"

/** Federation timings short enough for tests. */
export const fast = {
  listTimeout: "2 seconds",
  firstListWait: "5 seconds",
  probeInterval: "1 second",
  backoff: { initial: "100 millis", max: "500 millis" }
} as const

/** Polls `check` every 50 ms until it holds (dies after `seconds`). */
export const waitUntil = <E, R>(check: Effect.Effect<boolean, E, R>, what: string, seconds = 15) =>
  Effect.gen(function*() {
    for (let i = 0; i < seconds * 20; i++) {
      if (yield* check) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`timed out waiting for ${what}`))
  })

/**
 * An official SDK v1 client in a 2025 session on the test gateway's `/mcp`,
 * counting the `notifications/tools/list_changed` it receives; closed with
 * the scope.
 */
export const connectCounting = (name: string) =>
  Effect.acquireRelease(
    Effect.flatMap(
      HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base))),
      (url) =>
        Effect.promise(async () => {
          const client = new ClientV1({ name, version: "1" })
          const changed = { count: 0 }
          client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
            changed.count++
          })
          await client.connect(new StreamableHTTPClientTransport(url))
          return { client, changed }
        })
    ),
    ({ client }) => Effect.promise(() => client.close())
  )
