/**
 * The published stdio MCP servers the stdio tests run (devDependencies of
 * @janus/gateway), and a pid check.
 */
import { createRequire } from "node:module"
import * as Path from "node:path"

const require = createRequire(import.meta.url)
/** A published package's bin script (`dist/index.js`), resolved from this package's devDependencies. */
const binOf = (name: string) => Path.join(Path.dirname(require.resolve(`${name}/package.json`)), "dist/index.js")

/** `@modelcontextprotocol/server-everything`: run it with the argument `stdio`. */
export const EVERYTHING = binOf("@modelcontextprotocol/server-everything")
/** `@modelcontextprotocol/server-memory` (stdio; `MEMORY_FILE_PATH` says where it keeps its graph). */
export const MEMORY = binOf("@modelcontextprotocol/server-memory")

/** Whether a process exists. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}
