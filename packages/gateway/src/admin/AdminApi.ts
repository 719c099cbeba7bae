/**
 * The admin REST API under `/api/v1` (issue #5), every route wired together.
 *
 * `AdminApiRoutes` adds every admin route to the `HttpRouter`:
 * connections, endpoints, virtual servers, client tokens, admin tokens and
 * secrets (write-only), the effective configuration, connection tests
 * (`ConnectionChecks`) and the upstream MCP servers' state (read-only, when
 * `UpstreamHealth` is present). It needs the storage repositories and
 * `Admission` (the per-IP and failed-authentication limits); OAuth
 * (`OAuthConfig` + `JwtVerifier`) is optional and used when present.
 * `POST /api/v1/openapi/import` needs `OpenApiImporter`; the configuration
 * document's export and apply (`/api/v1/config/...`) need
 * `ConfigurationApplier`. Not here:
 * `GET /api/v1/events` (mounted by the lead).
 *
 * **Why `HttpRouter` and not `HttpApi`.** `HttpApi` shines when the schemas
 * of the API are its contract: typed groups, decoded payloads, a derived
 * client and OpenAPI. Here the contract lives in storage, which decodes and
 * validates every write and reports precise tagged errors; an `HttpApi`
 * payload schema would validate everything a second time, answer with its own
 * error shape before storage could name the field, and still need custom
 * code for what matters most in this API: the one error body, 413/415 before
 * decoding, `ETag`/`If-Match`/428, cursor pagination, `no-store`, and the
 * admin-token-or-JWT check with RFC 6750 challenges. Plain routes keep each
 * rule in one small module (`AdminRouter`, `AdminAuth`, `Problem`,
 * `JsonBody`, `Pagination`, `Preconditions`, `Resource`). OpenAPI can be added
 * later as a document, without changing the routes.
 *
 * @since 0.1.0
 */
import type { AuditLog, MasterKey, SecretCache, Storage } from "@janus/storage"
import { Layer } from "effect"
import type { HttpRouter } from "effect/http"
import type * as SqlClient from "effect/sql/SqlClient"
import type { Admission } from "../auth/Admission.ts"
import type { AdmissionAudit } from "../calls/AdmissionAudit.ts"
import type { JanusConfig } from "../config/JanusConfig.ts"
import type { ConfigurationApplier } from "../configuration/Applier.ts"
import type { DownstreamClient } from "../egress/index.ts"
import type { OpenApiImporter } from "../openapi/index.ts"
import { AdminAuth } from "./AdminAuth.ts"
import { AdminRouter } from "./AdminRouter.ts"
import { AuditRoutes } from "./Audit.ts"
import { ConfigRoutes } from "./Config.ts"
import { ConfigurationRoutes } from "./Configuration.ts"
import { ConnectionCheckRoutes } from "./ConnectionChecks.ts"
import { ConnectionRoutes } from "./Connections.ts"
import { EndpointRoutes } from "./Endpoints.ts"
import { OpenApiRoutes } from "./OpenApi.ts"
import { SecretRoutes } from "./Secrets.ts"
import { AdminTokenRoutes, ClientTokenRoutes } from "./Tokens.ts"
import { UpstreamRoutes } from "./Upstreams.ts"
import { VirtualServerRoutes } from "./VirtualServers.ts"

/** Every `/api/v1` route of the admin API. */
export const AdminApiRoutes: Layer.Layer<
  never,
  never,
  | HttpRouter.HttpRouter
  | Storage.Repositories
  | AuditLog
  | OpenApiImporter
  | JanusConfig
  | DownstreamClient
  | SecretCache
  | Admission
  | AdmissionAudit
  | ConfigurationApplier
  | SqlClient.SqlClient
  | MasterKey
> = Layer.mergeAll(
  AuditRoutes,
  ConfigRoutes,
  ConfigurationRoutes,
  ConnectionCheckRoutes,
  ConnectionRoutes,
  EndpointRoutes,
  VirtualServerRoutes,
  ClientTokenRoutes,
  AdminTokenRoutes,
  SecretRoutes,
  OpenApiRoutes,
  UpstreamRoutes
).pipe(
  Layer.provide(AdminRouter.layer),
  Layer.provide(AdminAuth.layer)
)
