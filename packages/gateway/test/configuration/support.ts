/**
 * Instances to apply documents to (in-memory PGlite, or Postgres), and one
 * populated with every kind of resource: every connection transport and
 * auth scheme, endpoints with and without defaults, virtual servers over
 * endpoints and upstream tools, tokens scoped, expiring, expired and revoked.
 */
import {
  ClientTokens,
  Connections,
  Endpoints,
  Secrets,
  StdioAllowList,
  type Storage,
  VirtualServers
} from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Effect, Layer, Redacted } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { type ApplyOptions, ConfigurationApplier } from "../../src/configuration/Applier.ts"
import * as Document from "../../src/configuration/Document.ts"
import * as Text from "../../src/configuration/Text.ts"

export type Services = Storage.Storage | SqlClient.SqlClient | ConfigurationApplier

/** The programs stdio connections may run in these tests. */
export const allowList = Layer.succeed(StdioAllowList, {
  allows: (command: string) => command === "npx",
  expected: "npx (the test's allow-list)"
})

/** An instance on `storage` (default: a fresh in-memory PGlite), built in the current scope. */
export const instance = (
  storage: Layer.Layer<Storage.Storage | SqlClient.SqlClient, unknown> = StorageTesting.layerMemory({ thread: "main" })
) =>
  Effect.map(
    Layer.build(
      ConfigurationApplier.layer.pipe(Layer.provideMerge(storage), Layer.provide(allowList))
    ),
    (context) => {
      const run = <A, E>(effect: Effect.Effect<A, E, Services>) =>
        Effect.provide(effect, context as Context.Context<Services>)
      return {
        run,
        applier: Context.get(context as Context.Context<Services>, ConfigurationApplier),
        exportText: (format: Text.Format = "yaml") =>
          run(Effect.flatMap(ConfigurationApplier.use((a) => a.export), (e) => Text.write(e.document, format)))
      }
    }
  )

export const defaults: ApplyOptions = {
  dryRun: false,
  prune: false,
  environment: "read",
  issueTokens: true,
  origin: "cli"
}

/** Decodes `text` and applies it with `options` (CLI-like defaults). */
export const applyText = (text: string, options: Partial<ApplyOptions> = {}) =>
  Effect.flatMap(
    Document.fromText(text),
    (doc) => ConfigurationApplier.use((a) => a.apply(doc, { ...defaults, ...options }))
  )

/** Decodes `value` (a document as an object) and applies it. */
export const applyValue = (value: unknown, options: Partial<ApplyOptions> = {}) =>
  applyText(JSON.stringify(value), options)

/** The secrets a populated instance has (and an empty one needs before applying its export). */
export const SECRETS = ["gh-token", "upstream-secret", "unused"] as const

export const setSecrets = (prefix: string) =>
  Effect.gen(function*() {
    const secrets = yield* Secrets
    for (const name of SECRETS) yield* secrets.set(name, Redacted.make(`${prefix}-${name}`))
  })

/** Every kind of resource, made through the repositories (as the admin API or CLI would). */
export const populate = Effect.gen(function*() {
  yield* setSecrets("a")
  const connections = yield* Connections
  const github = yield* connections.create({
    kind: "rest",
    name: "github",
    description: "GitHub REST API",
    baseUrl: "https://api.github.com",
    auth: { scheme: "bearer", secret: "gh-token" },
    retry: { maxAttempts: 2, initialDelayMs: 50, maxDelayMs: 500 }
  })
  const internal = yield* connections.create({
    kind: "rest",
    name: "internal",
    baseUrl: "http://10.0.0.5:8080",
    auth: { scheme: "header", header: "X-Api-Key", secret: "upstream-secret" },
    timeoutMs: 5_000,
    breaker: { consecutiveFailures: 3, openMs: 10_000 },
    egressAllowList: ["10.0.0.0/8"]
  })
  yield* connections.create({
    kind: "mcp",
    name: "docs",
    url: "https://mcp.example.com/mcp",
    auth: {
      scheme: "oauth-client-credentials",
      tokenUrl: "https://auth.example.com/token",
      clientId: "janus",
      secret: "upstream-secret",
      scope: "docs.read"
    },
    toolPrefix: "docs_",
    pollIntervalMs: 60_000
  })
  yield* connections.create({ kind: "mcp", name: "legacy", transport: "sse", url: "https://old.example.com/sse" })
  yield* connections.create({
    kind: "mcp",
    name: "memory",
    transport: "stdio",
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-memory"],
    env: { MEMORY_FILE_PATH: "/tmp/memory.json", API_KEY: { secret: "upstream-secret" } },
    cwd: "/tmp"
  })
  const endpoints = yield* Endpoints
  yield* endpoints.create({
    connectionId: github.id,
    name: "get_repo",
    description: "One repository",
    method: "GET",
    pathTemplate: "/repos/{owner}/{repo}",
    arguments: { owner: "path", repo: "path" },
    inputSchema: {
      type: "object",
      properties: { owner: { type: "string" }, repo: { type: "string" } },
      required: ["owner", "repo"]
    }
  })
  yield* endpoints.create({
    connectionId: github.id,
    name: "create_issue",
    method: "POST",
    pathTemplate: "/repos/{owner}/{repo}/issues",
    arguments: { owner: "path", repo: "path", title: "body" },
    inputSchema: {
      type: "object",
      properties: { owner: { type: "string" }, repo: { type: "string" }, title: { type: "string" } }
    },
    outputSchema: { type: "object", properties: { number: { type: "integer" } } },
    idempotent: true
  })
  yield* endpoints.create({
    connectionId: internal.id,
    name: "health",
    method: "GET",
    pathTemplate: "/health",
    inputSchema: { type: "object" }
  })
  const servers = yield* VirtualServers
  yield* servers.create({
    name: "dev",
    description: "What developers use",
    tools: ["get_repo", "docs/*", "memory/read_graph"],
    bareNames: true
  })
  yield* servers.create({ name: "ops", tools: ["health"] })
  const tokens = yield* ClientTokens
  yield* tokens.create({
    name: "ci",
    allowedTools: ["get_repo", "docs/*"],
    expiresAt: new Date("2031-01-01T00:00:00Z")
  })
  yield* tokens.create({ name: "studio", allowedVirtualServers: ["dev"] })
  const old = yield* tokens.create({ name: "old" })
  yield* tokens.revoke(old.token.id)
  yield* tokens.create({ name: "expired", expiresAt: new Date("2020-01-01T00:00:00Z") }, { allowExpired: true })
})

/** Resources `populate` makes: 3 secrets, 5 connections, 3 endpoints, 2 virtual servers, 4 tokens. */
export const POPULATED = 17
