/**
 * `JANUS_CONFIG_FILE` on one gateway (in-memory PGlite), the document in a
 * directory laid out like a ConfigMap volume: applied before the gateway
 * serves; a ConfigMap update (a symlink swap) picked up and applied; a
 * document that does not validate keeps the running configuration and says
 * why in the log, in `/readyz` and in `janus_config_file_valid`; corrected,
 * it applies again.
 */
import { assert, layer } from "@effect/vitest"
import { ClientTokens, Connections, Endpoints } from "@janus/storage"
import { ConfigProvider, Effect, Layer, Logger, Option } from "effect"
import { HttpServer } from "effect/http"
import { ConfigFile, type ConfigFileStatus } from "../../src/configuration/ConfigFile.ts"
import * as GatewayTesting from "../../src/testing.ts"
import { configMapVolume } from "./configmap.ts"
import { petsDocument } from "./documents.ts"

const DEPLOY_TOKEN = `jns_${"k".repeat(43)}`

const document = (baseUrl: string, endpoints = "") =>
  petsDocument(baseUrl, {
    more: `${endpoints}clientTokens:
  - name: deploy
    allowedTools: [list_pets]
    valueFrom: { env: DEPLOY_TOKEN }
`
  })

const volume = configMapVolume({ "janus.yaml": document("https://pets.example.com") })

const logs: Array<string> = []
const capture = Logger.make(({ message }) => {
  logs.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
})

const gateway = GatewayTesting.layer({
  config: { JANUS_CONFIG_FILE: Option.some(volume.path("janus.yaml")), JANUS_CONFIG_PRUNE: true }
}).pipe(
  Layer.provide(Logger.layer([capture], { mergeWithExisting: true })),
  Layer.provide(Layer.succeed(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ DEPLOY_TOKEN })))
)

const status = Effect.flatMap(ConfigFile.use((file) => file.status), (s) => Effect.succeed(Option.getOrThrow(s)))

/** Waits until the status satisfies `done` (a ConfigMap update is seen by the watch, or at the latest the poll). */
const until = (done: (s: ConfigFileStatus) => boolean) =>
  Effect.gen(function*() {
    const start = Date.now()
    while (true) {
      const current = yield* status
      if (done(current)) return current
      if (Date.now() - start > 30_000) return assert.fail(`not within 30 s: ${JSON.stringify(current)}`)
      yield* Effect.sleep("50 millis")
    }
  })

const get = (path: string) =>
  Effect.flatMap(
    HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(path, base))),
    (url) =>
      Effect.promise(async () => {
        const response = await fetch(url)
        return { status: response.status, text: await response.text() }
      })
  )

