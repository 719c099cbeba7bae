/**
 * Runs the official MCP conformance suite's server scenarios against a URL.
 *
 * `@modelcontextprotocol/conformance` 0.1.16 is the pinned release;
 * `conformance-next` (0.2.0-alpha.12) has the scenarios only that line has.
 * Both packages declare the same `conformance` bin, so each CLI is run by its
 * package path. A scenario's verdicts are read from the `checks.json` it writes.
 */
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"

const require = createRequire(import.meta.url)
const cliOf = (pkg: string) => join(dirname(require.resolve(`${pkg}/package.json`)), "dist", "index.js")

/** The pinned release's CLI. */
export const STABLE = cliOf("@modelcontextprotocol/conformance")
/** The 0.2.0 line's CLI. */
export const NEXT = cliOf("conformance-next")

export interface Check {
  readonly id: string
  readonly status: "SUCCESS" | "FAILURE" | "WARNING" | "SKIPPED" | "INFO"
  readonly errorMessage?: string
}

export interface Run {
  /** What was run against what, for the summary (e.g. a suite version, or "upstream"/"janus"). */
  readonly label: string
  readonly scenario: string
  readonly specVersion: string | undefined
  readonly checks: ReadonlyArray<Check>
  readonly output: string
}

const findChecks = (dir: string): string | undefined => {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) {
      const found = findChecks(path)
      if (found !== undefined) return found
    } else if (entry === "checks.json") return path
  }
  return undefined
}

/** Runs one scenario of `cli` against `url` (at most 90 s). */
export const run = (label: string, cli: string, url: string, scenario: string, specVersion?: string) =>
  Effect.promise(() =>
    new Promise<Run>((resolve) => {
      const out = mkdtempSync(join(tmpdir(), "mcp-conformance-"))
      const args = [cli, "server", "--url", url, "--scenario", scenario, "-o", out]
      if (specVersion !== undefined) args.push("--spec-version", specVersion)
      execFile(process.execPath, args, { timeout: 90_000 }, (_error, stdout, stderr) => {
        const file = findChecks(out)
        const checks: ReadonlyArray<Check> = file === undefined ? [] : JSON.parse(readFileSync(file, "utf8"))
        rmSync(out, { recursive: true, force: true })
        resolve({ label, scenario, specVersion, checks, output: stdout + stderr })
      })
    })
  )

/** One line: counts by status. */
export const summarize = (result: Run): string => {
  const count = (status: Check["status"]) => result.checks.filter((check) => check.status === status).length
  return `${result.label} ${result.scenario}${result.specVersion === undefined ? "" : ` @${result.specVersion}`}: ` +
    `${count("SUCCESS")} passed, ${count("FAILURE")} failed, ${count("WARNING")} warnings, ${count("SKIPPED")} skipped`
}
