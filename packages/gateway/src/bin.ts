#!/usr/bin/env node
/**
 * The `janus` command's entry: turns on Node's module compile cache, then
 * loads the command (`cli/Main.ts`).
 *
 * Why a separate entry: static imports run before a module's body, so the
 * cache must be on before the command's module graph (about 1,150 modules)
 * is imported. With the cache, a restart skips compiling what it compiled
 * last time (about a third of the time to ready went to loading modules).
 * The cache lives in `NODE_COMPILE_CACHE` when set, else in the system's
 * temporary directory; entries are keyed by file content, so a changed file
 * is compiled again.
 *
 * For `janus serve` on an existing embedded database it also starts PGlite's
 * worker before that import, so the database boots while the modules load.
 *
 * @since 0.1.0
 */
import * as Module from "node:module"

Module.enableCompileCache()
// `janus serve` on an existing embedded home: PGlite's worker boots while the rest loads (cli/EarlyStorage.ts)
const EarlyStorage = await import("./cli/EarlyStorage.ts")
EarlyStorage.prestart(process.argv.slice(2), process.env)
await import("./cli/Main.ts")
