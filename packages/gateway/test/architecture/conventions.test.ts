/**
 * The writing conventions of the source tree (README, "Conventions"), checked on the source text of
 * every package's `src/`.
 *
 * **Rules**
 *
 * - Every source module opens with a doc comment (after an optional shebang): what it is and the
 *   rules it enforces.
 * - Module docs use one heading style, effect's: a bold line (`**Details**`, `**Gotchas**`,
 *   `**Rules**`, `**Example**`), never a Markdown `#` heading or a `Details:` line.
 * - No source file is over 450 lines unless its module doc says why (it names "450 lines").
 * - Layers are named `layer`, `layerConfig`, `layerMemory`, ...: no v3-style `*Live` export.
 * - A barrel (`index.ts`) only re-exports, under the names its modules give (`export * as X` for a
 *   namespace is fine; `export { a as b }` is a second name for one thing), and defines nothing.
 * - The "non-null, non-array object" guard is effect's `Predicate.isReadonlyObject` (one name: not its
 *   alias `Predicate.isObject`), never declared again as a local `isObject` (studio, a browser package
 *   without effect, keeps its own).
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const repoRoot = path.resolve(import.meta.dirname, "../../../..")
const MAX_LINES = 450

const sourceFiles = (): ReadonlyArray<string> => {
  const out: Array<string> = []
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(full)
    }
  }
  const packages = path.join(repoRoot, "packages")
  for (const pkg of fs.readdirSync(packages)) {
    const src = path.join(packages, pkg, "src")
    if (fs.existsSync(src)) walk(src)
  }
  return out.sort()
}

const files = sourceFiles().map((file) => ({
  name: path.relative(repoRoot, file),
  text: fs.readFileSync(file, "utf8")
}))

/** The module doc comment: the first `/** ... *\/` block, when the file opens with it. */
const moduleDoc = (text: string): string | undefined => {
  const body = text.replace(/^#!.*\n/, "").trimStart()
  if (!body.startsWith("/**")) return undefined
  const end = body.indexOf("*/")
  return end < 0 ? undefined : body.slice(0, end + 2)
}

describe("source conventions", () => {
  it("the tree is read", () => {
    expect(files.length).toBeGreaterThan(100)
  })

  it("every source module opens with a doc comment", () => {
    expect(files.filter((f) => moduleDoc(f.text) === undefined).map((f) => f.name)).toEqual([])
  })

  it("module docs use bold headings only (no Markdown # heading, no `Details:` line)", () => {
    const offending = files.flatMap((f) => {
      const doc = moduleDoc(f.text) ?? ""
      return doc.split("\n")
        .filter((line) => /^\s*\*\s*#{1,6}\s/.test(line) || /^\s*\*\s*[A-Z][A-Za-z ]{2,30}:\s*$/.test(line))
        .map((line) => `${f.name}: ${line.trim()}`)
    })
    expect(offending).toEqual([])
  })

  it(`no source file is over ${MAX_LINES} lines unless its module doc says why`, () => {
    const long = files
      .filter((f) => f.text.split("\n").length > MAX_LINES && !(moduleDoc(f.text) ?? "").includes("450 lines"))
      .map((f) => `${f.name} (${f.text.split("\n").length} lines)`)
    expect(long).toEqual([])
  })

  it("no Layer is named in the v3 style (`*Live`)", () => {
    const live = files.flatMap((f) =>
      [...f.text.matchAll(/(?:export\s+const|static\s+readonly)\s+(\w+Live)\s*(?::\s*Layer\.|=\s*Layer\.)/g)].map((
        m
      ) => `${f.name}: ${m[1]}`)
    )
    expect(live).toEqual([])
  })

  it("barrels only re-export, under the modules' own names", () => {
    const barrels = files.filter((f) => f.name.endsWith("/index.ts"))
    expect(barrels.length).toBeGreaterThan(5)
    const offending = barrels.flatMap((f) => {
      const code = f.text.replace(/\/\*[\s\S]*?\*\//g, "")
      const defines = /^\s*export\s+(const|let|function|class)\s/m.test(code) ? [`${f.name}: defines a value`] : []
      const renames = [...code.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)].flatMap((m) =>
        m[1]!.split(",").map((s) => s.trim()).filter((s) => /\sas\s/.test(s)).map((s) => `${f.name}: ${s}`)
      )
      return [...defines, ...renames]
    })
    expect(offending).toEqual([])
  })

  it("the non-null, non-array object guard is not declared again", () => {
    const declared = files
      .filter((f) =>
        !f.name.startsWith("packages/studio/") &&
        (/\bconst\s+isObject\s*=/.test(f.text) || /Predicate\.isObject\b/.test(f.text))
      )
      .map((f) => f.name)
    expect(declared).toEqual([])
  })
})
