import { assert } from "@effect/vitest"
import { Effect, type Layer, Logger } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import type { McpSessionRecord } from "../src/index.ts"
import { layerMemory, layerPostgres } from "../src/testing.ts"

/** The two backends every storage suite runs on: PGlite in memory, and real Postgres when `postgres`. */
export const backends = <S>(
  postgres: boolean
): ReadonlyArray<{ readonly name: string; readonly layer: () => Layer.Layer<S, unknown>; readonly run: boolean }> => [
  { name: "pglite (memory)", layer: () => layerMemory() as unknown as Layer.Layer<S, unknown>, run: true },
  { name: "postgres", layer: () => layerPostgres() as unknown as Layer.Layer<S, unknown>, run: postgres }
]

/** The rows of `table`. */
export const count = (table: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number | bigint }>`SELECT count(*) AS n FROM ${sql(table)}`
    return Number(rows[0]!.n)
  }).pipe(Effect.orDie)

/** Warnings and errors logged, one line each (message parts joined; an Error as its stack). */
export const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.layer([
    Logger.make(({ logLevel, message }) => {
      if (logLevel !== "Warn" && logLevel !== "Error") return
      const parts = Array.isArray(message) ? message : [message]
      lines.push(`${logLevel} ${parts.map((part) => part instanceof Error ? `${part.stack}` : String(part)).join(" ")}`)
    })
  ])
  return { lines, logger }
}

/**
 * Makes `table` unwritable (renamed away) until the returned effect runs, or
 * at the latest when the scope closes.
 */
export const tableAway = (table: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const away = `${table}_away`
    yield* Effect.acquireRelease(
      sql`ALTER TABLE ${sql(table)} RENAME TO ${sql(away)}`,
      () => Effect.orDie(sql`ALTER TABLE IF EXISTS ${sql(away)} RENAME TO ${sql(table)}`)
    )
    return Effect.orDie(sql`ALTER TABLE ${sql(away)} RENAME TO ${sql(table)}`)
  }).pipe(Effect.orDie)

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
