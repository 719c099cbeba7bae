/**
 * The import rules of the repository's layout (README, "Layout"), checked on the source text.
 *
 * **Rules**
 *
 * - No cycle between the top-level folders of `packages/gateway/src`: if `a/` imports from `b/`
 *   (directly or through a longer chain of folders), `b/` never imports from `a/`. The files directly
 *   in `src/` (Gateway.ts, Security.ts, GatewayStorage.ts, bin.ts, testing.ts) are no folder and are left
 *   out of the graph: they compose the folders, `bin.ts` starts `cli/`, and `cli/serve` runs
 *   `Gateway.ts`, a chain of files and not a cycle.
 * - A package reaches another package only through its name or a subpath its package.json
 *   declares in `exports`: never `@janus/storage/src/...`, never a relative `../../storage/src/...`.
 * - A package's `dependencies` name exactly the workspace packages its source imports, so the
 *   package.json files tell the direction of dependencies the README's Layout draws.
 *
 * **Details**
 *
 * Type-only imports (`import type`, `import { type X }`) count like any other: they couple the
 * folders just the same (a change of the type breaks the importer), and a cycle that only exists
 * in types is still a cycle a newcomer has to untangle. Re-exports (`export ... from`) and dynamic
 * `import()` count too. Imports are read with TypeScript's `preProcessFile`, which sees every
 * module specifier without type-checking, so the test takes well under a second.
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

const repoRoot = path.resolve(import.meta.dirname, "../../../..")
const packagesDir = path.join(repoRoot, "packages")
const gatewaySrc = path.join(packagesDir, "gateway", "src")

/** A source tree of the repository: one package (or deploy) and the directories holding its source. */
interface Unit {
  readonly name: string
  readonly root: string
  readonly packageName: string | undefined
  readonly exports: ReadonlySet<string>
  readonly workspaceDependencies: ReadonlySet<string>
}

const readUnits = (): ReadonlyArray<Unit> => {
  const roots = [
    ...fs.readdirSync(packagesDir).map((dir) => path.join(packagesDir, dir)),
    path.join(repoRoot, "deploy")
  ].filter((dir) => fs.existsSync(path.join(dir, "package.json")))
  return roots.map((root) => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
      name?: string
      exports?: string | Record<string, string>
      dependencies?: Record<string, string>
    }
    const exported = typeof manifest.exports === "string"
      ? ["."]
      : Object.keys(manifest.exports ?? {})
    return {
      name: path.relative(repoRoot, root),
      root,
      packageName: manifest.name,
      exports: new Set(exported),
      workspaceDependencies: new Set(
        Object.entries(manifest.dependencies ?? {}).flatMap(([name, range]) =>
          range.startsWith("workspace:") ? [name] : []
        )
      )
    }
  })
}

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  fs.existsSync(dir)
    ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) return entry.name === "node_modules" ? [] : sourceFiles(full)
      return /\.(m|c)?tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [full] : []
    })
    : []

/** The files whose imports are checked: each unit's `src/` and its entry files at the package root. */
const unitSources = (unit: Unit): ReadonlyArray<string> => [
  ...sourceFiles(path.join(unit.root, "src")),
  ...fs.readdirSync(unit.root)
    .filter((name) => /\.tsx?$/.test(name) && !name.endsWith(".config.ts") && !name.endsWith(".d.ts"))
    .map((name) => path.join(unit.root, name))
]

const specifiers = (file: string): ReadonlyArray<string> =>
  ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true).importedFiles.map((ref) => ref.fileName)

const unitOf = (units: ReadonlyArray<Unit>, file: string): Unit | undefined =>
  units.find((unit) => file === unit.root || file.startsWith(unit.root + path.sep))

/** The top-level folder of `packages/gateway/src` a path is in, or "" for the files directly in src. */
const gatewayFolder = (file: string): string | undefined => {
  const rel = path.relative(gatewaySrc, file)
  if (rel.startsWith("..") || path.isAbsolute(rel)) return undefined
  const parts = rel.split(path.sep)
  return parts.length === 1 ? "" : parts[0]
}

/** An import of a package other than the importer's own, by a path that is not the package's public API. */
export interface InternalImport {
  readonly file: string
  readonly specifier: string
  readonly reason: string
}

/** One import between two different top-level folders of `packages/gateway/src`. */
interface Edge {
  readonly from: string
  readonly to: string
  readonly file: string
  readonly specifier: string
}

