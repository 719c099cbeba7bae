/**
 * What a gateway process loads before it is told to export or embed anything.
 *
 * **Rules**
 *
 * - The OpenTelemetry SDK (samplers, exporters) and gRPC are loaded only when
 *   `OTEL_*` asks for an export (`Otlp.ts` imports them on demand): about
 *   6 MiB of heap and 10 MiB resident an idle gateway that exports nothing
 *   would carry (#19).
 * - PGlite's module is loaded only where a database is opened on the main
 *   thread (`PgliteClient.ts`): never on Postgres, and not on the main thread
 *   of an embedded gateway whose PGlite runs in its worker.
 *
 * Checked by importing the modules `janus serve` starts from in a fresh Node
 * process with a resolve hook that lists every module it loads.
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

const src = path.resolve(import.meta.dirname, "../../src")

/** Every module URL a fresh process resolves while importing `entries`. */
const loadedBy = (entries: ReadonlyArray<string>): ReadonlyArray<string> => {
  const hook = [
    `import { registerHooks } from "node:module"`,
    `const seen = new Set()`,
    `registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r } })`,
    `process.on("exit", () => process.stdout.write(JSON.stringify([...seen])))`
  ].join("\n")
  const program = entries.map((entry) => `await import(${JSON.stringify(pathToFileURL(entry).href)})`).join("\n")
  const out = execFileSync(
    process.execPath,
    ["--import", `data:text/javascript,${encodeURIComponent(hook)}`, "--input-type=module", "-e", program],
    { encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" }, timeout: 60_000 }
  )
  return JSON.parse(out) as ReadonlyArray<string>
}

describe("modules loaded at startup", () => {
  it("janus serve's modules load neither the OpenTelemetry SDK, gRPC nor PGlite", () => {
    const loaded = loadedBy([path.join(src, "cli/Serve.ts"), path.join(src, "Gateway.ts")])
    // the import worked: the gateway's own modules and effect are there
    expect(loaded.some((url) => url.endsWith("/gateway/src/Gateway.ts"))).toBe(true)
    expect(loaded.some((url) => url.endsWith("/gateway/src/observability/Otlp.ts"))).toBe(true)
    const heavy = loaded.filter((url) =>
      /\/@grpc\/|\/@opentelemetry\/(sdk-|exporter-|otlp-)|\/@effect\/opentelemetry\/|\/@electric-sql\/pglite\//
        .test(url)
    )
    expect(heavy).toEqual([])
  })
})
