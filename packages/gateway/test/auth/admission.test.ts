/**
 * Admission over the embedded storage: authentication with client tokens,
 * the tool scope, anonymous access, and what a refused client sees.
 */
import { assert, describe, layer } from "@effect/vitest"
import {
  ClientToken,
  ClientTokens,
  Connections,
  Endpoints,
  StorageError,
  TokenCache,
  VirtualServers
} from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Clock, Effect, Layer, Metric, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { Authenticate, ToolScope } from "../../src/auth/index.ts"
import type { Caller } from "../../src/mcp/Caller.ts"
import * as CallerModule from "../../src/mcp/Caller.ts"
import { admission, assertClean, count, refusal, request, unique } from "./support.ts"

const createToken = (input: {
  readonly allowedTools?: ReadonlyArray<string> | null
  readonly allowedVirtualServers?: ReadonlyArray<string> | null
  readonly expiresAt?: Date | null
} = {}) => ClientTokens.use((tokens) => tokens.create({ name: unique("client"), ...input }))

const endpoint = (name: string) =>
  Effect.gen(function*() {
    const connection = yield* (yield* Connections).create({
      kind: "rest",
      name: unique("api"),
      baseUrl: "https://api.example.com/v1"
    })
    return yield* (yield* Endpoints).create({
      connectionId: connection.id,
      name,
      method: "GET",
      pathTemplate: "/things",
      inputSchema: { type: "object" }
    })
  })

