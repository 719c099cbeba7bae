/**
 * What browsers may do to the gateway (issue 15, item 9), through the whole
 * gateway with authentication on:
 *
 * - DNS rebinding: a request whose `Host` names neither a loopback name, an
 *   IP address, the listen host nor a configured name (`JANUS_ALLOWED_HOSTS`)
 *   is refused on every route but the probes.
 * - The admin API refuses cross-site `Origin`s, even with a valid admin token;
 *   same-origin requests (Studio) and requests without `Origin` (curl) pass.
 * - CORS on the MCP endpoints: a preflight from an allowed origin is answered
 *   before authentication, and every response to such an origin (a 401
 *   included) carries the `Access-Control-*` headers a browser needs to read it.
 *
 * Raw `node:http` requests: `fetch` cannot choose the `Host` header.
 */
import { assert, describe, it as plain, layer } from "@effect/vitest"
import { AdminTokens, ClientTokens } from "@janus/storage"
import { Effect, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as Http from "node:http"
import * as HostCheck from "../../src/http/HostCheck.ts"
import * as GatewayTesting from "../../src/testing.ts"

interface RawReply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
  readonly body: any
}

/** One request to the gateway on 127.0.0.1 with exactly these headers; an event stream is cut after its head. */
const raw = (
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string
): Effect.Effect<RawReply, never, HttpServer.HttpServer> =>
  Effect.flatMap(HttpServer.HttpServer, (server) =>
    Effect.promise(() =>
      new Promise<RawReply>((resolve, reject) => {
        const port = server.address._tag === "UnixPathAddress" ? 0 : server.address.port
        const request = Http.request({ host: "127.0.0.1", port, method, path, headers }, (response) => {
          const done = (text: string) => {
            let parsed: unknown = undefined
            try {
              parsed = text === "" ? undefined : JSON.parse(text)
            } catch {
              parsed = undefined
            }
            resolve({ status: response.statusCode!, headers: response.headers, text, body: parsed })
          }
          if (String(response.headers["content-type"]).startsWith("text/event-stream")) {
            request.destroy()
            return done("")
          }
          let text = ""
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => (text += chunk))
          response.on("end", () => done(text))
        })
        request.on("error", reject)
        if (body !== undefined) request.write(body)
        request.end()
      })
    ))

const port = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "UnixPathAddress" ? 0 : server.address.port
)

const adminToken = Effect.flatMap(
  AdminTokens,
  (tokens) =>
    Effect.map(
      tokens.create({ name: `browser-admin-${Math.random()}` }),
      (created) => Redacted.value(created.plaintext)
    )
)

const clientToken = Effect.flatMap(
  ClientTokens,
  (tokens) =>
    Effect.map(
      tokens.create({ name: `browser-client-${Math.random()}` }),
      (created) => Redacted.value(created.plaintext)
    )
)

const initializeBody = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "browser", version: "1.0.0" } }
})
const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" }

const TestLayer = GatewayTesting.layer({
  config: {
    JANUS_ALLOW_ANONYMOUS: false,
    JANUS_ALLOWED_ORIGINS: ["https://app.example.com"],
    JANUS_ALLOWED_HOSTS: ["janus.example.com", ".corp.example"]
  }
})

const listsAll = (header: string | undefined, names: ReadonlyArray<string>) => {
  const listed = (header ?? "").split(",").map((s) => s.trim().toLowerCase())
  for (const name of names) assert.include(listed, name, `${name} in ${header}`)
}

