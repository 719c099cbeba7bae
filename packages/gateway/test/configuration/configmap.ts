/**
 * A directory laid out as the kubelet lays out a ConfigMap volume: each
 * version in its own `..<timestamp>` directory, `..data` a symlink to the
 * current one, and each key a symlink `<key> -> ..data/<key>`. An update
 * writes a new version and swaps `..data` atomically (rename over it), as
 * the kubelet does: the key's own path never changes.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export interface ConfigMapVolume {
  readonly dir: string
  /** The path a pod reads a key at. */
  readonly path: (key: string) => string
  /** Replaces every key's content, as a ConfigMap update does. */
  readonly update: (files: Readonly<Record<string, string>>) => void
}

export const configMapVolume = (files: Readonly<Record<string, string>>): ConfigMapVolume => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-configmap-"))
  let version = 0
  let current: string | undefined
  const update = (next: Readonly<Record<string, string>>) => {
    const name = `..2026_01_01_00_00_${String(++version).padStart(2, "0")}.${process.pid}`
    Fs.mkdirSync(Path.join(dir, name))
    for (const [key, text] of Object.entries(next)) Fs.writeFileSync(Path.join(dir, name, key), text)
    Fs.symlinkSync(name, Path.join(dir, "..data_tmp"))
    Fs.renameSync(Path.join(dir, "..data_tmp"), Path.join(dir, "..data"))
    for (const key of Object.keys(next)) {
      if (!Fs.existsSync(Path.join(dir, key))) Fs.symlinkSync(Path.join("..data", key), Path.join(dir, key))
    }
    if (current !== undefined) Fs.rmSync(Path.join(dir, current), { recursive: true })
    current = name
  }
  update(files)
  return { dir, path: (key) => Path.join(dir, key), update }
}
