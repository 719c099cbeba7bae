/**
 * The whole gateway as Layers: routes, the services behind them, the HTTP
 * server, and the storage they run on. `layerOn` is the one composition:
 * `bin.ts` launches `layer` (the configured server and storage), and
 * `testing.ts` runs the same composition on a loopback test server over
 * in-memory PGlite.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { Hub } from "@janus/sse"
import { AuditLog, ConfigCache, SecretCache, type Storage } from "@janus/storage"
import { Effect, Layer } from "effect"
import { HttpRouter, type HttpServer, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { AdminApiRoutes, AdminAuth } from "./admin/index.ts"
import * as Problem from "./admin/Problem.ts"
import * as AdminChanges from "./audit/AdminChanges.ts"
import * as AuditLogExport from "./audit/LogExport.ts"
import * as AuditRetention from "./audit/Retention.ts"
import type { AdminPrincipal } from "./auth/AdminPrincipal.ts"
import * as Lifetime from "./auth/CredentialLifetime.ts"
import { CredentialLifetime } from "./auth/CredentialLifetime.ts"
import { Admission } from "./auth/index.ts"
import { AdmissionAudit } from "./calls/AdmissionAudit.ts"
import * as CallAudit from "./calls/CallAudit.ts"
import * as CallGuard from "./calls/CallGuard.ts"
import * as Instrument from "./calls/Instrument.ts"
import { JanusConfig } from "./config/JanusConfig.ts"
import { ConfigFile } from "./configuration/ConfigFile.ts"
import { ConfigurationApplier } from "./configuration/index.ts"
import * as Egress from "./egress/index.ts"
import * as SharedBreakerStore from "./egress/SharedBreakerStore.ts"
import * as ChangeSignals from "./events/ChangeSignals.ts"
import * as EventStream from "./events/EventStream.ts"
import { CompositeCatalog, HeldCalls, UpstreamHealth, VirtualServers } from "./federation/index.ts"
import * as StdioAllowList from "./federation/StdioAllowList.ts"
import * as GatewayStorage from "./GatewayStorage.ts"
import * as Hardening from "./http/Hardening.ts"
import * as HostCheck from "./http/HostCheck.ts"
import * as RequestFraming from "./http/RequestFraming.ts"
import * as Startup from "./http/Startup.ts"
import * as StreamPermits from "./http/StreamPermits.ts"
import * as Studio from "./http/Studio.ts"
import * as Cancellations from "./mcp/Cancellations.ts"
import { Features } from "./mcp/Features.ts"
import { Guard, ListChanged, McpHttp, Sessions, ToolCatalog } from "./mcp/index.ts"
import { CurrentRequestId } from "./observability/HttpObservability.ts"
import { Drain, HttpObservability, Otlp, Prometheus, Propagation } from "./observability/index.ts"
import { OpenApiImporter } from "./openapi/index.ts"
import { HealthRoutes } from "./probes/Health.ts"
import { Redactor } from "./redaction/index.ts"
import * as Security from "./Security.ts"
import * as SqlSessionStore from "./sessions/index.ts"
import * as RestCatalog from "./tools/RestCatalog.ts"
import * as ScopedCatalog from "./tools/ScopedCatalog.ts"

export const VERSION = "0.1.0"

/** The audited identity of an admin principal (as `admin/AdminRouter` records it): its stream permits' key. */
const adminIdentity = (principal: AdminPrincipal): string =>
  principal.kind === "admin_token" ? `admin:${principal.tokenId}` : `oauth:${principal.issuer}#${principal.subject}`

/**
 * The Studio event stream, admin-only: the admin API's authentication guards it, for as long as it holds; one
 * admin identity holds at most `MAX_EVENT_STREAMS_PER_ADMIN` of them on this instance (429, audited, beyond).
 */
