/**
 * Once per run, before any test process starts: the migrated PGlite snapshot
 * that in-memory test databases start from (see
 * packages/storage/src/testing/Snapshot.ts), its path passed on in the
 * environment the test processes inherit.
 */
import * as Snapshot from "./packages/storage/src/testing/Snapshot.ts"

export default async function setup(): Promise<void> {
  process.env[Snapshot.envVar] = await Snapshot.ensure()
}
