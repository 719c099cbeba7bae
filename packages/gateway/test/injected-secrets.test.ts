/**
 * A downstream cannot hand Janus's credential back to the client: a REST API
 * that echoes the request headers (in a JSON body, in text, in an error body)
 * gets its echo of the injected secret scrubbed, for bearer, header API key
 * and basic auth, with REDACTION_ENABLED off (the default) and on.
 */
import { assert, layer } from "@effect/vitest"
import { Connections, Endpoints, Secrets } from "@janus/storage"
import { Context, Effect, Layer, Redacted } from "effect"
import * as GatewayTesting from "../src/testing.ts"
import { httpServer } from "./egress/servers.ts"
import * as SdkClients from "./support/SdkClients.ts"

const SECRET = "s3cr3t-Value/with+chars=="
const BASIC_USER = "svc"

/** Echoes every request header: as JSON (200), as plain text (200) or in a 400's body. */
class Echo extends Context.Service<Echo, { readonly url: string }>()("test/injected-secrets/Echo") {}

const EchoLive = Layer.effect(
  Echo,
  Effect.map(
    httpServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x")
      if (url.pathname === "/json") {
        res.writeHead(200, { "content-type": "application/json" })
        return res.end(JSON.stringify({ headers: req.headers }))
      }
      if (url.pathname === "/text") {
        res.writeHead(200, { "content-type": "text/plain" })
        return res.end(Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`).join("\n"))
      }
      res.writeHead(400, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: "bad request", youSent: req.headers }))
    }),
    (server) => Echo.of({ url: server.origin })
  )
)

const schemes = {
  bearer: { scheme: "bearer", secret: "echo-key" },
  header: { scheme: "header", header: "X-Api-Key", secret: "echo-key" },
  basic: { scheme: "basic", username: BASIC_USER, secret: "echo-key" }
} as const

const seed = Effect.gen(function*() {
  const echo = yield* Echo
  yield* (yield* Secrets).set("echo-key", Redacted.make(SECRET))
  for (const [name, auth] of Object.entries(schemes)) {
    const connection = yield* (yield* Connections).create({
      kind: "rest",
      name,
      baseUrl: echo.url,
      auth,
      egressAllowList: ["127.0.0.1"]
    })
    for (const path of ["json", "text", "error"]) {
      yield* (yield* Endpoints).create({
        connectionId: connection.id,
        name: `${name}_${path}`,
        method: "GET",
        pathTemplate: `/${path}`,
        inputSchema: { type: "object", properties: {} }
      })
    }
  }
})

const gatewayWith = (redaction: boolean) =>
  Layer.effectDiscard(seed).pipe(
    Layer.provideMerge(GatewayTesting.layer({ config: { REDACTION_ENABLED: redaction } })),
    Layer.provideMerge(EchoLive)
  )

/** Every spelling of the credential a client could read a secret from. */
const leaks = (text: string): ReadonlyArray<string> => {
  const basic = Buffer.from(`${BASIC_USER}:${SECRET}`).toString("base64")
  return [SECRET, JSON.stringify(SECRET).slice(1, -1), encodeURIComponent(SECRET), basic, "s3cr3t"].filter((s) =>
    text.includes(s)
  )
}

const suite = (redaction: boolean) =>
  layer(gatewayWith(redaction), { timeout: 60_000, excludeTestServices: true })(
    `REDACTION_ENABLED=${redaction}: the injected credential never comes back`,
    (it) => {
      for (const name of Object.keys(schemes)) {
        it.effect(`${name}: echoed in JSON, in text and in an error body, it is scrubbed`, () =>
          Effect.scoped(Effect.gen(function*() {
            const client = yield* SdkClients.v1
            for (const path of ["json", "text", "error"]) {
              const result = yield* Effect.promise(() => client.callTool({ name: `${name}_${path}`, arguments: {} }))
              const text = JSON.stringify(result)
              assert.deepStrictEqual(leaks(text), [], `${name}_${path}: ${text}`)
              assert.include(text, "[REDACTED:secret]", `${name}_${path}`)
              assert.strictEqual(result.isError === true, path === "error", text)
            }
            // the JSON answer is still JSON, with the credential's place marked
            const json = yield* Effect.promise(() => client.callTool({ name: `${name}_json`, arguments: {} }))
            const headers = (json.structuredContent as { headers: Record<string, string> }).headers
            if (name === "bearer") assert.strictEqual(headers.authorization, "Bearer [REDACTED:secret]")
            if (name === "header") assert.strictEqual(headers["x-api-key"], "[REDACTED:secret]")
            if (name === "basic") assert.strictEqual(headers.authorization, "Basic [REDACTED:secret]")
            assert.strictEqual(headers.host, (yield* Echo).url.slice("http://".length), "the rest is untouched")
          })))
      }
    }
  )

suite(false)
suite(true)