const EventRoutes = Layer.unwrap(Effect.gen(function*() {
  const auth = yield* AdminAuth
  const lifetime = yield* CredentialLifetime
  const admission = yield* Admission
  const refusals = yield* AdmissionAudit
  const permits = StreamPermits.make(StreamPermits.MAX_EVENT_STREAMS_PER_ADMIN)
  /** One of the principal's event-stream permits for the request's scope (see `http/StreamPermits.ts`). */
  const hold = (request: HttpServerRequest.HttpServerRequest, principal: AdminPrincipal) =>
    permits.hold(adminIdentity(principal)).pipe(
      Effect.tapError(() =>
        refusals.refused({
          surface: "admin",
          outcome: "rate_limited",
          status: 429,
          bucket: "streams",
          reason: null,
          clientIp: admission.clientAddress(Guard.admissionRequest(request)),
          headers: request.headers
        })
      ),
      Effect.mapError((reached) =>
        Problem.make(
          429,
          "too_many_streams",
          `This admin identity holds ${reached.held} of the ${reached.max} event streams it may hold open on ` +
            `this instance; close one (a Studio tab) before opening another`,
          { headers: { "retry-after": String(StreamPermits.RETRY_AFTER_SECONDS) } }
        )
      )
    )
  return EventStream.routes((request) =>
    Effect.clockWith((clock) => {
      const since = clock.currentTimeMillisUnsafe()
      return auth.authenticate(request).pipe(
        Effect.tap((principal) => hold(request, principal)),
        Effect.map((principal): EventStream.Admission => ({
          _tag: "Admitted",
          until: lifetime.until(Lifetime.ofPrincipal(principal), since)
        })),
        Effect.catch((problem) =>
          Effect.map(Effect.service(CurrentRequestId), (id): EventStream.Admission => ({
            _tag: "Refused",
            response: Problem.toResponse(problem, id ?? "events")
          }))
        )
      )
    })
  )
})).pipe(Layer.provide(AdminAuth.layer))

/**
 * `/metrics`: open without `JANUS_METRICS_TOKEN`; with it, a scrape draws on the per-address bucket and a refused
 * one on the failed-authentication bucket of its address too (`Admission.admitAuthentication`, as the admin API).
 */
const MetricsRoute = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  const admission = yield* Admission
  return Prometheus.layer({
    token: config.JANUS_METRICS_TOKEN,
    admit: (request, verified) =>
      admission.admitAuthentication(Guard.admissionRequest(request), verified, () => true).pipe(
        Effect.catchTag("AdmissionRefused", (refused) =>
          Effect.fail(HttpServerResponse.jsonUnsafe(
            { error: "rate_limited", message: refused.message },
            { status: refused.status, headers: { ...refused.headers, "cache-control": "no-store" } }
          )))
      )
  })
}))

/** Every route of the gateway; `mcp` overrides the MCP transport's options (tests). */
export const makeRoutes = (mcp: Partial<McpHttp.McpHttpOptions> = {}) =>
  Layer.mergeAll(
    Layer.unwrap(Effect.gen(function*() {
      const config = yield* JanusConfig
      const lifetime = yield* CredentialLifetime
      const options: McpHttp.McpHttpOptions = {
        serverInfo: { name: "janus", version: VERSION, title: "Janus MCP gateway" },
        allowedOrigins: config.JANUS_ALLOWED_ORIGINS,
        // every stream ends when the credential that opened it is revoked, deleted or expires
        streamLifetime: (caller, since) => lifetime.until(Lifetime.ofCaller(caller), since),
        ...mcp
      }
      return Layer.mergeAll(
        HealthRoutes,
        EventRoutes,
        // the admin UI at `/`: the router's fallback, so every route above keeps precedence
        Studio.routes(),
        AdminApiRoutes,
        McpHttp.layer(options),
        // RFC 9728 metadata for /mcp and the virtual servers, when OAuth is on
        Security.layerProtectedResourceMetadata,
        // virtual servers: one mount for all, the server taken from the route per request
        Layer.unwrap(Effect.map(VirtualServers.scopeCaller, (scopeCaller) =>
          McpHttp.layer({
            ...options,
            path: "/servers/:name/mcp",
            legacySse: options.legacySse === false ? false : {
              ssePath: "/servers/:name/sse",
              messagesPath: "/servers/:name/messages"
            },
            scopeCaller
          })))
      )
    })),
    // JANUS_METRICS_TOKEN: with a token, the per-address and failed-authentication buckets of admission
    MetricsRoute,
    // DNS rebinding: a Host that is none of the gateway's names is refused on every route but the probes
    HostCheck.layer,
    // 414 beyond 8 KiB of URI, 415 for a content-coded body (http/RequestFraming.ts)
    RequestFraming.layer,
    // request ids, HTTP metrics, the drain gate (503 for new requests once SIGTERM arrived)
    HttpObservability.layer()
  )

