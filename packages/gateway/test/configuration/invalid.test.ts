/**
 * Documents that cannot be applied are refused with the path of every bad
 * value, what was given and what is expected, and the database is
 * unchanged (the export and its basis are compared before and after):
 * schema errors, unknown fields, unknown references to connections, tools,
 * virtual servers and secrets, duplicate names, hostile strings (NUL, lone
 * surrogates, `__proto__`), text that is not YAML or JSON, a connection
 * changing kind, a revoked token reinstated. `valueFrom` is read from the
 * environment only where asked, never from Janus's own variables.
 */
import { assert, describe, layer } from "@effect/vitest"
import { ClientTokens, Secrets } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import * as Yaml from "yaml"
import { ConfigurationApplier } from "../../src/configuration/Applier.ts"
import { type ConfigurationInvalid, MAX_DEPTH } from "../../src/configuration/Document.ts"
import { allowList, applyText, applyValue, populate } from "./support.ts"

const header = { apiVersion: "janus/v1", kind: "Configuration" }

const storage = ConfigurationApplier.layer.pipe(
  Layer.provideMerge(StorageTesting.layerMemory()),
  Layer.provide(allowList)
)

/** Applies `text`, expects a refusal naming each of `paths`, and checks nothing was written. */
const refused = (text: string, paths: ReadonlyArray<string | RegExp>, options: Parameters<typeof applyText>[1] = {}) =>
  Effect.gen(function*() {
    const applier = yield* ConfigurationApplier
    const before = yield* applier.export
    const error = yield* Effect.flip(applyText(text, options))
    assert.strictEqual(error._tag, "ConfigurationInvalid", error.message)
    const problems = error._tag === "ConfigurationInvalid" ? error.problems : []
    for (const path of paths) {
      assert.isTrue(
        problems.some((p) => typeof path === "string" ? p.path === path : path.test(p.line)),
        `${String(path)} is named in:\n${error.message}`
      )
    }
    const after = yield* applier.export
    assert.strictEqual(after.basis, before.basis, "nothing was written")
    assert.deepStrictEqual(after.document, before.document)
    return error as ConfigurationInvalid
  })

const json = (value: unknown) => JSON.stringify({ ...header, ...(value as object) })