export const scan = (): {
  readonly edges: ReadonlyArray<Edge>
  readonly internals: ReadonlyArray<InternalImport>
  readonly filesRead: number
  readonly workspaceImports: ReadonlyMap<Unit, ReadonlySet<string>>
  readonly units: ReadonlyArray<Unit>
} => {
  const units = readUnits()
  const byPackageName = new Map(units.flatMap((unit) => unit.packageName ? [[unit.packageName, unit] as const] : []))
  const edges: Array<Edge> = []
  const internals: Array<InternalImport> = []
  let filesRead = 0
  const workspaceImports = new Map<Unit, Set<string>>(units.map((unit) => [unit, new Set()]))
  for (const unit of units) {
    for (const file of unitSources(unit)) {
      filesRead++
      const rel = path.relative(repoRoot, file)
      for (const specifier of specifiers(file)) {
        if (specifier.startsWith(".")) {
          const target = path.resolve(path.dirname(file), specifier)
          const targetUnit = unitOf(units, target)
          if (targetUnit !== undefined && targetUnit !== unit) {
            internals.push({
              file: rel,
              specifier,
              reason: `reaches into ${targetUnit.name} by a relative path; import "${
                targetUnit.packageName ?? targetUnit.name
              }" (its package.json exports: ${[...targetUnit.exports].join(", ")})`
            })
            continue
          }
          const from = gatewayFolder(file)
          const to = gatewayFolder(target)
          if (from === undefined || to === undefined || from === to) continue
          edges.push({ from, to, file: rel, specifier })
          continue
        }
        const match = /^(@[^/]+\/[^/]+|[^@/][^/]*)(\/.*)?$/.exec(specifier)
        const targetUnit = match && byPackageName.get(match[1]!)
        if (!match || !targetUnit || targetUnit === unit) continue
        workspaceImports.get(unit)!.add(match[1]!)
        const subpath = "." + (match[2] ?? "")
        if (!targetUnit.exports.has(subpath)) {
          internals.push({
            file: rel,
            specifier,
            reason: `"${subpath}" is not among the exports of ${match[1]} (${[...targetUnit.exports].join(", ")})`
          })
        }
      }
    }
  }
  return { edges, internals, filesRead, workspaceImports, units }
}

/**
 * The strongly connected components of more than one folder (Tarjan), each as one cycle through
 * all of its folders where one exists, else as the set of folders.
 */
export const folderCycles = (edges: ReadonlyArray<Edge>): ReadonlyArray<ReadonlyArray<string>> => {
  const graph = new Map<string, Set<string>>()
  for (const { from, to } of edges) {
    if (!graph.has(from)) graph.set(from, new Set())
    if (!graph.has(to)) graph.set(to, new Set())
    graph.get(from)!.add(to)
  }
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const components: Array<Array<string>> = []
  const visit = (node: string): void => {
    index.set(node, counter)
    low.set(node, counter)
    counter++
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node)!) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!))
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1) components.push(component.sort())
    }
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node)
  return components
}

const label = (folder: string) => folder === "" ? "src/ (composition root)" : `${folder}/`

/** A shortest path from `from` back to itself inside one component, as the folders it passes. */
const shortestCycle = (edges: ReadonlyArray<Edge>, component: ReadonlyArray<string>, from: string) => {
  const members = new Set(component)
  const previous = new Map<string, string>()
  const queue = [from]
  while (queue.length > 0) {
    const node = queue.shift()!
    for (const edge of edges) {
      if (edge.from !== node || !members.has(edge.to) || previous.has(edge.to)) continue
      previous.set(edge.to, node)
      if (edge.to === from) {
        // Walk back from the last hop to `from`: the folders in the order the imports go.
        const cycle: Array<string> = []
        for (let at = node; at !== from; at = previous.get(at)!) cycle.unshift(at)
        return [from, ...cycle]
      }
      queue.push(edge.to)
    }
  }
  return [...component]
}

export const describeCycle = (edges: ReadonlyArray<Edge>, component: ReadonlyArray<string>): string => {
  const cycle = shortestCycle(edges, component, component[0]!)
  const hops = cycle.map((from, i) => {
    const to = cycle[(i + 1) % cycle.length]!
    const example = edges.find((edge) => edge.from === from && edge.to === to)!
    return `  ${label(from)} -> ${label(to)}: ${example.file} imports "${example.specifier}"`
  })
  return `folders {${component.map(label).join(", ")}} import each other:\n${hops.join("\n")}`
}

describe("import layout", () => {
  const { edges, filesRead, internals, units, workspaceImports } = scan()

  it("reads the source of every package", () => {
    // A glob gone wrong would pass every rule below on an empty tree.
    expect(filesRead).toBeGreaterThan(200)
    expect(new Set(edges.map((edge) => edge.from)).size).toBeGreaterThan(10)
  })

  it("the top-level folders of packages/gateway/src import each other in one direction only", () => {
    const cycles = folderCycles(edges.filter((edge) => edge.from !== "" && edge.to !== ""))
    expect(cycles.map((component) => describeCycle(edges, component))).toEqual([])
  })

  it("a package imports another only by its name or a subpath its package.json exports", () => {
    expect(internals.map((found) => `${found.file} imports "${found.specifier}": ${found.reason}`)).toEqual([])
  })

  it("a package's dependencies name exactly the workspace packages its source imports", () => {
    const declared = units.map((unit) => [unit.name, [...unit.workspaceDependencies].sort()])
    const imported = units.map((unit) => [unit.name, [...workspaceImports.get(unit)!].sort()])
    expect(declared).toEqual(imported)
  })
})

describe("folderCycles", () => {
  const edge = (from: string, to: string): Edge => ({ from, to, file: `${from}/X.ts`, specifier: `../${to}/Y.ts` })

  it("finds a direct and a longer cycle and leaves a chain alone", () => {
    const edges = [edge("a", "b"), edge("b", "a"), edge("c", "d"), edge("d", "e"), edge("e", "c"), edge("f", "g")]
    expect(folderCycles(edges)).toEqual([["a", "b"], ["c", "d", "e"]])
    expect(describeCycle(edges, ["c", "d", "e"])).toBe(
      "folders {c/, d/, e/} import each other:\n" +
        "  c/ -> d/: c/X.ts imports \"../d/Y.ts\"\n" +
        "  d/ -> e/: d/X.ts imports \"../e/Y.ts\"\n" +
        "  e/ -> c/: e/X.ts imports \"../c/Y.ts\""
    )
  })
})