describe("Admission", () => {
  layer(StorageTesting.layerMemory(), { timeout: "60 seconds" })((it) => {
    it.effect("a request without credentials is refused 401 with WWW-Authenticate", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const missing = Metric.withAttributes(Authenticate.refusals, { reason: "missing_token" })
        const before = yield* count(missing)
        const refused = yield* refusal(admit.admit(request()))
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.headers?.["www-authenticate"], "Bearer realm=\"janus\"")
        assert.match(refused.message, /Authentication required/)
        assertClean(refused)
        assert.strictEqual(yield* count(missing), before + 1)

        // Another scheme is no credential either.
        const basic = yield* refusal(admit.admit(request({ authorization: "Basic dXNlcjpwYXNz" })))
        assert.strictEqual(basic.status, 401)
      }))

    it.effect("a valid client token is admitted as its identity, with its scopes", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const { plaintext, token } = yield* createToken({ allowedTools: ["get_weather", "github/*"] })
        const secret = Redacted.value(plaintext)
        const caller = yield* admit.admit(request({ token: secret }))
        assert.strictEqual(caller.id, `token:${token.id}`)
        assert.strictEqual(caller.kind, "client_token")
        assert.strictEqual(caller.name, token.name)
        assert.deepStrictEqual([...caller.tools!].sort(), ["get_weather", "github/*"])
        assert.isNull(caller.virtualServers)
        assert.notInclude(JSON.stringify({ ...caller, tools: [...caller.tools!] }), secret)

        // The same caller object while the token is cached: nothing rebuilt per request.
        assert.strictEqual(yield* admit.admit(request({ token: secret })), caller)

        // An unrestricted token.
        const open = yield* createToken()
        const openCaller = yield* admit.admit(request({ token: Redacted.value(open.plaintext) }))
        assert.isNull(openCaller.tools)
        assert.isTrue(admit.canSee(openCaller, "anything"))
      }))

    it.effect("an expired token is refused once its expiry passes (token cache re-checks the clock)", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        // The test clock: the token expires a minute from now.
        const expiresAt = new Date((yield* Clock.currentTimeMillis) + 60_000)
        const { plaintext } = yield* createToken({ expiresAt })
        const secret = Redacted.value(plaintext)
        yield* admit.admit(request({ token: secret }))
        yield* TestClock.adjust("59 seconds")
        yield* admit.admit(request({ token: secret }))
        yield* TestClock.adjust("2 seconds")
        const refused = yield* refusal(admit.admit(request({ token: secret })))
        assert.strictEqual(refused.status, 401)
        assert.match(refused.message, /unknown, expired or revoked/)
        assert.match(refused.headers?.["www-authenticate"] ?? "", /^Bearer realm="janus", error="invalid_token"/)
        assertClean(refused, [secret])
      }))

    it.effect("a revoked token is refused at once on this instance", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const { plaintext, token } = yield* createToken()
        const secret = Redacted.value(plaintext)
        yield* admit.admit(request({ token: secret }))
        yield* (yield* ClientTokens).revoke(token.id)
        const refused = yield* refusal(admit.admit(request({ token: secret })))
        assert.strictEqual(refused.status, 401)
        assertClean(refused, [secret])
      }))

    it.effect("unknown and malformed bearer tokens are refused 401 invalid_token, never echoed", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const forged = `jns_${"A".repeat(43)}`
        const unknown = yield* refusal(admit.admit(request({ token: forged })))
        assert.strictEqual(unknown.status, 401)
        assertClean(unknown, [forged, "A".repeat(43)])

        const other = yield* refusal(admit.admit(request({ token: "sk-live-0123456789abcdef" })))
        assert.strictEqual(other.status, 401)
        assert.match(other.message, /not a Janus client token/)
        assertClean(other, ["sk-live-0123456789abcdef"])

        // A JWT without OAuth configured is not a credential Janus accepts.
        const jwt = yield* refusal(admit.admit(request({ token: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln" })))
        assert.strictEqual(jwt.status, 401)

        const malformed = yield* refusal(admit.admit(request({ authorization: "Bearer a b\"c" })))
        assert.strictEqual(malformed.status, 401)
        assert.match(malformed.headers?.["www-authenticate"] ?? "", /error="invalid_token"/)
      }))

    it.effect("authorize: a tool outside the token's scope is denied with a clear detail; canSee filters", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const { plaintext, token } = yield* createToken({ allowedTools: ["get_weather", "github/*"] })
        const caller = yield* admit.admit(request({ token: Redacted.value(plaintext) }))

        yield* admit.authorize(caller, "get_weather")
        yield* admit.authorize(caller, "github/create_issue")
        const denied = yield* Effect.flip(admit.authorize(caller, "delete_everything"))
        assert.strictEqual(denied._tag, "ToolCallRefused")
        assert.strictEqual(denied.reason, "denied")
        assert.strictEqual(denied.name, "delete_everything")
        assert.include(denied.detail, `the client token '${token.name}' is not allowed to call this tool`)
        assert.include(denied.detail, "allowedTools")
        assert.notInclude(denied.detail, Redacted.value(plaintext))

        const listed = ["delete_everything", "get_weather", "github/create_issue", "githubx/y", "gitlab/z", "github"]
          .filter((name) => admit.canSee(caller, name))
        assert.deepStrictEqual(listed, ["get_weather", "github/create_issue"])
      }))

    it.effect("a token scoped to a virtual server may use exactly that server's tools", () =>
      Effect.gen(function*() {
        const admit = yield* admission()
        const inside = yield* endpoint(unique("inside"))
        const outside = yield* endpoint(unique("outside"))
        const server = yield* (yield* VirtualServers).create({ name: unique("vs"), tools: [inside.name] })
        const { plaintext } = yield* createToken({ allowedVirtualServers: [server.name] })
        const caller = yield* admit.admit(request({ token: Redacted.value(plaintext) }))
        assert.isTrue(admit.canSee(caller, inside.name))
        assert.isFalse(admit.canSee(caller, outside.name))
        assert.isTrue(admit.canUseServer(caller, server.name))
        assert.isFalse(admit.canUseServer(caller, "another"))
        const denied = yield* Effect.flip(admit.authorize(caller, outside.name))
        assert.strictEqual(denied.reason, "denied")

        // The server gains a tool: the caller's scope follows the configuration.
        const added = yield* endpoint(unique("added"))
        const servers = yield* VirtualServers
        yield* servers.update(server.id, server.version, { name: server.name, tools: [inside.name, added.name] })
        const after = yield* admit.admit(request({ token: Redacted.value(plaintext) }))
        assert.isTrue(admit.canSee(after, added.name))
      }))

    it.effect("requireAuth: false admits requests without credentials as anonymous, but still checks tokens", () =>
      Effect.gen(function*() {
        const admit = yield* admission({ requireAuth: false })
        const caller = yield* admit.admit(request())
        assert.strictEqual(caller, CallerModule.anonymous)
        assert.isTrue(admit.canSee(caller, "anything"))
        yield* admit.authorize(caller, "anything")
        // A bad token is never downgraded to anonymous.
        const refused = yield* refusal(admit.admit(request({ token: `jns_${"B".repeat(43)}` })))
        assert.strictEqual(refused.status, 401)
      }))

    it.effect("a token store failure is a 503 with Retry-After and no internals; never admitted", () =>
      Effect.gen(function*() {
        const failing = Layer.succeed(
          TokenCache,
          TokenCache.of({
            verify: () =>
              Effect.fail(
                new StorageError({
                  operation: "clientTokens.verify",
                  cause: new Error("connection to 10.0.0.5:5432 refused\n    at Socket.connect (net.js:1:1)")
                })
              ),
            invalidate: Effect.void
          })
        )
        const admit = yield* admission().pipe(Effect.provide(failing))
        const secret = `jns_${"C".repeat(43)}`
        const refused = yield* refusal(admit.admit(request({ token: secret })))
        assert.strictEqual(refused.status, 503)
        assert.strictEqual(refused.headers?.["retry-after"], "1")
        assert.strictEqual(refused.message, "Credentials cannot be checked right now; retry shortly")
        assertClean(refused, [secret, "10.0.0.5"])
      }))

    it.effect("trusted proxies must be addresses or CIDRs: a bad entry is a start error", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(admission({ trustedProxies: ["10.0.0.0/8", "proxy.internal"] }))
        assert.strictEqual(error._tag, "AdmissionConfigError")
        assert.include(error.message, "\"proxy.internal\" is not an IP address or CIDR")
        const limits = yield* Effect.flip(admission({ limits: { ip: { rate: 0, burst: 10 } } }))
        assert.include(limits.message, "ip rate limit must be a positive number")
        const oauth = yield* Effect.flip(admission({ oauth: true }))
        assert.include(oauth.message, "OAuthLayer is not provided")
      }))
  })
})

