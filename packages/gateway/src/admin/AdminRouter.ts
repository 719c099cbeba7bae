/**
 * The router of `/api/v1`: what every admin route has in common.
 *
 * **Rules**
 *
 * - Every request is authenticated (`AdminAuth`) before its handler runs, so
 *   an unauthenticated caller learns nothing (not even 404 vs 405 vs 415).
 * - Every response, success or error, carries `Cache-Control: no-store` (it
 *   may hold configuration or a token shown once) and `X-Request-Id`.
 * - Every failure is rendered by `Problem.toResponse`; anything that is not an
 *   `ApiProblem` (a defect) is a 500 with a fixed message and the request id,
 *   and its cause is logged with that id. Handlers never log bodies or
 *   headers, so neither tokens nor secret values reach a log.
 * - Every change a handler makes is audited (`audit/AdminChanges`) as made by
 *   the authenticated principal (`CurrentActor`: the admin token's id and
 *   name, or the OAuth subject and client), with the request id and client
 *   address, through `studio` when the request carries `X-Janus-Client:
 *   studio` (Studio sends it) and `api` otherwise. A request refused by
 *   authentication (401/403, or 429 of the failed-authentication bucket) is
 *   an `auth` row, sampled like MCP's (`calls/AdmissionAudit`). An
 *   authenticated write (`POST`, `PUT`, `PATCH`, `DELETE`) that fails, on any
 *   route or none, is one `admin` row with outcome `refused` (4xx) or
 *   `error` (5xx), its method, path, status and why (`RefusedWrites`),
 *   recorded here around every handler so that no route can forget it.
 * - Unknown paths under `/api/v1` are 404 `route_not_found`; a known path with
 *   another method is 405 with `Allow`. A path the router cannot even match
 *   (not valid percent-encoded UTF-8: 400 `malformed_path`; a segment longer
 *   than the router's limit: 404) gets the same treatment through a global
 *   middleware that touches only such failures, and only under `/api/v1`.
 *   A path is shown in an error up to 200 characters (`quoteUri`), never
 *   whole.
 *
 * @since 0.1.0
 */
import { AuditLog } from "@janus/storage"
import { Cause, Context, Effect, Layer, Option } from "effect"
import { FindMyWay, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomUUID } from "node:crypto"
import * as Actor from "../audit/Actor.ts"
import type { AdminPrincipal } from "../auth/AdminPrincipal.ts"
import { Admission } from "../auth/Admission.ts"
import { AdmissionAudit } from "../calls/AdmissionAudit.ts"
import { quoteUri } from "../http/RequestFraming.ts"
import { admissionRequest } from "../mcp/Guard.ts"
import { CurrentRequestId } from "../observability/HttpObservability.ts"
import { AdminAuth, AdminIdentity } from "./AdminAuth.ts"
import * as Problem from "./Problem.ts"
import * as RefusedWrites from "./RefusedWrites.ts"

/** The mount point of the admin API. */
export const PREFIX = "/api/v1"

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
const METHODS: ReadonlyArray<Method> = ["GET", "POST", "PUT", "PATCH", "DELETE"]

/** What an admin handler may use: the request, its route and query, and the caller. */
export type AdminContext =
  | HttpServerRequest.HttpServerRequest
  | HttpServerRequest.ParsedSearchParams
  | HttpRouter.RouteContext
  | AdminIdentity

export type AdminHandler = Effect.Effect<HttpServerResponse.HttpServerResponse, Problem.ApiProblem, AdminContext>

