/**
 * Which programs stdio upstream MCP servers may run: `JANUS_STDIO_COMMANDS`.
 *
 * A stdio connection makes every replica spawn a program, so creating one
 * through the admin API runs code on the hosts: only the programs an
 * operator allowed in the environment may be used.
 *
 * **Rules**
 *
 * - The variable is a comma-separated list; empty (the default) allows none.
 * - An entry without `/` is an executable name, matching a connection whose
 *   `command` is that same bare name (looked up on the gateway's PATH, never
 *   the connection's `env`). An entry with `/` is an absolute path matching
 *   that exact command. `*` in an entry matches any characters except `/`
 *   (e.g. `/opt/mcp/bin/*`, or `*` for every name on PATH).
 * - The list is checked when a connection is written (storage's
 *   `StdioAllowList`, refused with `InvalidInput` on `command`) and again
 *   before every spawn (a connection stored under another list is not run);
 *   both errors name the variable.
 *
 * @since 0.1.0
 */
import { StdioAllowList } from "@janus/storage"
import { Effect, Layer } from "effect"
import { JanusConfig } from "../config/JanusConfig.ts"

/** The variable's name, for every message that refuses a command. */
export const VARIABLE = "JANUS_STDIO_COMMANDS"

const compile = (entry: string): RegExp =>
  new RegExp(`^${entry.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[^/]*")}$`)

/** The allow-list of `entries` (the variable's values). */
export const make = (entries: ReadonlyArray<string>): typeof StdioAllowList.Service => {
  const patterns = entries.map((entry) => entry.trim()).filter((entry) => entry !== "").map(compile)
  const shown = entries.length === 0 ? "none" : entries.join(", ")
  return {
    allows: (command) => patterns.some((pattern) => pattern.test(command)),
    expected: entries.length === 0
      ? `a command allowed by ${VARIABLE}, which is empty: stdio upstreams are off until an operator lists their programs there`
      : `a command allowed by ${VARIABLE} (${shown.slice(0, 200)})`
  }
}

/** Storage's `StdioAllowList` from `JANUS_STDIO_COMMANDS`. */
export const layer: Layer.Layer<never, never, JanusConfig> = Layer.unwrap(
  Effect.map(Effect.service(JanusConfig), (config) => Layer.succeed(StdioAllowList, make(config.JANUS_STDIO_COMMANDS)))
) as Layer.Layer<never, never, JanusConfig>
