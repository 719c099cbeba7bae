/**
 * The master key ring that seals secrets.
 *
 * **Rules**
 *
 * - The current key seals; any key of the ring opens, chosen by the key id
 *   stored with each secret. Keys never leave `Redacted`.
 * - From options (Postgres mode): `JANUS_MASTER_KEY` is the current key;
 *   `previous` keys (e.g. `JANUS_MASTER_KEY_PREVIOUS`) still open old secrets
 *   during a rotation across replicas.
 * - From a key file (embedded mode, when no env key is given):
 *   `<janusDir>/master.key`, created on first start with mode 0600 (its folder
 *   0700) from 32 CSPRNG bytes; one base64 key per line, current first.
 * - `install` makes a key current and keeps the others; the file variant
 *   rewrites the file atomically (temp file, mode 0600, rename) before the
 *   key is used, so a crash never leaves secrets sealed under a key that is
 *   not on disk.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option, Redacted, Ref, Semaphore } from "effect"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import * as SecretBox from "./Crypto.ts"
import type { KeyMaterial } from "./Crypto.ts"
import { InvalidMasterKey } from "./Errors.ts"

export class MasterKey extends Context.Service<MasterKey, {
  /** The key new secrets are sealed under. */
  readonly current: Effect.Effect<KeyMaterial>
  /** The key with this id, if the ring has it. */
  readonly find: (keyId: string) => Effect.Effect<Option.Option<KeyMaterial>>
  /** Makes `key` current (keeping the others to open older secrets); persists it when file-backed. */
  readonly install: (key: Redacted.Redacted<Uint8Array>) => Effect.Effect<KeyMaterial, InvalidMasterKey>
}>()("@janus/storage/MasterKey") {
  /** A ring from explicit keys (base64, as in `JANUS_MASTER_KEY`). */
  static readonly layer = (options: {
    readonly key: Redacted.Redacted<string>
    readonly previous?: ReadonlyArray<Redacted.Redacted<string>> | undefined
  }): Layer.Layer<MasterKey, InvalidMasterKey> =>
    Layer.effect(
      MasterKey,
      Effect.gen(function*() {
        const current = yield* parse("JANUS_MASTER_KEY", options.key)
        const previous = yield* Effect.forEach(
          options.previous ?? [],
          (key, i) => parse(`JANUS_MASTER_KEY_PREVIOUS[${i}]`, key)
        )
        return yield* makeRing([current, ...previous], () => Effect.void)
      })
    )

  /** A ring from raw key bytes (tests, or a caller that already decoded the key). */
  static readonly layerKeys = (keys: ReadonlyArray<Redacted.Redacted<Uint8Array>>): Layer.Layer<MasterKey> =>
    Layer.effect(MasterKey, makeRing(keys.map(SecretBox.keyMaterial), () => Effect.void))

  /**
   * The embedded mode's ring: `envKey` when given, otherwise the key file at
   * `path`, created (mode 0600) with a fresh key when it does not exist.
   */
  static readonly layerFile = (options: {
    readonly path: string
    readonly envKey?: Redacted.Redacted<string> | undefined
  }): Layer.Layer<MasterKey, InvalidMasterKey> =>
    options.envKey !== undefined
      ? MasterKey.layer({ key: options.envKey })
      : Layer.effect(
        MasterKey,
        Effect.gen(function*() {
          const keys = yield* readOrCreateKeyFile(options.path)
          return yield* makeRing(keys, (ring) => writeKeyFile(options.path, ring))
        })
      )
}

/** Decodes a base64 master key, failing with a message that names `source` and never the key. */
export const parse = (
  source: string,
  encoded: Redacted.Redacted<string>
): Effect.Effect<KeyMaterial, InvalidMasterKey> => {
  const decoded = SecretBox.decodeKey(encoded)
  return typeof decoded === "string"
    ? Effect.fail(new InvalidMasterKey({ source, reason: decoded }))
    : Effect.succeed(SecretBox.keyMaterial(decoded))
}

const makeRing = (
  initial: ReadonlyArray<KeyMaterial>,
  persist: (ring: ReadonlyArray<KeyMaterial>) => Effect.Effect<void, InvalidMasterKey>
) =>
  Effect.gen(function*() {
    const ring = yield* Ref.make(initial)
    // Installs are serialized so two rotations cannot interleave their file writes.
    const lock = yield* Semaphore.make(1)
    return MasterKey.of({
      current: Effect.map(Ref.get(ring), (keys) => keys[0]!),
      find: (keyId) => Effect.map(Ref.get(ring), (keys) => Option.fromNullishOr(keys.find((k) => k.id === keyId))),
      install: (key) =>
        lock.withPermit(Effect.gen(function*() {
          const material = SecretBox.keyMaterial(key)
          const next = [material, ...(yield* Ref.get(ring)).filter((k) => k.id !== material.id)]
          yield* persist(next)
          yield* Ref.set(ring, next)
          return material
        }))
    })
  })

const readOrCreateKeyFile = (path: string): Effect.Effect<ReadonlyArray<KeyMaterial>, InvalidMasterKey> =>
  Effect.tryPromise({
    try: async () => {
      await Fs.mkdir(Path.dirname(path), { recursive: true, mode: 0o700 })
      try {
        // `wx` fails when the file exists, so two processes starting at once never overwrite each other's key.
        await Fs.writeFile(path, SecretBox.encodeKey(SecretBox.generateKey()) + "\n", { mode: 0o600, flag: "wx" })
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      }
      return await Fs.readFile(path, "utf8")
    },
    catch: (cause) => new InvalidMasterKey({ source: path, reason: `cannot read or create the key file: ${cause}` })
  }).pipe(
    Effect.flatMap((text) => {
      const lines = text.split("\n").map((line) => line.trim()).filter((line) => line !== "")
      if (lines.length === 0) return Effect.fail(new InvalidMasterKey({ source: path, reason: "the file is empty" }))
      return Effect.forEach(lines, (line, i) => parse(`${path} line ${i + 1}`, Redacted.make(line)))
    })
  )

const writeKeyFile = (path: string, ring: ReadonlyArray<KeyMaterial>): Effect.Effect<void, InvalidMasterKey> =>
  Effect.tryPromise({
    try: async () => {
      const temp = `${path}.${process.pid}.tmp`
      await Fs.writeFile(temp, ring.map((k) => SecretBox.encodeKey(k.key) + "\n").join(""), { mode: 0o600 })
      await Fs.rename(temp, path)
    },
    catch: (cause) => new InvalidMasterKey({ source: path, reason: `cannot write the key file: ${cause}` })
  })
