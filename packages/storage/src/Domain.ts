/**
 * The stored resources of Janus and the inputs that create or replace them.
 *
 * **Rules**
 *
 * - Domain values (`RestConnection`, `Endpoint`, ...) are what reads return;
 *   they never hold a secret value or a token hash.
 * - Inputs (`ConnectionInput`, `EndpointInput`, ...) are decoded with Schema
 *   before any write: a missing or mistyped field is an `InvalidInput` naming
 *   the field. Optional fields get their defaults here.
 * - Rules that need more than a shape check (URL scheme, tool-name pattern,
 *   path template vs argument map, JSON Schema) live in `Validation.ts` and
 *   fail with their own errors.
 * - Names of connections, virtual servers and secrets match
 *   `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$` (no `/`, which separates a connection
 *   from an upstream tool name in `<connection>/<tool>`).
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { ALLOW_LIST_FORMS } from "./EgressAllowList.ts"

const succeed = Effect.succeed

/** Names of connections, virtual servers and secrets. */
export const ResourceNamePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/
/** Names of tools (endpoints and upstream MCP tools). */
export const ToolNamePattern = /^[A-Za-z0-9_./-]{1,64}$/
/** HTTP header names (RFC 9110 token). */
export const HeaderNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/

const expected = (text: string) => ({ expected: text })

/** What a resource name may be, in words (errors and forms show this, not the pattern). */
export const RESOURCE_NAME_RULE = "1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit " +
  "(no spaces)"
export const ResourceName = Schema.String.check(
  Schema.isMinLength(1, expected(`a name (required): ${RESOURCE_NAME_RULE}`)),
  Schema.isPattern(ResourceNamePattern, expected(`a name of ${RESOURCE_NAME_RULE}`))
)
/** A secret's name; an empty one is "required" (a credential needs a secret), not a pattern mismatch. */
export const SecretName = Schema.String.check(
  Schema.isMinLength(1, expected("the name of a secret (required)")),
  Schema.isPattern(ResourceNamePattern, expected(`a secret name of ${RESOURCE_NAME_RULE}`))
)
export const HeaderName = Schema.String.check(
  Schema.isPattern(HeaderNamePattern, expected("an HTTP header name (letters, digits, and !#$%&'*+.^_`|~-)"))
)
/** Free-text names (tokens): 1..128 characters, no control characters. */
export const DisplayName = Schema.String.check(
  Schema.isPattern(/^[^\p{Cc}]{1,128}$/u, expected("1 to 128 characters without control characters"))
)
const Description = Schema.String.check(Schema.isMaxLength(4096, expected("at most 4096 characters")))
const TimeoutMs = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 600_000 }, expected("1..600000 ms")))

// -----------------------------------------------------------------------------
// Connections
// -----------------------------------------------------------------------------

/** How Janus authenticates to a downstream; the credential is a secret referenced by name. */
export const ConnectionAuth = Schema.Union([
  Schema.Struct({ scheme: Schema.Literal("none") }),
  Schema.Struct({ scheme: Schema.Literal("bearer"), secret: SecretName }),
  Schema.Struct({ scheme: Schema.Literal("header"), header: HeaderName, secret: SecretName }),
  Schema.Struct({
    scheme: Schema.Literal("basic"),
    username: Schema.String.check(Schema.isMaxLength(256)),
    secret: SecretName
  })
])
export type ConnectionAuth = typeof ConnectionAuth.Type
export type AuthScheme = ConnectionAuth["scheme"]

/**
 * OAuth 2.0 client credentials against an upstream MCP server's
 * authorization server (mcp connections only): the client secret is a
 * secret referenced by name, like every credential.
 */
