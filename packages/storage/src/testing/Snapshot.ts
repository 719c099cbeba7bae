/**
 * A migrated, empty embedded database as a PGlite snapshot (a `dumpDataDir`
 * tar), so the in-memory databases of tests start from it instead of running
 * initdb and every migration again.
 *
 * **Why**: opening an in-memory PGlite runs initdb (2-4 s of WASM on this
 * machine) and then the migrations; loading a snapshot takes a few hundred
 * milliseconds. The suite opens well over a hundred such databases, one per
 * shared gateway, so this is minutes of every CI run. The database is the
 * same real PGlite either way: only where it starts from differs.
 *
 * **Rules**
 *
 * - The file is named by a hash of the migrations' source and PGlite's
 *   version: a changed migration or a new PGlite gets a new snapshot, never a
 *   stale one.
 * - It is written to a temporary name and renamed into place, so concurrent
 *   builders (one per vitest project) and readers never see half a file.
 * - `JANUS_TEST_PGLITE_SNAPSHOT` carries its path from vitest's global setup
 *   to the test processes; `testing.layerMemory` uses it when set and runs
 *   initdb as before when not.
 *
 * @since 0.1.0
 */
import type { PGlite } from "@electric-sql/pglite"
import { Effect } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as SqlClient from "effect/sql/SqlClient"
import { createHash, randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Migrations from "../Migrations.ts"
import * as PgliteClient from "../PgliteClient.ts"

/** The environment variable that carries the snapshot's path to test processes. */
export const envVar = "JANUS_TEST_PGLITE_SNAPSHOT"

const pgliteVersion = (): string => {
  // the package's entry is under dist/; its package.json is the first one above it
  let dir = Path.dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite"))
  for (;;) {
    const candidate = Path.join(dir, "package.json")
    if (Fs.existsSync(candidate)) return (JSON.parse(Fs.readFileSync(candidate, "utf8")) as { version: string }).version
    const up = Path.dirname(dir)
    if (up === dir) return "unknown"
    dir = up
  }
}

/** Where the snapshot for these migrations and this PGlite lives. */
export const path = (): string => {
  const migrations = Fs.readFileSync(new URL("../Migrations.ts", import.meta.url), "utf8")
  const hash = createHash("sha256").update(pgliteVersion()).update("\0").update(migrations).digest("hex")
  return Path.join(Os.tmpdir(), `janus-pglite-${hash.slice(0, 16)}.tar`)
}

/** Opens an in-memory PGlite, applies every migration and writes its data directory to `target`. */
export const build = (target: string): Promise<void> =>
  Effect.runPromise(Effect.scoped(
    Effect.gen(function*() {
      const { client, pglite } = yield* PgliteClient.make({ thread: "main" })
      yield* Migrations.run.pipe(Effect.provideService(SqlClient.SqlClient, client))
      // on the main thread the handle is PGlite itself
      const dump = yield* Effect.promise(() => (pglite.db as PGlite).dumpDataDir("none"))
      const bytes = new Uint8Array(yield* Effect.promise(() => dump.arrayBuffer()))
      const temporary = `${target}.${randomBytes(6).toString("hex")}.tmp`
      Fs.writeFileSync(temporary, bytes)
      Fs.renameSync(temporary, target)
    }).pipe(Effect.provide(Reactivity.layer))
  ))

/** The snapshot's path, built first when it does not exist yet. */
export const ensure = async (): Promise<string> => {
  const target = path()
  if (!Fs.existsSync(target)) await build(target)
  return target
}
