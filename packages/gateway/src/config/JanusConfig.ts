/**
 * The gateway's configuration: every environment variable Janus reads, in one
 * place, validated at start.
 *
 * **Rules**
 *
 * - Every variable is read through effect `Config` (so a test swaps the
 *   `ConfigProvider`, never `process.env`), parsed on its own, and every
 *   mistake is reported at once, one line each: the variable, the bad value
 *   (masked when the variable is a secret) and what is expected.
 * - An unknown `JANUS_*` or `OAUTH_*` variable is a warning, not an error: it
 *   is most often a typo of a real one (which would silently leave a setting,
 *   say an issuer's audiences, at its default), so the warning names the
 *   closest known variable.
 * - Defaults serve one developer machine: embedded database under `./.janus`,
 *   listening on 127.0.0.1:8080, no Redis.
 * - Every default of the gateway lives here, once; the other modules read it
 *   from `VARIABLES` (e.g. the rate limits). The cache TTLs are the exception:
 *   storage also runs without the gateway, so their home is storage's
 *   `CacheSettings.defaults`, which the variables here reference.
 *
 * `VARIABLES` is the list that deploy manifests and docs are checked against.
 *
 * @since 0.1.0
 */
import * as CacheSettings from "@janus/storage/CacheSettings"
import { Config, Console, Context, Duration, Effect, Layer, Option, Redacted, Result, Schema } from "effect"
import * as LocalKeySet from "./LocalKeySet.ts"
import * as OAuthVariables from "./OAuthVariables.ts"
import * as OtelVariables from "./OtelVariables.ts"
import * as Settings from "./Settings.ts"

const { issuerVariable, optional, variable } = Settings
type Variable<A> = Settings.Variable<A>

const showList = (values: ReadonlyArray<string>) => values.join(",")
const issuerList: Settings.IssuerValue<ReadonlyArray<string>> = { parse: Settings.list, show: showList, name: "list" }

const httpUrl: Settings.Parser<string> = (raw) => Result.map(Settings.url(["https", "http"])(raw), Redacted.value)
const issuerText: Settings.IssuerValue<string> = { parse: Settings.text, show: String, name: "prefix" }
const issuerUrl: Settings.IssuerValue<string> = { parse: httpUrl, show: String, name: "url" }
// checked as a JWK Set here already, so a mistake is named at start with the others (never quoting the value)
const issuerKeySet: Settings.IssuerValue<string> = {
  parse: (raw) =>
    Result.mapBoth(LocalKeySet.checkKeySet(raw.trim(), "the value"), {
      onFailure: (why) => `a JWK Set of public signing keys (${why})`,
      onSuccess: () => raw.trim()
    }),
  show: String,
  name: "JWK Set JSON"
}
const issuerFile: Settings.IssuerValue<string> = { parse: Settings.text, show: String, name: "path" }

/**
 * Every variable Janus reads. The key is the environment variable's name.
 */
