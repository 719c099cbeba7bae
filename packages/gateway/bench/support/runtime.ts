/**
 * The runtime environment a benchmark gives the gateway it starts:
 * `BENCH_RUNTIME=image` runs it with the memory settings of
 * deploy/Dockerfile's runtime stage (`NODE_OPTIONS`, `MALLOC_ARENA_MAX`), read
 * from the Dockerfile so a bench measures what is shipped, not a copy of it;
 * `node` with Node's defaults. Each bench names its own default.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { benchDir } from "./Processes.ts"

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

/** The environment for `runtime`. */
export const envOf = (runtime: Runtime): Record<string, string> => runtime === "image" ? imageEnv() : {}

/** What a bench's notes say about it. */
export const describe = (runtime: Runtime): string =>
  runtime === "image"
    ? `deploy/Dockerfile's (${Object.entries(imageEnv()).map(([k, v]) => `${k}=${v}`).join(" ")})`
    : "Node's defaults"
