/**
 * `npm run build:dist`: the JavaScript the image runs. Each package's `src/`
 * is emitted to its `dist-js/` (studio: its `index.ts`) by `tsc -p
 * tsconfig.dist.json`, types not checked again (`tsc -b` checks them), and
 * the packages' `exports` name those files under the `janus-dist` condition:
 * `node --conditions=janus-dist packages/gateway/dist-js/bin.js serve`.
 *
 * **Why**
 *
 * Run from `.ts`, Node strips types with amaro, a WebAssembly build of swc
 * that stays loaded: about 10-18 MiB more resident memory per gateway idle
 * (issue #19; BENCHMARKS.md). Tests and `npm start` keep running the sources.
 *
 * Usage: node scripts/build-dist.ts
 */
import { execFileSync } from "node:child_process"
import { rmSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..")
const tsc = join(root, "node_modules", "typescript", "bin", "tsc")

for (const pkg of ["sse", "storage", "studio", "gateway"]) {
  const dir = join(root, "packages", pkg)
  rmSync(join(dir, "dist-js"), { recursive: true, force: true })
  execFileSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.dist.json")], { stdio: "inherit" })
}
console.error("dist-js/ written for sse, storage, studio and gateway")
