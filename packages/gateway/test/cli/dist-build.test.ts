/**
 * The image's entry point: `npm run build:dist` (scripts/build-dist.ts) emits
 * every package's JavaScript, and `node --conditions=janus-dist
 * packages/gateway/dist-js/bin.js serve` (deploy/Dockerfile's CMD) serves
 * from it alone: no `.ts` module is loaded, so Node never starts its type
 * stripper (amaro's WebAssembly, resident once loaded: issue #19). The
 * PGlite worker and Studio's files are found from `dist-js/` too.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { CLI_SEQUENCE_TIMEOUT, freePort, tempHome } from "./run.ts"

const repoRoot = Path.resolve(import.meta.dirname, "../../../..")
const distBin = Path.join(repoRoot, "packages/gateway/dist-js/bin.js")

/** Preloaded: writes the URL of every module the main thread resolves, and whether amaro was loaded, at exit. */
const listingHook = (out: string) =>
  `data:text/javascript,${
    encodeURIComponent([
      `import { registerHooks } from "node:module"`,
      `import { writeFileSync } from "node:fs"`,
      `const seen = new Set()`,
      `registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r } })`,
      `process.on("exit", () => writeFileSync(${JSON.stringify(out)}, JSON.stringify({ urls: [...seen], ` +
      `amaro: process.moduleLoadList.some((m) => m.includes("amaro")) })))`
    ].join("\n"))
  }`

describe("the built entry point (deploy/Dockerfile's CMD)", () => {
  it("serves from dist-js/ alone: /readyz and Studio answer, no .ts module is loaded", async () => {
    execFileSync(process.execPath, [Path.join(repoRoot, "scripts/build-dist.ts")], { stdio: "pipe", timeout: 180_000 })
    assert.isTrue(Fs.existsSync(distBin), "build-dist wrote packages/gateway/dist-js/bin.js")
    const home = tempHome()
    const listing = Path.join(home, "modules.json")
    const port = await freePort()
    const child = spawn(process.execPath, [
      "--conditions=janus-dist",
      "--import",
      listingHook(listing),
      distBin,
      "serve"
    ], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? Os.tmpdir(),
        LOG_LEVEL: "warn",
        JANUS_HOME: home,
        JANUS_PORT: String(port),
        JANUS_HOST: "127.0.0.1"
      },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve))
    try {
      let ready = 0
      for (let i = 0; i < 1_200 && ready !== 200 && child.exitCode === null; i++) {
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0)
        if (ready !== 200) await new Promise((r) => setTimeout(r, 100))
      }
      assert.strictEqual(ready, 200, `/readyz of the built gateway; its stderr: ${stderr}`)
      const studio = await fetch(`http://127.0.0.1:${port}/`)
      assert.strictEqual(studio.status, 200)
      assert.match(await studio.text(), /<html/i, "Studio's index.html, found from dist-js/")
    } finally {
      child.kill("SIGTERM")
      await exited
    }
    const { amaro, urls } = JSON.parse(Fs.readFileSync(listing, "utf8")) as {
      urls: ReadonlyArray<string>
      amaro: boolean
    }
    assert.isTrue(urls.some((url) => url.endsWith("/packages/gateway/dist-js/Gateway.js")))
    assert.deepStrictEqual(urls.filter((url) => url.endsWith(".ts")), [])
    assert.isFalse(amaro, "Node's type stripper was never loaded")
    Fs.rmSync(home, { recursive: true, force: true })
  }, CLI_SEQUENCE_TIMEOUT)
})