export class AdminRouter extends Context.Service<AdminRouter, {
  /** Adds `method path` under `/api/v1` (`path` like `/connections/:id`). */
  readonly add: (method: Method, path: `/${string}`, handler: AdminHandler) => Effect.Effect<void>
}>()("@janus/gateway/admin/AdminRouter") {
  static readonly layer: Layer.Layer<
    AdminRouter,
    never,
    HttpRouter.HttpRouter | AdminAuth | Admission | AdmissionAudit | AuditLog
  > = Layer.effect(
    AdminRouter,
    Effect.gen(function*() {
      const router = yield* HttpRouter.HttpRouter
      const auth = yield* AdminAuth
      const admission = yield* Admission
      const refusals = yield* AdmissionAudit
      const audit = yield* AuditLog
      // The admin routes alone, to tell 404 from 405 in the fallback.
      const known = FindMyWay.make<true>()

      const wrap = <R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, Problem.ApiProblem, R>) =>
        Effect.flatMap(Effect.service(CurrentRequestId), (current: string | undefined) => {
          // the id the observability middleware gave this request, so body, header and logs agree
          const requestId = current ?? randomUUID()
          return Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const clientIp = admission.clientAddress(admissionRequest(request))
            const principal = yield* auth.authenticate(request).pipe(
              Effect.tapError((problem) =>
                problem.status === 401 || problem.status === 403 || problem.status === 429 ||
                  (problem.status === 400 && problem.reason !== undefined)
                  ? refusals.refused({
                    surface: "admin",
                    outcome: problem.status === 401 || problem.status === 400
                      ? "unauthenticated"
                      : problem.status === 403
                      ? "denied"
                      : "rate_limited",
                    status: problem.status,
                    bucket: problem.status === 429 ? "auth_failure" : null,
                    reason: problem.reason ?? null,
                    clientIp,
                    headers: request.headers
                  })
                  : Effect.void
              )
            )
            const actor = actorOf(principal, request, requestId, clientIp)
            return yield* handler.pipe(
              Effect.provideService(AdminIdentity, principal),
              Effect.provideService(Actor.CurrentActor, actor),
              // a write that failed, whatever the route: one `admin` row saying why (`RefusedWrites`)
              Effect.onError((cause) =>
                RefusedWrites.isWrite(request.method) && !Cause.hasInterruptsOnly(cause)
                  ? audit.record(RefusedWrites.inputOf(problemOf(cause), request.method, request.url, actor))
                  : Effect.void
              )
            )
          }).pipe(
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause as Cause.Cause<never>)
                : render(cause, requestId)
            ),
            Effect.map(HttpServerResponse.setHeaders({
              "cache-control": "no-store",
              "x-content-type-options": "nosniff",
              "x-request-id": requestId
            }))
          )
        })

      const add = (method: Method, path: `/${string}`, handler: AdminHandler) =>
        Effect.suspend(() => {
          known.on(method, `${PREFIX}${path}`, true)
          return router.add(method, `${PREFIX}${path}`, wrap(handler))
        })

      const fallback: AdminHandler = Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const allowed = METHODS.filter((method) => known.find(method, request.url) !== undefined)
        if (allowed.length === 0) {
          return yield* Problem.make(
            404,
            "route_not_found",
            `There is no admin API route ${quoteUri(pathOf(request.url))}`
          )
        }
        return yield* Problem.make(
          405,
          "method_not_allowed",
          `${quoteUri(pathOf(request.url))} does not support ${request.method}; it supports ${allowed.join(", ")}`,
          { headers: { allow: allowed.join(", ") } }
        )
      })
      // "/x/*" also matches "/x" itself (HttpRouter registers both).
      yield* router.add("*", `${PREFIX}/*`, wrap(fallback))

      // URLs the router cannot match at all never reach a route; answer those under /api/v1 like the rest.
      const unroutable = Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        return yield* decodable(pathOf(request.url))
          ? Problem.make(404, "route_not_found", "There is no admin API route with such a path")
          : Problem.make(400, "malformed_path", "The request path is not valid percent-encoded UTF-8")
      })
      yield* router.addGlobalMiddleware((effect) =>
        Effect.catchCause(
          effect,
          (cause) =>
            Effect.flatMap(Effect.service(HttpServerRequest.HttpServerRequest), (request) =>
              isUnder(request.url) && isRouteNotFound(cause) ? wrap(unroutable) : Effect.failCause(cause))
        )
      )

      return AdminRouter.of({ add })
    })
  )
}

/** The actor of the changes an admin request makes (see the rules). */
const actorOf = (
  principal: AdminPrincipal,
  request: HttpServerRequest.HttpServerRequest,
  requestId: string,
  clientIp: string
): Actor.Actor => ({
  ...(principal.kind === "admin_token"
    ? { identity: `admin:${principal.tokenId}`, name: principal.name, subject: null, client: null }
    : {
      identity: `oauth:${principal.issuer}#${principal.subject}`,
      name: principal.subject,
      subject: principal.subject,
      client: principal.clientId ?? null
    }),
  interface: request.headers["x-janus-client"] === "studio" ? "studio" : "api",
  requestId,
  clientIp
})

const pathOf = (url: string): string => url.split("?")[0]!

const isUnder = (url: string): boolean => {
  const path = url.split("?")[0]!
  return path === PREFIX || path.startsWith(`${PREFIX}/`)
}

const decodable = (path: string): boolean => {
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

const isRouteNotFound = (cause: Cause.Cause<unknown>): boolean =>
  Option.match(Cause.findErrorOption(cause), {
    onNone: () => false,
    onSome: (error) => HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"
  })

/** The problem a failure is answered with: its `ApiProblem`, or a 500 for a defect. */
const problemOf = (cause: Cause.Cause<Problem.ApiProblem>): Problem.ApiProblem =>
  Option.getOrElse(Cause.findErrorOption(cause), () => Problem.internal(cause))

const render = (cause: Cause.Cause<Problem.ApiProblem>, requestId: string) => {
  const problem = problemOf(cause)
  if (problem.status < 500) return Effect.succeed(Problem.toResponse(problem, requestId))
  const detail = problem.internal === undefined
    ? problem.message
    : Cause.isCause(problem.internal)
    ? Cause.pretty(problem.internal)
    : describe(problem.internal)
  return Effect.logError("admin API request failed").pipe(
    Effect.annotateLogs({ requestId, status: problem.status, code: problem.code, detail: Problem.maskTokens(detail) }),
    Effect.as(Problem.toResponse(problem, requestId))
  )
}

const describe = (value: unknown): string => {
  if (value instanceof Error) return `${value.name}: ${value.message}`
  return String(value)
}