/** Every route of the gateway. */
export const routes = makeRoutes()

/** The services behind the routes, over a storage. */
export const services: Layer.Layer<
  | Admission
  | Redactor
  | ToolCatalog.ToolCatalog
  | ListChanged.ListChangedSignals
  | UpstreamHealth
  | Features
  | Sessions.McpSessionStore
  | Cancellations.CallCancellations
  | Guard.McpGuard
  | CallAudit.CallAudit
  | AdmissionAudit
  | Hub.Hub
  | Egress.DownstreamClient
  | Egress.EgressPolicy
  | OpenApiImporter
  | CredentialLifetime
  | ConfigurationApplier
  | ConfigFile,
  | Egress.InvalidEgressConfig
  | Layer.Error<typeof Security.layerAdmission>
  | Layer.Error<typeof Security.layerOAuth>
  | Layer.Error<typeof Security.layerRedactor>,
  JanusConfig | GatewayStorage.StorageServices
> = Layer.mergeAll(
  // REST endpoints and upstream MCP servers as one tool list, filtered per caller
  // (through `/servers/{name}/mcp`, only the members of that virtual server)
  // and list-changed signals from storage writes (the hub) and from this replica's upstream MCP servers
  Layer.mergeAll(
    ScopedCatalog.layer(VirtualServers.layerCatalog(Layer.effectContext(Effect.context<ToolCatalog.ToolCatalog>()))),
    ChangeSignals.ListChangedFromHubAndUpstreams,
    // the upstreams' state for the admin API (Studio); just that service (a whole context would bring the
    // unscoped catalog along)
    Layer.effect(UpstreamHealth, Effect.service(UpstreamHealth)),
    // the upstreams' resources, prompts and completion, served by the MCP endpoint beside the tools
    Layer.effect(Features, Effect.service(Features)),
    // and its changes as `upstream` signals, so Studio shows the state live
    ChangeSignals.AnnounceUpstreamChanges
  ).pipe(Layer.provide(
    CompositeCatalog.layerWithFederation(RestCatalog.layer.pipe(
      // spans and cache metrics around resolve, secret and egress, without touching the hot-path code
      Layer.updateService(Egress.DownstreamClient, Instrument.downstreamClient),
      Layer.updateService(SecretCache, Instrument.secretCache),
      Layer.updateService(ConfigCache, Instrument.configCache)
    )).pipe(
      // 2026-07-28 clients' calls of 2025-era upstreams, held for the client's input and continued on any replica
      Layer.provide(HeldCalls.layer)
    )
  )),
  ChangeSignals.AnnounceChanges,
  // notifications/cancelled for a call running on another replica
  SqlSessionStore.SqlCancellations.layer,
  // `POST /api/v1/openapi/import` (documents fetched by URL go through egress)
  OpenApiImporter.layer,
  // export/apply of configuration documents (admin API), and JANUS_CONFIG_FILE applied before serving
  ConfigFile.layer.pipe(Layer.provideMerge(ConfigurationApplier.layer)),
  // open streams end with their credential (revoked or deleted on any replica, expired)
  CredentialLifetime.layer,
  // AUDIT_RETENTION: whole old segments of the audit chains deleted every hour
  AuditRetention.layer
).pipe(
  // 2025-era sessions and held calls, in the database: shared by every replica
  Layer.provideMerge(SqlSessionStore.layer()),
  // the tools/call span and the calls metric by outcome, tool and connection
  Layer.provideMerge(Instrument.mcpGuardLayer.pipe(Layer.provide(CallGuard.layer))),
  // every attempt: one audit row (group-committed by storage's AuditLog) and one `calls` event; refusals
  // before admission counted and sampled into rows
  Layer.provideMerge(Layer.mergeAll(
    Layer.unwrap(Effect.map(Effect.service(AuditLog), (log) => CallAudit.CallAudit.layerWith(log.record))),
    AdmissionAudit.layer
  )),
  Layer.provideMerge(EventStream.layerHub),
  Layer.provideMerge(
    Egress.layer({}).pipe(Layer.provide(Layer.mergeAll(
      Egress.Resolver.layerSystem,
      // breaker state per connection as a gauge; shared through Redis when REDIS_URL is set
      Instrument.breakerStoreLayer.pipe(Layer.provide(SharedBreakerStore.layerConfig))
    )))
  ),
  Layer.provideMerge(Security.layerAdmission),
  Layer.provideMerge(Security.layerRedactor),
  // OAuth services, when enabled, are looked up by admission and the admin API
  Layer.provideMerge(Security.layerOAuth)
)

