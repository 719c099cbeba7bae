/**
 * Connection tests for Studio: `POST /api/v1/connections/:id/test` (the
 * upstreams' state list is `GET /api/v1/upstreams`, in `Upstreams.ts`).
 *
 * **Rules**
 *
 * - Testing an upstream MCP connection reports the federation's own view of
 *   it (state, protocol revision, tool count, last error): the federation
 *   already keeps a session and probes it, so a test does not open another.
 * - Testing a REST connection sends one `GET` to its base URL through the
 *   egress client, so the SSRF guard, the allow-list, the timeout and the
 *   credential apply exactly as for a call. It uses its own breaker key and
 *   no retries: a test never trips or resets the connection's breaker. Any
 *   HTTP answer means reachable (a base URL often answers 404); a refusal, a
 *   timeout or a transport error is reported with its message.
 * - The answer is `{ ok, detail }` (and the HTTP `status` a REST base URL
 *   answered, so a 404 can be shown as reachable but not a success), 200
 *   either way: the test ran; `ok` is its verdict. Secret values never
 *   appear in it.
 *
 * @since 0.1.0
 */
import { Connections, SecretCache } from "@janus/storage"
import { Clock, Duration, Effect, Layer, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import { DownstreamClient } from "../egress/index.ts"
import { UpstreamHealth, type UpstreamStatus } from "../federation/index.ts"
import { authScheme } from "../tools/RestCatalog.ts"
import { AdminRouter } from "./AdminRouter.ts"
import * as Problem from "./Problem.ts"
import { param } from "./Resource.ts"
import { present } from "./Upstreams.ts"

const TEST_TIMEOUT_MS = 10_000

const describeStatus = (s: UpstreamStatus): string =>
  s.state === "healthy"
    ? `healthy: ${s.toolCount} tool(s), protocol ${s.protocolVersion ?? "unknown"}`
    : `${s.state}${s.lastError === undefined ? "" : `: ${s.lastError}`}`

export const ConnectionCheckRoutes: Layer.Layer<
  never,
  never,
  AdminRouter | Connections | DownstreamClient | SecretCache
> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const connections = yield* Connections
    const downstream = yield* DownstreamClient
    const secrets = yield* SecretCache
    // the federation is optional (a gateway without it has no upstreams)
    const health = Effect.serviceOption(UpstreamHealth)

    yield* router.add(
      "POST",
      "/connections/:id/test",
      Effect.gen(function*() {
        const connection = yield* connections.get(yield* param("id")).pipe(Effect.mapError(Problem.fromStorage))
        if (connection.kind === "mcp") {
          const service = yield* health
          const status = Option.isSome(service) ? yield* service.value.get(connection.name) : Option.none()
          return HttpServerResponse.jsonUnsafe(Option.match(status, {
            onNone: () => ({ ok: false, detail: "not connected yet: the federation has no session for it" }),
            onSome: (s) => ({ ok: s.state === "healthy", detail: describeStatus(s), upstream: present(s) })
          }))
        }
        const auth = connection.auth
        const secret = auth.scheme === "none" ? Option.none() : yield* secrets.reveal(auth.secret).pipe(Effect.option)
        if (auth.scheme !== "none" && Option.isNone(secret)) {
          return HttpServerResponse.jsonUnsafe({
            ok: false,
            detail: `the secret ${auth.secret} named by the connection's ${auth.scheme} auth is missing or unreadable`
          })
        }
        const started = yield* Clock.currentTimeMillis
        const result = yield* downstream.call({
          id: `test:${connection.id}`,
          baseUrl: connection.baseUrl,
          auth: authScheme(auth),
          timeout: Duration.millis(Math.min(connection.timeoutMs, TEST_TIMEOUT_MS)),
          retry: { retries: 0 },
          ...(connection.egressAllowList === null ? {} : { allow: connection.egressAllowList })
        }, { method: "GET", path: "/", secret: Option.getOrUndefined(secret) }).pipe(Effect.result)
        const elapsed = (yield* Clock.currentTimeMillis) - started
        return HttpServerResponse.jsonUnsafe(
          result._tag === "Success"
            ? {
              ok: true,
              status: result.success.status,
              detail: `reachable: HTTP ${result.success.status} from the base URL in ${elapsed} ms`
            }
            : { ok: false, detail: result.failure.message }
        )
      })
    )
  })
)
