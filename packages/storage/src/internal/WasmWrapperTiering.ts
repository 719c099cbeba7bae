/**
 * Turns off V8's tier-up of WebAssembly-to-JavaScript call wrappers, for the
 * whole process, before PGlite's WASM is first instantiated.
 *
 * **Why**: Node 24's V8 keeps compiled wasm-to-JS wrappers in one
 * process-wide cache shared by every isolate (the main thread and each PGlite
 * worker). Freeing a dead wrapper from that cache can abort the process with
 * `Check failed: jit_page.has_value()` (`Runtime_TierUpWasmToJSWrapper` ->
 * `WasmImportWrapperCache::Free` -> `WasmCodeAllocator::FreeCode`, read off the
 * native stack of a crashed run) once PGlite instances have come and gone in
 * one process: seen in a test worker as SIGTRAP, and a gateway that reopens
 * its embedded database would die the same way (nodejs/node#64500 reports the
 * same subsystem under PGlite churn). A wrapper is compiled only after
 * `--wasm-wrapper-tiering-budget` calls through the generic one (1,000 by
 * default); with the budget at its maximum no wrapper is ever compiled, so
 * none is ever freed. PGlite's imports then go through V8's generic wrapper:
 * 3,000 upserts and 3,000 point selects on PGlite took 128-155 µs a statement
 * with the flag and 150-164 without (two runs each, 2026-12-02): no cost
 * beyond noise.
 *
 * **Gotchas**
 *
 * - V8 reads the budget when a WASM instance is created: this module must be
 *   evaluated before the first `new PGlite`. `PgliteClient` and `PgliteWorker`
 *   import it first; V8 flags are per process, so worker threads share it.
 *
 * @since 0.1.0
 */
import * as V8 from "node:v8"

/** The largest value V8's int flag takes: 2^31 - 1 calls, never reached. */
export const WRAPPER_TIERING_BUDGET = 2_147_483_647

V8.setFlagsFromString(`--wasm-wrapper-tiering-budget=${WRAPPER_TIERING_BUDGET}`)