describe("ToolScope", () => {
  const caller = (tools: ReadonlyArray<string> | null): Caller => ({
    id: "token:x",
    scopes: [],
    kind: "client_token",
    name: "ci",
    tools: tools === null ? null : new Set(tools)
  })

  layer(Layer.empty)((it) => {
    it.effect("exact names and <connection>/* patterns; null is unrestricted; an empty scope sees nothing", () =>
      Effect.sync(() => {
        const scoped = caller(["a", "gh/*"])
        assert.isTrue(ToolScope.canSee(scoped, "a"))
        assert.isTrue(ToolScope.canSee(scoped, "gh/issues"))
        assert.isTrue(ToolScope.canSee(scoped, "gh/a/b"))
        assert.isFalse(ToolScope.canSee(scoped, "gh"))
        assert.isFalse(ToolScope.canSee(scoped, "b"))
        assert.isFalse(ToolScope.canSee(scoped, "/x"))
        assert.isTrue(ToolScope.canSee(caller(null), "b"))
        assert.isFalse(ToolScope.canSee(caller([]), "a"))
        assert.isTrue(ToolScope.canSee({ id: "legacy", scopes: [] }, "a"), "a caller without tools is unrestricted")
      }))

    it.effect("tokens without restrictions are unrestricted; either list restricts", () =>
      Effect.sync(() => {
        const make = (allowedTools: Array<string> | null, allowedVirtualServers: Array<string> | null) =>
          ToolScope.callerOfToken(
            new ClientToken({
              id: "t1",
              name: "n",
              prefix: "jns_abcdefgh",
              allowedTools,
              allowedVirtualServers,
              expiresAt: null,
              revokedAt: null,
              lastUsedAt: null,
              createdAt: new Date(0)
            }),
            undefined
          )
        assert.isNull(make(null, null).tools)
        assert.deepStrictEqual([...make(["a"], null).tools!], ["a"])
        // Scoped to a server that does not exist (any more): nothing.
        assert.deepStrictEqual([...make(null, ["gone"]).tools!], [])
        assert.isTrue(make(null, ["gone"]).virtualServers!.has("gone"))
      }))
  })
})
