/**
 * The embedded storage: PGlite in this process, for one developer machine.
 *
 * **Rules**
 *
 * - Data lives under `dataDir` (default `<janusDir>/data`, `janusDir`
 *   defaulting to `./.janus`); `layerMemory` keeps it in memory (tests).
 * - The master key is `masterKey` (`JANUS_MASTER_KEY`) when given, otherwise
 *   `<janusDir>/master.key`, created with mode 0600 on first start and read
 *   after.
 * - It provides the same services as the Postgres layer (`Storage`); change
 *   signals and the event log go through PGlite's LISTEN/NOTIFY, so the code
 *   paths are the same, with one process listening.
 * - One process owns a data directory: PGlite is not safe to open twice.
 *   `DataDirLock` enforces it (`<dataDir>.lock`; a second open fails with the
 *   owner's process id).
 * - PGlite runs in a worker thread unless `thread: "main"` is asked for, so
 *   statements do not stall request handling.
 * - With AUDIT_DURABILITY=sync an audit record is durable once appended to
 *   the audit journal `<dataDir>.audit-journal` (`AuditJournal`), and written
 *   to the database in batches; `layerMemory` has no journal (nothing of it
 *   outlives the process anyway).
 *
 * @since 0.1.0
 */
import { Config, Duration, Effect, Layer, Option, Redacted } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import * as Path from "node:path"
import { AuditJournalDir } from "./AuditLog.ts"
import * as CacheSettings from "./CacheSettings.ts"
import * as SecretBox from "./Crypto.ts"
import type { InvalidMasterKey } from "./Errors.ts"
import { MasterKey } from "./MasterKey.ts"
import type { Notifications } from "./Notifications.ts"
import * as PgliteClient from "./PgliteClient.ts"
import { layerServices, type Storage, type StorageStartError } from "./Storage.ts"

export interface EmbeddedOptions {
  /** Janus' own folder, `JANUS_HOME` (default `./.janus`): holds `data/` and `master.key`. */
  readonly janusDir?: string | undefined
  /** Where PGlite keeps its files (default `<janusDir>/data`). */
  readonly dataDir?: string | undefined
  /** `JANUS_MASTER_KEY` (base64 of 32 bytes); when absent the key file is used. */
  readonly masterKey?: Redacted.Redacted<string> | undefined
  /** `CONFIG_CACHE_TTL` (default 5 seconds). */
  readonly configCacheTtl?: Duration.Input | undefined
  /** `SECRET_CACHE_TTL` (default 30 seconds). */
  readonly secretCacheTtl?: Duration.Input | undefined
  /** Where PGlite runs (default `"worker"`: off this thread's event loop); see `PgliteClient.PgliteOptions`. */
  readonly thread?: PgliteClient.PgliteOptions["thread"]
}

export const defaultJanusDir = "./.janus"

export type EmbeddedServices = Storage | SqlClient.SqlClient | Notifications | MasterKey | PgliteClient.Pglite

const settings = (options: Pick<EmbeddedOptions, "configCacheTtl" | "secretCacheTtl">) =>
  Layer.succeed(CacheSettings.CacheSettings, CacheSettings.make(options))

/** The embedded storage with data under `dataDir`. */
export const layer = (
  options: EmbeddedOptions = {}
): Layer.Layer<EmbeddedServices, StorageStartError | InvalidMasterKey> => {
  const janusDir = options.janusDir ?? defaultJanusDir
  const dataDir = options.dataDir ?? Path.join(janusDir, "data")
  const keys = MasterKey.layerFile({ path: Path.join(janusDir, "master.key"), envKey: options.masterKey })
  // `fresh`: every call is its own database instance, even though the service layers inside are shared values.
  return Layer.fresh(layerServices.pipe(
    Layer.provideMerge(Layer.merge(PgliteClient.layer({ dataDir, thread: options.thread }), keys)),
    Layer.provide(settings(options)),
    // beside the data, under its lock: AUDIT_DURABILITY=sync appends here instead of waiting for PGlite's commit
    Layer.provide(Layer.succeed(AuditJournalDir, `${dataDir}.audit-journal`))
  ))
}

/** The embedded storage in memory: for tests. Without `masterKey`, a fresh random key. */
export const layerMemory = (
  options: Omit<EmbeddedOptions, "janusDir" | "dataDir" | "masterKey"> & {
    readonly masterKey?: Redacted.Redacted<Uint8Array> | undefined
    /** Start from this `dumpDataDir` tar instead of initdb; see `PgliteClient.PgliteOptions`. */
    readonly snapshot?: string | undefined
  } = {}
): Layer.Layer<EmbeddedServices, StorageStartError> =>
  Layer.fresh(layerServices.pipe(
    Layer.provideMerge(Layer.merge(
      PgliteClient.layer({ thread: options.thread, snapshot: options.snapshot }),
      MasterKey.layerKeys([options.masterKey ?? SecretBox.generateKey()])
    )),
    Layer.provide(settings(options))
  ))

/** `JANUS_HOME`, `JANUS_MASTER_KEY`, `CONFIG_CACHE_TTL` and `SECRET_CACHE_TTL`. */
export const config: Config.Config<EmbeddedOptions> = Config.all({
  janusDir: Config.String("JANUS_HOME").pipe(Config.withDefault(defaultJanusDir)),
  masterKey: Config.option(Config.Redacted("JANUS_MASTER_KEY")),
  ttls: CacheSettings.config
}).pipe(Config.map(({ janusDir, masterKey, ttls }) => ({
  janusDir,
  masterKey: Option.getOrUndefined(masterKey),
  configCacheTtl: ttls.config,
  secretCacheTtl: ttls.secrets
})))

/** `layer` with options read through `Config`. */
export const layerConfig: Layer.Layer<EmbeddedServices, StorageStartError | InvalidMasterKey | Config.ConfigError> =
  Layer.unwrap(Effect.gen(function*() {
    return layer(yield* config)
  }))

export type { Redacted }
