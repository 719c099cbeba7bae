/**
 * The repository suite, run against PGlite (in memory) and real Postgres.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Redacted, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { TestClock } from "effect/testing"
import {
  AdminTokens,
  ChangeFeed,
  ClientTokens,
  ConfigCache,
  Connections,
  Endpoints,
  EventLog,
  MasterKey,
  Migrations,
  SecretBox,
  SecretCache,
  Secrets,
  StdioAllowList,
  Storage,
  StorageHealth,
  TokenCache,
  VirtualServers
} from "../src/index.ts"
import { layerMemory, layerPostgres, requirePostgres } from "../src/testing.ts"
import { count, endpointInput, expectFailure, restInput, unique } from "./helpers.ts"

const postgres = await requirePostgres()

type Services = Storage.Storage | SqlClient.SqlClient | MasterKey

const backends: ReadonlyArray<{ name: string; layer: () => Layer.Layer<Services, unknown>; run: boolean }> = [
  { name: "pglite (memory)", layer: () => layerMemory(), run: true },
  { name: "postgres", layer: () => layerPostgres(), run: postgres }
]

for (const backend of backends) {
  describe.skipIf(!backend.run)(backend.name, () => {
    layer(backend.layer(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
      // --- migrations and health ------------------------------------------------
      it.effect("migrations are applied once; running them again is a no-op", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const again = yield* Migrations.run
          assert.deepStrictEqual(again, [])
          const rows = yield* sql<{ id: number }>`SELECT migration_id AS id FROM janus_migrations ORDER BY 1`
          assert.deepStrictEqual(rows.map((r) => Number(r.id)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
          assert.strictEqual(Migrations.latestId, 13)
          yield* (yield* StorageHealth).check
        }))

      it.effect("health fails while a migration is missing", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const health = yield* StorageHealth
          // Hide the newest migration inside a transaction that is rolled back afterwards.
          const error = yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`DELETE FROM janus_migrations WHERE migration_id = ${Migrations.latestId}`
            const error = yield* expectFailure(health.check, "StorageUnavailable")
            return yield* Effect.fail(error)
          })).pipe(Effect.flip)
          assert.strictEqual(error._tag, "StorageUnavailable")
          assert.include(error.message, `this version needs ${Migrations.latestId}`)
          yield* health.check
        }))

      // --- connections ---------------------------------------------------------
      it.effect("connections: create, read, list, update with version, delete", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const name = unique("api")
          const rest = yield* connections.create(
            restInput(name, {
              auth: { scheme: "bearer", secret: "api-key" },
              egressAllowList: ["api.example.com", "127.0.0.1:9103", "[fd00::/8]:443", ".svc.local:80"]
            })
          )
          assert.strictEqual(rest.kind, "rest")
          assert.strictEqual(rest.version, 1)
          assert.deepStrictEqual(rest.auth, { scheme: "bearer", secret: "api-key" })
          assert.strictEqual(rest.timeoutMs, 30_000)
          // kept as written, ports included
          assert.deepStrictEqual(rest.egressAllowList, [
            "api.example.com",
            "127.0.0.1:9103",
            "[fd00::/8]:443",
            ".svc.local:80"
          ])
          if (rest.kind === "rest") assert.strictEqual(rest.retry.maxAttempts, 3)

          const mcp = yield* connections.create({
            kind: "mcp",
            name: unique("upstream"),
            url: "https://mcp.example.com/mcp",
            transport: "sse",
            auth: { scheme: "header", header: "X-Api-Key", secret: "upstream-key" }
          })
          assert.strictEqual(mcp.kind, "mcp")
          if (mcp.kind === "mcp") assert.strictEqual(mcp.transport, "sse")
          // the tool prefix: null (the default `<name>/`) unless set; "" (none) is kept as such
          if (mcp.kind === "mcp") assert.isNull(mcp.toolPrefix)
          const bare = yield* connections.update(mcp.id, 1, {
            kind: "mcp",
            name: mcp.name,
            url: "https://mcp.example.com/mcp",
            toolPrefix: ""
          })
          assert.strictEqual(bare.kind === "mcp" ? bare.toolPrefix : undefined, "")
          const got = yield* connections.get(mcp.id)
          assert.strictEqual(got.kind === "mcp" ? got.toolPrefix : undefined, "")
          yield* expectFailure(
            connections.create({ kind: "mcp", name: unique("up"), url: "https://mcp.example.com", toolPrefix: "a b" }),
            "InvalidInput"
          )

          // OAuth client credentials: mcp connections only, the token URL checked, the client secret by name
          const oauth = {
            scheme: "oauth-client-credentials",
            tokenUrl: "https://auth.example.com/token",
            clientId: "janus",
            secret: "oauth-client",
            audience: "mcp"
          } as const
          const withOAuth = yield* connections.create({
            kind: "mcp",
            name: unique("oauth"),
            url: "https://mcp.example.com/mcp",
            auth: oauth
          })
          assert.deepStrictEqual(withOAuth.auth, oauth)
          assert.deepStrictEqual((yield* connections.get(withOAuth.id)).auth, oauth)
          yield* expectFailure(
            connections.create({
              kind: "mcp",
              name: unique("oauth"),
              url: "https://mcp.example.com/mcp",
              auth: { ...oauth, tokenUrl: "file:///etc/passwd" }
            }),
            "InvalidUrl"
          )
          yield* expectFailure(
            connections.create({ ...restInput(unique("rest")), auth: oauth } as never),
            "InvalidInput"
          )
          yield* connections.delete(withOAuth.id)

          assert.deepStrictEqual(yield* connections.get(rest.id), rest)
          assert.isTrue(Option.isSome(yield* connections.findByName(name)))
          const listed = yield* connections.list
          assert.isTrue(listed.some((c) => c.id === rest.id) && listed.some((c) => c.id === mcp.id))

          const updated = yield* connections.update(rest.id, 1, restInput(name, { timeoutMs: 5_000 }))
          assert.strictEqual(updated.version, 2)
          assert.strictEqual(updated.timeoutMs, 5_000)
          assert.deepStrictEqual(updated.auth, { scheme: "none" })

          yield* connections.delete(mcp.id)
          yield* expectFailure(connections.get(mcp.id), "NotFound")
          yield* expectFailure(connections.delete(mcp.id), "NotFound")
        }))

      it.effect("mcp connections: poll interval, and stdio programs only when the allow-list admits them", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const http = yield* connections.create({
            kind: "mcp",
            name: unique("up"),
            url: "https://mcp.example.com/mcp"
          })
          assert.strictEqual(http.kind === "mcp" ? http.pollIntervalMs : undefined, 30_000)
          assert.isNull(http.kind === "mcp" ? http.stdio : undefined)
          const polled = yield* connections.update(http.id, 1, {
            kind: "mcp",
            name: http.name,
            url: "https://mcp.example.com/mcp",
            pollIntervalMs: 2_000
          })
          assert.strictEqual(polled.kind === "mcp" ? polled.pollIntervalMs : undefined, 2_000)
          for (const pollIntervalMs of [999, 86_400_001, 1.5]) {
            const refused = yield* expectFailure(
              connections.update(http.id, 2, {
                kind: "mcp",
                name: http.name,
                url: "https://mcp.example.com/mcp",
                pollIntervalMs
              }),
              "InvalidInput"
            )
            assert.strictEqual(refused.field, "pollIntervalMs")
          }
          // an http upstream runs no command; a stdio one has no URL
          const noCommand = yield* expectFailure(
            connections.create({ kind: "mcp", name: unique("up"), url: "https://mcp.example.com", command: "npx" }),
            "InvalidInput"
          )
          assert.strictEqual(noCommand.field, "command")
          const stdio = { kind: "mcp", transport: "stdio", name: unique("local"), command: "npx" } as const
          // nothing is allowed by default: the error names the variable
          const off = yield* expectFailure(connections.create(stdio), "InvalidInput")
          assert.strictEqual(off.field, "command")
          assert.include(off.message, "JANUS_STDIO_COMMANDS")

          const allowing = Effect.provideService(StdioAllowList, {
            allows: (command) => command === "npx" || command === "/usr/bin/env",
            expected: "npx or /usr/bin/env (JANUS_STDIO_COMMANDS)"
          })
          yield* Effect.gen(function*() {
            const allowed = yield* Connections
            const created = yield* allowed.create({
              ...stdio,
              args: ["-y", "some-server"],
              env: { API_KEY: { secret: "api-key" }, MODE: "fast" },
              cwd: "/tmp"
            })
            assert.strictEqual(created.kind === "mcp" ? created.transport : undefined, "stdio")
            assert.isNull(created.kind === "mcp" ? created.url : undefined)
            assert.deepStrictEqual(created.kind === "mcp" ? created.stdio : undefined, {
              command: "npx",
              args: ["-y", "some-server"],
              env: { API_KEY: { secret: "api-key" }, MODE: "fast" },
              cwd: "/tmp"
            })
            assert.deepStrictEqual(yield* allowed.get(created.id), created)
            const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
              [{ command: "python3" }, "command"],
              [{ command: "./bin/server" }, "command"],
              [{ url: "https://mcp.example.com" }, "url"],
              [{ cwd: "relative/dir" }, "cwd"],
              [{ env: { LD_PRELOAD: "/tmp/x.so" } }, "env.LD_PRELOAD"],
              [{ env: { "BAD NAME": "x" } }, "env"],
              // what changes how a program, its loader or interpreter behaves is refused, by name
              [{ env: { NODE_OPTIONS: "--import=data:text/javascript,1" } }, "env.NODE_OPTIONS"],
              [{ env: { NODE_PATH: "/tmp" } }, "env.NODE_PATH"],
              [{ env: { BASH_ENV: "/tmp/x.sh" } }, "env.BASH_ENV"],
              [{ env: { ENV: "/tmp/x.sh" } }, "env.ENV"],
              [{ env: { GCONV_PATH: "/tmp" } }, "env.GCONV_PATH"],
              [{ env: { PATH: "/tmp" } }, "env.PATH"],
              [{ env: { HOME: "/tmp" } }, "env.HOME"],
              [{ env: { PYTHONSTARTUP: "/tmp/x.py" } }, "env.PYTHONSTARTUP"],
              [{ env: { PERL5OPT: "-Mx" } }, "env.PERL5OPT"],
              [{ env: { RUBYOPT: "-rx" } }, "env.RUBYOPT"],
              [{ env: { JAVA_TOOL_OPTIONS: "-javaagent:x" } }, "env.JAVA_TOOL_OPTIONS"],
              [{ env: { IFS: "x" } }, "env.IFS"],
              [{ env: { PS4: "$(x)" } }, "env.PS4"],
              [{ env: { GLIBC_TUNABLES: "x" } }, "env.GLIBC_TUNABLES"],
              [{ env: { npm_config_registry: "http://x" } }, "env.npm_config_registry"],
              [{ env: { _JAVA_OPTIONS: "x" } }, "env._JAVA_OPTIONS"],
              [{ args: ["a\u0000b"] }, "args.0"],
              [{ args: ["\uD800"] }, "args.0"],
              [{ env: { X: "\u0000" } }, "env.X"],
              [{ auth: { scheme: "bearer", secret: "s" } }, "auth.scheme"],
              [{ command: undefined }, "command"]
            ]
            for (const [change, field] of cases) {
              const refused = yield* expectFailure(
                allowed.create({ ...stdio, name: unique("bad"), ...change } as never),
                "InvalidInput"
              )
              assert.isTrue(refused.field.startsWith(field), `${JSON.stringify(change)}: ${refused.message}`)
              if (field.startsWith("env.") && field !== "env.X") assert.include(refused.message, "upper-case")
            }
            // the names API keys and settings have are fine, and so are a few harmless interpreter settings
            const keys = yield* allowed.create({
              ...stdio,
              name: unique("keys"),
              env: { GITHUB_TOKEN: "t", API_KEY: "k", LOG_LEVEL: "debug", PYTHONUNBUFFERED: "1", GITHUB_TOOLSETS: "x" }
            })
            yield* allowed.delete(keys.id)
            yield* allowed.delete(created.id)
          }).pipe(Effect.provide(Connections.layer), allowing)
          yield* connections.delete(http.id)
        }))

      it.effect("connections: a stale version is a VersionConflict and changes nothing", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const name = unique("api")
          const created = yield* connections.create(restInput(name))
          yield* connections.update(created.id, 1, restInput(name, { description: "first" }))
          const conflict = yield* expectFailure(
            connections.update(created.id, 1, restInput(name, { description: "second" })),
            "VersionConflict"
          )
          assert.strictEqual(conflict.expected, 1)
          assert.strictEqual(conflict.actual, 2)
          const stored = yield* connections.get(created.id)
          assert.strictEqual(stored.description, "first")
          assert.strictEqual(stored.version, 2)
        }))

      it.effect("connections: every validation error, and nothing written", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const before = yield* count("connections")
          const name = unique("api")
          yield* connections.create(restInput(name))
          const after = before + 1

          const duplicate = yield* expectFailure(connections.create(restInput(name)), "DuplicateName")
          assert.strictEqual(duplicate.name, name)
          assert.include(duplicate.message, "already exists")

          const ftp = yield* expectFailure(
            connections.create(restInput(unique("api"), { baseUrl: "ftp://files.example.com" })),
            "InvalidUrl"
          )
          assert.strictEqual(ftp.field, "baseUrl")
          assert.include(ftp.message, "http:// or https://")
          yield* expectFailure(connections.create(restInput(unique("api"), { baseUrl: "not a url" })), "InvalidUrl")
          yield* expectFailure(
            connections.create(restInput(unique("api"), { baseUrl: "https://user:pw@example.com" })),
            "InvalidUrl"
          )
          yield* expectFailure(
            connections.create({ kind: "mcp", name: unique("up"), url: "ws://mcp.example.com" }),
            "InvalidUrl"
          )

          // an egress allow-list entry that is not an address, CIDR, host or suffix (with an optional port)
          for (const [entry, problem] of [["http://127.0.0.1:9103", "a URL"], ["127.0.0.1:0", "port"], ["*", ""]]) {
            const egress = yield* expectFailure(
              connections.create(restInput(unique("api"), { egressAllowList: ["10.0.0.0/8", entry!] })),
              "InvalidInput"
            )
            assert.strictEqual(egress.field, "egressAllowList.1")
            assert.include(egress.message, JSON.stringify(entry))
            assert.include(egress.message, problem!)
            assert.include(egress.message, "billing.internal:8443", "the accepted forms are named")
          }

          const badName = yield* expectFailure(connections.create(restInput("has space")), "InvalidInput")
          assert.strictEqual(badName.field, "name")
          // the value given is named...
          assert.include(badName.message, "(got \"has space\")")
          // ...unless the field holds a credential's name: what was pasted there may be the credential
          const pasted = yield* expectFailure(
            connections.create(restInput(unique("api"), { auth: { scheme: "bearer", secret: "sk live 12345" } })),
            "InvalidInput"
          )
          assert.strictEqual(pasted.field, "auth.secret")
          assert.notInclude(pasted.message, "sk live")
          const missing = yield* expectFailure(
            connections.create({ kind: "rest", name: unique("api") } as any),
            "InvalidInput"
          )
          assert.strictEqual(missing.field, "baseUrl")
          const timeout = yield* expectFailure(
            connections.create(restInput(unique("api"), { timeoutMs: 0 })),
            "InvalidInput"
          )
          assert.strictEqual(timeout.field, "timeoutMs")
          const badHeader = yield* expectFailure(
            connections.create(
              restInput(unique("api"), { auth: { scheme: "header", header: "bad header", secret: "s" } })
            ),
            "InvalidInput"
          )
          assert.strictEqual(badHeader.field, "auth.header")
          yield* expectFailure(connections.create({ kind: "soap", name: unique("x") } as any), "InvalidInput")

          const existing = Option.getOrThrow(yield* connections.findByName(name))
          const kindChange = yield* expectFailure(
            connections.update(existing.id, 1, { kind: "mcp", name, url: "https://mcp.example.com" }),
            "InvalidInput"
          )
          assert.strictEqual(kindChange.field, "kind")
          yield* expectFailure(connections.update(crypto.randomUUID(), 1, restInput(unique("api"))), "NotFound")
          const badVersion = yield* expectFailure(connections.update(existing.id, 0, restInput(name)), "InvalidInput")
          assert.strictEqual(badVersion.field, "version")
          yield* expectFailure(connections.get("not-a-uuid"), "NotFound")

          assert.strictEqual(yield* count("connections"), after)
          assert.strictEqual((yield* connections.get(existing.id)).version, 1)
        }))

      // --- endpoints -----------------------------------------------------------
      it.effect("endpoints: create, read, update with version, delete", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const endpoints = yield* Endpoints
          const connection = yield* connections.create(restInput(unique("api")))
          const name = unique("get_user")
          const created = yield* endpoints.create(endpointInput(connection.id, name))
          assert.strictEqual(created.method, "GET")
          assert.strictEqual(created.idempotent, true)
          assert.deepStrictEqual(created.arguments, { id: "path", verbose: "query" })
          assert.strictEqual(created.inputSchema.type, "object")
          assert.isUndefined(created.outputSchema)

          const post = yield* endpoints.create(endpointInput(connection.id, unique("create_user"), { method: "POST" }))
          assert.strictEqual(post.idempotent, false)

          assert.deepStrictEqual(yield* endpoints.get(created.id), created)
          assert.isTrue(Option.isSome(yield* endpoints.findByName(name)))
          const mine = yield* endpoints.list({ connectionId: connection.id })
          assert.deepStrictEqual(mine.map((e) => e.id).sort(), [created.id, post.id].sort())

          const updated = yield* endpoints.update(
            created.id,
            1,
            endpointInput(connection.id, name, { description: "Fetch a user", idempotent: false })
          )
          assert.strictEqual(updated.version, 2)
          assert.strictEqual(updated.description, "Fetch a user")
          assert.strictEqual(updated.idempotent, false)
          // an output schema is kept as given, and dropped with null
          const outputSchema = { type: "object", properties: { id: { type: "string" } }, required: ["id"] }
          const typed = yield* endpoints.update(created.id, 2, endpointInput(connection.id, name, { outputSchema }))
          assert.deepStrictEqual(typed.outputSchema, outputSchema)
          assert.deepStrictEqual((yield* endpoints.get(created.id)).outputSchema, outputSchema)
          const untyped = yield* endpoints.update(
            created.id,
            3,
            endpointInput(connection.id, name, { outputSchema: null })
          )
          assert.isUndefined(untyped.outputSchema)
          yield* expectFailure(endpoints.update(created.id, 1, endpointInput(connection.id, name)), "VersionConflict")
          assert.strictEqual(untyped.version, 4)

          yield* endpoints.delete(post.id)
          yield* expectFailure(endpoints.get(post.id), "NotFound")

          // Deleting the connection deletes its endpoints.
          yield* connections.delete(connection.id)
          yield* expectFailure(endpoints.get(created.id), "NotFound")
        }))

      it.effect("endpoints: every validation error, and nothing written", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const endpoints = yield* Endpoints
          const rest = yield* connections.create(restInput(unique("api")))
          const mcp = yield* connections.create({ kind: "mcp", name: unique("up"), url: "https://mcp.example.com" })
          const existing = yield* endpoints.create(endpointInput(rest.id, unique("existing")))
          const before = yield* count("endpoints")

          const badName = yield* expectFailure(endpoints.create(endpointInput(rest.id, "bad name!")), "InvalidToolName")
          assert.strictEqual(badName.value, "bad name!")
          yield* expectFailure(endpoints.create(endpointInput(rest.id, "x".repeat(65))), "InvalidToolName")

          const notObject = yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), { inputSchema: { type: "string" } })),
            "InvalidInputSchema"
          )
          assert.include(notObject.message, `"type" is "string"`)
          const broken = yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), {
              arguments: { id: "path" },
              inputSchema: { type: "object", properties: { id: { type: "nonsense" } } }
            })),
            "InvalidInputSchema"
          )
          assert.include(broken.reason, "type")
          const output = yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), { outputSchema: { type: "array" } })),
            "InvalidInputSchema"
          )
          assert.strictEqual(output.field, "outputSchema")
          assert.include(output.message, "invalid outputSchema")
          yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), {
              arguments: { id: "path" },
              inputSchema: { type: "object", properties: { id: { $ref: "#/$defs/missing" } } }
            })),
            "InvalidInputSchema"
          )

          const undeclared = yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), { pathTemplate: "/users/{id}/posts/{postId}" })),
            "UndeclaredPathParam"
          )
          assert.strictEqual(undeclared.param, "postId")
          const unused = yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), { pathTemplate: "/users" })),
            "InvalidInput"
          )
          assert.strictEqual(unused.field, "arguments.id")
          const notInSchema = yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), { arguments: { id: "path", extra: "query" } })),
            "InvalidInput"
          )
          assert.strictEqual(notInSchema.field, "arguments.extra")
          yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), { pathTemplate: "users/{id}" })),
            "InvalidInput"
          )
          yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), { pathTemplate: "/users/{id" })),
            "InvalidInput"
          )
          const method = yield* expectFailure(
            endpoints.create(endpointInput(rest.id, unique("t"), { method: "FETCH" })),
            "InvalidInput"
          )
          assert.strictEqual(method.field, "method")

          const unknown = yield* expectFailure(
            endpoints.create(endpointInput(crypto.randomUUID(), unique("t"))),
            "UnknownReference"
          )
          assert.strictEqual(unknown.target, "connection")
          const onMcp = yield* expectFailure(endpoints.create(endpointInput(mcp.id, unique("t"))), "InvalidInput")
          assert.strictEqual(onMcp.field, "connectionId")
          const duplicate = yield* expectFailure(
            endpoints.create(endpointInput(rest.id, existing.name)),
            "DuplicateName"
          )
          assert.strictEqual(duplicate.name, existing.name)

          assert.strictEqual(yield* count("endpoints"), before)
        }))

      it.effect("endpoints: createMany is all or nothing", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const endpoints = yield* Endpoints
          const rest = yield* connections.create(restInput(unique("api")))
          const taken = yield* endpoints.create(endpointInput(rest.id, unique("taken")))
          const before = yield* count("endpoints")
          const names = [unique("a"), unique("b"), unique("c")]

          const invalid = yield* expectFailure(
            endpoints.createMany([
              endpointInput(rest.id, names[0]!),
              endpointInput(rest.id, names[1]!, { pathTemplate: "/x/{nope}" })
            ]),
            "UndeclaredPathParam"
          )
          assert.strictEqual(invalid.tool, names[1])
          yield* expectFailure(
            endpoints.createMany([endpointInput(rest.id, names[0]!), endpointInput(rest.id, taken.name)]),
            "DuplicateName"
          )
          yield* expectFailure(
            endpoints.createMany([endpointInput(rest.id, names[0]!), endpointInput(rest.id, names[0]!)]),
            "DuplicateName"
          )
          const badItem = yield* expectFailure(
            endpoints.createMany([endpointInput(rest.id, names[0]!), {
              ...endpointInput(rest.id, names[1]!),
              method: 1 as any
            }]),
            "InvalidInput"
          )
          assert.strictEqual(badItem.entity, "endpoint[1]")
          assert.strictEqual(yield* count("endpoints"), before)

          const created = yield* endpoints.createMany(names.map((name) => endpointInput(rest.id, name)))
          assert.deepStrictEqual(created.map((e) => e.name), names)
          assert.strictEqual(yield* count("endpoints"), before + 3)
        }))

      // --- virtual servers -----------------------------------------------------
      it.effect("virtual servers: members are endpoints and upstream tools; writes are transactional", () =>
        Effect.gen(function*() {
          const connections = yield* Connections
          const endpoints = yield* Endpoints
          const servers = yield* VirtualServers
          const rest = yield* connections.create(restInput(unique("api")))
          const upstream = yield* connections.create({
            kind: "mcp",
            name: unique("up"),
            url: "https://mcp.example.com"
          })
          const one = yield* endpoints.create(endpointInput(rest.id, unique("one")))
          const two = yield* endpoints.create(endpointInput(rest.id, unique("two")))
          const name = unique("vs")

          const tools = [one.name, `${upstream.name}/search`, `${upstream.name}/*`]
          const created = yield* servers.create({ name, description: "subset", tools })
          assert.deepStrictEqual(created.tools, tools)
          assert.strictEqual(created.version, 1)
          assert.deepStrictEqual(yield* servers.get(created.id), created)

          const before = yield* count("virtual_servers")
          const beforeMembers = yield* count("virtual_server_members")
          const unknown = yield* expectFailure(
            servers.create({ name: unique("vs"), tools: [one.name, "no_such_tool"] }),
            "UnknownReference"
          )
          assert.strictEqual(unknown.value, "no_such_tool")
          assert.strictEqual(unknown.target, "tool")
          yield* expectFailure(servers.create({ name: unique("vs"), tools: [`${rest.name}/x`] }), "UnknownReference")
          yield* expectFailure(servers.create({ name: unique("vs"), tools: [one.name, one.name] }), "InvalidInput")
          yield* expectFailure(servers.create({ name, tools: [] }), "DuplicateName")
          yield* expectFailure(servers.create({ name: "bad/name", tools: [] }), "InvalidInput")
          assert.strictEqual(yield* count("virtual_servers"), before)
          assert.strictEqual(yield* count("virtual_server_members"), beforeMembers)

          // A failed update leaves the members as they were.
          yield* expectFailure(
            servers.update(created.id, 1, { name, tools: [two.name, "missing"] }),
            "UnknownReference"
          )
          assert.deepStrictEqual((yield* servers.get(created.id)).tools, tools)

          assert.isFalse(created.bareNames)
          const updated = yield* servers.update(created.id, 1, { name, tools: [two.name, one.name], bareNames: true })
          assert.deepStrictEqual(updated.tools, [two.name, one.name])
          assert.strictEqual(updated.version, 2)
          assert.isTrue((yield* servers.get(created.id)).bareNames)
          yield* expectFailure(servers.update(created.id, 1, { name, tools: [] }), "VersionConflict")

          // Renaming an endpoint renames the member; deleting it removes the member.
          const renamed = unique("renamed")
          yield* endpoints.update(one.id, 1, endpointInput(rest.id, renamed))
          assert.deepStrictEqual((yield* servers.get(created.id)).tools, [two.name, renamed])
          yield* endpoints.delete(two.id)
          assert.deepStrictEqual((yield* servers.get(created.id)).tools, [renamed])

          assert.isTrue(Option.isSome(yield* servers.findByName(name)))
          assert.isTrue((yield* servers.list).some((s) => s.id === created.id))
          yield* servers.delete(created.id)
          yield* expectFailure(servers.get(created.id), "NotFound")
        }))

      // --- client tokens -------------------------------------------------------
      it.effect("client tokens: shown once, stored as a hash, verified, revoked", () =>
        Effect.gen(function*() {
          const tokens = yield* ClientTokens
          const sql = yield* SqlClient.SqlClient
          const name = unique("laptop")
          const { plaintext, token } = yield* tokens.create({ name, allowedTools: ["get_user", "up/*"] })
          const secret = Redacted.value(plaintext)
          assert.match(secret, /^jns_[A-Za-z0-9_-]{43}$/)
          assert.strictEqual(String(plaintext), "<redacted>")
          assert.isTrue(secret.startsWith(token.prefix))
          assert.deepStrictEqual(token.allowedTools, ["get_user", "up/*"])
          assert.isNull(token.allowedVirtualServers)

          const stored = yield* sql<
            { token_hash: Uint8Array }
          >`SELECT token_hash FROM client_tokens WHERE id = ${token.id}`
          assert.deepStrictEqual(new Uint8Array(stored[0]!.token_hash), SecretBox.hashToken(secret))
          const listed = (yield* tokens.list).find((t) => t.id === token.id)!
          assert.notProperty(listed, "tokenHash")
          assert.notProperty(listed, "token_hash")
          assert.notInclude(JSON.stringify(listed), secret)

          const verified = yield* tokens.verify(secret)
          assert.strictEqual(Option.getOrThrow(verified).id, token.id)
          assert.isNotNull((yield* tokens.get(token.id)).lastUsedAt)
          assert.isTrue(Option.isNone(yield* tokens.verify(secret.slice(0, -1) + (secret.endsWith("A") ? "B" : "A"))))
          assert.isTrue(Option.isNone(yield* tokens.verify("jns_short")))
          assert.isTrue(Option.isNone(yield* tokens.verify("Bearer whatever")))

          const revoked = yield* tokens.revoke(token.id)
          assert.isNotNull(revoked.revokedAt)
          assert.isTrue(Option.isNone(yield* tokens.verify(secret)))
          yield* tokens.delete(token.id)
          yield* expectFailure(tokens.get(token.id), "NotFound")
          yield* expectFailure(tokens.revoke(token.id), "NotFound")
        }))

      it.effect("client tokens: validation errors, and an expired token is refused", () =>
        Effect.gen(function*() {
          const tokens = yield* ClientTokens
          const servers = yield* VirtualServers
          const before = yield* count("client_tokens")
          const unknown = yield* expectFailure(
            tokens.create({ name: unique("t"), allowedVirtualServers: ["nope"] }),
            "UnknownReference"
          )
          assert.strictEqual(unknown.target, "virtual_server")
          yield* expectFailure(tokens.create({ name: unique("t"), allowedTools: ["bad tool"] }), "InvalidToolName")
          const past = yield* expectFailure(
            tokens.create({ name: unique("t"), expiresAt: new Date(Date.now() - 1_000) }),
            "InvalidInput"
          )
          assert.strictEqual(past.field, "expiresAt")
          yield* expectFailure(tokens.create({ name: "" }), "InvalidInput")
          assert.strictEqual(yield* count("client_tokens"), before)

          const name = unique("t")
          const vs = yield* servers.create({ name: unique("vs"), tools: [] })
          yield* tokens.create({ name, allowedVirtualServers: [vs.name] })
          yield* expectFailure(tokens.create({ name }), "DuplicateName")

          // Expiry is checked against the Clock.
          const expiring = yield* tokens.create({ name: unique("t"), expiresAt: new Date(Date.now() + 60_000) })
          const secret = Redacted.value(expiring.plaintext)
          assert.isTrue(Option.isSome(yield* tokens.verify(secret)))
          const later = Effect.gen(function*() {
            yield* TestClock.setTime(Date.now() + 61_000)
            return yield* tokens.verify(secret)
          }).pipe(Effect.provide(TestClock.layer()))
          assert.isTrue(Option.isNone(yield* later))
        }))

      it.effect("client tokens: a given value, update in place, hasValue, an expired expiry when allowed", () =>
        Effect.gen(function*() {
          const tokens = yield* ClientTokens
          const feed = yield* ChangeFeed
          const value = `jns_${"a".repeat(43)}`
          const other = `jns_${"b".repeat(43)}`
          const name = unique("given")
          const { plaintext, token } = yield* tokens.create({ name }, { value: Redacted.make(value) })
          assert.strictEqual(Redacted.value(plaintext), value)
          assert.strictEqual(token.prefix, value.slice(0, 12))
          assert.strictEqual(Option.getOrThrow(yield* tokens.verify(value)).id, token.id)
          assert.isTrue(yield* tokens.hasValue(token.id, Redacted.make(value)))
          assert.isFalse(yield* tokens.hasValue(token.id, Redacted.make(other)))
          assert.isFalse(yield* tokens.hasValue("not-an-id", Redacted.make(value)))

          // a value that is not shaped like a token, or that another token has: refused without echoing it
          const before = yield* count("client_tokens")
          for (const bad of ["jns_short", `jna_${"a".repeat(43)}`, `jns_${"a".repeat(42)}!`]) {
            const error = yield* expectFailure(
              tokens.create({ name: unique("bad") }, { value: Redacted.make(bad) }),
              "InvalidInput"
            )
            assert.strictEqual(error.field, "value")
            assert.notInclude(error.message, bad)
          }
          const taken = yield* expectFailure(
            tokens.create({ name: unique("dup") }, { value: Redacted.make(value) }),
            "InvalidInput"
          )
          assert.notInclude(taken.message, value)
          assert.strictEqual(yield* count("client_tokens"), before)

          // update: scopes and expiry replaced, the value kept; with a value, the value replaced; signalled
          const signals = yield* feed.changes.pipe(
            Stream.filter((c) => c.kind === "client_token"),
            Stream.take(2),
            Stream.runCollect,
            Effect.forkChild
          )
          yield* Effect.yieldNow
          const updated = yield* tokens.update(token.id, { name, allowedTools: ["get_user"] })
          assert.deepStrictEqual(updated.allowedTools, ["get_user"])
          assert.strictEqual(Option.getOrThrow(yield* tokens.verify(value)).id, token.id)
          yield* tokens.update(token.id, { name, allowedTools: ["get_user"] }, { value: Redacted.make(other) })
          assert.isTrue(Option.isNone(yield* tokens.verify(value)))
          assert.strictEqual(Option.getOrThrow(yield* tokens.verify(other)).id, token.id)
          assert.strictEqual((yield* tokens.get(token.id)).prefix, other.slice(0, 12))
          assert.deepStrictEqual(
            Array.from(yield* Fiber.join(signals), (c) => c.ids),
            [[token.id], [token.id]]
          )
          yield* expectFailure(tokens.update(crypto.randomUUID(), { name: unique("x") }), "NotFound")
          yield* expectFailure(tokens.update(token.id, { name, allowedVirtualServers: ["nope"] }), "UnknownReference")

          // an expiry in the past only when asked for (a declared token that has since expired)
          const past = new Date(Date.now() - 60_000)
          yield* expectFailure(tokens.update(token.id, { name, expiresAt: past }), "InvalidInput")
          const expired = yield* tokens.update(token.id, { name, expiresAt: past }, { allowExpired: true })
          assert.strictEqual(expired.expiresAt?.getTime(), past.getTime())
          assert.isTrue(Option.isNone(yield* tokens.verify(other)))
          const declared = yield* tokens.create({ name: unique("old"), expiresAt: past }, { allowExpired: true })
          assert.isFalse(declared.token.isActiveAt(new Date()))
        }))

      // --- admin tokens --------------------------------------------------------
      it.effect("admin tokens: create, list without hashes, verify, revoke, count", () =>
        Effect.gen(function*() {
          const admins = yield* AdminTokens
          const before = yield* admins.count
          const { plaintext, token } = yield* admins.create({ name: "first admin" })
          const secret = Redacted.value(plaintext)
          assert.match(secret, /^jna_[A-Za-z0-9_-]{43}$/)
          assert.strictEqual(yield* admins.count, before + 1)
          assert.isTrue((yield* admins.list).some((t) => t.id === token.id && !JSON.stringify(t).includes(secret)))
          assert.strictEqual(Option.getOrThrow(yield* admins.verify(secret)).id, token.id)
          // A client token is not an admin token, and vice versa.
          const client = yield* (yield* ClientTokens).create({ name: unique("c") })
          assert.isTrue(Option.isNone(yield* admins.verify(Redacted.value(client.plaintext))))
          assert.isTrue(Option.isNone(yield* (yield* ClientTokens).verify(secret)))
          yield* expectFailure(admins.create({ name: "" }), "InvalidInput")

          yield* admins.revoke(token.id)
          assert.isTrue(Option.isNone(yield* admins.verify(plaintext)))
          assert.strictEqual(yield* admins.count, before)
          yield* expectFailure(admins.revoke(crypto.randomUUID()), "NotFound")
        }))

      it.effect("admin tokens: createInitial makes a token only while none is active", () =>
        Effect.gen(function*() {
          const admins = yield* AdminTokens
          // revoke what earlier tests left active, so this starts from "no active admin token"
          for (const token of yield* admins.list) if (token.revokedAt === null) yield* admins.revoke(token.id)
          const created = yield* admins.createInitial("initial admin")
          assert.isTrue(Option.isSome(created))
          const { plaintext, token } = Option.getOrThrow(created)
          assert.strictEqual(token.name, "initial admin")
          assert.strictEqual(Option.getOrThrow(yield* admins.verify(plaintext)).id, token.id)
          assert.isTrue(Option.isNone(yield* admins.createInitial("initial admin")))
          assert.strictEqual(yield* admins.count, 1)
          yield* expectFailure(admins.createInitial(""), "InvalidInput")
        }))

      // --- secrets -------------------------------------------------------------
      it.effect("secrets: round trip, write-only listing, replace, delete", () =>
        Effect.gen(function*() {
          const secrets = yield* Secrets
          const sql = yield* SqlClient.SqlClient
          const name = unique("github-token")
          const info = yield* secrets.set(name, Redacted.make("ghp_example_value"))
          assert.strictEqual(info.version, 1)
          assert.strictEqual(Redacted.value(yield* secrets.reveal(name)), "ghp_example_value")

          const listed = (yield* secrets.list).find((s) => s.name === name)!
          assert.notInclude(JSON.stringify(listed), "ghp_example_value")
          assert.strictEqual(listed.keyId, (yield* (yield* MasterKey).current).id)
          const raw = yield* sql<{ ciphertext: Uint8Array }>`SELECT ciphertext FROM secrets WHERE name = ${name}`
          assert.notInclude(Buffer.from(raw[0]!.ciphertext).toString("utf8"), "ghp_example_value")

          const replaced = yield* secrets.set(name, Redacted.make("second"))
          assert.strictEqual(replaced.version, 2)
          assert.strictEqual(Redacted.value(yield* secrets.reveal(name)), "second")

          yield* expectFailure(secrets.set("bad name", Redacted.make("x")), "InvalidInput")
          yield* expectFailure(secrets.set(unique("s"), Redacted.make("")), "InvalidInput")
          yield* secrets.delete(name)
          yield* expectFailure(secrets.reveal(name), "SecretNotFound")
          yield* expectFailure(secrets.delete(name), "SecretNotFound")
        }))

      it.effect("secrets: an unknown key or tampered ciphertext fails clearly, never with the value", () =>
        Effect.gen(function*() {
          const secrets = yield* Secrets
          const sql = yield* SqlClient.SqlClient
          const name = unique("s")
          yield* secrets.set(name, Redacted.make("the-plaintext"))
          const keyId = (yield* (yield* MasterKey).current).id

          // The same database read with another master key.
          const otherKey = SecretBox.generateKey()
          const withOtherKey = Layer.fresh(Secrets.layer).pipe(Layer.provide(MasterKey.layerKeys([otherKey])))
          const error = yield* expectFailure(
            Secrets.use((other) => other.reveal(name)).pipe(Effect.provide(withOtherKey)),
            "SecretDecryptionFailed"
          )
          assert.strictEqual(error.name, name)
          assert.strictEqual(error.keyId, keyId)
          assert.include(error.message, keyId)
          assert.notInclude(error.message, "the-plaintext")

          // A ciphertext moved to another name does not open (the name is authenticated).
          const other = unique("s")
          yield* secrets.set(other, Redacted.make("other"))
          yield* sql`UPDATE secrets SET ciphertext = (SELECT ciphertext FROM secrets WHERE name = ${name}),
            nonce = (SELECT nonce FROM secrets WHERE name = ${name}) WHERE name = ${other}`
          const tampered = yield* expectFailure(secrets.reveal(other), "SecretDecryptionFailed")
          assert.include(tampered.reason, "authentication failed")
          yield* secrets.delete(other)
        }))

      it.effect("secrets: rotation re-encrypts every secret under the new key, in one transaction", () =>
        Effect.gen(function*() {
          const secrets = yield* Secrets
          const keys = yield* MasterKey
          const sql = yield* SqlClient.SqlClient
          const names = [unique("r"), unique("r")]
          for (const name of names) yield* secrets.set(name, Redacted.make(`value of ${name}`))
          const oldKey = yield* keys.current

          const newKey = SecretBox.generateKey()
          const result = yield* secrets.rotate(newKey)
          assert.strictEqual(result.keyId, SecretBox.keyIdOf(Redacted.value(newKey)))
          assert.isAtLeast(result.reencrypted, 2)
          assert.strictEqual((yield* keys.current).id, result.keyId)
          const ids = yield* sql<{ key_id: string }>`SELECT DISTINCT key_id FROM secrets`
          assert.deepStrictEqual(ids.map((r) => r.key_id), [result.keyId])
          for (const name of names) assert.strictEqual(Redacted.value(yield* secrets.reveal(name)), `value of ${name}`)

          // Only the new key opens them now.
          const oldOnly = Layer.fresh(Secrets.layer).pipe(Layer.provide(MasterKey.layerKeys([oldKey.key])))
          yield* expectFailure(
            Secrets.use((s) => s.reveal(names[0]!)).pipe(Effect.provide(oldOnly)),
            "SecretDecryptionFailed"
          )

          // A secret that cannot be opened stops the rotation, and nothing is re-encrypted.
          const stranger = unique("stranger")
          const strangerKey = SecretBox.keyMaterial(SecretBox.generateKey())
          const sealed = SecretBox.seal(strangerKey, stranger, Redacted.make("x"))
          yield* sql`INSERT INTO secrets (id, name, ciphertext, nonce, key_id)
            VALUES (${crypto.randomUUID()}, ${stranger}, ${sealed.ciphertext}, ${sealed.nonce}, ${sealed.keyId})`
          const failed = yield* expectFailure(secrets.rotate(SecretBox.generateKey()), "SecretDecryptionFailed")
          assert.strictEqual(failed.name, stranger)
          const after = yield* sql<{ key_id: string }>`SELECT DISTINCT key_id FROM secrets WHERE name <> ${stranger}`
          assert.deepStrictEqual(after.map((r) => r.key_id), [result.keyId])
          yield* sql`DELETE FROM secrets WHERE name = ${stranger}`
        }))

      // --- caches and change signals ------------------------------------------
      it.effect("config cache: a local write purges it at once", () =>
        Effect.gen(function*() {
          const cache = yield* ConfigCache
          const connections = yield* Connections
          const endpoints = yield* Endpoints
          const first = yield* cache.snapshot
          assert.strictEqual(yield* cache.snapshot, first) // cached
          const connection = yield* connections.create(restInput(unique("api")))
          const second = yield* cache.snapshot
          assert.notStrictEqual(second, first)
          assert.isTrue(second.connectionById.has(connection.id))
          const endpoint = yield* endpoints.create(endpointInput(connection.id, unique("e")))
          assert.isTrue((yield* cache.snapshot).endpointByName.has(endpoint.name))
          yield* connections.delete(connection.id)
          const third = yield* cache.snapshot
          assert.isFalse(third.connectionById.has(connection.id))
          assert.isFalse(third.endpointByName.has(endpoint.name))
        }))

      it.effect("config cache: an unsignalled change shows only after the TTL (TestClock)", () =>
        Effect.gen(function*() {
          const cache = yield* ConfigCache
          const connections = yield* Connections
          const sql = yield* SqlClient.SqlClient
          const connection = yield* connections.create(restInput(unique("api")))
          yield* cache.snapshot
          // A write that bypasses the repositories sends no signal: only the 5 s TTL refreshes the snapshot.
          yield* sql`UPDATE connections SET description = 'changed behind the back' WHERE id = ${connection.id}`
          const stale = yield* cache.snapshot
          assert.strictEqual(stale.connectionById.get(connection.id)!.description, "")
          yield* TestClock.adjust("4 seconds")
          assert.strictEqual((yield* cache.snapshot).connectionById.get(connection.id)!.description, "")
          yield* TestClock.adjust("2 seconds")
          assert.strictEqual(
            (yield* cache.snapshot).connectionById.get(connection.id)!.description,
            "changed behind the back"
          )
        }).pipe(Effect.provide(TestClock.layer())))

      it.effect("token cache: revocation purges it at once; TTL bounds an unsignalled change", () =>
        Effect.gen(function*() {
          const tokens = yield* ClientTokens
          const cache = yield* TokenCache
          const sql = yield* SqlClient.SqlClient
          const { plaintext, token } = yield* tokens.create({ name: unique("t") })
          assert.isTrue(Option.isSome(yield* cache.verify(plaintext)))
          yield* tokens.revoke(token.id)
          assert.isTrue(Option.isNone(yield* cache.verify(plaintext)))

          const second = yield* tokens.create({ name: unique("t") })
          assert.isTrue(Option.isSome(yield* cache.verify(second.plaintext)))
          yield* sql`UPDATE client_tokens SET revoked_at = now() WHERE id = ${second.token.id}`
          assert.isTrue(Option.isSome(yield* cache.verify(second.plaintext)), "served from cache until the TTL")
          yield* TestClock.adjust("6 seconds")
          assert.isTrue(Option.isNone(yield* cache.verify(second.plaintext)))
        }).pipe(Effect.provide(TestClock.layer())))

      it.effect("secret cache: a write purges it at once; TTL is 30 s", () =>
        Effect.gen(function*() {
          const secrets = yield* Secrets
          const cache = yield* SecretCache
          const sql = yield* SqlClient.SqlClient
          const name = unique("s")
          yield* secrets.set(name, Redacted.make("one"))
          assert.strictEqual(Redacted.value(yield* cache.reveal(name)), "one")
          yield* secrets.set(name, Redacted.make("two"))
          assert.strictEqual(Redacted.value(yield* cache.reveal(name)), "two")
          yield* secrets.delete(name)
          yield* expectFailure(cache.reveal(name), "SecretNotFound")

          const other = unique("s")
          yield* secrets.set(other, Redacted.make("kept"))
          assert.strictEqual(Redacted.value(yield* cache.reveal(other)), "kept")
          yield* sql`DELETE FROM secrets WHERE name = ${other}`
          yield* TestClock.adjust("29 seconds")
          assert.strictEqual(Redacted.value(yield* cache.reveal(other)), "kept")
          yield* TestClock.adjust("2 seconds")
          yield* expectFailure(cache.reveal(other), "SecretNotFound")
        }).pipe(Effect.provide(TestClock.layer())))

      it.effect("change feed: writes appear on `changes`; rolled-back writes do not", () =>
        Effect.gen(function*() {
          const feed = yield* ChangeFeed
          const connections = yield* Connections
          const sql = yield* SqlClient.SqlClient
          const fiber = yield* feed.changes.pipe(Stream.take(2), Stream.runCollect, Effect.forkChild)
          yield* Effect.sleep("50 millis")
          // A publish inside a transaction that rolls back is never delivered.
          yield* sql.withTransaction(
            Effect.andThen(feed.publish({ kind: "secret", ids: ["rolled-back"] }), Effect.fail("rollback"))
          ).pipe(Effect.ignore)
          const a = yield* connections.create(restInput(unique("api")))
          yield* connections.delete(a.id)
          const changes = yield* Fiber.join(fiber)
          assert.deepStrictEqual(changes, [{ kind: "connection", ids: [a.id] }, { kind: "connection", ids: [a.id] }])
        }))

      // --- event log -----------------------------------------------------------
      it.effect("event log: append, flush, committed stream, replay", () =>
        Effect.gen(function*() {
          const log = yield* EventLog
          const start = yield* log.latestId
          const fiber = yield* log.committed.pipe(Stream.take(3), Stream.runCollect, Effect.forkChild)
          yield* Effect.sleep("50 millis")
          yield* log.append({ topic: "tool.call", about: ["tool:get_user"], data: { ok: true, n: 1 } })
          yield* log.append({ topic: "connection.changed", about: ["connection:a"] })
          yield* log.append({ topic: "tool.call", data: [1, "two"] })
          yield* log.flush
          const streamed = yield* Fiber.join(fiber).pipe(Effect.timeout("3 seconds"))
          assert.deepStrictEqual(streamed.map((e) => e.topic), ["tool.call", "connection.changed", "tool.call"])
          assert.deepStrictEqual(streamed[0]!.data, { ok: true, n: 1 })
          assert.isNull(streamed[1]!.data)
          assert.deepStrictEqual(streamed[1]!.about, ["connection:a"])
          assert.deepStrictEqual(streamed[2]!.about, [])
          assert.isTrue(
            streamed[0]!.id > start && streamed[1]!.id > streamed[0]!.id && streamed[2]!.id > streamed[1]!.id
          )

          const replay = yield* log.after(start, 10)
          assert.deepStrictEqual(replay, streamed)
          assert.deepStrictEqual(yield* log.after(streamed[0]!.id, 1), [streamed[1]!])
          assert.strictEqual(yield* log.latestId, streamed[2]!.id)
        }))
    })
  })
}