export const OAuthClientCredentials = Schema.Struct({
  scheme: Schema.Literal("oauth-client-credentials"),
  tokenUrl: Schema.String,
  clientId: Schema.String.check(Schema.isPattern(/^[^\p{Cc}]{1,256}$/u, expected("1..256 characters"))),
  secret: SecretName,
  scope: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1024))),
  audience: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1024)))
})
/** How Janus authenticates to an upstream MCP server: the REST schemes or OAuth client credentials. */
export const McpConnectionAuth = Schema.Union([...ConnectionAuth.members, OAuthClientCredentials])
export type McpConnectionAuth = typeof McpConnectionAuth.Type

/** Bounded retries with exponential backoff; the gateway retries only idempotent calls. */
export class RetryPolicy extends Schema.Class<RetryPolicy>("@janus/storage/RetryPolicy")({
  maxAttempts: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 }, expected("1..10 attempts"))),
  initialDelayMs: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 60_000 }, expected("0..60000 ms"))),
  maxDelayMs: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 300_000 }, expected("0..300000 ms")))
}) {}
export const defaultRetryPolicy = new RetryPolicy({ maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 2_000 })

/** Per-connection circuit breaker: open after N consecutive failures, for openMs. */
export class BreakerPolicy extends Schema.Class<BreakerPolicy>("@janus/storage/BreakerPolicy")({
  consecutiveFailures: Schema.Int.check(
    Schema.isBetween({ minimum: 1, maximum: 1_000 }, expected("1..1000 failures"))
  ),
  openMs: Schema.Int.check(Schema.isBetween({ minimum: 100, maximum: 3_600_000 }, expected("100..3600000 ms")))
}) {}
export const defaultBreakerPolicy = new BreakerPolicy({ consecutiveFailures: 5, openMs: 30_000 })

/**
 * Addresses, CIDRs, hosts or host suffixes (`.example.com`), each with an optional port, a connection may
 * reach; `null` = the global egress policy. The grammar is checked by `Validation.checkEgressAllowList`.
 */
const EgressAllowList = Schema.NullOr(
  Schema.Array(Schema.String.check(Schema.isPattern(/^[^\s]{1,253}$/, expected(ALLOW_LIST_FORMS))))
)

/**
 * What goes in front of an upstream MCP tool's name: up to 32 tool-name
 * characters, `""` for none (null: the default `<connection name>/`).
 */
export const ToolPrefixPattern = /^[A-Za-z0-9_./-]{0,32}$/
const ToolPrefix = Schema.NullOr(
  Schema.String.check(
    Schema.isPattern(ToolPrefixPattern, expected("up to 32 characters of A-Za-z0-9_./- (\"\" for none), or null"))
  )
)

/** How Janus reaches an upstream MCP server: Streamable HTTP, the deprecated HTTP+SSE, or a program it spawns. */
export const McpTransport = Schema.Literals(["streamable-http", "sse", "stdio"])
export type McpTransport = typeof McpTransport.Type

/** Environment variable names (POSIX portable names): what a configuration document's `valueFrom.env` reads. */
export const EnvNamePattern = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/

