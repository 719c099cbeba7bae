/**
 * Two gateway replicas on one Postgres database (a database created and
 * dropped for this file), started together with the same JANUS_CONFIG_FILE
 * (a ConfigMap-like volume): the document is applied once (one replica
 * applies it, the other finds nothing to change; every version is 1 and the
 * token exists once), and a ConfigMap update is picked up by both and
 * applied once.
 */
import { assert, describe, layer } from "@effect/vitest"
import { ClientTokens, Connections, Endpoints } from "@janus/storage"
import { layerPostgresOn, layerTestDatabase, requirePostgres, TestDatabase } from "@janus/storage/testing"
import { ConfigProvider, Context, Effect, Layer, Option } from "effect"
import { ConfigFile, type ConfigFileStatus } from "../../src/configuration/ConfigFile.ts"
import * as GatewayTesting from "../../src/testing.ts"
import { configMapVolume } from "./configmap.ts"
import { petsDocument } from "./documents.ts"

const postgres = await requirePostgres()

const DEPLOY_TOKEN = `jns_${"p".repeat(43)}`

const document = (baseUrl: string) =>
  petsDocument(baseUrl, {
    more: `virtualServers:
  - name: pets
    tools: [list_pets]
clientTokens:
  - name: deploy
    allowedVirtualServers: [pets]
    valueFrom: { env: DEPLOY_TOKEN }
`
  })

describe.skipIf(!postgres)("JANUS_CONFIG_FILE on two replicas (Postgres)", () => {
  layer(layerTestDatabase, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("started together they apply it once; an update is picked up by both and applied once", () =>
      Effect.gen(function*() {
        const volume = configMapVolume({ "janus.yaml": document("https://pets.example.com") })
        const db = yield* TestDatabase
        const replica = Layer.build(
          GatewayTesting.layer({
            storage: layerPostgresOn({ maxConnections: 6 }).pipe(Layer.provide(Layer.succeed(TestDatabase, db))),
            config: { JANUS_CONFIG_FILE: Option.some(volume.path("janus.yaml")) }
          }).pipe(
            Layer.provide(Layer.succeed(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ DEPLOY_TOKEN })))
          )
        )
        const [a, b] = yield* Effect.all([replica, replica], { concurrency: 2 })
        const statuses = Effect.all(
          [a, b].map((context) =>
            Effect.map(Context.get(context as Context.Context<ConfigFile>, ConfigFile).status, Option.getOrThrow)
          )
        )
        const run = <A, E>(effect: Effect.Effect<A, E, Connections | Endpoints | ClientTokens>) =>
          Effect.provide(effect, a as Context.Context<Connections | Endpoints | ClientTokens>)

        const started = yield* statuses
        assert.deepStrictEqual(
          started.map((s) => `${s.state} ${s.changes}`).sort(),
          ["applied 4", "unchanged 0"],
          "one replica applied the document, the other found it applied"
        )
        assert.strictEqual(started[0]!.digest, started[1]!.digest)
        const pets = Option.getOrThrow(yield* run(Connections.use((c) => c.findByName("pets"))))
        assert.strictEqual(pets.version, 1, "written once")
        assert.strictEqual(Option.getOrThrow(yield* run(Endpoints.use((e) => e.findByName("list_pets")))).version, 1)
        const tokens = (yield* run(ClientTokens.use((t) => t.list))).filter((t) => t.name === "deploy")
        assert.strictEqual(tokens.length, 1)
        assert.isTrue(Option.isSome(yield* run(ClientTokens.use((t) => t.verify(DEPLOY_TOKEN)))))

        volume.update({ "janus.yaml": document("https://pets.example.org") })
        const deadline = Date.now() + 30_000
        let updated: ReadonlyArray<ConfigFileStatus> = started
        while (updated.some((s) => s.digest === started[0]!.digest)) {
          if (Date.now() > deadline) assert.fail(`not picked up by both within 30 s: ${JSON.stringify(updated)}`)
          yield* Effect.sleep("50 millis")
          updated = yield* statuses
        }
        assert.deepStrictEqual(updated.map((s) => `${s.state} ${s.changes}`).sort(), ["applied 1", "unchanged 0"])
        assert.strictEqual(updated[0]!.digest, updated[1]!.digest)
        const changed = Option.getOrThrow(yield* run(Connections.use((c) => c.findByName("pets"))))
        assert.strictEqual(changed.kind === "rest" && changed.baseUrl, "https://pets.example.org")
        assert.strictEqual(changed.version, 2, "applied once")
      }).pipe(Effect.scoped))
  })
})