export const VARIABLES = {
  JANUS_HOST: variable(Settings.host, "127.0.0.1", "Address to listen on"),
  JANUS_PORT: variable(Settings.port, 8080, "Port to listen on"),
  JANUS_HOME: variable(
    Settings.text,
    ".janus",
    "Directory of the embedded database (data/) and its master key (master.key)"
  ),
  JANUS_MASTER_KEY: optional(
    Settings.key32,
    "AES-256-GCM key for secrets (32 bytes, base64); the embedded mode creates JANUS_HOME/master.key when unset",
    true
  ),
  JANUS_MASTER_KEY_PREVIOUS: variable(
    Settings.key32List,
    [],
    "Keys secrets were sealed with before a rotation (comma-separated); they still open old secrets",
    true
  ),
  JANUS_SHUTDOWN_TIMEOUT: variable(Settings.duration(), Duration.seconds(20), "How long a drain may take on SIGTERM"),
  AUDIT_DURABILITY: variable(
    Settings.oneOf(["sync", "async"]),
    "sync",
    "sync: a call is answered only after its audit row is durable (Postgres: committed, group commit; embedded: " +
      "appended to the audit journal beside the database); async: answered at once, and " +
      "the rows of up to the last second (or of a database outage) are lost if the process dies"
  ),
  AUDIT_RETENTION: variable(
    Settings.duration(Duration.days(36_500), Duration.hours(1)),
    Duration.days(90),
    "How long audit records are kept; older ones are deleted in whole segments of their hash chain"
  ),
  JANUS_ALLOWED_ORIGINS: variable(Settings.list, [], "Extra Origins allowed on /mcp (comma-separated)"),
  JANUS_ALLOWED_HOSTS: variable(
    Settings.hostNames,
    [],
    "Host names the gateway answers to besides loopback names, IP addresses, JANUS_HOST and OAUTH_RESOURCE's host " +
      "(comma-separated; .example.com for a domain and its subdomains): every other Host is refused " +
      "(DNS rebinding)"
  ),
  JANUS_DEMO: variable(Settings.boolean, false, "Seed a demo downstream and endpoints on start"),
  LOG_LEVEL: variable(
    Settings.oneOf(["trace", "debug", "info", "warn", "error", "fatal"]),
    "info",
    "Minimum log level"
  ),
  DATABASE_URL: optional(Settings.url(["postgres", "postgresql"]), "Postgres URL; unset means embedded", true),
  DB_MAX_OPEN_CONNS: variable(
    Settings.int(1, 1_000),
    15,
    "Postgres pool size per instance (LISTENs share one more connection)"
  ),
  DB_IDLE_TIMEOUT: variable(Settings.duration(), Duration.minutes(5), "Idle time before a pooled connection closes"),
  DB_CONN_MAX_LIFETIME: variable(Settings.duration(), Duration.minutes(30), "Lifetime of a pooled connection"),
  REDIS_URL: optional(Settings.url(["redis", "rediss"]), "Redis URL for global limits, breakers and caches", true),
  REDIS_TIMEOUT: variable(
    Settings.duration(Duration.seconds(10)),
    Duration.millis(250),
    "How long a rate-limit or circuit-breaker decision waits for Redis before deciding in this instance's memory for a second"
  ),
  CONFIG_CACHE_TTL: variable(Settings.duration(), CacheSettings.defaults.config, "Config and client-token cache TTL"),
  SECRET_CACHE_TTL: variable(Settings.duration(), CacheSettings.defaults.secrets, "Secret cache TTL"),
  RESPONSE_CACHE_TTL: variable(
    Settings.duration(),
    Duration.zero,
    "Response cache TTL for idempotent GET tools; 0 is off"
  ),
  MCP_MAX_CONCURRENT_CALLS: variable(Settings.int(1, 100_000), 200, "Concurrent tools/call cap; the excess is shed"),
  /*
   * 16: a client holds one GET stream per session (or one subscriptions/listen per set of subscriptions), and an
   * agent host running a few sessions under one token, with a reconnect overlapping the stream it replaces, stays
   * well under it; each stream holds a socket, change subscriptions and keep-alive fibers, so 16 bounds what one
   * credential can hold while hundreds of identities share an instance.
   */
  MCP_MAX_STREAMS_PER_CALLER: variable(
    Settings.int(1, 10_000),
    16,
    "Long-lived streams (GET /mcp, /sse, subscriptions/listen) one identity may hold open on this instance; " +
      "one more is refused with 429"
  ),
  JANUS_ALLOW_ANONYMOUS: variable(
    Settings.boolean,
    false,
    "Serve /mcp without credentials as the anonymous caller (loopback development only)"
  ),
  JANUS_TRUSTED_PROXIES: variable(
    Settings.list,
    [],
    "Proxies (CIDRs or addresses) whose X-Forwarded-For hop names the client IP"
  ),
  RATE_LIMIT_IP: variable(Settings.int(1, 1_000_000), 300, "Per-IP requests per second (pre-auth DoS guard)"),
  RATE_LIMIT_IP_BURST: variable(Settings.int(1, 1_000_000), 600, "Per-IP burst"),
  RATE_LIMIT_IDENTITY: variable(Settings.int(1, 1_000_000), 50, "Per-identity requests per second (fairness tier)"),
  RATE_LIMIT_IDENTITY_BURST: variable(Settings.int(1, 1_000_000), 100, "Per-identity burst"),
  RATE_LIMIT_AUTH_FAILURES: variable(
    Settings.int(1, 1_000_000),
    30,
    "Failed admin API authentications per minute per address; past the burst the address gets 429"
  ),
  RATE_LIMIT_AUTH_FAILURES_BURST: variable(Settings.int(1, 1_000_000), 10, "Failed authentications allowed in a row"),
  OAUTH_ENABLED: variable(Settings.boolean, false, "Accept OAuth 2.1 access tokens (JWT) from OAUTH_ISSUERS"),
  OAUTH_ISSUERS: variable(
    Settings.list,
    [],
    "Trusted authorization servers by issuer URL (comma-separated; a trailing slash does not matter; {tenantid} " +
      "stands for any tenant of a multi-tenant issuer)"
  ),
  OAUTH_RESOURCE: optional(
    httpUrl,
    "This gateway's canonical resource URI (RFC 8707), e.g. https://janus.example.com/mcp"
  ),
  OAUTH_TOOL_SCOPES: issuerVariable(
    issuerList,
    ["mcp:tools"],
    "Scopes an access token needs for /mcp; challenges and scopes_supported name the first issuer's"
  ),
  OAUTH_ADMIN_SCOPES: variable(Settings.list, ["janus:admin"], "Scopes an access token needs for /api/v1"),
  OAUTH_AUDIENCES: issuerVariable(
    issuerList,
    undefined,
    "Audiences accepted besides OAUTH_RESOURCE (Entra api://... or app id, Auth0 API identifier)"
  ),
  OAUTH_SCOPE_CLAIMS: issuerVariable(
    issuerList,
    ["scope", "scp"],
    "Claims scopes are read from (scope, scp, roles, permissions, realm_access.roles, ...)"
  ),
  OAUTH_SCOPE_PREFIX: issuerVariable(
    issuerText,
    undefined,
    "Prefix stripped from granted scopes and put before the scopes clients are told to request (Entra: api://<app>/)"
  ),
  OAUTH_JWKS_URL: issuerVariable(
    issuerUrl,
    undefined,
    "Where an issuer's signing keys are fetched; unset: discovered from its metadata"
  ),
  OAUTH_JWKS: {
    // secret: a pasted set may hold a private key by mistake; it is refused, and never shown
    ...issuerVariable(
      issuerKeySet,
      undefined,
      "An issuer's public signing keys as an inline JWK Set ({\"keys\": [...]}), instead of fetching them " +
        "(an identity provider Janus cannot reach, tests); private key material is refused"
    ),
    secret: true
  },
  OAUTH_JWKS_FILE: issuerVariable(
    issuerFile,
    undefined,
    "A file holding an issuer's JWK Set, read at start and again at every OAUTH_JWKS_REFRESH, instead of fetching " +
      "it; private key material is refused"
  ),
  OAUTH_TENANTS: issuerVariable(
    issuerList,
    undefined,
    "Tenants a multi-tenant issuer ({tenantid} in OAUTH_ISSUERS) may name; unset: any"
  ),
  OAUTH_HTTP_ISSUERS: variable(
    Settings.list,
    [],
    "Issuers (of OAUTH_ISSUERS) allowed on plain http beyond loopback, with their JWKS URL (in-cluster servers)"
  ),
  OAUTH_CLOCK_TOLERANCE: issuerVariable(
    { parse: Settings.duration(Duration.minutes(10)), show: Duration.format, name: "duration" },
    Duration.seconds(60),
    "Tolerance for exp, nbf and iat"
  ),
  OAUTH_MAX_TOKEN_LIFETIME: variable(
    Settings.duration(Duration.days(365), Duration.minutes(1)),
    Duration.hours(24),
    "Longest access token lifetime accepted: exp - iat (exp - now without iat); longer-lived tokens are refused"
  ),
  OAUTH_JWKS_REFRESH: issuerVariable(
    // not under the on-demand refetch window (OAuthOptions' jwksMinRefreshInterval)
    { parse: Settings.duration(Duration.days(1), Duration.seconds(30)), show: Duration.format, name: "duration" },
    Duration.minutes(10),
    "How often each issuer's signing keys are fetched again (at least 30s)"
  ),
  OAUTH_VIRTUAL_SERVERS_ACCEPT_MCP_TOKENS: variable(
    Settings.boolean,
    true,
    "Accept tokens for OAUTH_RESOURCE (and OAUTH_AUDIENCES) on /servers/{name}/mcp, besides tokens for that URL"
  ),
  OAUTH_REQUIRED_TOKEN_TYPE: optional(
    Settings.text,
    "When set, an access token's typ header must equal it, e.g. at+jwt (RFC 9068); unset: any typ"
  ),
  OAUTH_MAX_TOKEN_LENGTH: variable(
    // at most the HTTP header block limit (http/Hardening.ts): a longer token could never arrive
    Settings.int(256, 16_384),
    16_384,
    "Longest access token accepted, in characters (Keycloak tokens with many roles pass 8 KiB; at most 16384, " +
      "the limit of a request's whole header block)"
  ),
  OAUTH_RESOURCE_NAME: optional(
    Settings.text,
    "resource_name of the protected resource metadata (RFC 9728): the name clients show when asking for consent"
  ),
  OAUTH_RESOURCE_DOCUMENTATION: optional(
    httpUrl,
    "resource_documentation of the protected resource metadata (RFC 9728): a page for developers of MCP clients"
  ),
  REDACTION_ENABLED: variable(Settings.boolean, false, "Redact sensitive data in tool arguments and responses"),
  JANUS_STDIO_COMMANDS: variable(
    Settings.list,
    [],
    "Programs stdio upstream MCP servers may run: names on PATH or absolute paths, * within a path segment (comma-separated); empty allows none"
  ),
  JANUS_CONFIG_FILE: optional(
    Settings.text,
    "A configuration document (file, or directory of .yaml/.json files) applied at start and again whenever it " +
      "changes; one that does not validate keeps the running configuration (see /readyz)"
  ),
  JANUS_CONFIG_PRUNE: variable(
    Settings.boolean,
    false,
    "Whether applying JANUS_CONFIG_FILE also removes what the document does not name (otherwise it is kept)"
  ),
  JANUS_METRICS_TOKEN: optional(
    Settings.bearerToken(16, 4_096),
    "When set, GET /metrics answers only requests with Authorization: Bearer <this token> (a Prometheus " +
      "scraper's static token); unset: /metrics is open, as /healthz is",
    true
  ),
  // the standard OpenTelemetry variables (export, sampling, propagation): config/OtelVariables.ts
  ...OtelVariables.VARIABLES
} as const

