/**
 * The configuration document over the admin API: `GET /config/schema` (the
 * committed JSON Schema, which validates an export and refuses what the
 * document refuses), `GET /config/export` (JSON, YAML, ETag), `POST
 * /config/apply` (dry run, apply, YAML or JSON body, a token value returned
 * once, If-Match against a change made meanwhile, 400 with every path, 415,
 * the server's environment never read), and authentication.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, Connections } from "@janus/storage"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Effect, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as Fs from "node:fs"
import { fileURLToPath } from "node:url"
import * as Yaml from "yaml"
import { jsonSchema, SCHEMA_PATH } from "../../src/configuration/Document.ts"
import * as GatewayTesting from "../../src/testing.ts"
import { petsDocument } from "./documents.ts"

const committed = fileURLToPath(new URL(`../../../../${SCHEMA_PATH}`, import.meta.url))

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

const call = (
  method: string,
  path: string,
  options: { token?: string; body?: string; type?: string; headers?: Record<string, string> } = {}
) =>
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base))),
    (url) =>
      Effect.promise(async (): Promise<Answer> => {
        const response = await fetch(url, {
          method,
          headers: {
            ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
            ...(options.body === undefined ? {} : { "content-type": options.type ?? "application/json" }),
            ...options.headers
          },
          body: options.body ?? null
        })
        const text = await response.text()
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          body = undefined
        }
        return { status: response.status, headers: response.headers, text, body }
      })
  )

const document = petsDocument("https://pets.example.com", {
  connection: "    auth: { scheme: header, header: X-Api-Key, secret: api-key }\n",
  more: `secrets:
  - name: api-key
    valueFrom: { env: SERVER_SIDE_VALUE }
clientTokens:
  - name: agent
    allowedTools: [list_pets]
`
})

layer(GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false, JANUS_STDIO_COMMANDS: ["/usr/bin/true"] } }), {
  timeout: 120_000,
  excludeTestServices: true
})("the configuration document over the admin API", (it) => {
  const admin = Effect.map(
    AdminTokens.use((tokens) => tokens.create({ name: "config" })),
    (created) => Redacted.value(created.plaintext)
  )

  it.effect("the JSON Schema: committed, served, and it agrees with the document's decoder", () =>
    Effect.gen(function*() {
      const generated = jsonSchema()
      if (process.env.UPDATE_SCHEMA === "1") Fs.writeFileSync(committed, `${JSON.stringify(generated, null, 2)}\n`)
      assert.deepStrictEqual(
        JSON.parse(Fs.readFileSync(committed, "utf8")),
        generated,
        `${SCHEMA_PATH} is out of date: run this test with UPDATE_SCHEMA=1`
      )
      const token = yield* admin
      const served = yield* call("GET", "/api/v1/config/schema", { token })
      assert.strictEqual(served.status, 200)
      assert.match(served.headers.get("content-type") ?? "", /^application\/schema\+json/)
      assert.deepStrictEqual(served.body, generated)
      const validate = new Ajv2020({ strict: false, allErrors: true }).compile(generated)
      assert.isTrue(validate(Yaml.parse(document)), JSON.stringify(validate.errors))
      for (
        const bad of [
          { apiVersion: "janus/v2", kind: "Configuration" },
          { apiVersion: "janus/v1", kind: "Configuration", conections: [] },
          { apiVersion: "janus/v1", kind: "Configuration", connections: [{ kind: "rest", name: "x" }] },
          { apiVersion: "janus/v1", kind: "Configuration", clientTokens: [{ name: "t", revoked: "yes" }] }
        ]
      ) assert.isFalse(validate(bad), JSON.stringify(bad))
      assert.strictEqual((yield* call("GET", "/api/v1/config/schema")).status, 401)
    }))

  it.effect("dry run, apply (the token value once), apply again; export as JSON and YAML with its ETag", () =>
    Effect.gen(function*() {
      const token = yield* admin
      const dry = yield* call("POST", "/api/v1/config/apply?dryRun=true", {
        token,
        body: document,
        type: "application/yaml"
      })
      assert.strictEqual(dry.status, 200, dry.text)
      assert.isTrue(dry.body.dryRun)
      assert.deepStrictEqual(dry.body.plan.changes.map((c: any) => `${c.action} ${c.name} ${c.at}`), [
        "add pets connections[0]",
        "add list_pets endpoints[0]",
        "add agent clientTokens[0]"
      ])
      // valueFrom is not read from the server's environment for an API caller
      assert.match(dry.body.plan.warnings[0], /^secrets\[0\]: secret "api-key" has no value yet/)
      assert.deepStrictEqual(dry.body.issuedTokens, [])
      assert.strictEqual(dry.headers.get("etag"), `"${dry.body.basis}"`)
      assert.strictEqual(dry.headers.get("cache-control"), "no-store")
      assert.isTrue(Option.isNone(yield* Connections.use((c) => c.findByName("pets"))), "a dry run writes nothing")

      const applied = yield* call("POST", "/api/v1/config/apply", {
        token,
        body: JSON.stringify(Yaml.parse(document)),
        headers: { "if-match": dry.headers.get("etag")! }
      })
      assert.strictEqual(applied.status, 200, applied.text)
      assert.isTrue(applied.body.applied)
      assert.deepStrictEqual(applied.body.issuedTokens.map((t: any) => t.name), ["agent"])
      assert.match(applied.body.issuedTokens[0].token, /^jns_[\w-]{43}$/)
      const again = yield* call("POST", "/api/v1/config/apply", { token, body: document, type: "application/yaml" })
      assert.deepStrictEqual(again.body.plan.changes, [])
      assert.deepStrictEqual(again.body.issuedTokens, [])
      assert.notInclude(again.text, applied.body.issuedTokens[0].token)

      const json = yield* call("GET", "/api/v1/config/export", { token })
      assert.strictEqual(json.status, 200)
      assert.strictEqual(json.headers.get("etag"), `"${again.body.basis}"`)
      const yaml = yield* call("GET", "/api/v1/config/export?format=yaml", { token })
      assert.match(yaml.headers.get("content-type") ?? "", /^application\/yaml/)
      assert.deepStrictEqual(Yaml.parse(yaml.text), json.body)
      assert.deepStrictEqual(json.body.connections.map((c: any) => c.name), ["pets"])
      assert.deepStrictEqual(json.body.clientTokens, [{ name: "agent", allowedTools: ["list_pets"] }])
      assert.strictEqual((yield* call("GET", "/api/v1/config/export?format=xml", { token })).status, 400)
    }))

  it.effect("a change made after the preview: 409 configuration_changed, nothing applied", () =>
    Effect.gen(function*() {
      const token = yield* admin
      const changed = document.replace("https://pets.example.com", "https://pets.example.org")
      const preview = yield* call("POST", "/api/v1/config/apply?dryRun=true", {
        token,
        body: changed,
        type: "application/yaml"
      })
      assert.deepStrictEqual(preview.body.plan.changes.map((c: any) => `${c.action} ${c.name} ${c.fields}`), [
        "change pets baseUrl"
      ])
      const pets = Option.getOrThrow(yield* Connections.use((c) => c.findByName("pets")))
      const edit = yield* call("PATCH", `/api/v1/connections/${pets.id}`, {
        token,
        body: JSON.stringify({ description: "edited in Studio" }),
        headers: { "if-match": `"${pets.version}"` }
      })
      assert.strictEqual(edit.status, 200, edit.text)
      const stale = yield* call("POST", "/api/v1/config/apply", {
        token,
        body: changed,
        type: "application/yaml",
        headers: { "if-match": preview.headers.get("etag")! }
      })
      assert.strictEqual(stale.status, 409, stale.text)
      assert.strictEqual(stale.body.error.code, "configuration_changed")
      const now = Option.getOrThrow(yield* Connections.use((c) => c.findByName("pets")))
      assert.strictEqual(now.kind === "rest" && now.baseUrl, "https://pets.example.com")
      assert.strictEqual(now.version, pets.version + 1)
    }))

  it.effect("a stdio connection whose env changes how programs behave (NODE_OPTIONS, BASH_ENV): 400 at its path", () =>
    Effect.gen(function*() {
      const token = yield* admin
      const before = yield* call("GET", "/api/v1/config/export", { token })
      for (const dryRun of [true, false]) {
        const refused = yield* call("POST", `/api/v1/config/apply${dryRun ? "?dryRun=true" : ""}`, {
          token,
          body: JSON.stringify({
            apiVersion: "janus/v1",
            kind: "Configuration",
            connections: [{
              kind: "mcp",
              name: "probe",
              transport: "stdio",
              command: "/usr/bin/true",
              env: { API_KEY: "fine", NODE_OPTIONS: "--import=data:text/javascript,process.exit(3)" }
            }]
          })
        })
        assert.strictEqual(refused.status, 400, refused.text)
        assert.deepStrictEqual(refused.body.error.fields.map((f: any) => f.path), ["connections[0].env.NODE_OPTIONS"])
        assert.include(refused.text, "upper-case letters")
      }
      assert.isTrue(Option.isNone(yield* Connections.use((c) => c.findByName("probe"))))
      const after = yield* call("GET", "/api/v1/config/export", { token })
      assert.strictEqual(after.text, before.text, "nothing was applied")
    }))

  it.effect("refusals: 400 with every path, 415, 413, a malformed If-Match, flags", () =>
    Effect.gen(function*() {
      const token = yield* admin
      const before = yield* call("GET", "/api/v1/config/export", { token })
      const bad = yield* call("POST", "/api/v1/config/apply", {
        token,
        body: JSON.stringify({
          apiVersion: "janus/v1",
          kind: "Configuration",
          connections: [{ kind: "rest", name: "x", baseUrl: "https://x.example", timeoutMs: 0, extra: true }],
          endpoints: [{ name: "e", connection: "y", method: "GET", pathTemplate: "/", inputSchema: { type: "object" } }]
        })
      })
      assert.strictEqual(bad.status, 400, bad.text)
      assert.strictEqual(bad.body.error.code, "invalid_configuration")
      assert.deepStrictEqual(bad.body.error.fields.map((f: any) => f.path).sort(), [
        "connections[0].extra",
        "connections[0].timeoutMs"
      ])
      const unknown = yield* call("POST", "/api/v1/config/apply", {
        token,
        body: JSON.stringify({
          apiVersion: "janus/v1",
          kind: "Configuration",
          endpoints: [{ name: "e", connection: "y", method: "GET", pathTemplate: "/", inputSchema: { type: "object" } }]
        })
      })
      assert.strictEqual(unknown.status, 400)
      assert.deepStrictEqual(unknown.body.error.fields, [{
        path: "endpoints[0].connection",
        message: `refers to unknown connection "y"; expected a rest connection of the document`
      }])
      const yamlError = yield* call("POST", "/api/v1/config/apply", {
        token,
        body: "apiVersion: janus/v1\n  kind: [\n",
        type: "text/yaml"
      })
      assert.strictEqual(yamlError.status, 400)
      assert.match(yamlError.body.error.message, /not valid YAML at line \d+, column \d+/)
      assert.strictEqual(
        (yield* call("POST", "/api/v1/config/apply", { token, body: document, type: "text/plain" })).status,
        415
      )
      assert.strictEqual(
        (yield* call("POST", "/api/v1/config/apply", {
          token,
          body: "x".repeat(9 * 1024 * 1024),
          type: "application/yaml"
        }))
          .status,
        413
      )
      const ifMatch = yield* call("POST", "/api/v1/config/apply", {
        token,
        body: document,
        type: "application/yaml",
        headers: { "if-match": `"3"` }
      })
      assert.strictEqual(ifMatch.status, 400)
      assert.strictEqual(ifMatch.body.error.fields[0].path, "If-Match")
      assert.strictEqual(
        (yield* call("POST", "/api/v1/config/apply?dryRun=maybe", { token, body: document, type: "application/yaml" }))
          .status,
        400
      )
      assert.strictEqual((yield* call("POST", "/api/v1/config/apply", { body: document })).status, 401)
      const after = yield* call("GET", "/api/v1/config/export", { token })
      assert.strictEqual(after.headers.get("etag"), before.headers.get("etag"), "nothing was written")
    }))
})
