/**
 * The embedded Postgres (PGlite) sized for a gateway, not a database server.
 *
 * **Details**
 *
 * A gateway's database is small and written at its tail (configuration of a
 * few MiB, audit records and events appended in batches), yet Postgres'
 * default `shared_buffers` (128 MB) is allocated inside PGlite's WebAssembly
 * memory on start and most of it touched: about 120 MiB of every embedded
 * gateway's resident memory (measured, issue #19: a PGlite process was 298
 * MiB resident after start with 128 MB, 169 MiB with 16 MB). 16 MB (2,048
 * pages) still holds every hot page: the tails of `audit_records`,
 * `broker_event` and their indexes, and the configuration tables.
 * Everything else stays at PGlite's defaults (`PGlite.defaultStartParams`:
 * single user, no parallel workers, synchronous I/O).
 *
 * **Gotchas**
 *
 * - Start parameters replace PGlite's defaults rather than adding to them,
 *   so its own defaults are repeated here first.
 * - Loaded by the PGlite worker under Node's type stripping: erasable syntax
 *   only, no imports from the rest of storage.
 *
 * @since 0.1.0
 */
import type { PGliteOptions } from "@electric-sql/pglite"

/** `shared_buffers` of the embedded database (see the module doc for why). */
export const SHARED_BUFFERS = "16MB"

/** PGlite's start parameters with the gateway's settings appended (a later `-c` wins). */
export const startParams = (defaults: ReadonlyArray<string>): Array<string> => [
  ...defaults,
  "-c",
  `shared_buffers=${SHARED_BUFFERS}`
]

/** `options` with the gateway's start parameters. */
export const withGatewaySettings = (
  defaults: ReadonlyArray<string>,
  options: PGliteOptions = {}
): PGliteOptions => ({ ...options, startParams: startParams(defaults) })