type Variables = typeof VARIABLES

/** The validated configuration. */
export type JanusSettings = { readonly [K in keyof Variables]: Variables[K]["default"] }

/** One mistake in the environment. */
export class InvalidVariable extends Schema.Class<InvalidVariable>("InvalidVariable")({
  name: Schema.String,
  value: Schema.String,
  expected: Schema.String
}) {
  get line(): string {
    return `${this.name}=${this.value}: expected ${this.expected}`
  }
}

/** The environment has one or more mistakes; the message lists them all. */
export class InvalidConfiguration extends Schema.TaggedError<InvalidConfiguration>()("InvalidConfiguration", {
  problems: Schema.Array(InvalidVariable)
}) {
  override get message(): string {
    return `Invalid configuration (${this.problems.length} problem${this.problems.length === 1 ? "" : "s"}):\n` +
      this.problems.map((p) => `  - ${p.line}`).join("\n")
  }
}

const mask = (raw: string): string => raw === "" ? "(empty)" : `(${raw.length} characters, hidden)`
const show = (raw: string): string => raw === "" ? "(empty)" : JSON.stringify(raw)

/**
 * Reads and validates every variable. Fails with all mistakes at once.
 */
export const load: Effect.Effect<JanusSettings, InvalidConfiguration> = Effect.gen(function*() {
  const problems: Array<InvalidVariable> = []
  const settings: Record<string, unknown> = {}
  for (const [name, v] of Object.entries(VARIABLES) as Array<[string, Variable<unknown>]>) {
    const raw = yield* Config.option(Config.String(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    if (Option.isNone(raw) || (raw.value.trim() === "" && name !== "JANUS_ALLOWED_ORIGINS")) {
      settings[name] = v.default
      continue
    }
    const parsed = v.parse(raw.value)
    if (Result.isSuccess(parsed)) {
      // a per-issuer setting given for some issuers only keeps the default for the others
      settings[name] = parsed.success instanceof Settings.PerIssuer && v.default instanceof Settings.PerIssuer
        ? parsed.success.withDefault(v.default.all)
        : parsed.success
    } else {
      problems.push(
        new InvalidVariable({ name, value: v.secret ? mask(raw.value) : show(raw.value), expected: parsed.failure })
      )
    }
  }
  // Postgres mode has no key file to fall back on: every replica must share one key.
  const databaseUrl = settings.DATABASE_URL as Option.Option<unknown> | undefined
  const masterKey = settings.JANUS_MASTER_KEY as Option.Option<unknown> | undefined
  if (databaseUrl && Option.isSome(databaseUrl) && masterKey && Option.isNone(masterKey)) {
    problems.push(
      new InvalidVariable({
        name: "JANUS_MASTER_KEY",
        value: "(unset)",
        expected: "a key when DATABASE_URL is set (every replica must decrypt the same secrets): " +
          "32 random bytes in base64, for example the output of `openssl rand -base64 32`"
      })
    )
  }
  // Anonymous access is a convenience for one developer's machine, never for a shared deployment.
  const loopback = ["127.0.0.1", "localhost", "::1"].includes(String(settings.JANUS_HOST))
  if (settings.JANUS_ALLOW_ANONYMOUS === true && (!loopback || (databaseUrl && Option.isSome(databaseUrl)))) {
    problems.push(
      new InvalidVariable({
        name: "JANUS_ALLOW_ANONYMOUS",
        value: "\"true\"",
        expected: "false unless JANUS_HOST is a loopback address and the database is embedded " +
          "(anonymous callers would otherwise reach every tool); use client tokens instead"
      })
    )
  }
  for (const problem of OAuthVariables.problems(settings)) problems.push(new InvalidVariable(problem))
  for (const problem of OtelVariables.problems(settings)) problems.push(new InvalidVariable(problem))
  if (problems.length > 0) return yield* new InvalidConfiguration({ problems })
  return settings as JanusSettings
})

/** Levenshtein distance, to suggest the variable an unknown one was meant to be. */
const distance = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1))
      previous = current
    }
  }
  return row[b.length]!
}