describe("invalid configuration documents", () => {
  layer(storage, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("populated first: every refusal below must leave it as it is", () => populate)

    it.effect("schema errors and unknown fields: every problem at once, with its path, value and expectation", () =>
      Effect.gen(function*() {
        const error = yield* refused(
          JSON.stringify({
            apiVersion: "janus/v2",
            kind: "Configuration",
            conections: [],
            connections: [
              { kind: "rest", name: "ok", baseUrl: "https://a.example", timeoutMs: -5 },
              { kind: "soap", name: "x" },
              { kind: "rest", name: "typo", baseURL: "https://a.example" },
              { kind: "rest", name: "bad name!", baseUrl: "https://a.example" },
              { kind: "rest", name: "auth", baseUrl: "https://a.example", auth: { scheme: "kerberos" } }
            ],
            endpoints: [{ name: "e", connection: "ok", method: "FETCH", pathTemplate: "/", inputSchema: {} }],
            clientTokens: [
              { name: "t", expiresAt: "tomorrow" },
              { name: "u", expiresAt: "2030-13-45T00:00:00Z" },
              // a day the calendar does not have: Date.parse reads it as 2 March
              { name: "v", expiresAt: "2030-02-30T00:00:00Z" }
            ]
          }),
          [
            "apiVersion",
            "conections",
            "connections[0].timeoutMs",
            "connections[1].kind",
            "connections[2].baseURL",
            "connections[2].baseUrl",
            "connections[3].name",
            "connections[4].auth.scheme",
            "endpoints[0].method",
            "clientTokens[0].expiresAt",
            "clientTokens[1].expiresAt",
            "clientTokens[2].expiresAt"
          ]
        )
        const line = (path: string) => error.problems.find((p) => p.path === path)!.message
        assert.strictEqual(line("apiVersion"), `got "janus/v2"; expected "janus/v1"`)
        assert.match(line("connections[0].timeoutMs"), /^got -5; expected 1\.\.600000 ms$/)
        assert.strictEqual(line("connections[1].kind"), `got "soap"; expected one of "rest", "mcp"`)
        assert.match(
          line("connections[2].baseURL"),
          /^expected one of the known fields \(kind, name, .*baseUrl.*\): "baseURL" is unknown; did you mean "baseUrl"\?$/
        )
        assert.strictEqual(line("connections[2].baseUrl"), "missing: this field is required")
        assert.match(line("connections[3].name"), /^got "bad name!"; expected a name of 1 to 64 letters, digits/)
        assert.match(line("connections[4].auth.scheme"), /^got "kerberos"; expected one of "none", "bearer"/)
        assert.match(line("clientTokens[0].expiresAt"), /got "tomorrow"; expected an RFC 3339 date-time/)
        assert.strictEqual(
          line("clientTokens[2].expiresAt"),
          `got "2030-02-30T00:00:00Z"; expected an RFC 3339 date-time with a time zone that exists on the calendar, ` +
            `e.g. 2030-01-01T00:00:00Z (February 2030 has no day 30: it has 28 days)`
        )
        assert.match(error.message, /^the configuration document is invalid \(12 problems\):\n {2}- /)
      }))

    it.effect("storage's own refusals are reported at the document path of the value", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [unknown, string, RegExp]> = [
          [
            { connections: [{ kind: "rest", name: "ftp", baseUrl: "ftp://files.example" }] },
            "connections[0].baseUrl",
            /got "ftp:\/\/files.example"; expected an absolute http:\/\/ or https:\/\/ URL/
          ],
          [
            { connections: [{ kind: "mcp", name: "run", transport: "stdio", command: "bash", args: ["-c", "id"] }] },
            "connections[0].command",
            /got "bash"; expected npx/
          ],
          [
            {
              connections: [{ kind: "rest", name: "r", baseUrl: "https://r.example" }],
              endpoints: [{
                name: "e",
                connection: "r",
                method: "GET",
                pathTemplate: "/x/{id}",
                inputSchema: { type: "object" }
              }]
            },
            "endpoints[0].arguments.id",
            /uses \{id\}/
          ],
          [
            {
              connections: [{ kind: "rest", name: "r", baseUrl: "https://r.example" }],
              endpoints: [{
                name: "e",
                connection: "r",
                method: "GET",
                pathTemplate: "/",
                inputSchema: { type: "string" }
              }]
            },
            "endpoints[0].inputSchema",
            /"type" is "string"; expected a JSON Schema with "type": "object"/
          ],
          [
            { clientTokens: [{ name: "t", allowedTools: ["bad tool"] }] },
            "clientTokens[0].allowedTools[0]",
            /refers to unknown tool "bad tool"/
          ]
        ]
        for (const [doc, path, message] of cases) {
          const error = yield* refused(json(doc), [path])
          assert.match(error.problems.find((p) => p.path === path)!.message, message, path)
        }
      }))

    it.effect("unknown references to connections, tools, virtual servers and secrets; duplicate names", () =>
      Effect.gen(function*() {
        const error = yield* refused(
          json({
            secrets: [{ name: "known" }, { name: "known" }],
            connections: [
              { kind: "rest", name: "r", baseUrl: "https://r.example", auth: { scheme: "bearer", secret: "missing" } },
              { kind: "mcp", name: "m", url: "https://m.example/mcp" },
              {
                kind: "mcp",
                name: "s",
                transport: "stdio",
                command: "npx",
                env: { TOKEN: { secret: "absent" }, PLAIN: "ok" }
              },
              { kind: "rest", name: "r", baseUrl: "https://again.example" }
            ],
            endpoints: [
              { name: "a", connection: "nope", method: "GET", pathTemplate: "/", inputSchema: { type: "object" } },
              { name: "b", connection: "m", method: "GET", pathTemplate: "/", inputSchema: { type: "object" } }
            ],
            virtualServers: [{ name: "v", tools: ["a", "m/search", "m/*", "r/*", "ghost", "nope/x"] }],
            clientTokens: [
              { name: "t", allowedVirtualServers: ["v", "w"], allowedTools: ["a", "m/*", "m/x", "r/*", "ghost"] },
              { name: "t" }
            ]
          }),
          [
            "secrets[1].name",
            "connections[0].auth.secret",
            "connections[2].env.TOKEN.secret",
            "connections[3].name",
            "endpoints[0].connection",
            "endpoints[1].connection",
            "virtualServers[0].tools[3]",
            "virtualServers[0].tools[4]",
            "virtualServers[0].tools[5]",
            "clientTokens[0].allowedVirtualServers[1]",
            "clientTokens[0].allowedTools[3]",
            "clientTokens[0].allowedTools[4]",
            "clientTokens[1].name"
          ]
        )
        // and nothing else: the references that do resolve are not reported
        assert.strictEqual(error.problems.length, 13, error.message)
        const line = (path: string) => error.problems.find((p) => p.path === path)!.message
        assert.match(line("connections[0].auth.secret"), /refers to unknown secret "missing"; expected a secret listed/)
        assert.match(line("endpoints[1].connection"), /an mcp connection; expected a rest connection/)
        assert.match(line("connections[3].name"), /got "r", which connections\[0\] already has/)
      }))

    it.effect("a stdio program's env that changes how programs behave: refused at the variable's path", () =>
      Effect.gen(function*() {
        const error = yield* refused(
          json({
            connections: [
              { kind: "mcp", name: "s", transport: "stdio", command: "npx", env: { API_KEY: "k", NODE_PATH: "/tmp" } }
            ]
          }),
          ["connections[0].env.NODE_PATH"]
        )
        assert.include(error.message, "upper-case letters")
      }))

    it.effect("hostile strings: NUL, lone surrogates, __proto__, unknown fields", () =>
      Effect.gen(function*() {
        yield* refused(
          json({
            secrets: [{ name: "nul\u0000name" }],
            connections: [
              { kind: "rest", name: "ok\u0000", baseUrl: "https://a.example" },
              { kind: "mcp", name: "s", transport: "stdio", command: "npx", args: ["a\u0000b"], env: { X: "\ud800" } },
              { kind: "mcp", name: "t", transport: "stdio", command: "npx", cwd: "/tmp/\udc00" }
            ],
            clientTokens: [{ name: "tok\u0000en" }]
          }),
          [
            "secrets[0].name",
            "connections[0].name",
            "connections[1].args[0]",
            /connections\[1\]\.env/,
            "connections[2].cwd",
            "clientTokens[0].name"
          ]
        )
        // `__proto__` as a member is data (JSON and YAML alike), and an unknown field
        yield* refused(
          `{"apiVersion":"janus/v1","kind":"Configuration","clientTokens":[{"name":"x","__proto__":{"a":1}}]}`,
          [`clientTokens[0].__proto__`]
        )
        yield* refused(
          "apiVersion: janus/v1\nkind: Configuration\nclientTokens:\n  - name: x\n    __proto__: { revoked: true }\n",
          [`clientTokens[0].__proto__`]
        )
        // text the database cannot store, in fields with no pattern: refused by storage at the value's path, and
        // nothing half-applied (the first connection was written before the second was refused)
        for (const description of ["nul\u0000inside", "lone \ud800 surrogate"]) {
          const error = yield* refused(
            json({
              connections: [
                { kind: "rest", name: "first", baseUrl: "https://a.example" },
                { kind: "rest", name: "second", baseUrl: "https://b.example", description }
              ]
            }),
            ["connections[1].description"]
          )
          assert.match(error.problems[0]!.message, /expected text without U\+0000 \(NUL\) or unpaired surrogates/)
        }
      }))

    it.effect("text that is not a document: YAML and JSON errors, duplicate keys, depth, size, alias bombs", () =>
      Effect.gen(function*() {
        yield* refused("apiVersion: janus/v1\nkind: Configuration\nkind: Configuration\n", [/line 3, column 1: /])
        yield* refused("apiVersion: [janus/v1\n", [/not valid YAML at line/])
        yield* refused(`{"apiVersion": "janus/v1",\n "kind": "Configuration"`, [
          /not valid YAML at line 2, column \d+: /
        ])
        yield* refused("", [/no document/])
        yield* refused("# only a comment\n", [/no document/])
        yield* refused("- a\n- b\n", [/^got \["a","b"\]; expected/])
        yield* refused(
          `{"apiVersion":"janus/v1","kind":"Configuration","x":${"[".repeat(MAX_DEPTH + 1)}${
            "]".repeat(MAX_DEPTH + 1)
          }}`,
          [
            /nested more than 100 levels/
          ]
        )
        yield* refused(`${"#".repeat(9 * 1024 * 1024)}\n`, [/larger than 8388608 bytes/])
        const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
        for (let i = 0; i < 9; i++) {
          bomb.push(
            `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${
              Array(10).fill(`*${String.fromCharCode(97 + i)}`).join(", ")
            }]`
          )
        }
        yield* refused(bomb.join("\n"), [/not a usable YAML document: .*alias/i])
        // a second document of a stream is named as such
        const error = yield* refused(
          "apiVersion: janus/v1\nkind: Configuration\n---\napiVersion: janus/v1\nkind: Nope\n",
          ["document 2: kind"]
        )
        assert.strictEqual(error.problems.length, 1)
      }))

    it.effect("a connection keeps its kind; a revoked token stays revoked", () =>
      Effect.gen(function*() {
        const applier = yield* ConfigurationApplier
        const doc = Yaml.parse(
          yield* Effect.flatMap(applier.export, (e) => Effect.succeed(JSON.stringify(e.document)))
        ) as Record<string, Array<Record<string, unknown>>>
        const legacy = doc.connections!.findIndex((c) => c.name === "legacy")
        doc.connections![legacy] = { name: "legacy", kind: "rest", baseUrl: "https://old.example.com" }
        const old = doc.clientTokens!.findIndex((t) => t.name === "old")
        doc.clientTokens![old] = { name: "old" }
        const error = yield* refused(JSON.stringify(doc), [
          `connections[${legacy}].kind`,
          `clientTokens[${old}].revoked`
        ])
        assert.match(error.problems[0]!.message, /got "rest"; expected "mcp": the kind of a connection cannot change/)
        assert.match(error.problems[1]!.message, /got false; expected true: this token was revoked/)
      }))

    it.effect("valueFrom: read from the environment where asked, compared with what is stored, never Janus's own", () =>
      Effect.gen(function*() {
        const env = (record: Record<string, string>) =>
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(record))
        const token = `jns_${"t".repeat(43)}`
        const doc = json({
          secrets: [{ name: "from-env", valueFrom: { env: "FROM_ENV" } }],
          clientTokens: [{ name: "deployed", valueFrom: { env: "DEPLOY_TOKEN" } }]
        })
        // not set: refused at the path
        yield* refused(doc, ["secrets[0].valueFrom.env", "clientTokens[0].valueFrom.env"]).pipe(env({}))
        // Janus's own variables are never a source, wherever the document is applied
        yield* refused(
          json({
            secrets: [{ name: "k", valueFrom: { env: "JANUS_MASTER_KEY" } }, {
              name: "d",
              valueFrom: { env: "DATABASE_URL" }
            }]
          }),
          ["secrets[0].valueFrom.env", "secrets[1].valueFrom.env"]
        ).pipe(env({ JANUS_MASTER_KEY: "x", DATABASE_URL: "postgres://x" }))
        // a token value that is not a token
        yield* refused(doc, ["clientTokens[0].valueFrom.env"]).pipe(env({ FROM_ENV: "v1", DEPLOY_TOKEN: "nope" }))

        const first = yield* applyText(doc).pipe(env({ FROM_ENV: "v1", DEPLOY_TOKEN: token }))
        const added = (changes: typeof first.plan.changes) => changes.filter((c) => c.action !== "remove")
        assert.deepStrictEqual(added(first.plan.changes).map((c) => `${c.action} ${c.name}`), [
          "add from-env",
          "add deployed"
        ])
        assert.deepStrictEqual(first.issuedTokens, [], "a value from the environment is not shown back")
        assert.strictEqual(Redacted.value(yield* Secrets.use((s) => s.reveal("from-env"))), "v1")
        const verified = yield* ClientTokens.use((t) => t.verify(token))
        assert.strictEqual(Option.getOrThrow(verified).name, "deployed")
        // the same values: nothing to do; a new value: "value" changes, and nothing else
        const same = yield* applyText(doc).pipe(env({ FROM_ENV: "v1", DEPLOY_TOKEN: token }))
        assert.deepStrictEqual(added(same.plan.changes), [])
        const rotated = `jns_${"r".repeat(43)}`
        const changed = yield* applyText(doc).pipe(env({ FROM_ENV: "v2", DEPLOY_TOKEN: rotated }))
        assert.deepStrictEqual(added(changed.plan.changes).map((c) => `${c.action} ${c.name} ${c.fields.join(",")}`), [
          "change from-env value",
          "change deployed value"
        ])
        assert.strictEqual(Redacted.value(yield* Secrets.use((s) => s.reveal("from-env"))), "v2")
        assert.isTrue(Option.isNone(yield* ClientTokens.use((t) => t.verify(token))))
        assert.isTrue(Option.isSome(yield* ClientTokens.use((t) => t.verify(rotated))))

        // over the admin API the server's environment is not read: nothing changes, and a missing value is a warning
        const api = yield* applyValue(
          {
            ...header,
            ...JSON.parse(doc),
            secrets: [...JSON.parse(doc).secrets, { name: "later", valueFrom: { env: "LATER" } }]
          },
          { environment: "none" }
        ).pipe(env({ FROM_ENV: "v3", DEPLOY_TOKEN: token, LATER: "x" }))
        assert.deepStrictEqual(added(api.plan.changes), [])
        assert.match(
          api.plan.warnings.join("\n"),
          /secrets\[1\]: secret "later" has no value yet.*not read from the server's environment/
        )
        assert.strictEqual(Redacted.value(yield* Secrets.use((s) => s.reveal("from-env"))), "v2")
        // a token this document adds needs valueFrom where nobody would see a new value (JANUS_CONFIG_FILE)
        yield* refused(json({ clientTokens: [{ name: "new-one" }] }), ["clientTokens[0].valueFrom"], {
          issueTokens: false
        })
      }))
  })
})
