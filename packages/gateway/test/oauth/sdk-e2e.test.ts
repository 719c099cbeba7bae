/**
 * End to end: the official MCP SDK clients (v1 `@modelcontextprotocol/sdk`,
 * v2 `@modelcontextprotocol/client`) against a Janus configured through its
 * `OAUTH_*` variables, with oidc-provider as the independent authorization
 * server. With client credentials and with authorization code + PKCE
 * (dynamic registration, login driven headlessly), each client starts from
 * Janus's 401, discovers the protected resource metadata and the
 * authorization server, gets a token for the URL it uses (RFC 8707), and
 * lists and calls tools on `/mcp` and on a virtual server.
 *
 * Every request Janus receives is recorded (path and headers): no client
 * ever sends Janus a credential other than its bearer token (no token
 * request, no registration, no client secret), and every bearer token is
 * one the authorization server issued for the resource it is used on.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, layer } from "@effect/vitest"
import * as StorageTesting from "@janus/storage/testing"
import {
  Client as ClientV2,
  ClientCredentialsProvider as ClientCredentialsV2,
  StreamableHTTPClientTransport as TransportV2
} from "@modelcontextprotocol/client"
import { ClientCredentialsProvider as ClientCredentialsV1 } from "@modelcontextprotocol/sdk/client/auth-extensions.js"
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { decodeJwt } from "jose"
import { createServer, type IncomingHttpHeaders } from "node:http"
import { JanusConfig, load } from "../../src/config/JanusConfig.ts"
import { layerOn } from "../../src/Gateway.ts"
import * as Downstream from "../support/Downstream.ts"
import { freePort } from "../support/Ports.ts"
import * as AuthorizationServer from "./AuthorizationServer.ts"

interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
}

class Setup extends Context.Service<Setup, {
  readonly origin: string
  readonly as: AuthorizationServer.AuthorizationServer
  /** Every request Janus received. */
  readonly received: Array<Received>
}>()("test/oauth/sdk-e2e/Setup") {}

/** Janus on a port chosen first (its public URL is in OAUTH_RESOURCE), recording every request. */
const TestLayer = Layer.unwrap(Effect.gen(function*() {
  const port = yield* Effect.promise(freePort)
  const origin = `http://127.0.0.1:${port}`
  const as = yield* AuthorizationServer.start((indicator) => indicator.startsWith(`${origin}/`))
  const received: Array<Received> = []
  const settings = yield* load.pipe(Effect.provideService(
    ConfigProvider.ConfigProvider,
    ConfigProvider.fromEnv({
      env: {
        OAUTH_ENABLED: "true",
        OAUTH_RESOURCE: `${origin}/mcp`,
        OAUTH_ISSUERS: as.issuer,
        OAUTH_VIRTUAL_SERVERS_ACCEPT_MCP_TOKENS: "false",
        LOG_LEVEL: "warn"
      }
    })
  ))
  const server = NodeHttpServer.layer(() => {
    const http = createServer()
    http.prependListener("request", (req) => {
      received.push({ method: req.method ?? "", path: (req.url ?? "/").split("?")[0]!, headers: req.headers })
    })
    return http
  }, { port, host: "127.0.0.1" })
  const seed = Downstream.seedPets({
    tools: ["get_pet", "get_pet_again"],
    virtualServers: [["pets-only", ["get_pet"]]]
  })
  return Layer.effectDiscard(seed).pipe(
    Layer.provideMerge(layerOn({ server, storage: StorageTesting.layerMemory() })),
    Layer.provideMerge(JanusConfig.layerWith(settings)),
    Layer.provideMerge(Downstream.layer),
    Layer.provideMerge(Layer.succeed(Setup, Setup.of({ origin, as, received })))
  )
}))

/** An in-memory OAuth client provider for the authorization-code flow (both SDKs' interface). */
class PkceProvider {
  readonly redirectUrl = "http://127.0.0.1:9/callback"
  readonly clientMetadata = {
    client_name: "janus e2e",
    redirect_uris: [this.redirectUrl],
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    application_type: "native"
  }
  private client: any
  private saved: any
  private verifier = ""
  /** The authorization URL the SDK sent the user to. */
  authorizationUrl: URL | undefined
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: unknown) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: unknown) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
  get accessToken(): string {
    return this.saved.access_token
  }
}