/** Prefixes of the variables only Janus reads: another name under them is a typo, not some other program's. */
export const OWN_PREFIXES: ReadonlyArray<string> = ["JANUS_", "OAUTH_"]

/**
 * Names of `JANUS_*` and `OAUTH_*` variables in `env` that Janus does not
 * read, each with the closest known name when one is near.
 */
export const unknownVariables = (
  env: Record<string, string | undefined>
): ReadonlyArray<{ readonly name: string; readonly suggestion: Option.Option<string> }> =>
  Object.keys(env)
    .filter((name) => OWN_PREFIXES.some((prefix) => name.startsWith(prefix)) && !(name in VARIABLES))
    .sort()
    .map((name) => {
      const best = Object.keys(VARIABLES)
        .map((known) => ({ known, d: distance(name, known) }))
        .sort((x, y) => x.d - y.d)[0]
      return { name, suggestion: best && best.d <= 3 ? Option.some(best.known) : Option.none() }
    })

/** The gateway's validated configuration as a service. */
export class JanusConfig extends Context.Service<JanusConfig, JanusSettings>()("@janus/gateway/JanusConfig") {
  /** Reads the environment through the current `ConfigProvider`, warning about unknown `JANUS_*` and `OAUTH_*` names. */
  static readonly layer: Layer.Layer<JanusConfig, InvalidConfiguration> = Layer.effect(
    JanusConfig,
    Effect.gen(function*() {
      // stderr, not the logger: logging is configured from this very config, and stdout may be a
      // command's --json output
      for (const unknown of unknownVariables(process.env)) {
        yield* Console.error(
          `warning: unknown variable ${unknown.name} is ignored` +
            Option.match(unknown.suggestion, { onNone: () => "", onSome: (s) => `; did you mean ${s}?` })
        )
      }
      return JanusConfig.of(yield* load)
    })
  )

  /** Fixed settings for tests: the defaults with the given overrides. */
  static readonly layerWith = (overrides: Partial<JanusSettings>): Layer.Layer<JanusConfig> =>
    Layer.succeed(JanusConfig, JanusConfig.of({ ...defaults(), ...overrides }))
}

/** The settings when nothing is set. */
export const defaults = (): JanusSettings =>
  Object.fromEntries(Object.entries(VARIABLES).map(([name, v]) => [name, v.default])) as JanusSettings

/** Shows a redacted URL without its password, for start-up messages. */
export const describeUrl = (value: Redacted.Redacted<string>): string => {
  const url = new URL(Redacted.value(value))
  if (url.password) url.password = "***"
  return url.href
}