/** The Node HTTP server on JANUS_HOST:JANUS_PORT. */
export const layerServer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  // Node's own limits on header size, slow headers and slow requests (see http/Hardening.ts);
  // requests accepted before the router is installed get 503 rather than no answer (http/Startup.ts)
  return NodeHttpServer.layer(() => Startup.answerUntilServed(Hardening.createServer()), {
    host: config.JANUS_HOST,
    port: config.JANUS_PORT,
    // the drain (observability/Drain.ts) has already waited up to JANUS_SHUTDOWN_TIMEOUT for in-flight
    // requests when the server closes; this only bounds what is left, inside the pod's grace period
    gracefulShutdownTimeout: "1 second"
  })
}))

/** What starting the gateway can fail with before it serves a request. */
export type StartError =
  | Storage.StorageStartError
  | Layer.Error<typeof layerServer>
  | Layer.Error<typeof GatewayStorage.layer>
  | Layer.Error<typeof services>

/**
 * The gateway on `server` over `storage`. The drain's finalizer is built last,
 * so on SIGTERM it runs first: readiness flips to 503, new requests are
 * refused, open streams end with a `retry:` hint, in-flight calls finish up to
 * JANUS_SHUTDOWN_TIMEOUT, the audit and event logs flush; then the server
 * closes.
 */
export const layerOn = <S, SE, StE>(options: {
  readonly server: Layer.Layer<S | HttpServer.HttpServer, SE, JanusConfig>
  readonly storage: Layer.Layer<GatewayStorage.StorageServices, StE, JanusConfig>
  readonly mcp?: Partial<McpHttp.McpHttpOptions> | undefined
  /** Extra services under the gateway's (tests: e.g. an OAuth layer with a test issuer). */
  readonly extra?: Layer.Layer<never, never, never> | undefined
}) =>
  Layer.mergeAll(Drain.layerShutdown, Drain.storageFlushHooks).pipe(
    Layer.provideMerge(HttpRouter.serve(makeRoutes(options.mcp), { disableListenLog: true, disableLogger: true })),
    Layer.provideMerge(services),
    Layer.provideMerge(options.extra ?? Layer.empty),
    // OTEL_PROPAGATORS and the exemplar filter, read by every request whether or not anything is exported;
    // with no tracer, egress requests carry the caller's trace context and no client span of effect's
    Layer.provideMerge(
      Layer.mergeAll(
        Drain.Drain.layerConfig,
        HttpObservability.layerTracing(),
        Otlp.layerReferences,
        Propagation.layerUntracedClient
      )
    ),
    Layer.provideMerge(options.server),
    // which programs stdio upstreams may run: checked by storage on writes and by federation before spawning;
    // the event log's writer reports its buffer and flushes as metrics
    // every configuration change audited, whichever interface makes it (admin API, Studio, apply)
    // and every audit row an OTLP log record when OTLP logs are on
    Layer.provideMerge(AdminChanges.layer.pipe(
      Layer.provideMerge(AuditLogExport.layer),
      Layer.provideMerge(
        options.storage.pipe(
          Layer.provideMerge(StdioAllowList.layer),
          Layer.provide(Instrument.eventLogObserverLayer),
          Layer.provide(Instrument.cacheObserverLayer)
        )
      )
    ))
  )

/** The gateway serving HTTP, given its configuration. */
export const layer: Layer.Layer<
  Layer.Success<typeof layerServer> | GatewayStorage.StorageServices | Drain.Drain,
  StartError,
  JanusConfig
> = layerOn({ server: layerServer, storage: GatewayStorage.layer })