type Tools = { readonly tools: ReadonlyArray<{ readonly name: string }> }
type McpClient = {
  listTools(): Promise<Tools>
  callTool(request: { name: string; arguments: Record<string, unknown> }): Promise<any>
  close(): Promise<void>
}

/** Lists and calls tools through `client`; answers the names listed. */
const use = (client: McpClient) =>
  Effect.promise(async () => {
    const { tools } = await client.listTools()
    const result = await client.callTool({ name: "get_pet", arguments: { id: "7" } })
    await client.close()
    return { names: tools.map((t) => t.name).sort(), result: result.structuredContent }
  })

const urls = (origin: string) => [
  { url: `${origin}/mcp`, tools: ["get_pet", "get_pet_again"] },
  { url: `${origin}/servers/pets-only/mcp`, tools: ["get_pet"] }
]

/** The access token's claims, read from the Authorization header Janus received last on `path`. */
const lastToken = (received: ReadonlyArray<Received>, path: string) => {
  const header = [...received].reverse().find((r) => r.path === path && r.headers.authorization)?.headers
    .authorization
  return decodeJwt(header!.replace(/^Bearer /, ""))
}

layer(TestLayer, { timeout: 120_000, excludeTestServices: true })("official SDK clients with OAuth", (it) => {
  it.effect("SDK v1, client credentials (no expectedIssuer): discovery from the 401, token, tools", () =>
    Effect.gen(function*() {
      const { as, origin, received } = yield* Setup
      for (const { tools, url } of urls(origin)) {
        // without expectedIssuer the SDK sends its secret wherever the resource's metadata says; v1 asks
        // for the scope it is configured with (not the challenge's)
        const provider = new ClientCredentialsV1({
          clientId: AuthorizationServer.CLIENT_ID,
          clientSecret: AuthorizationServer.CLIENT_SECRET,
          scope: "mcp:tools"
        })
        const client = new ClientV1({ name: "e2e-v1-cc", version: "1.0.0" })
        yield* Effect.promise(() => client.connect(new TransportV1(new URL(url), { authProvider: provider })))
        const used = yield* use(client)
        assert.deepStrictEqual(used.names, tools)
        assert.deepStrictEqual(used.result, { id: "7", name: "Rex", tag: null })
        const claims = lastToken(received, new URL(url).pathname)
        assert.strictEqual(claims.aud, url, "a token for the URL the client uses")
        assert.strictEqual(claims.iss, as.issuer)
      }
    }))

  it.effect("SDK v2, client credentials: discovery from the 401, token, tools", () =>
    Effect.gen(function*() {
      const { as, origin, received } = yield* Setup
      for (const { tools, url } of urls(origin)) {
        const provider = new ClientCredentialsV2({
          clientId: AuthorizationServer.CLIENT_ID,
          clientSecret: AuthorizationServer.CLIENT_SECRET,
          expectedIssuer: as.issuer
        })
        const client = new ClientV2({ name: "e2e-v2-cc", version: "1.0.0" })
        yield* Effect.promise(() => client.connect(new TransportV2(new URL(url), { authProvider: provider })))
        const used = yield* use(client)
        assert.deepStrictEqual(used.names, tools)
        assert.deepStrictEqual(used.result, { id: "7", name: "Rex", tag: null })
        assert.strictEqual(lastToken(received, new URL(url).pathname).aud, url)
      }
    }))

  it.effect("SDK v1, authorization code + PKCE with dynamic registration, login driven headlessly", () =>
    Effect.gen(function*() {
      const { as, origin, received } = yield* Setup
      for (const { tools, url } of urls(origin)) {
        const provider = new PkceProvider()
        const first = new TransportV1(new URL(url), { authProvider: provider as never })
        const refused = yield* Effect.promise(() =>
          new ClientV1({ name: "e2e-v1-pkce", version: "1.0.0" }).connect(first).then(() => undefined, (e) => e)
        )
        assert.instanceOf(refused, UnauthorizedError, "the SDK sends the user to log in")
        assert.isTrue(provider.authorizationUrl!.href.startsWith(`${as.issuer}/`))
        assert.strictEqual(provider.authorizationUrl!.searchParams.get("resource"), url)
        const callback = yield* Effect.promise(() => as.login(provider.authorizationUrl!, provider.redirectUrl))
        yield* Effect.promise(() => first.finishAuth(callback.searchParams.get("code")!))
        const client = new ClientV1({ name: "e2e-v1-pkce", version: "1.0.0" })
        yield* Effect.promise(() => client.connect(new TransportV1(new URL(url), { authProvider: provider as never })))
        const used = yield* use(client)
        assert.deepStrictEqual(used.names, tools)
        const claims = lastToken(received, new URL(url).pathname)
        assert.strictEqual(claims.aud, url)
        assert.strictEqual(claims.sub, "ada", "the user who logged in")
      }
    }))

  it.effect("SDK v2, authorization code + PKCE with dynamic registration, login driven headlessly", () =>
    Effect.gen(function*() {
      const { as, origin, received } = yield* Setup
      for (const { tools, url } of urls(origin)) {
        const provider = new PkceProvider()
        const first = new TransportV2(new URL(url), { authProvider: provider as never })
        const refused = yield* Effect.promise(() =>
          new ClientV2({ name: "e2e-v2-pkce", version: "1.0.0" }).connect(first).then(() => undefined, (e) => e)
        )
        assert.isDefined(refused, "the SDK sends the user to log in")
        assert.isDefined(provider.authorizationUrl, String(refused))
        assert.isTrue(provider.authorizationUrl!.href.startsWith(`${as.issuer}/`))
        const callback = yield* Effect.promise(() => as.login(provider.authorizationUrl!, provider.redirectUrl))
        yield* Effect.promise(() => first.finishAuth(callback.searchParams))
        const client = new ClientV2({ name: "e2e-v2-pkce", version: "1.0.0" })
        yield* Effect.promise(() => client.connect(new TransportV2(new URL(url), { authProvider: provider as never })))
        const used = yield* use(client)
        assert.deepStrictEqual(used.names, tools)
        assert.strictEqual(lastToken(received, new URL(url).pathname).aud, url)
        assert.strictEqual(lastToken(received, new URL(url).pathname).sub, "ada")
      }
    }))

  it.effect("Janus received nothing but bearer tokens its resources were issued for", () =>
    Effect.gen(function*() {
      const { as, origin, received } = yield* Setup
      assert.isAbove(received.length, 0)
      const allowedPaths = new Set([
        "/mcp",
        "/servers/pets-only/mcp",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource/servers/pets-only/mcp"
      ])
      const credentialHeaders = ["cookie", "proxy-authorization", "dpop", "x-api-key"]
      for (const request of received) {
        assert.isTrue(allowedPaths.has(request.path), `unexpected ${request.method} ${request.path} at Janus`)
        for (const name of credentialHeaders) assert.isUndefined(request.headers[name], `${name} sent to Janus`)
        const text = JSON.stringify(request.headers)
        assert.notInclude(text, AuthorizationServer.CLIENT_SECRET)
        const authorization = request.headers.authorization
        if (authorization === undefined) continue
        assert.match(authorization, /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/, "only a bearer JWT")
        const claims = decodeJwt(authorization.slice("Bearer ".length))
        assert.strictEqual(claims.iss, as.issuer)
        const resource = request.path.startsWith("/servers/") ? `${origin}/servers/pets-only/mcp` : `${origin}/mcp`
        assert.strictEqual(claims.aud, resource, `a token for ${resource} on ${request.path}`)
      }
      // the metadata was found from the 401, for both resources; the token and registration went to the AS
      assert.isTrue(received.some((r) => r.path === "/.well-known/oauth-protected-resource/servers/pets-only/mcp"))
      assert.include(as.paths, "/token")
      assert.include(as.paths, "/reg")
    }))
})