/** Text a program can take: no NUL (the OS cannot pass it) and no lone surrogate (not UTF-8). */
const ProgramText = (max: number) =>
  Schema.String.check(
    Schema.isPattern(
      /^(?:[^\0\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/,
      expected("text without NUL characters or lone surrogates")
    ),
    Schema.isMaxLength(max, expected(`at most ${max} characters`))
  )

/** The value of an environment variable: text, or `{ secret }`, the name of a secret whose value is given. */
export const StdioEnvValue = Schema.Union([
  ProgramText(32_768),
  Schema.Struct({ secret: SecretName })
])
export type StdioEnvValue = typeof StdioEnvValue.Type

/**
 * The program of a `transport: "stdio"` upstream: the executable (a name
 * looked up on the gateway's PATH, or an absolute path), its arguments, its
 * environment (besides a minimal one: PATH, HOME, ...) and working directory.
 */
export const StdioCommand = Schema.Struct({
  command: Schema.String.check(
    Schema.isPattern(/^[^\s\p{Cc}][^\p{Cc}]{0,1023}$/u, expected("an executable name or path (1..1024 characters)"))
  ),
  args: Schema.Array(ProgramText(32_768)).check(Schema.isMaxLength(256, expected("at most 256 arguments"))),
  /** Names follow `StdioEnvironment`'s rule (checked by `Connections`: a record drops keys its key schema refuses). */
  env: Schema.Record(Schema.String, StdioEnvValue),
  cwd: Schema.NullOr(ProgramText(4096))
})
export type StdioCommand = typeof StdioCommand.Type

/**
 * How often an upstream's lists are fetched again when it offers no working
 * change channel (`subscriptions/listen`, the 2025 GET stream): 1 s .. 1 day.
 */
const PollIntervalMs = Schema.Int.check(
  Schema.isBetween({ minimum: 1_000, maximum: 86_400_000 }, expected("1000..86400000 ms"))
)
/** The default poll interval: 30 s. */
export const defaultPollIntervalMs = 30_000

const connectionCommon = {
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  timeoutMs: Schema.Int,
  breaker: BreakerPolicy,
  egressAllowList: Schema.NullOr(Schema.Array(Schema.String)),
  version: Schema.Int,
  createdAt: Schema.Date,
  updatedAt: Schema.Date
}

/** A REST downstream whose endpoints become tools. */
export class RestConnection extends Schema.Class<RestConnection>("@janus/storage/RestConnection")({
  kind: Schema.Literal("rest"),
  ...connectionCommon,
  auth: ConnectionAuth,
  baseUrl: Schema.String,
  retry: RetryPolicy
}) {}

/** An upstream MCP server whose tools are federated. */
export class McpConnection extends Schema.Class<McpConnection>("@janus/storage/McpConnection")({
  kind: Schema.Literal("mcp"),
  ...connectionCommon,
  auth: McpConnectionAuth,
  /** The MCP endpoint (`streamable-http`) or SSE endpoint (`sse`); null for `stdio`. */
  url: Schema.NullOr(Schema.String),
  transport: McpTransport,
  /** The program (`stdio` only). */
  stdio: Schema.NullOr(StdioCommand),
  /** In front of every tool name; null: `<connection name>/`, `""`: none. */
  toolPrefix: Schema.NullOr(Schema.String),
  /** How often lists are fetched again while no change channel works. */
  pollIntervalMs: Schema.Int
}) {}

export const Connection = Schema.Union([RestConnection, McpConnection])
export type Connection = RestConnection | McpConnection

const inputCommon = {
  name: ResourceName,
  description: Description.pipe(Schema.withDecodingDefaultKey(succeed(""))),
  timeoutMs: TimeoutMs.pipe(Schema.withDecodingDefaultKey(succeed(30_000))),
  breaker: BreakerPolicy.pipe(Schema.withDecodingDefaultTypeKey(succeed(defaultBreakerPolicy))),
  egressAllowList: EgressAllowList.pipe(Schema.withDecodingDefaultKey(succeed(null)))
}

export const RestConnectionInput = Schema.Struct({
  kind: Schema.Literal("rest"),
  ...inputCommon,
  auth: ConnectionAuth.pipe(Schema.withDecodingDefaultKey(succeed({ scheme: "none" as const }))),
  baseUrl: Schema.String,
  retry: RetryPolicy.pipe(Schema.withDecodingDefaultTypeKey(succeed(defaultRetryPolicy)))
})
export const McpConnectionInput = Schema.Struct({
  kind: Schema.Literal("mcp"),
  ...inputCommon,
  auth: McpConnectionAuth.pipe(Schema.withDecodingDefaultKey(succeed({ scheme: "none" as const }))),
  /** Required unless `transport` is `stdio`. */
  url: Schema.optionalKey(Schema.String),
  transport: McpTransport.pipe(Schema.withDecodingDefaultKey(succeed("streamable-http" as const))),
  /** `transport: "stdio"` only (and required there): the program; `args` and `env` default to none. */
  command: Schema.optionalKey(StdioCommand.fields.command),
  args: StdioCommand.fields.args.pipe(Schema.withDecodingDefaultKey(succeed([]))),
  env: StdioCommand.fields.env.pipe(Schema.withDecodingDefaultKey(succeed({}))),
  cwd: StdioCommand.fields.cwd.pipe(Schema.withDecodingDefaultKey(succeed(null))),
  toolPrefix: ToolPrefix.pipe(Schema.withDecodingDefaultKey(succeed(null))),
  pollIntervalMs: PollIntervalMs.pipe(Schema.withDecodingDefaultKey(succeed(defaultPollIntervalMs)))
})
/** What `Connections.create` takes (and `update`, with the current `version`). */
export const ConnectionInput = Schema.Union([RestConnectionInput, McpConnectionInput])
export type ConnectionInput = typeof ConnectionInput.Encoded

// -----------------------------------------------------------------------------
// Endpoints
// -----------------------------------------------------------------------------

export const HttpMethod = Schema.Literals(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
export type HttpMethod = typeof HttpMethod.Type

/** Where one tool argument goes in the HTTP request. */
export const ArgumentLocation = Schema.Literals(["path", "query", "header", "body"])
export type ArgumentLocation = typeof ArgumentLocation.Type

/** A JSON Schema object (checked further by `Validation.checkInputSchema`). */
export const JsonSchemaObject = Schema.Record(Schema.String, Schema.Unknown)
export type JsonSchemaObject = typeof JsonSchemaObject.Type

/** One REST operation of a rest connection, exposed as one MCP tool. */
export class Endpoint extends Schema.Class<Endpoint>("@janus/storage/Endpoint")({
  id: Schema.String,
  connectionId: Schema.String,
  name: Schema.String,
  description: Schema.String,
  method: HttpMethod,
  pathTemplate: Schema.String,
  arguments: Schema.Record(Schema.String, ArgumentLocation),
  inputSchema: JsonSchemaObject,
  /**
   * The JSON Schema (type "object") of the tool's `structuredContent`, listed
   * in tools/list; a response that does not conform makes the call an error.
   */
  outputSchema: Schema.optional(JsonSchemaObject),
  idempotent: Schema.Boolean,
  version: Schema.Int,
  createdAt: Schema.Date,
  updatedAt: Schema.Date
}) {}

/** Methods that HTTP defines as idempotent: the default of `idempotent` when it is not given. */
export const idempotentMethods: ReadonlySet<HttpMethod> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"])

/** What `Endpoints.create` takes. `idempotent` defaults to the method's HTTP semantics. */
export const EndpointInput = Schema.Struct({
  connectionId: Schema.String,
  name: Schema.String,
  description: Description.pipe(Schema.withDecodingDefaultKey(succeed(""))),
  method: HttpMethod,
  pathTemplate: Schema.String.check(Schema.isMaxLength(2048, expected("at most 2048 characters"))),
  arguments: Schema.Record(Schema.String, ArgumentLocation).pipe(Schema.withDecodingDefaultKey(succeed({}))),
  inputSchema: JsonSchemaObject,
  /** Absent or null: the tool declares no output schema. */
  outputSchema: Schema.optionalKey(Schema.NullOr(JsonSchemaObject)),
  idempotent: Schema.optionalKey(Schema.Boolean)
})
export type EndpointInput = typeof EndpointInput.Encoded

// -----------------------------------------------------------------------------
// Virtual servers
// -----------------------------------------------------------------------------

/**
 * A named subset of tools served at its own MCP URL. A member is an endpoint
 * name, or `<mcp connection>/<upstream tool>`, or `<mcp connection>/*` for
 * every tool of that upstream server.
 */
export class VirtualServer extends Schema.Class<VirtualServer>("@janus/storage/VirtualServer")({
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  tools: Schema.Array(Schema.String),
  /**
   * Serve upstream MCP tools under their upstream names, without the
   * connection prefix, where that name is unique among the server's tools.
   */
  bareNames: Schema.Boolean,
  version: Schema.Int,
  createdAt: Schema.Date,
  updatedAt: Schema.Date
}) {}

export const VirtualServerInput = Schema.Struct({
  name: ResourceName,
  description: Description.pipe(Schema.withDecodingDefaultKey(succeed(""))),
  tools: Schema.Array(Schema.String).check(Schema.isMaxLength(10_000)),
  bareNames: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(succeed(false)))
})
export type VirtualServerInput = typeof VirtualServerInput.Encoded

// -----------------------------------------------------------------------------
// Tokens
// -----------------------------------------------------------------------------

/**
 * A client token as listed: never its hash. `allowedTools` / `allowedVirtualServers`
 * `null` means unrestricted.
 */
export class ClientToken extends Schema.Class<ClientToken>("@janus/storage/ClientToken")({
  id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  allowedTools: Schema.NullOr(Schema.Array(Schema.String)),
  allowedVirtualServers: Schema.NullOr(Schema.Array(Schema.String)),
  expiresAt: Schema.NullOr(Schema.Date),
  revokedAt: Schema.NullOr(Schema.Date),
  lastUsedAt: Schema.NullOr(Schema.Date),
  createdAt: Schema.Date
}) {
  /** Usable at `now`: not revoked and not expired. */
  isActiveAt(now: Date): boolean {
    return this.revokedAt === null && (this.expiresAt === null || this.expiresAt.getTime() > now.getTime())
  }
}

export const ClientTokenInput = Schema.Struct({
  name: DisplayName,
  allowedTools: Schema.NullOr(Schema.Array(Schema.String)).pipe(Schema.withDecodingDefaultKey(succeed(null))),
  allowedVirtualServers: Schema.NullOr(Schema.Array(Schema.String)).pipe(Schema.withDecodingDefaultKey(succeed(null))),
  expiresAt: Schema.NullOr(Schema.Date).pipe(Schema.withDecodingDefaultTypeKey(succeed(null)))
})
export type ClientTokenInput = typeof ClientTokenInput.Type

/** An admin token as listed: never its hash. */
export class AdminToken extends Schema.Class<AdminToken>("@janus/storage/AdminToken")({
  id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  revokedAt: Schema.NullOr(Schema.Date),
  lastUsedAt: Schema.NullOr(Schema.Date),
  createdAt: Schema.Date
}) {}

// -----------------------------------------------------------------------------
// Secrets
// -----------------------------------------------------------------------------

/** What may be listed about a secret: never its value. */
export class SecretInfo extends Schema.Class<SecretInfo>("@janus/storage/SecretInfo")({
  id: Schema.String,
  name: Schema.String,
  keyId: Schema.String,
  version: Schema.Int,
  createdAt: Schema.Date,
  updatedAt: Schema.Date
}) {}

// -----------------------------------------------------------------------------
// Change signals and the event log
// -----------------------------------------------------------------------------

export const ChangeKind = Schema.Literals([
  "connection",
  "endpoint",
  "virtual_server",
  "client_token",
  "secret",
  "admin_token"
])
export type ChangeKind = typeof ChangeKind.Type

/**
 * What changed. `ids` may be empty, meaning "some or all of this kind" (sent
 * after a reconnect, or when the ids would not fit a NOTIFY payload).
 */
export interface Change {
  readonly kind: ChangeKind
  readonly ids: ReadonlyArray<string>
}

/** One committed row of `broker_event`; the same shape as `@janus/sse`'s `LoggedEvent`. */
export interface LoggedEvent {
  readonly id: number
  readonly topic: string
  readonly about: ReadonlyArray<string>
  readonly data: unknown | null
}
