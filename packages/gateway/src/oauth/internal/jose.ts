/**
 * `jose`, loaded on first use rather than at start-up: OAuth is off unless
 * configured, and jose is about 46 modules to load.
 *
 * Node's `require` of an ES module without top-level await is synchronous
 * and shares the module with `import`, so callers stay synchronous.
 *
 * @since 0.1.0
 */
import type * as Jose from "jose"
import { createRequire } from "node:module"

const require = createRequire(import.meta.url)

/** The `jose` module (loaded by the first call). */
export const jose = (): typeof Jose => require("jose") as typeof Jose
