/**
 * `/api/v1/connections`: REST and upstream MCP downstreams.
 *
 * **Rules**
 *
 * - CRUD with pagination, ETags and preconditions as in `Resource`.
 * - The body is a `ConnectionInput` (`kind` "rest" with `baseUrl`, or "mcp"
 *   with `url`, or `transport: "stdio"` with `command`, `args`, `env`, `cwd`;
 *   optional `toolPrefix`: what goes in front of its tool names, null for
 *   `<name>/`, `""` for none; `pollIntervalMs`); storage validates it
 *   (stdio commands against `JANUS_STDIO_COMMANDS`). The credential is only a secret's name
 *   (`auth.secret`): no secret value is ever part of a connection, and the
 *   secrets it names must be set (`SecretReferences`, 422 otherwise).
 * - Deleting a connection deletes its endpoints and its virtual-server
 *   memberships (storage does it in one transaction).
 *
 * @since 0.1.0
 */
import { type Connection, type ConnectionInput, Connections, Secrets } from "@janus/storage"
import { Effect, Layer } from "effect"
import { AdminRouter } from "./AdminRouter.ts"
import type { JsonObject } from "./JsonBody.ts"
import * as Problem from "./Problem.ts"
import * as Resource from "./Resource.ts"
import { checkSecrets, secretsOf } from "./SecretReferences.ts"

/** The JSON representation of a connection. */
export const present = (c: Connection): JsonObject => ({
  id: c.id,
  kind: c.kind,
  name: c.name,
  description: c.description,
  ...(c.kind === "rest"
    ? { baseUrl: c.baseUrl }
    : {
      transport: c.transport,
      ...(c.stdio === null ? { url: c.url } : { ...c.stdio }),
      toolPrefix: c.toolPrefix,
      pollIntervalMs: c.pollIntervalMs
    }),
  auth: c.auth,
  timeoutMs: c.timeoutMs,
  ...(c.kind === "rest"
    ? {
      retry: {
        maxAttempts: c.retry.maxAttempts,
        initialDelayMs: c.retry.initialDelayMs,
        maxDelayMs: c.retry.maxDelayMs
      }
    }
    : {}),
  breaker: { consecutiveFailures: c.breaker.consecutiveFailures, openMs: c.breaker.openMs },
  egressAllowList: c.egressAllowList,
  version: c.version,
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString()
})

// Storage reports a body matching neither kind as a whole-body error; name the discriminator instead.
const hints = (body: JsonObject): Problem.FieldHints =>
  body.kind === "rest" || body.kind === "mcp"
    ? {}
    : { wholeBody: { path: "kind", message: `Expected "rest" or "mcp"` } }

export const ConnectionRoutes: Layer.Layer<never, never, AdminRouter | Connections | Secrets> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const connections = yield* Connections
    const secrets = yield* Secrets
    yield* Resource.register(router, {
      path: "/connections",
      entity: "connection",
      list: () => Effect.mapError(connections.list, Problem.fromStorage),
      get: connections.get,
      create: (input) => Effect.andThen(checkSecrets(secrets, input), connections.create(input as ConnectionInput)),
      update: (id, version, input) =>
        connections.get(id).pipe(
          Effect.flatMap((stored) => checkSecrets(secrets, input, secretsOf(stored))),
          Effect.andThen(connections.update(id, version, input as ConnectionInput))
        ),
      delete: connections.delete,
      present,
      hints
    })
  })
)
