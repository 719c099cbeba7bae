import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import type { McpSessionRecord } from "../src/index.ts"

/** A name no other test uses. */
export const unique = (prefix: string): string => `${prefix}-${randomBytes(4).toString("hex")}`

/** Runs `effect`, expecting it to fail with the error tagged `tag`; returns that error. */
export const expectFailure = <A, E extends { readonly _tag: string }, R, const Tag extends E["_tag"]>(
  effect: Effect.Effect<A, E, R>,
  tag: Tag
): Effect.Effect<Extract<E, { readonly _tag: Tag }>, never, R> =>
  Effect.flatMap(Effect.result(effect), (result) => {
    if (result._tag === "Success") {
      return Effect.die(new Error(`expected a ${tag} failure, but it succeeded with ${String(result.success)}`))
    }
    assert.strictEqual(
      result.failure._tag,
      tag,
      `expected ${tag}, got ${result.failure._tag}: ${String(result.failure)}`
    )
    return Effect.succeed(result.failure as Extract<E, { readonly _tag: Tag }>)
  })

/** Polls `check` every 20 ms until it returns true, failing after `ms`. */
export const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, ms = 1_000): Effect.Effect<number, E, R> =>
  Effect.gen(function*() {
    const start = Date.now()
    while (true) {
      if (yield* check) return Date.now() - start
      if (Date.now() - start > ms) return yield* Effect.die(new Error(`condition not met within ${ms} ms`))
      yield* Effect.sleep("20 millis")
    }
  })

export const restInput = (name: string, extra: Record<string, unknown> = {}) => ({
  kind: "rest" as const,
  name,
  baseUrl: "https://api.example.com/v1",
  ...extra
})

export const endpointInput = (connectionId: string, name: string, extra: Record<string, unknown> = {}) => ({
  connectionId,
  name,
  method: "GET" as const,
  pathTemplate: "/users/{id}",
  arguments: { id: "path" as const, verbose: "query" as const },
  inputSchema: {
    type: "object",
    properties: { id: { type: "string" }, verbose: { type: "boolean" } },
    required: ["id"]
  },
  ...extra
})

export const HOUR = 3_600_000

/** A 2025-11-25 session record created at `now`, expiring an hour later. */
export const session = (id: string, now: number, extra: Partial<McpSessionRecord> = {}): McpSessionRecord => ({
  id,
  ownerId: "token:alice",
  protocolVersion: "2025-11-25",
  clientInfo: { name: "inspector", version: "1.2.3" },
  clientCapabilities: { sampling: {}, elicitation: { url: {} } },
  createdAt: new Date(now),
  lastSeenAt: new Date(now),
  expiresAt: new Date(now + HOUR),
  logLevel: null,
  ...extra
})
