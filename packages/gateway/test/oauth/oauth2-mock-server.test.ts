/**
 * Janus against a real, unfamiliar authorization server: the npm package
 * `oauth2-mock-server`, started on loopback and configured only by its
 * issuer URL (keys found through its OpenID metadata, as `serve` does).
 * A token from its token endpoint is accepted on /mcp, one for another
 * audience is refused with 401, and `janus doctor` reports what its metadata
 * offers MCP clients (PKCE S256 yes, registration no, nothing about
 * `resource`).
 */
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { FetchHttpClient, HttpServer } from "effect/http"
import { Events, OAuth2Server } from "oauth2-mock-server"
import { load } from "../../src/config/JanusConfig.ts"
import { OAuthLayer } from "../../src/oauth/index.ts"
import * as OAuthVariables from "../../src/oauth/Variables.ts"
import * as GatewayTesting from "../../src/testing.ts"
import { freePort, janus, tempHome } from "../cli/run.ts"
import { stateless } from "../mcp/http-client.ts"
import * as Downstream from "../support/Downstream.ts"

const RESOURCE = "https://janus.example.com/mcp"

class MockIssuer extends Context.Service<MockIssuer, {
  readonly server: OAuth2Server
  /** Whether tokens get a `sub` (its client-credentials tokens have none). */
  readonly withSubject: { on: boolean }
}>()("test/oauth/MockIssuer") {}

const mockIssuer = Layer.effect(
  MockIssuer,
  Effect.acquireRelease(
    Effect.promise(async () => {
      const server = new OAuth2Server()
      await server.issuer.keys.generate("RS256")
      await server.start(0, "127.0.0.1")
      const withSubject = { on: false }
      // what a provider's service account would carry: the client as subject
      server.service.on(Events.BeforeTokenSigning, (token, req) => {
        const clientId = (req.body as Record<string, unknown> | undefined)?.client_id
        if (withSubject.on && typeof clientId === "string") token.payload.sub = clientId
      })
      return { server, withSubject }
    }),
    ({ server }) => Effect.promise(() => server.stop())
  )
)

/** Janus's variables for the mock issuer: its URL, nothing else about it. */
const variables = (issuer: string) => ({
  OAUTH_ENABLED: "true",
  OAUTH_RESOURCE: RESOURCE,
  OAUTH_ISSUERS: issuer
})

const TestLayer = Layer.unwrap(Effect.gen(function*() {
  const { server } = yield* MockIssuer
  const settings = yield* load.pipe(
    Effect.provideService(
      ConfigProvider.ConfigProvider,
      ConfigProvider.fromEnv({ env: variables(server.issuer.url!) })
    )
  )
  const oauth = OAuthLayer(OAuthVariables.options(settings)).pipe(Layer.provide(FetchHttpClient.layer))
  return Layer.effectDiscard(Downstream.seedPets({ tools: ["get_pet"] })).pipe(
    Layer.provideMerge(GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false }, extra: oauth })),
    Layer.provideMerge(Downstream.layer)
  )
})).pipe(Layer.provideMerge(mockIssuer))

/** An access token from the mock's token endpoint (client credentials) for `aud`. */
const tokenFor = (aud: string) =>
  Effect.gen(function*() {
    const { server } = yield* MockIssuer
    const answer = yield* Effect.promise(() =>
      fetch(`${server.issuer.url}/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "client_credentials",
          client_id: "mcp-client",
          scope: "mcp:tools",
          aud
        })
      }).then((r) => r.json() as Promise<{ access_token: string }>)
    )
    return answer.access_token
  })

const list = (token: string) =>
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base).href)),
    (url) => stateless(url, "tools/list", {}, { authorization: `Bearer ${token}` })
  )

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("oauth2-mock-server as the issuer", (it) => {
  it.effect("a token it issues for the resource is accepted on /mcp; one for another audience is 401", () =>
    Effect.gen(function*() {
      const { withSubject } = yield* MockIssuer
      // out of the box its client-credentials tokens have no sub, which Janus requires of an access token
      withSubject.on = false
      const noSubject = yield* list(yield* tokenFor(RESOURCE))
      assert.strictEqual(noSubject.status, 401)
      assert.include(noSubject.headers.get("www-authenticate")!, `error="invalid_token"`)
      assert.include(noSubject.headers.get("www-authenticate")!, "The token has no sub claim")

      withSubject.on = true
      const accepted = yield* list(yield* tokenFor(RESOURCE))
      assert.strictEqual(accepted.status, 200, accepted.text)
      assert.include(accepted.text, "get_pet")

      const elsewhere = yield* list(yield* tokenFor("https://other.example.com/mcp"))
      assert.strictEqual(elsewhere.status, 401)
      const challenge = elsewhere.headers.get("www-authenticate")!
      assert.include(challenge, `error="invalid_token"`)
      assert.include(challenge, "The token was not issued for this resource")
      assert.include(
        challenge,
        `resource_metadata="https://janus.example.com/.well-known/oauth-protected-resource/mcp"`
      )
      assert.include(challenge, `scope="mcp:tools"`)
    }))

  it.effect("janus doctor: its metadata offers PKCE S256 but no registration, and says nothing of resource", () =>
    Effect.gen(function*() {
      const { server } = yield* MockIssuer
      const issuer = server.issuer.url!
      const ran = yield* Effect.promise(async () =>
        janus(["doctor", "--json"], {
          JANUS_HOME: tempHome(),
          JANUS_PORT: String(await freePort()),
          ...variables(issuer)
        })
      )
      assert.strictEqual(ran.code, 0, ran.stdout + ran.stderr)
      const report = JSON.parse(ran.stdout) as {
        readonly checks: ReadonlyArray<{ readonly check: string; readonly verdict: string; readonly detail: string }>
      }
      const checks = new Map(report.checks.map((c) => [c.check, c]))
      const line = (name: string) => {
        const found = checks.get(name)
        assert.isDefined(found, `a check ${name} in ${[...checks.keys()].join(" | ")}`)
        return found!
      }
      const metadataUrl = `${issuer}/.well-known/openid-configuration`
      assert.strictEqual(line(`oauth ${issuer}`).verdict, "ok")
      assert.include(line(`oauth ${issuer}`).detail, `metadata at ${metadataUrl}; 1 signing key(s) at ${issuer}/jwks`)
      assert.include(
        line(`oauth ${issuer} token`).detail,
        `an accepted token has iss ${issuer}; aud ${RESOURCE} (the resource); scope mcp:tools in claim scope or scp;`
      )
      assert.deepStrictEqual(
        ["pkce", "endpoints", "registration", "resource"].map((
          what
        ) => [what, line(`oauth ${issuer} ${what}`).verdict]),
        [["pkce", "ok"], ["endpoints", "ok"], ["registration", "warn"], ["resource", "warn"]]
      )
      assert.strictEqual(
        line(`oauth ${issuer} pkce`).detail,
        `code_challenge_methods_supported ["plain","S256"] includes S256, the PKCE method MCP clients use`
      )
      assert.strictEqual(
        line(`oauth ${issuer} endpoints`).detail,
        `authorization_endpoint ${issuer}/authorize, token_endpoint ${issuer}/token`
      )
      assert.include(
        line(`oauth ${issuer} registration`).detail,
        `${metadataUrl} has no registration_endpoint and no client_id_metadata_document_supported`
      )
      assert.include(
        line(`oauth ${issuer} resource`).detail,
        `${metadataUrl} says nothing about the resource parameter MCP clients send (RFC 8707; ` +
          "no resource_indicators_supported)"
      )
    }))
})
