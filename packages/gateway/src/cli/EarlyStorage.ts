/**
 * Boots the embedded database's PGlite worker before the command's modules
 * load, so on a restart of `janus serve` the WASM start (about 0.8 s) runs
 * on the worker's thread while this thread loads the gateway (about 1 s).
 *
 * **Rules**
 *
 * - Only for `janus serve` in embedded mode (`DATABASE_URL` unset or blank),
 *   and only when `JANUS_HOME/data` already holds a database: a first start
 *   (initdb) and every other command open storage as before, and nothing is
 *   created where the configuration might not point.
 * - `JANUS_HOME` is read as `JanusConfig` reads it (trimmed, blank means the
 *   default `.janus`). `PgliteClient` takes the worker over when it opens the
 *   same directory; if the configuration turns out to point elsewhere (or is
 *   invalid), the worker is simply not used.
 *
 * @since 0.1.0
 */
import * as PgliteWorker from "@janus/storage/PgliteWorker"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The data directory `janus serve` will open, when starting its worker early is safe; else `undefined`. */
export const dataDirToPrestart = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): string | undefined => {
  if (args[0] !== "serve" || (env.DATABASE_URL ?? "").trim() !== "") return undefined
  const home = (env.JANUS_HOME ?? "").trim() || ".janus"
  const dataDir = Path.join(home, "data")
  return Fs.existsSync(Path.join(dataDir, "PG_VERSION")) ? dataDir : undefined
}

/** Starts the PGlite worker for `janus serve` when `dataDirToPrestart` allows it. */
export const prestart = (args: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>>): void => {
  const dataDir = dataDirToPrestart(args, env)
  // a failure (the directory in use by another process, an open error) is the regular open's to report
  if (dataDir !== undefined) PgliteWorker.prestart(dataDir).catch(() => undefined)
}
