/**
 * The runtime environment a benchmark gives the gateway it starts:
 * `BENCH_RUNTIME=image` runs it as deploy/Dockerfile's runtime stage does:
 * the JavaScript `scripts/build-dist.ts` emits (`--conditions=janus-dist`,
 * built once per bench process), with the stage's memory settings
 * (`NODE_OPTIONS`, `MALLOC_ARENA_MAX`), read from the Dockerfile so a bench
 * measures what is shipped, not a copy of it; `node` runs the sources with
 * Node's defaults, as `npm start` does. Each bench names its own default.
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { benchDir, gatewayBin } from "./Processes.ts"

export type Runtime = "image" | "node"

/** `BENCH_RUNTIME`, or `fallback` when unset. */
export const runtimeOf = (fallback: Runtime): Runtime => {
  const value = process.env.BENCH_RUNTIME
  if (value === undefined || value === "") return fallback
  if (value !== "image" && value !== "node") throw new Error(`BENCH_RUNTIME is ${value}; expected image or node`)
  return value
}

/** The memory settings of the image's runtime stage. */
export const imageEnv = (): Record<string, string> => {
  const dockerfile = readFileSync(join(benchDir, "..", "..", "..", "deploy", "Dockerfile"), "utf8")
  const at = dockerfile.search(/^FROM \S+ AS runtime$/m)
  if (at < 0) throw new Error("deploy/Dockerfile has no `FROM ... AS runtime` stage: cannot read its memory settings")
  const env: Record<string, string> = {}
  for (const match of dockerfile.slice(at).replace(/\\\n/g, " ").matchAll(/^ENV (.*)$/gm)) {
    for (const pair of match[1]!.matchAll(/(NODE_OPTIONS|MALLOC_ARENA_MAX)=(\S+)/g)) env[pair[1]!] = pair[2]!
  }
  return env
}

const repoRoot = join(benchDir, "..", "..", "..")
let built = false

/** The gateway's entry point (script and Node flags) for `runtime`; `image` builds dist-js/ on first use. */
export const entryOf = (runtime: Runtime): { readonly bin: string; readonly nodeArgs: ReadonlyArray<string> } => {
  if (runtime === "node") return { bin: gatewayBin, nodeArgs: [] }
  if (!built) {
    execFileSync(process.execPath, [join(repoRoot, "scripts", "build-dist.ts")], {
      stdio: ["ignore", "ignore", "inherit"]
    })
    built = true
  }
  return { bin: join(repoRoot, "packages", "gateway", "dist-js", "bin.js"), nodeArgs: ["--conditions=janus-dist"] }
}

/** The environment for `runtime`. */
export const envOf = (runtime: Runtime): Record<string, string> => runtime === "image" ? imageEnv() : {}

/** What a bench's notes say about it. */
export const describe = (runtime: Runtime): string =>
  runtime === "image"
    ? `deploy/Dockerfile's: the built JavaScript (dist-js, --conditions=janus-dist) with ${
      Object.entries(imageEnv()).map(([k, v]) => `${k}=${v}`).join(" ")
    }`
    : "the sources (src/bin.ts) with Node's defaults"
