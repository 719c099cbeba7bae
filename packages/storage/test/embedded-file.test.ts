/**
 * The embedded storage on disk: data and master key survive a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { Connections, Embedded, MasterKey, SecretBox, Secrets } from "../src/index.ts"
import { expectFailure, restInput } from "./helpers.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "janus-embedded-"))),
  (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
)

/** Runs `effect` on an embedded storage opened on `options`, closing it afterwards (a "process lifetime"). */
const session = <A, E, R>(options: Embedded.EmbeddedOptions, effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.flatMap(Layer.build(Embedded.layer(options)), (context) => Effect.provide(effect, context)))

describe("embedded storage on disk", () => {
  it.live(
    "data and the generated master key persist across a close and reopen; key file is 0600",
    () =>
      Effect.gen(function*() {
        const janusDir = Path.join(yield* tempDir, ".janus")
        const connection = yield* session(
          { janusDir },
          Effect.gen(function*() {
            yield* (yield* Secrets).set("api-key", Redacted.make("persisted value"))
            return yield* (yield* Connections).create(restInput("persisted"))
          })
        )

        const keyFile = Path.join(janusDir, "master.key")
        const stat = yield* Effect.promise(() => Fs.stat(keyFile))
        assert.strictEqual(stat.mode & 0o777, 0o600)
        assert.strictEqual((yield* Effect.promise(() => Fs.stat(janusDir))).mode & 0o077, 0)
        const keyText = (yield* Effect.promise(() => Fs.readFile(keyFile, "utf8"))).trim()
        assert.notInstanceOf(SecretBox.decodeKey(Redacted.make(keyText)), String)
        assert.isTrue((yield* Effect.promise(() => Fs.readdir(Path.join(janusDir, "data")))).length > 0)

        yield* session(
          { janusDir },
          Effect.gen(function*() {
            const reopened = yield* (yield* Connections).get(connection.id)
            assert.strictEqual(reopened.name, "persisted")
            assert.strictEqual(Redacted.value(yield* (yield* Secrets).reveal("api-key")), "persisted value")
            // The key was read, not regenerated.
            assert.strictEqual(
              (yield* (yield* MasterKey).current).id,
              SecretBox.keyIdOf(
                Redacted.value(SecretBox.decodeKey(Redacted.make(keyText)) as Redacted.Redacted<Uint8Array>)
              )
            )
          })
        )
      }),
    120_000
  )

  it.live("rotation persists the new key first; an env key means no key file", () =>
    Effect.gen(function*() {
      const janusDir = Path.join(yield* tempDir, ".janus")
      const newKey = SecretBox.generateKey()
      yield* session(
        { janusDir },
        Effect.gen(function*() {
          const secrets = yield* Secrets
          yield* secrets.set("token", Redacted.make("v1"))
          yield* secrets.rotate(newKey)
        })
      )
      const lines = (yield* Effect.promise(() => Fs.readFile(Path.join(janusDir, "master.key"), "utf8"))).trim()
        .split("\n")
      assert.strictEqual(lines.length, 2)
      assert.strictEqual(lines[0], SecretBox.encodeKey(newKey))
      yield* session(
        { janusDir },
        Effect.gen(function*() {
          assert.strictEqual((yield* (yield* MasterKey).current).id, SecretBox.keyIdOf(Redacted.value(newKey)))
          assert.strictEqual(Redacted.value(yield* (yield* Secrets).reveal("token")), "v1")
        })
      )

      // With JANUS_MASTER_KEY given, no key file is created, and that key seals.
      const envDir = Path.join(yield* tempDir, ".janus")
      const envKey = SecretBox.generateKey()
      yield* session(
        { janusDir: envDir, masterKey: Redacted.make(SecretBox.encodeKey(envKey)) },
        Effect.gen(function*() {
          const info = yield* (yield* Secrets).set("x", Redacted.make("y"))
          assert.strictEqual(info.keyId, SecretBox.keyIdOf(Redacted.value(envKey)))
        })
      )
      const files = yield* Effect.promise(() => Fs.readdir(envDir))
      assert.notInclude(files, "master.key")
    }), 120_000)

  it.live(
    "a bad master key stops the layer with InvalidMasterKey, naming the source and not the key",
    () =>
      Effect.gen(function*() {
        const janusDir = Path.join(yield* tempDir, ".janus")
        const short = Buffer.alloc(16, 7).toString("base64")
        const scope = yield* Scope.make()
        const error = yield* expectFailure(
          Layer.buildWithScope(Embedded.layer({ janusDir, masterKey: Redacted.make(short) }), scope),
          "InvalidMasterKey"
        )
        yield* Scope.close(scope, Exit.void)
        assert.strictEqual(error.source, "JANUS_MASTER_KEY")
        assert.include(error.message, "16 bytes")
        assert.notInclude(error.message, short)

        yield* Effect.promise(() => Fs.mkdir(janusDir, { recursive: true }))
        yield* Effect.promise(() => Fs.writeFile(Path.join(janusDir, "master.key"), "not a key\n", { mode: 0o600 }))
        const scope2 = yield* Scope.make()
        const fromFile = yield* expectFailure(
          Layer.buildWithScope(Embedded.layer({ janusDir }), scope2),
          "InvalidMasterKey"
        )
        yield* Scope.close(scope2, Exit.void)
        assert.include(fromFile.source, "master.key")
      }),
    60_000
  )
})