layer(gateway, { timeout: 120_000, excludeTestServices: true })("JANUS_CONFIG_FILE", (it) => {
  it.effect("applied before the gateway serves; a ConfigMap update is applied; a bad one is refused and said", () =>
    Effect.gen(function*() {
      // at start: applied, before any request could be served (the layer is built)
      const first = yield* status
      assert.strictEqual(first.state, "applied")
      assert.strictEqual(first.changes, 3)
      assert.strictEqual(first.path, volume.path("janus.yaml"))
      const token = Option.getOrThrow(yield* ClientTokens.use((t) => t.verify(DEPLOY_TOKEN)))
      assert.strictEqual(token.name, "deploy")
      const ready = yield* get("/readyz")
      assert.strictEqual(ready.status, 200)
      assert.deepStrictEqual(JSON.parse(ready.text).configFile, first)
      assert.match((yield* get("/metrics")).text, /^janus_config_file_valid 1$/m)

      // a ConfigMap update: a new version behind the `..data` symlink
      volume.update({
        "janus.yaml": document(
          "https://pets.example.org",
          "  - name: get_pet\n    connection: pets\n    method: GET\n    pathTemplate: /pets/{id}\n" +
            "    arguments: { id: path }\n    inputSchema: { type: object, properties: { id: { type: string } } }\n"
        )
      })
      const second = yield* until((s) => s.digest !== first.digest)
      assert.strictEqual(second.state, "applied", JSON.stringify(second))
      assert.strictEqual(second.changes, 2)
      const pets = Option.getOrThrow(yield* Connections.use((c) => c.findByName("pets")))
      assert.strictEqual(pets.kind === "rest" && pets.baseUrl, "https://pets.example.org")
      assert.isTrue(Option.isSome(yield* Endpoints.use((e) => e.findByName("get_pet"))))

      // a document that does not validate: nothing changes, and the log, /readyz and the metric say why
      volume.update({ "janus.yaml": document("ftp://pets.example.org").replace("inputSchema", "inputSchemaa") })
      const refused = yield* until((s) => s.state === "invalid")
      assert.isNull(refused.digest)
      assert.strictEqual(refused.appliedAt, second.appliedAt)
      assert.include(
        refused.problems.join("\n"),
        "janus.yaml: endpoints[0].inputSchemaa: expected one of the known fields"
      )
      const after = Option.getOrThrow(yield* Connections.use((c) => c.findByName("pets")))
      assert.strictEqual(after.version, pets.version, "the running configuration is kept")
      const readyz = yield* get("/readyz")
      assert.strictEqual(readyz.status, 200, "it keeps serving what it has")
      assert.strictEqual(JSON.parse(readyz.text).configFile.state, "invalid")
      assert.match((yield* get("/metrics")).text, /^janus_config_file_valid 0$/m)
      assert.match((yield* get("/metrics")).text, /^janus_config_file_applies_total\{outcome="invalid"\} 1$/m)
      assert.isTrue(
        logs.some((line) =>
          line.includes("JANUS_CONFIG_FILE does not validate (") && line.includes("endpoints[0].inputSchemaa") &&
          line.includes("the running configuration is kept")
        ),
        logs.join("\n")
      )

      // valid again, where the storage check (not the schema) refuses: the same, at the value's path
      volume.update({ "janus.yaml": document("ftp://pets.example.org") })
      const storageRefusal = yield* until((s) => s.problems.some((p) => p.includes("baseUrl")))
      assert.strictEqual(storageRefusal.state, "invalid")
      assert.include(storageRefusal.problems[0], "connections[0].baseUrl: got \"ftp://pets.example.org\"")

      // corrected: applied again (and pruned: get_pet is no longer in it)
      volume.update({ "janus.yaml": document("https://pets.example.net") })
      const fixed = yield* until((s) => s.state === "applied")
      assert.strictEqual(fixed.changes, 2)
      assert.isTrue(Option.isNone(yield* Endpoints.use((e) => e.findByName("get_pet"))))
      assert.match((yield* get("/metrics")).text, /^janus_config_file_valid 1$/m)
    }))
})

// A document whose stdio connection gives its program NODE_OPTIONS, there at start: refused, nothing stored.
const hostile = configMapVolume({
  "janus.yaml": `apiVersion: janus/v1
kind: Configuration
connections:
  - kind: mcp
    name: probe
    transport: stdio
    command: /usr/bin/true
    env:
      API_KEY: fine
      BASH_ENV: "$(touch /tmp/never)"
`
})

layer(
  GatewayTesting.layer({
    config: { JANUS_CONFIG_FILE: Option.some(hostile.path("janus.yaml")), JANUS_STDIO_COMMANDS: ["/usr/bin/true"] }
  }),
  { timeout: 120_000, excludeTestServices: true }
)("JANUS_CONFIG_FILE with a stdio env that changes how programs behave", (it) => {
  it.effect("refused at start at the variable's path; the connection is not stored", () =>
    Effect.gen(function*() {
      const refused = yield* status
      assert.strictEqual(refused.state, "invalid", JSON.stringify(refused))
      assert.include(refused.problems.join("\n"), "connections[0].env.BASH_ENV")
      assert.include(refused.problems.join("\n"), "upper-case letters")
      assert.isTrue(Option.isNone(yield* Connections.use((c) => c.findByName("probe"))))
    }))
})
