/**
 * deploy/Dockerfile (never built on this machine: there is no Docker engine)
 * read as text and checked against the repository and the manifests: Node 24
 * images, the pinned pnpm, a frozen production install, the non-root uid the
 * Deployment runs as, the start command, and its context filter.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { VARIABLES } from "../../packages/gateway/src/config/JanusConfig.ts"
import { DEPLOY_DIR, podSpec, Rendered, REPO_DIR, type Target, TARGETS } from "../src/Manifests.ts"

type Instruction = { readonly op: string; readonly args: string }

/** Instructions with continuation lines joined and comments dropped. */
const instructions = (text: string): Array<Instruction> =>
  text.replace(/\\\n/g, " ").split("\n").map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const [op, ...rest] = line.split(/\s+/)
      return { op: op!.toUpperCase(), args: rest.join(" ") }
    })

const dockerfile = instructions(Fs.readFileSync(Path.join(DEPLOY_DIR, "Dockerfile"), "utf8"))
const argDefaults = new Map(
  dockerfile.filter((i) => i.op === "ARG" && i.args.includes("=")).map((i) => {
    const [name, value] = i.args.split("=", 2) as [string, string]
    return [name, value]
  })
)
const expand = (text: string) => text.replace(/\$\{?(\w+)\}?/g, (_, name: string) => argDefaults.get(name) ?? "")
const stages = dockerfile.reduce<Array<Array<Instruction>>>((acc, i) => {
  if (i.op === "FROM") acc.push([i])
  else acc.at(-1)?.push(i)
  return acc
}, [])
const finalStage = stages.at(-1)!
const rootPackage = JSON.parse(Fs.readFileSync(Path.join(REPO_DIR, "package.json"), "utf8"))
const gatewayPackage = JSON.parse(Fs.readFileSync(Path.join(REPO_DIR, "packages/gateway/package.json"), "utf8"))

describe("deploy/Dockerfile", () => {
  it("is multi-stage on official Node 24 images", () => {
    assert.isAtLeast(stages.length, 2)
    const names: Array<string> = []
    for (const [from] of stages) {
      const [image, as, name] = expand(from!.args).split(/\s+/)
      assert.isTrue(image!.startsWith("node:24") || names.includes(image!), `FROM ${image}`)
      if (as?.toUpperCase() === "AS") names.push(name!)
    }
  })

  it("installs with the pnpm pinned in package.json, from the frozen lockfile, production only", () => {
    assert.strictEqual(`pnpm@${argDefaults.get("PNPM_VERSION")}`, rootPackage.packageManager)
    const install = dockerfile.find((i) => i.op === "RUN" && /\bpnpm install\b/.test(i.args))
    assert.isDefined(install)
    assert.include(install!.args, "--frozen-lockfile")
    assert.include(install!.args, "--prod")
  })

  it("runs as the non-root uid the Deployment sets, on the port the gateway listens on", () => {
    const user = finalStage.filter((i) => i.op === "USER").at(-1)?.args
    assert.match(user ?? "", /^\d+(:\d+)?$/, "a numeric USER, so runAsNonRoot can verify it")
    const uid = Number(user!.split(":")[0])
    assert.isAbove(uid, 0)
    for (const target of Object.keys(TARGETS) as Array<Target>) {
      assert.strictEqual(podSpec(Rendered.of(target).deployment).securityContext?.runAsUser, uid)
    }
    assert.include(finalStage.filter((i) => i.op === "EXPOSE").map((i) => i.args), String(VARIABLES.JANUS_PORT.default))
    const env = finalStage.filter((i) => i.op === "ENV").map((i) => i.args).join(" ")
    assert.include(env, "JANUS_HOST=0.0.0.0")
    // issue #19: the young generation sized for a gateway's short-lived garbage
    assert.include(env, "NODE_OPTIONS=--max-semi-space-size=8")
    // and glibc's malloc arenas few, so freed native memory is reused, not kept per thread
    assert.include(env, "MALLOC_ARENA_MAX=2")
  })

  it("starts the gateway's bin, built to JavaScript, with `serve`, in exec form, and leaves health checks to Kubernetes", () => {
    const cmd = finalStage.filter((i) => i.op === "CMD").at(-1)!
    // issue #19: the emitted JavaScript, not the sources (type stripping keeps amaro's WebAssembly resident)
    assert.deepStrictEqual(JSON.parse(cmd.args), [
      "node",
      "--conditions=janus-dist",
      "packages/gateway/dist-js/bin.js",
      "serve"
    ])
    assert.strictEqual(
      `packages/gateway/${gatewayPackage.bin.janus.replace(/^\.\//, "").replace(/^src\/(.*)\.ts$/, "dist-js/$1.js")}`,
      "packages/gateway/dist-js/bin.js"
    )
    // built in an earlier stage by the script `npm run build:dist` runs, every package's dist-js/ copied over
    const runs = stages.flat().filter((i) => i.op === "RUN").map((i) => i.args).join("\n")
    assert.include(runs, "node scripts/build-dist.ts")
    const copied = finalStage.filter((i) => i.op === "COPY").map((i) => i.args)
    for (const pkg of ["sse", "storage", "studio", "gateway"]) {
      assert.include(copied, `--from=build /app/packages/${pkg}/dist-js /app/packages/${pkg}/dist-js`)
    }
    assert.deepStrictEqual(finalStage.filter((i) => i.op === "HEALTHCHECK").map((i) => i.args), ["NONE"])
    assert.isUndefined(finalStage.find((i) => i.op === "ENTRYPOINT"), "no shell wrapper that would swallow SIGTERM")
  })

  it("has a context filter next to it that keeps host node_modules and local state out", () => {
    const ignore = Fs.readFileSync(Path.join(DEPLOY_DIR, "Dockerfile.dockerignore"), "utf8").split("\n")
      .map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
    for (const pattern of ["**/node_modules", ".git", ".janus", ".toolchain"]) assert.include(ignore, pattern)
    for (const needed of ["pnpm-lock.yaml", "package.json", "packages", "pnpm-workspace.yaml"]) {
      assert.notInclude(ignore, needed)
    }
  })
})