layer(TestLayer, { excludeTestServices: true, timeout: "60 seconds" })("browsers and DNS rebinding", (it) => {
  describe("Host", () => {
    it.effect("a Host that names none of the gateway's names is 403 on Studio, /mcp, /api/v1, /sse and /metrics", () =>
      Effect.gen(function*() {
        const admin = yield* adminToken
        const client = yield* clientToken
        const host = { host: "rebound.attacker.example:8080" }
        const studio = yield* raw("GET", "/", host)
        const mcp = yield* raw(
          "POST",
          "/mcp",
          { ...host, ...mcpHeaders, authorization: `Bearer ${client}` },
          initializeBody
        )
        const api = yield* raw("GET", "/api/v1/connections", { ...host, authorization: `Bearer ${admin}` })
        const events = yield* raw("GET", "/api/v1/events", { ...host, authorization: `Bearer ${admin}` })
        const sse = yield* raw("GET", "/sse", {
          ...host,
          accept: "text/event-stream",
          authorization: `Bearer ${client}`
        })
        const metrics = yield* raw("GET", "/metrics", host)
        for (const reply of [studio, mcp, api, events, sse, metrics]) {
          assert.strictEqual(reply.status, 403, reply.text)
          assert.include(reply.text, "rebound.attacker.example")
          assert.include(reply.text, "JANUS_ALLOWED_HOSTS")
        }
        // MCP clients get a JSON-RPC error, the admin API its error body
        assert.strictEqual(mcp.body.jsonrpc, "2.0")
        assert.strictEqual(api.body.error.code, "host_not_allowed")
      }))

    it.effect("the probes answer whatever the Host (the kubelet probes by pod IP, a proxy may name anything)", () =>
      Effect.gen(function*() {
        const host = { host: "rebound.attacker.example" }
        assert.strictEqual((yield* raw("GET", "/healthz", host)).status, 200)
        assert.strictEqual((yield* raw("GET", "/readyz", host)).status, 200)
      }))

    it.effect("loopback names, IP addresses, the listen host and configured names (exact, suffix) are served", () =>
      Effect.gen(function*() {
        const admin = yield* adminToken
        const p = yield* port
        const hosts = [
          `127.0.0.1:${p}`,
          `localhost:${p}`,
          "LOCALHOST",
          "studio.localhost:8080",
          `[::1]:${p}`,
          // a pod IP (the kubelet, Prometheus, pod-to-pod): rebinding needs a name, never an address
          "10.244.1.7:8080",
          "[fd00::17]:8080",
          "janus.example.com",
          "Janus.Example.Com:443",
          "janus.example.com.",
          "corp.example",
          "mcp.eu.corp.example:8443"
        ]
        for (const host of hosts) {
          const reply = yield* raw("GET", "/api/v1/connections", { host, authorization: `Bearer ${admin}` })
          assert.strictEqual(reply.status, 200, `Host ${host}: ${reply.text}`)
        }
        for (const host of ["janus.example.com.evil.example", "evilcorp.example", "localhost.evil.example", "xn--"]) {
          const reply = yield* raw("GET", "/api/v1/connections", { host, authorization: `Bearer ${admin}` })
          assert.strictEqual(reply.status, 403, `Host ${host}: ${reply.text}`)
        }
      }))

    plain("the listen host and the host of OAUTH_RESOURCE are names of the gateway too", () => {
      const served = HostCheck.make({
        allowedHosts: [],
        listenHost: "janus.internal",
        resource: "https://MCP.Example.org:8443/mcp"
      })
      for (const host of ["janus.internal:8080", "mcp.example.org", "mcp.example.org:8443", "127.0.0.1:1"]) {
        assert.isTrue(served(host), host)
      }
      for (const host of ["example.org", "other.example.org", "janus.internal.evil.example"]) {
        assert.isFalse(served(host), host)
      }
      assert.isTrue(HostCheck.make({ allowedHosts: ["*"] })("anything.example"), "* turns the check off")
    })

    it.effect("GET /api/v1/config shows JANUS_ALLOWED_HOSTS", () =>
      Effect.gen(function*() {
        const admin = yield* adminToken
        const reply = yield* raw("GET", "/api/v1/config", { host: "localhost", authorization: `Bearer ${admin}` })
        assert.strictEqual(reply.status, 200, reply.text)
        assert.strictEqual(reply.body.settings.JANUS_ALLOWED_HOSTS, "janus.example.com, .corp.example")
      }))
  })

  describe("Origin on /api/v1", () => {
    it.effect("a cross-site Origin is 403 even with a valid admin token, on every method and on the event stream", () =>
      Effect.gen(function*() {
        const admin = yield* adminToken
        const p = yield* port
        const base = { host: `127.0.0.1:${p}`, authorization: `Bearer ${admin}` }
        for (const origin of ["https://evil.example", "http://localhost:5173", "null", `http://127.0.0.1:${p + 1}`]) {
          const list = yield* raw("GET", "/api/v1/connections", { ...base, origin })
          assert.strictEqual(list.status, 403, `${origin}: ${list.text}`)
          assert.strictEqual(list.body.error.code, "origin_not_allowed")
          assert.include(list.body.error.message, origin)
          assert.isUndefined(list.headers["access-control-allow-origin"])
          const created = yield* raw(
            "POST",
            "/api/v1/admin-tokens",
            { ...base, origin, "content-type": "application/json" },
            JSON.stringify({ name: "from-a-cross-site-page" })
          )
          assert.strictEqual(created.status, 403, created.text)
          const events = yield* raw("GET", "/api/v1/events", { ...base, origin, accept: "text/event-stream" })
          assert.strictEqual(events.status, 403, events.text)
          // a preflight from there is refused too, and grants nothing
          const preflight = yield* raw("OPTIONS", "/api/v1/connections", {
            host: base.host,
            origin,
            "access-control-request-method": "DELETE",
            "access-control-request-headers": "authorization"
          })
          assert.strictEqual(preflight.status, 403, preflight.text)
          assert.isUndefined(preflight.headers["access-control-allow-origin"])
        }
        const tokens = yield* Effect.flatMap(AdminTokens, (t) => t.list)
        assert.isFalse(tokens.some((t) => t.name === "from-a-cross-site-page"), "nothing was created")
      }))

    it.effect("same-origin requests (Studio) and requests without Origin (curl) are served", () =>
      Effect.gen(function*() {
        const admin = yield* adminToken
        const p = yield* port
        const auth = { authorization: `Bearer ${admin}` }
        const sameOrigin = yield* raw("GET", "/api/v1/connections", {
          ...auth,
          host: `127.0.0.1:${p}`,
          origin: `http://127.0.0.1:${p}`
        })
        assert.strictEqual(sameOrigin.status, 200, sameOrigin.text)
        // behind TLS termination: https origin, Host without a port
        const behindProxy = yield* raw("GET", "/api/v1/connections", {
          ...auth,
          host: "janus.example.com",
          origin: "https://janus.example.com"
        })
        assert.strictEqual(behindProxy.status, 200, behindProxy.text)
        // a proxy that rewrote Host: the browser's own Sec-Fetch-Site still says same-origin
        const rewritten = yield* raw("POST", "/api/v1/admin-tokens", {
          ...auth,
          host: "10.0.0.12:8080",
          origin: "https://janus.example.com",
          "sec-fetch-site": "same-origin",
          "content-type": "application/json"
        }, JSON.stringify({ name: `same-origin-${p}` }))
        assert.strictEqual(rewritten.status, 201, rewritten.text)
        const curl = yield* raw("GET", "/api/v1/connections", { ...auth, host: `127.0.0.1:${p}` })
        assert.strictEqual(curl.status, 200, curl.text)
        const events = yield* raw("GET", "/api/v1/events", {
          ...auth,
          host: `localhost:${p}`,
          origin: `http://localhost:${p}`,
          accept: "text/event-stream"
        })
        assert.strictEqual(events.status, 200)
      }))
  })

  describe("CORS on the MCP endpoints", () => {
    const requested = [
      "authorization",
      "content-type",
      "mcp-protocol-version",
      "mcp-session-id",
      "mcp-method",
      "mcp-name",
      "last-event-id",
      "mcp-param-region"
    ]

    it.effect("a preflight from an allowed origin is 204 with what the browser asked for, before authentication", () =>
      Effect.gen(function*() {
        for (const path of ["/mcp", "/servers/any/mcp"]) {
          for (const origin of ["https://app.example.com", "http://localhost:6274"]) {
            const reply = yield* raw("OPTIONS", path, {
              host: "localhost",
              origin,
              "access-control-request-method": "POST",
              "access-control-request-headers": requested.join(",")
            })
            assert.strictEqual(reply.status, 204, `${path} from ${origin}: ${reply.text}`)
            assert.strictEqual(reply.headers["access-control-allow-origin"], origin)
            listsAll(reply.headers["access-control-allow-methods"] as string, ["get", "post", "delete"])
            listsAll(reply.headers["access-control-allow-headers"] as string, requested)
            listsAll(reply.headers["vary"] as string, ["origin"])
            assert.isAbove(Number(reply.headers["access-control-max-age"]), 0)
          }
        }
      }))

    it.effect("a preflight from another origin is 403 and grants nothing", () =>
      Effect.gen(function*() {
        const reply = yield* raw("OPTIONS", "/mcp", {
          host: "localhost",
          origin: "https://evil.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization"
        })
        assert.strictEqual(reply.status, 403)
        assert.isUndefined(reply.headers["access-control-allow-origin"])
        assert.isUndefined(reply.headers["access-control-allow-headers"])
      }))

    it.effect("every response to an allowed origin is readable by it: 401, the session id, errors", () =>
      Effect.gen(function*() {
        const origin = "https://app.example.com"
        const unauthenticated = yield* raw("POST", "/mcp", { host: "localhost", origin, ...mcpHeaders }, initializeBody)
        assert.strictEqual(unauthenticated.status, 401)
        assert.strictEqual(unauthenticated.headers["access-control-allow-origin"], origin)
        listsAll(unauthenticated.headers["access-control-expose-headers"] as string, [
          "mcp-session-id",
          "www-authenticate"
        ])
        listsAll(unauthenticated.headers["vary"] as string, ["origin"])

        const token = yield* clientToken
        const initialized = yield* raw(
          "POST",
          "/servers/none/mcp",
          { host: "localhost", origin, ...mcpHeaders, authorization: `Bearer ${token}` },
          initializeBody
        )
        assert.strictEqual(initialized.headers["access-control-allow-origin"], origin, initialized.text)
        const session = yield* raw(
          "POST",
          "/mcp",
          { host: "localhost", origin, ...mcpHeaders, authorization: `Bearer ${token}` },
          initializeBody
        )
        assert.strictEqual(session.status, 200, session.text)
        assert.isString(session.headers["mcp-session-id"])
        assert.strictEqual(session.headers["access-control-allow-origin"], origin)
        listsAll(session.headers["access-control-expose-headers"] as string, ["mcp-session-id"])

        // no Origin (a non-browser client): no CORS headers at all
        const plain = yield* raw("POST", "/mcp", { host: "localhost", ...mcpHeaders }, initializeBody)
        assert.strictEqual(plain.status, 401)
        assert.isUndefined(plain.headers["access-control-allow-origin"])
      }))
  })
})
